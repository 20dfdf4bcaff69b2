"""The arena_explorer node's move execution, in process and without DDS: a fake cube stands in for the navigator,
the driver and mat_sim (it jumps to each goal, turns on move_to_pose and answers with the virtual IR readings of a
layout), so a whole exploration and fastest path run in about a second and every request can be inspected."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

import json  # noqa: E402

from rclpy.parameter import Parameter  # noqa: E402
from rclpy.task import Future  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from support.node_callbacks import call, deliver, fire_timers  # noqa: E402
from toio_navigator.arena import executor  # noqa: E402
from toio_navigator.arena.explorer import ArenaExplorer  # noqa: E402
from toio_navigator.arena.fastest_path import fastest_path  # noqa: E402
from toio_navigator.arena.layout import load_layout  # noqa: E402
from toio_navigator.msg import CubeState, IrRanges, MoveToPoseResult, NavGoal, NavResult  # noqa: E402
from toio_navigator.nodes.arena_explorer import ArenaExplorerNode  # noqa: E402
from toio_navigator.sim.arena_run import SimulatedArenaRobot, run_exploration  # noqa: E402
from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors  # noqa: E402
from toio_navigator.srv import SetGoal  # noqa: E402

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'


class FakeCube:
    """Navigator + driver + mat_sim in one: goals are reached at once, turns end on the asked heading."""

    def __init__(self, node: ArenaExplorerNode, layout, overshoot_first: bool = False, refuse: str = '') -> None:
        self.node, self.mapping = node, ArenaMatMapping()
        self.x, self.y, self.theta = self.mapping.pose_to_mat(layout.start)
        self.sensors = VirtualIrSensors(layout.obstacles)
        self.goal, self.goal_id, self.turns, self.arrived = None, 0, [], False
        self.log: list[tuple] = []               # ('goal', x, y) / ('stop',) / ('turn', theta) in order
        self.overshoot_first, self.refuse = overshoot_first, refuse
        self.published: list = []
        node.set_goal = self                     # the node's navigator/set_goal client
        node.move_pub = self                     # the node's <cube>/move_to_pose publisher
        node.state_pub = _Recorder(self.published)

    # as the set_goal client
    def service_is_ready(self) -> bool:
        return True

    def call_async(self, request):
        g, future = request.goal, Future()
        if self.refuse and g.direction == NavGoal.TOWARDS:
            future.set_result(SetGoal.Response(accepted=False, reason=self.refuse))
            return future
        if g.direction == NavGoal.STOP:
            self.goal, self.goal_id = None, 0
            self.log.append(('stop',))
        else:
            self.goal, self.goal_id, self.arrived = (g.x, g.y), g.goal_id, False
            self.log.append(('goal', g.x, g.y))
        future.set_result(SetGoal.Response(accepted=True))
        return future

    # as the move_to_pose publisher
    def get_subscription_count(self) -> int:
        return 1

    def publish(self, msg) -> None:
        self.turns.append(msg)
        self.log.append(('turn', msg.theta))

    def step(self) -> None:
        """One tick of the world, then everything the cube's nodes would publish."""
        if self.goal is not None and not self.arrived:
            x, y = self.goal
            if self.overshoot_first:             # the first forward move ends a cell too far, "reached" all the same
                self.overshoot_first = False
                d = math.hypot(x - self.x, y - self.y)
                x, y = x + (x - self.x) / d * 20.0, y + (y - self.y) / d * 20.0
            self.x, self.y, self.arrived = x, y, True
        for msg in self.turns:
            self.theta = msg.theta
            deliver(self.node, 'cube1/move_to_pose/result',
                    MoveToPoseResult(goal_id=msg.goal_id, result=MoveToPoseResult.REACHED))
        self.turns = []
        n = self.node
        deliver(n, 'cube1/state', CubeState(cube='cube1', x=self.x, y=self.y, theta=self.theta, on_mat=True,
                                            link_state=CubeState.LINK_CONNECTED))
        ir = IrRanges(ranges=list(self.sensors.read_ranges(self.mapping.mat_to_pose(self.x, self.y, self.theta))))
        ir.header.stamp = n.get_clock().now().to_msg()
        deliver(n, 'cube1/ir', ir)
        deliver(n, 'cube1/nav_result', NavResult(cube='cube1', goal_id=self.goal_id,
                                                 active=self.goal is not None and not self.arrived,
                                                 reached=self.goal is not None and self.arrived))

    def cell(self) -> tuple[int, int]:
        return self.mapping.mat_to_cell(self.x, self.y)


class _Recorder:
    def __init__(self, out: list) -> None:
        self.out = out

    def publish(self, msg) -> None:
        self.out.append(msg)


@pytest.fixture
def node(ros_domain, monkeypatch):
    monkeypatch.setattr(executor, 'RELEASE_GAP_S', 0.0)   # no driver to race with
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    n = ArenaExplorerNode(context=context, parameter_overrides=[Parameter('settle_s', value=0.0),
                                                                Parameter('waypoint', value=[7, 15])])
    yield n
    n.destroy_node()
    rclpy.try_shutdown(context=context)


def run(node, cube: FakeCube, until, ticks: int = 20000) -> None:
    for _ in range(ticks):
        cube.step()
        fire_timers(node)
        if until():
            return
    raise AssertionError(f'not finished: mode {node.arena.mode}, {node.arena.text}')


