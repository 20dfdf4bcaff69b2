"""mat_sim in process: virtual cubes reachable only through BleFrame bytes, ground truth, IR, parameters."""
from __future__ import annotations

from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from conftest import spin_until  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.nodes import mat_sim  # noqa: E402
from toio_navigator.nodes.mat_sim import ContactTracker, MatSimNode  # noqa: E402
from toio_navigator.nodes.ros_sim_link import BLE_QOS  # noqa: E402
from toio_navigator.nodes.virtual_ir import ArenaSensors  # noqa: E402
from toio_navigator.settings.arena import SENSOR_PARAMS  # noqa: E402
from toio_navigator.settings.mat_sim import MatSimError  # noqa: E402
from toio_navigator.sim.world import World  # noqa: E402

ARENA = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'




def make_sim(ros, **params) -> MatSimNode:
    return MatSimNode(context=ros, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


class Central(Node):
    """Plays a driver on <cube>/ble/tx|rx: writes raw bytes, records what the virtual cube sends."""

    def __init__(self, context, cube: str = 'cube2') -> None:
        super().__init__(f'central_{cube}', context=context)
        self.tx = self.create_publisher(msg.BleFrame, f'/{cube}/ble/tx', BLE_QOS)
        self.rx: list = []
        self.create_subscription(msg.BleFrame, f'/{cube}/ble/rx', self.rx.append, BLE_QOS)

    def write(self, char: p.Characteristic, data: bytes) -> None:
        self.tx.publish(msg.BleFrame(uuid=char.value, op=msg.BleFrame.WRITE, data=data))

    def notified(self, char: p.Characteristic) -> list[bytes]:
        return [bytes(f.data) for f in self.rx if f.uuid == char.value and f.op == msg.BleFrame.NOTIFY]


def test_virtual_cube_obeys_bytes_and_answers_with_bytes(ros):
    sim = make_sim(ros, cubes=['cube1', 'cube2'], initial_poses=[150.0, 150.0, 0.0, 200.0, 300.0, 0.0])
    central = Central(ros, 'cube2')
    truth: list = []
    watcher = Node('watcher', context=ros)
    watcher.create_subscription(PoseArray, '/mat_sim/ground_truth', truth.append, 10)
    ex = SingleThreadedExecutor(context=ros)
    for n in (sim, central, watcher):
        ex.add_node(n)
    try:
        assert spin_until(ex, lambda: central.tx.get_subscription_count() > 0 and truth)
        # ground truth: REP 103 metres, cubes in the order of the `cubes` parameter
        assert [round(pp.position.x / units.METRES_PER_UNIT) for pp in truth[-1].poses] == [150, 200]
        assert round(-truth[-1].poses[1].position.y / units.METRES_PER_UNIT) == 300

        central.write(p.Characteristic.CONFIGURATION, b'\x01\x00')
        assert spin_until(ex, lambda: b'\x81\x002.4.0' in central.notified(p.Characteristic.CONFIGURATION))
        assert spin_until(ex, lambda: any(d[0] == 0x01 for d in central.notified(p.Characteristic.ID_INFORMATION)))
        central.tx.publish(msg.BleFrame(uuid=p.Characteristic.BATTERY_INFORMATION.value, op=msg.BleFrame.READ, seq=7))
        assert spin_until(ex, lambda: any(f.op == msg.BleFrame.READ_RESPONSE and f.seq == 7 and bytes(f.data) == b'\x64'
                                          for f in central.rx))
        central.tx.publish(msg.BleFrame(uuid='not-a-uuid', op=msg.BleFrame.WRITE, data=b'\x01'))   # ignored, counted
        central.write(p.Characteristic.MOTOR_CONTROL, bytes.fromhex('02 01 01 50 02 01 50 32'))   # 80 fwd, 500 ms
        assert spin_until(ex, lambda: sim.world.x[1] > 230.0)
        assert sim.world.x[0] == pytest.approx(150.0)                 # only cube2 got the command
        assert sim.ports[1].rejected == 1
        # the duration stops it by itself
        assert spin_until(ex, lambda: abs(sim.world.wheel_speed[1]).max() == 0.0, 5)
    finally:
        for n in (sim, central, watcher):
            n.destroy_node()


def test_a_motor_command_delivered_late_runs_only_what_is_left_of_it(ros):
    """The simulated air's delay must not depend on how busy the host is: a timed motor command that DDS
    delivers late runs for its duration counted from when the driver wrote it (the frame's stamp), so the cube
    stops as a real one with a prompt link would; one whose whole duration went by on the way never runs."""
    sim = make_sim(ros, cubes=['cube2'], initial_poses=[150.0, 150.0, 0.0])
    central = Central(ros, 'cube2')
    ex = SingleThreadedExecutor(context=ros)
    ex.add_node(sim)
    ex.add_node(central)

    def travel(age_s: float) -> float:
        """Mat units driven by 500 ms at speed 80 written ``age_s`` before it is published."""
        x0 = float(sim.world.x[0])
        stamp = (central.get_clock().now() - Duration(seconds=age_s)).to_msg()
        central.tx.publish(msg.BleFrame(uuid=p.Characteristic.MOTOR_CONTROL.value, op=msg.BleFrame.WRITE,
                                        data=bytes.fromhex('02 01 01 50 02 01 50 32'), stamp=stamp))
        spin_until(ex, lambda: abs(sim.world.wheel_speed[0]).max() > 0.0, 1.0)
        assert spin_until(ex, lambda: abs(sim.world.wheel_speed[0]).max() == 0.0, 5)
        return float(sim.world.x[0]) - x0
    try:
        assert spin_until(ex, lambda: sim.firmware[0].connected)
        on_time = travel(0.0)
        late = travel(0.3)                  # 200 of its 500 ms are left
        assert on_time > 50.0 and 0.2 * on_time < late < 0.6 * on_time, (on_time, late)
        assert travel(0.6) == 0.0 and sim.ports[0].expired == 1
    finally:
        for n in (sim, central):
            n.destroy_node()


def test_a_cube_whose_driver_leaves_disconnects_and_stops(ros):
    sim = make_sim(ros, cubes=['cube2'], initial_poses=[150.0, 150.0, 0.0], link_check_period_s=0.05)
    central = Central(ros, 'cube2')
    ex = SingleThreadedExecutor(context=ros)
    ex.add_node(sim)
    ex.add_node(central)
    try:
        assert spin_until(ex, lambda: sim.firmware[0].connected)
        central.write(p.Characteristic.MOTOR_CONTROL, bytes.fromhex('01 01 01 50 02 01 50'))   # 0x01: no duration
        assert spin_until(ex, lambda: sim.world.wheel_speed[0].min() > 0)
        ex.remove_node(central)
        central.destroy_node()
        assert spin_until(ex, lambda: not sim.firmware[0].connected)
        assert spin_until(ex, lambda: abs(sim.world.wheel_speed[0]).max() == 0.0, 5)
    finally:
        sim.destroy_node()


def test_ir_ranges_are_published_when_an_arena_is_loaded(ros):
    sim = make_sim(ros, cubes=['robot'], initial_poses=[130.0, 430.0, 0.0], arena_layout=str(ARENA), ir_rate_hz=20.0)
    got: list = []
    watcher = Node('watcher', context=ros)
    watcher.create_subscription(msg.IrRanges, '/robot/ir', got.append, 10)
    ex = SingleThreadedExecutor(context=ros)
    ex.add_node(sim)
    ex.add_node(watcher)
    try:
        assert spin_until(ex, lambda: got)
        # what the layout's sensors read at the cube's pose, built apart from the node from the same parameters
        values = {**{spec.name: spec.default for spec in SENSOR_PARAMS}, 'arena_layout': str(ARENA)}
        expected = ArenaSensors(values).ranges(130.0, 430.0, 0.0)
        assert list(got[-1].ranges) == expected and expected != [-1] * 6
        assert all(-1 <= r <= 9 for r in got[-1].ranges)
    finally:
        sim.destroy_node()
        watcher.destroy_node()


@pytest.mark.parametrize('params, parameter', [
    ({}, 'cubes'),
    ({'cubes': ['a', 'a']}, 'cubes'),
    ({'cubes': ['a'], 'initial_poses': [1.0, 2.0]}, 'initial_poses'),
    ({'cubes': ['a'], 'mat': 'moon'}, 'mat'),
    ({'cubes': ['a'], 'firmware_version': '3.0.0'}, 'firmware_version'),
    ({'cubes': ['a'], 'physics_rate_hz': 0.0}, 'physics_rate_hz'),
    ({'cubes': ['a'], 'arena_layout': '/nonexistent.json'}, 'arena_layout'),
])
def test_bad_parameters_are_named(ros, params, parameter):
    with pytest.raises(MatSimError, match=f'parameter {parameter}:'):
        make_sim(ros, **params)


def test_motor_writes_50_ms_apart_are_not_lost_to_the_physics_step(ros, monkeypatch):
    """World time moves in 20 ms steps; a navigator writing every 50 ms lands 40 or 60 ms apart on that clock and
    must not be rejected by the firmware's ~45 ms rule (it was: 40 % of the commands were silently dropped).
    The firmware judges the time a write arrives: the last step's simulated time plus the wall time since."""
    class Wall:                                           # the node's wall clock, under the test's control
        now = 1000.0

        @staticmethod
        def monotonic() -> float:
            return Wall.now

    monkeypatch.setattr(mat_sim, 'time', Wall)
    sim = make_sim(ros, cubes=['cube1'], initial_poses=[150.0, 150.0, 0.0])
    try:
        assert sim.world.params.min_command_interval == 0.045     # the firmware's own rule, no workaround
        port = sim.ports[0]
        assert port.ensure_connected()
        cube = sim.firmware[0]
        motor = p.Characteristic.MOTOR_CONTROL
        Wall.now += 0.001
        cube.write(motor, bytes.fromhex('02 01 01 14 02 01 14 0a'))    # arrives at 1 ms (physics clock: 0)
        Wall.now += 0.039
        sim._step()       # private: the physics timer's callback, run by hand on the test's wall clock (40 ms)
        assert sim.world.time == pytest.approx(0.04)
        Wall.now += 0.011
        cube.write(motor, bytes.fromhex('02 01 01 15 02 01 15 0a'))    # 51 ms: 50 ms after the first
        assert cube.dropped_writes == 0
        Wall.now += 0.030
        cube.write(motor, bytes.fromhex('02 01 01 16 02 01 16 0a'))    # 30 ms after the second: ignored
        assert cube.dropped_writes == 1
    finally:
        sim.destroy_node()


def test_contact_tracker_reports_each_contact_once_when_it_starts():
    world = World([[100.0, 200.0, 0.0], [160.0, 200.0, 0.0], [300.0, 300.0, 0.0]])
    tracker = ContactTracker(world)
    world.set_wheels(0, 40, 40)                      # cube 0 drives east into cube 1, which stands still
    world.step(3.0)
    events = tracker.take()
    assert [(i, j) for _t, i, j, *_rest in events] == [(0, 1)]      # pushing on is the same contact
    t, _i, _j, x, y, approach = events[0]
    assert 0.0 < t < 3.0 and 100.0 < x < 200.0 and y == pytest.approx(200.0, abs=1.0)
    assert approach > 40.0                           # about 40 motor units x 2.07 units/s
    world.set_wheels(0, -40, -40, 0.5)               # back off, then come again: a second contact
    world.step(1.0)
    assert not tracker.take() and not tracker.touching.any()
    world.set_wheels(0, 40, 40)
    world.step(2.0)
    assert len(tracker.take()) == 1 and tracker.count == 2


def test_contacts_are_published_with_names_and_a_running_count(ros):
    sim = make_sim(ros, cubes=['cube1', 'cube2'], initial_poses=[150.0, 150.0, 0.0, 200.0, 150.0, 0.0])
    central = Central(ros, 'cube1')
    got: list = []
    watcher = Node('watcher', context=ros)
    watcher.create_subscription(msg.ContactEvent, '/mat_sim/contacts', got.append, BLE_QOS)
    ex = SingleThreadedExecutor(context=ros)
    for n in (sim, central, watcher):
        ex.add_node(n)
    try:
        assert spin_until(ex, lambda: sim.firmware[0].connected and watcher.count_publishers('/mat_sim/contacts'))
        central.write(p.Characteristic.MOTOR_CONTROL, bytes.fromhex('02 01 01 50 02 01 50 64'))   # 80 fwd, 1 s
        assert spin_until(ex, lambda: got)
        assert spin_until(ex, lambda: abs(sim.world.wheel_speed[0]).max() == 0.0, 5)
        ex.spin_once(timeout_sec=0.1)
        assert len(got) == 1 and sim.contacts.count == 1
        event = got[0]
        assert (event.cube_a, event.cube_b, event.count) == ('cube1', 'cube2', 1)
        assert event.header.frame_id == 'mat' and 0.0 < event.sim_time < 5.0 and event.approach_speed > 0.0
        assert 150.0 < event.x < 230.0 and event.y == pytest.approx(150.0, abs=2.0)
    finally:
        for n in (sim, central, watcher):
            n.destroy_node()

