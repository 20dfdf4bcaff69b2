"""The arena explorer's full ROS loop in simulation over real DDS, one process per node: mat_sim (one virtual cube,
virtual IR sensors of a layout) -> cube_driver (simulated BLE) -> navigator -> arena_explorer -> back.

* move by move, the explorer on the mat builds exactly the map the offline explorer builds on the same layout
  (same MDF after every move), terminate stops it, and the fastest path is refused away from the start;
* end to end (toio-nav demo --arena's runner) on a corridor layout: explored without a false obstacle, back on the
  start, the fastest path driven to the goal at the optimal cost, the picture and result written.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from toio_navigator.arena.explorer import PHOTO, ArenaExplorer  # noqa: E402
from toio_navigator.arena.layout import load_layout, parse_layout  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402
from toio_navigator.launching.supervisor import Children  # noqa: E402
from toio_navigator.msg import ArenaState  # noqa: E402
from toio_navigator.nodes.arena_demo import call_trigger, run_arena_demo, run_yaml  # noqa: E402
from toio_navigator.nodes.qos import STATE_QOS  # noqa: E402
from toio_navigator.nodes.service_call import call_until_answered  # noqa: E402
from toio_navigator.sim.arena_run import SimulatedArenaRobot  # noqa: E402
from toio_navigator.sim.ir_sensors import ArenaMatMapping  # noqa: E402
from toio_navigator.units import ros_to_mat_xy  # noqa: E402

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'
#: free: the start corner's three columns up to the top rows, and the three top rows (with the goal zone)
CORRIDOR = ['.' * 15] * 3 + ['...' + '#' * 12] * 17


def offline_mdf_after_each_move(layout, moves: int) -> dict[int, tuple[str, str]]:
    """{motion commands so far: MDF} of the explorer driven by the ideal simulated robot."""
    robot = SimulatedArenaRobot.on_layout(layout)
    explorer = ArenaExplorer(start=layout.start)
    out = {}
    while explorer.moves <= moves and (cmd := explorer.next_move()) is not None:
        if cmd.kind == PHOTO:
            explorer.on_photo([])
            continue
        moved = robot.execute(cmd.kind, cmd.cells)
        explorer.on_moved(robot.sensors.read(robot.pose), moved if cmd.kind == 'F' else None)
        out[explorer.moves] = explorer.mdf()
    return out


class ArenaSystem:
    def __init__(self, tmp_path: Path, env: dict, layout_path: Path) -> None:
        files = profiles.profile_files('arena')
        files.append(run_yaml(tmp_path / 'run.yaml', layout_path, 1.0, None))
        self.log_dir = tmp_path / 'logs'
        self.children = Children()
        self.children.start(profiles.plan('arena', ['cube1']), files, env=env, log_dir=self.log_dir)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(env['ROS_DOMAIN_ID']))
        self.node = Node('arena_probe', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.states: list = []
        self.truth = None
        self.node.create_subscription(ArenaState, 'arena/state', self.states.append, STATE_QOS)
        self.node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, 10)
        self.clients = {name: self.node.create_client(Trigger, f'arena_explorer/{name}')
                        for name in ('start_exploration', 'start_fastest_path', 'terminate')}
        self.Trigger, self.ArenaState = Trigger, ArenaState

    def _on_truth(self, msg) -> None:
        p = msg.poses[0]
        self.truth = (ros_to_mat_xy(p.position.x, p.position.y), time.monotonic())

    def spin_until(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            dead = self.children.check()
            assert not dead, f'{dead} died; logs in {self.log_dir}'
            assert time.monotonic() < deadline, f'timed out waiting for {what}; logs in {self.log_dir}'
            self.executor.spin_once(timeout_sec=0.05)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def call(self, name: str, timeout: float = 10.0):
        """The answer of arena_explorer/``name`` (made again when an answer is lost, as the demo does)."""
        client = self.clients[name]
        self.spin_until(client.service_is_ready, 30.0, name)
        return call_until_answered(client, self.Trigger.Request(), lambda done, what: self.spin_until(
            done, timeout + 5.0, what), name, timeout)

    def start(self, name: str, status: int, timeout: float = 60.0) -> str:
        """Call arena_explorer/``name`` until it succeeds or arena/state shows ``status`` (the demo's way)."""
        return call_trigger(self.clients[name], name, lambda done, what: self.spin_until(done, timeout + 5.0, what),
                            timeout, lambda: bool(self.states) and self.states[-1].status == status)

    def close(self) -> None:
        self.children.stop()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def test_explorer_on_the_mat_builds_the_offline_map_move_by_move_and_terminate_stops_it(tmp_path, child_env):
    layout_path = ARENAS / '01_sample_arena_1.json'
    layout = load_layout(layout_path)
    system = ArenaSystem(tmp_path, child_env, layout_path)
    try:
        system.start('start_exploration', system.ArenaState.EXPLORING)   # once driver, navigator, IR are up
        moves = 6
        system.spin_until(lambda: any(s.moves >= moves for s in system.states), 90.0, f'{moves} moves')
        system.start('terminate', system.ArenaState.TERMINATED, 10.0)
        system.spin_until(lambda: system.states[-1].status == system.ArenaState.TERMINATED, 5.0, 'TERMINATED')
        system.spin_for(1.5)      # the node reports the cell the cube really stopped on once it has stopped
        assert system.states[-1].status == system.ArenaState.TERMINATED
        last = {}
        for s in system.states:
            if s.status in (system.ArenaState.EXPLORING, system.ArenaState.RETURNING, system.ArenaState.IMAGE_HUNT):
                last[s.moves] = (s.mdf_part1, s.mdf_part2)
        offline = offline_mdf_after_each_move(layout, max(last))
        compared = [k for k in last if k >= 1]
        assert len(compared) >= moves - 1
        for k in compared:
            assert last[k] == offline[k], f'MDF after move {k} differs from the offline exploration'
        # the cube stands still in the cell the state reports
        final = system.states[-1]
        system.spin_until(lambda: system.truth is not None, 5.0, 'ground truth')
        system.spin_for(0.5)
        system.truth = None
        system.spin_until(lambda: system.truth is not None, 5.0, 'ground truth')
        xy_before = system.truth[0]
        assert ArenaMatMapping().mat_to_cell(*xy_before) == (final.robot_x, final.robot_y)
        system.spin_for(0.5)
        system.truth = None
        system.spin_until(lambda: system.truth is not None, 5.0, 'ground truth')
        assert np.hypot(*np.subtract(system.truth[0], xy_before)) < 1.0
        refused = system.call('start_fastest_path')
        if (final.robot_x, final.robot_y) != (1, 1):
            assert not refused.success and 'not on the start' in refused.message
    finally:
        system.close()


def test_demo_runner_explores_a_corridor_and_drives_the_optimal_fastest_path(tmp_path, child_env):
    layout_path = tmp_path / 'corridor.json'
    layout_path.write_text(json.dumps({'format': 'toio-arena-layout/1', 'name': 'corridor',
                                       'grid_rows_top_first': CORRIDOR}))
    layout = parse_layout(json.loads(layout_path.read_text()))
    out = tmp_path / 'out'
    code = run_arena_demo(layout_path, out, real_time_factor=1.0, timeout=240.0, env=child_env, quiet=True)
    result = json.loads((out / 'result.json').read_text())
    ex, fp = result['exploration'], result['fastest_path']
    assert ex['status'] == 'DONE' and ex['returned_to_start'] and ex['false_obstacles'] == 0
    offline = offline_mdf_after_each_move(layout, 10_000)
    assert (ex['mdf_part1'], ex['mdf_part2']) == offline[max(offline)]
    assert fp['on_goal'] and fp['cost'] == fp['optimum_on_map'] == fp['optimum_on_layout'] == 31
    assert fp['poses'][0][:2] == [1, 1] and fp['poses'][-1][:2] == [13, 18]
    assert (out / 'arena.png').stat().st_size > 1000
    assert code == 0
