"""Node parameters over DDS, as `ros2 param set` / `ros2 param describe` reach them: a run-time change is applied
(the node acts on the new value) or refused with a reason, a read-only parameter is refused, every descriptor
explains the parameter; and a bad start-up value ends the executable with exit 2 and a message, no traceback."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from geometry_msgs.msg import PoseArray  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402

from conftest import spin_until  # noqa: E402
from toio_navigator.cube.protocol import Characteristic  # noqa: E402
from toio_navigator.nodes.cube_driver import CubeDriverNode  # noqa: E402
from toio_navigator.nodes.mat_sim import MatSimNode  # noqa: E402
from toio_navigator.nodes.ros_sim_link import BLE_QOS  # noqa: E402
from toio_navigator.nodes.virtual_ir import VirtualIrNode  # noqa: E402

MOTOR = Characteristic.MOTOR_CONTROL.value


@pytest.fixture
def sim_and_driver(ros):
    """mat_sim with one virtual cube, its cube_driver and a probe node, in one executor: (sim, driver, probe, ex)."""
    sim = MatSimNode(context=ros, parameter_overrides=[Parameter('cubes', value=['cube1']),
                                                       Parameter('initial_poses', value=[150.0, 150.0, 0.0])])
    driver = CubeDriverNode(namespace='cube1', context=ros)
    probe = Node('probe', context=ros)
    ex = SingleThreadedExecutor(context=ros)
    for n in (sim, driver, probe):
        ex.add_node(n)
    yield sim, driver, probe, ex
    for n in (driver, sim, probe):
        n.destroy_node()


def call(ex, future):
    assert spin_until(ex, future.done), 'no answer from the parameter service'
    return future.result()


def set_one(ex, client, name, value):
    """(successful, reason) of one `ros2 param set`."""
    result = call(ex, client.set_parameters([Parameter(name, value=value)])).results[0]
    return result.successful, result.reason


def describe(ex, client, names):
    return {d.name: d for d in call(ex, client.describe_parameters(names)).descriptors}


def test_driver_applies_a_run_time_change_or_refuses_it_with_the_reason(sim_and_driver):
    sim, driver, probe, ex = sim_and_driver
    client = AsyncParameterClient(probe, '/cube1/cube_driver')
    writes = []
    probe.create_subscription(msg.BleFrame, '/cube1/ble/tx', lambda f: writes.append(bytes(f.data))
                              if f.uuid == MOTOR and f.op == msg.BleFrame.WRITE else None, BLE_QOS)
    cmd = probe.create_publisher(msg.MotorCommand, '/cube1/motor_cmd', 10)
    assert spin_until(ex, lambda: client.services_are_ready() and driver.firmware == '2.4.0'
                      and cmd.get_subscription_count() > 0, 30)

    ok, reason = set_one(ex, client, 'motor_duration_ms', 99999)            # outside 10..2550: refused
    assert not ok and 'motor_duration_ms' in reason and '2550' in reason
    ok, reason = set_one(ex, client, 'motor_duration_ms', 'long')
    assert not ok and reason.startswith('parameter motor_duration_ms: must be an integer 10..2550')
    ok, reason = set_one(ex, client, 'dead_zone', 200)                       # in its range, above max_motor
    assert not ok and reason.startswith('parameter dead_zone: must be <= max_motor (115)')
    ok, reason = set_one(ex, client, 'transport', 'ble')
    assert not ok and 'read-only parameter: transport' in reason
    assert driver.config.motor_duration_ms == 250 and driver.config.dead_zone == 8 and driver.config.transport == 'sim'
    got = call(ex, client.get_parameters(['motor_duration_ms'])).values[0]
    assert got.type == ParameterType.PARAMETER_INTEGER and got.integer_value == 250   # ros2 param get agrees

    assert set_one(ex, client, 'motor_duration_ms', 500) == (True, '')
    cmd.publish(msg.MotorCommand(left=40, right=40, duration_ms=0))          # 0 = the driver's own duration
    # 0x02 write: left 40 forward, right 40 forward, duration 500 ms = 50 x 10 ms
    assert spin_until(ex, lambda: b'\x02\x01\x01\x28\x02\x01\x28\x32' in writes)


def test_mat_sim_applies_a_run_time_change_or_refuses_it_with_the_reason(sim_and_driver):
    sim, _driver, probe, ex = sim_and_driver
    client = AsyncParameterClient(probe, '/mat_sim')
    truth = []
    probe.create_subscription(PoseArray, '/mat_sim/ground_truth', truth.append, 10)
    assert spin_until(ex, lambda: client.services_are_ready() and truth)

    ok, reason = set_one(ex, client, 'real_time_factor', 0.0)
    assert not ok and reason.startswith('parameter real_time_factor: must be a finite number > 0')
    ok, reason = set_one(ex, client, 'physics_rate_hz', 100.0)
    assert not ok and 'read-only parameter: physics_rate_hz' in reason
    assert sim.real_time_factor == 1.0 and sim.world.params.dt == pytest.approx(0.02)

    assert set_one(ex, client, 'command_delay_s', 0.05) == (True, '')
    assert sim.world.params.command_delay == 0.05           # the virtual cubes time the next write with it
    assert set_one(ex, client, 'ground_truth_rate_hz', 0.0) == (True, '')   # 0 = off
    ex.spin_once(timeout_sec=0.05)                           # a message already on its way may still arrive
    seen = len(truth)
    deadline = time.monotonic() + 0.5                        # 10 periods of the old 20 Hz
    while time.monotonic() < deadline:
        ex.spin_once(timeout_sec=0.05)
    assert len(truth) == seen
    assert set_one(ex, client, 'ground_truth_rate_hz', 20) == (True, '')    # an integer works for a rate too
    assert spin_until(ex, lambda: len(truth) > seen)


def test_describe_explains_range_choices_and_read_only(sim_and_driver):
    _sim, _driver, probe, ex = sim_and_driver
    client = AsyncParameterClient(probe, '/cube1/cube_driver')
    assert spin_until(ex, client.services_are_ready)
    d = describe(ex, client, ['motor_duration_ms', 'transport', 'light_min_interval_s'])
    motor, transport, light = d['motor_duration_ms'], d['transport'], d['light_min_interval_s']
    assert 'duration' in motor.description and not motor.read_only
    assert (motor.integer_range[0].from_value, motor.integer_range[0].to_value) == (10, 2550)
    assert transport.read_only and 'one of: sim, ble' in transport.additional_constraints
    assert (light.floating_point_range[0].from_value, light.floating_point_range[0].to_value) == (0.0, 3600.0)


@pytest.mark.parametrize('override, message', [
    ('markers_every:=.inf', 'parameter markers_every: must be an integer >= 1, got inf'),
    ('markers_every:=abc', "parameter markers_every: must be an integer >= 1, got 'abc'"),
    ('tick_on_fresh_states:=abc', "parameter tick_on_fresh_states: must be true or false, got 'abc'"),
    ('cubes:=[]', 'parameter cubes: must be a non-empty list of unique cube names'),
])
def test_navigator_executable_exits_2_naming_the_parameter_and_its_rule(override, message, child_env):
    proc = subprocess.run([sys.executable, '-m', 'toio_navigator.nodes.navigator', '--ros-args', '-p', override],
                          env=child_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f'navigator: {message}' in proc.stderr and 'Traceback' not in proc.stderr


def test_virtual_ir_applies_stale_s_and_keeps_the_rest_read_only(ros):
    layout = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'
    node = VirtualIrNode(context=ros, parameter_overrides=[Parameter('cubes', value=['cube1']),
                                                           Parameter('arena_layout', value=str(layout))])
    try:
        assert node.set_parameters([Parameter('stale_s', value=2.0)])[0].successful
        assert node.stale_s == 2.0                                   # what the next readings are judged by
        refused = node.set_parameters([Parameter('stale_s', value=-1.0)])[0]       # outside its declared range
        assert not refused.successful and 'stale_s' in refused.reason
        refused = node.set_parameters([Parameter('stale_s', value=0.0)])[0]        # in range, but must be > 0
        assert not refused.successful and refused.reason.startswith('parameter stale_s: must be a finite number > 0')
        refused = node.set_parameters([Parameter('ir_rate_hz', value=5.0)])[0]
        assert not refused.successful and 'read-only parameter: ir_rate_hz' in refused.reason
        assert node.stale_s == 2.0 and node.arena.rate_hz == 10.0
    finally:
        node.destroy_node()