def test_node_explores_then_drives_the_optimal_fastest_path_with_turns_after_a_release(node):
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    cube = FakeCube(node, layout)
    cube.step()
    assert trigger(node, 'start_exploration').success
    run(node, cube, lambda: node.arena.mode != 'EXPLORING')
    assert node.arena.mode == 'DONE', node.arena.text
    offline, _robot = run_exploration(layout)
    ex = node.arena.explorer
    assert ex.mdf() == offline.mdf() and ex.moves == offline.moves and ex.actions == offline.actions
    assert np.array_equal(ex.belief.obstacle, layout.obstacles) and cube.cell() == (1, 1)
    states = [m for m in cube.published if m.status in (1, 2, 3)]  # exploring / returning: after every move
    assert {m.moves for m in states} == set(range(ex.moves + 1))
    assert cube.published[-1].status == 5 and (cube.published[-1].mdf_part1, cube.published[-1].mdf_part2) == ex.mdf()
    # every turn went to the cube's own control only after the navigator had let go of the cube
    for i, entry in enumerate(cube.log):
        if entry[0] == 'turn':
            assert cube.log[i - 1] == ('stop',)
    ok = trigger(node, 'start_fastest_path')
    assert ok.success, ok.message
    run(node, cube, lambda: node.arena.mode != 'FASTEST_PATH')
    assert node.arena.mode == 'DONE' and cube.cell() == (13, 18)
    best = fastest_path(layout.obstacles, layout.start, layout.goal, (7, 15))
    assert node.arena.route.cost == best.cost
    assert (7, 15) in [(p.x, p.y) for p in node.arena.route.poses]


def test_a_cube_that_ends_in_the_wrong_cell_is_corrected_before_the_reading(node):
    layout = load_layout(ARENAS / '02_empty.json')
    cube = FakeCube(node, layout, overshoot_first=True)
    cube.step()
    assert trigger(node, 'start_exploration').success
    run(node, cube, lambda: node.arena.mode != 'EXPLORING' or node.arena.explorer.moves >= 3)
    goals = [e for e in cube.log if e[0] == 'goal']
    assert goals[0] == goals[1]                 # the same cell centre again: the correction
    assert not node.arena.explorer.belief.obstacle.any()          # no reading was taken from the wrong cell
    assert node.arena.explorer.mdf() == _offline_mdf_after(layout, node.arena.explorer.moves)


def test_a_refused_goal_stops_the_run_with_the_navigators_reason(node):
    layout = load_layout(ARENAS / '02_empty.json')
    cube = FakeCube(node, layout, refuse='goal (130.0, 400.0) is off the mat')
    cube.step()
    assert trigger(node, 'start_exploration').success
    run(node, cube, lambda: node.arena.mode != 'EXPLORING')
    assert node.arena.mode == 'ERROR' and 'off the mat' in node.arena.text
    assert cube.published[-1].status == 7 and 'off the mat' in cube.published[-1].status_text


def test_start_is_refused_while_running_and_terminate_reports_the_cell_the_cube_is_on(node):
    layout = load_layout(ARENAS / '02_empty.json')
    cube = FakeCube(node, layout)
    cube.step()
    assert trigger(node, 'start_exploration').success
    again = trigger(node, 'start_exploration')
    assert not again.success and 'already exploring' in again.message
    run(node, cube, lambda: node.arena.explorer.moves >= 2)
    assert trigger(node, 'terminate').success
    assert node.arena.mode == 'TERMINATED' and node.arena.explorer.next_move() is None
    assert cube.published[-1].status == 6


def _offline_mdf_after(layout, moves: int):
    robot = SimulatedArenaRobot.on_layout(layout)
    explorer = ArenaExplorer(start=layout.start)
    while (cmd := explorer.next_move()) is not None:
        moved = robot.execute(cmd.kind, cmd.cells)
        explorer.on_moved(robot.sensors.read(robot.pose), moved if cmd.kind == 'F' else None)
        if explorer.moves >= moves:
            break
    return explorer.mdf()


def trigger(node, service: str):
    """The answer of the node's arena_explorer/<service> (a std_srvs Trigger)."""
    return call(node, f'arena_explorer/{service}', Trigger.Request(), Trigger.Response())


def test_image_mode_photographs_with_the_simulated_camera_and_reports_the_card(ros_domain, tmp_path, monkeypatch):
    monkeypatch.setattr(executor, 'RELEASE_GAP_S', 0.0)
    data = json.loads((ARENAS / '01_sample_arena_1.json').read_text())
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    obs = layout.obstacles
    x, y = next((x, y) for y in range(20) for x in range(14) if obs[y, x] and not obs[y, x + 1])
    data['images'] = [{'x': x, 'y': y, 'face': 'E', 'id': 9}]
    cards = tmp_path / 'cards.json'
    cards.write_text(json.dumps(data))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    node = ArenaExplorerNode(context=context, parameter_overrides=[
        Parameter('settle_s', value=0.0), Parameter('image_mode', value=True),
        Parameter('camera_layout', value=str(cards))])
    try:
        cube = FakeCube(node, load_layout(cards))
        cube.step()
        assert trigger(node, 'start_exploration').success
        run(node, cube, lambda: node.arena.mode != 'EXPLORING')
        assert node.arena.mode == 'DONE', node.arena.text
        assert [(i.id, i.x, i.y, i.face) for i in cube.published[-1].images] == [(9, x, y, 'E')]
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
