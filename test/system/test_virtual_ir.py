"""virtual_ir: a real cube's IR readings from its reported pose and a virtual arena, over DDS between processes,
fed by a stand-in cube driver (a CubeState publisher)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from toio_navigator.arena.geometry import Pose  # noqa: E402
from toio_navigator.arena.layout import load_layout  # noqa: E402
from toio_navigator.nodes.virtual_ir import VirtualIrNode  # noqa: E402
from toio_navigator.settings.virtual_ir import VirtualIrError  # noqa: E402
from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors  # noqa: E402

ARENA = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'
NO_READING = (-1,) * 6


def expected(pose: Pose, mapping: ArenaMatMapping = ArenaMatMapping()) -> tuple[int, ...]:
    return VirtualIrSensors(load_layout(ARENA).obstacles).read_ranges(pose)


class StandInDriver(Node):
    """Publishes <cube>/state as a cube driver would and records <cube>/ir."""

    def __init__(self, context, cube: str) -> None:
        super().__init__(f'stand_in_{cube}', context=context)
        self.cube = cube
        self.pub = self.create_publisher(msg.CubeState, f'/{cube}/state', qos_profile_sensor_data)
        self.ir: list = []
        self.create_subscription(msg.IrRanges, f'/{cube}/ir', self.ir.append, 10)

    def state(self, x: float, y: float, theta: float, on_mat: bool = True) -> None:
        self.pub.publish(msg.CubeState(cube=self.cube, x=x, y=y, theta=theta, on_mat=on_mat))


def spin_until(ex, predicate, timeout: float = 15.0, feed=None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if feed is not None:
            feed()
        ex.spin_once(timeout_sec=0.05)
    return predicate()



def test_a_real_cube_gets_the_readings_of_its_pose_over_dds(ros, child_env):
    proc = subprocess.Popen([sys.executable, '-m', 'toio_navigator.nodes.virtual_ir', '--ros-args',
                             '-p', 'cubes:=[cube7]', '-p', f'arena_layout:={ARENA}', '-p', 'ir_rate_hz:=20.0'],
                            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    driver = StandInDriver(ros, 'cube7')
    ex = SingleThreadedExecutor(context=ros)
    ex.add_node(driver)
    mapping = ArenaMatMapping()
    try:
        start = Pose(1, 1, 0)
        mx, my, theta = mapping.pose_to_mat(start)
        # the start cell facing north: the sensors see the arena's walls and the layout's obstacles
        assert spin_until(ex, lambda: driver.ir and tuple(driver.ir[-1].ranges) == expected(start),
                          feed=lambda: driver.state(mx + 3.0, my - 2.0, theta + 0.2))   # anywhere in the cell
        assert driver.ir[-1].header.frame_id == 'cube7/base_link'
        turned = Pose(7, 10, 1)                                                         # elsewhere, facing east
        assert expected(turned) != expected(start)
        assert spin_until(ex, lambda: tuple(driver.ir[-1].ranges) == expected(turned),
                          feed=lambda: driver.state(*mapping.pose_to_mat(turned)))
        # lifted off the mat, or outside the arena: no reading
        assert spin_until(ex, lambda: tuple(driver.ir[-1].ranges) == NO_READING,
                          feed=lambda: driver.state(mx, my, theta, on_mat=False))
        assert spin_until(ex, lambda: tuple(driver.ir[-1].ranges) == expected(start),
                          feed=lambda: driver.state(mx, my, theta))
        assert spin_until(ex, lambda: tuple(driver.ir[-1].ranges) == NO_READING,
                          feed=lambda: driver.state(mapping.origin_x - 10.0, my, theta))
    finally:
        proc.terminate()
        try:
            _out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
        driver.destroy_node()
    assert 'Traceback' not in err and 'exception' not in err.lower()


def test_a_state_that_stopped_coming_gives_no_reading_and_an_unknown_cube_nothing(ros):
    node = VirtualIrNode(context=ros, parameter_overrides=[
        Parameter('cubes', value=['cube1', 'cube2']), Parameter('arena_layout', value=str(ARENA)),
        Parameter('stale_s', value=0.5)])
    got: dict[str, list] = {'cube1': [], 'cube2': []}
    driver = StandInDriver(ros, 'cube1')
    driver.create_subscription(msg.IrRanges, '/cube2/ir', got['cube2'].append, 10)
    ex = SingleThreadedExecutor(context=ros)
    ex.add_node(node)
    ex.add_node(driver)
    mx, my, theta = ArenaMatMapping().pose_to_mat(Pose(1, 1, 0))
    try:
        assert spin_until(ex, lambda: driver.ir and tuple(driver.ir[-1].ranges) == expected(Pose(1, 1, 0)),
                          feed=lambda: driver.state(mx, my, theta))
        when, state = node.states['cube1']
        node.states['cube1'] = (when - 1.0, state)       # as if the driver had gone quiet a second ago
        assert spin_until(ex, lambda: tuple(driver.ir[-1].ranges) == NO_READING)
        assert got['cube2'] == []                         # never heard of cube2: nothing published for it
    finally:
        node.destroy_node()
        driver.destroy_node()


@pytest.mark.parametrize('params, named', [
    (dict(arena_layout=str(ARENA)), 'cubes'),
    (dict(cubes=['cube1']), 'arena_layout'),
    (dict(cubes=['cube1'], arena_layout='/nonexistent.json'), 'arena_layout'),
    (dict(cubes=['cube1', 'cube1'], arena_layout=str(ARENA)), 'cubes'),
    (dict(cubes=['cube1'], arena_layout=str(ARENA), arena_cell_size=0.0), 'arena_cell_size'),
    (dict(cubes=['cube1'], arena_layout=str(ARENA), ir_rate_hz=0.0), 'ir_rate_hz'),
    (dict(cubes=['cube1'], arena_layout=str(ARENA), ir_noise=2.0), 'ir_noise'),
    (dict(cubes=['cube1'], arena_layout=str(ARENA), stale_s=-1.0), 'stale_s'),
])
def test_bad_parameters_are_named(ros, params, named):
    with pytest.raises(VirtualIrError, match=f'parameter {named}:'):
        VirtualIrNode(context=ros, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


def test_the_executable_exits_2_naming_a_missing_layout(child_env):
    proc = subprocess.run([sys.executable, '-m', 'toio_navigator.nodes.virtual_ir', '--ros-args',
                           '-p', 'cubes:=[cube1]'], env=child_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'arena_layout' in proc.stderr and 'Traceback' not in proc.stderr
