"""The unchanged cube_driver node with transport "ble": real bleak, real D-Bus, the virtual BlueZ, over real DDS.

One virtual BlueZ (three cubes on one adapter) and three driver processes serve the whole module: cube1 found by
its 3-character id, cube2 by its address, cube9 looking for an id no cube advertises. The vanishing test runs
last because it takes cube1's cube away and brings it back.
"""
from __future__ import annotations

import math
import time

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from sensor_msgs.msg import Imu  # noqa: E402
from std_msgs.msg import ColorRGBA, UInt8  # noqa: E402

from conftest import next_domain_id, ros_env  # noqa: E402
from support.bluez_rig import CALM, Probe, needs_dbus_daemon, start_driver, stop  # noqa: E402
from support.lifecycle_probe import bad_lines  # noqa: E402
from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.nodes.cube_driver import LATCHED  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402

pytestmark = [needs_dbus_daemon, pytest.mark.ros]

C = p.Characteristic
POSES = [(100.0, 250.0, 0.0), (250.0, 120.0, math.pi / 2), (400.0, 400.0, 0.0)]


class Rig:
    def __init__(self) -> None:
        self.host = BluezHost(POSES, radio=CALM)
        self.host.start()
        self.cube1_id = self.host.bluez.links[0].name.split('-')[1]        # e.g. 'a0a'
        self.cube2_address = self.host.bluez.links[1].address
        env = self.host.environment(ros_env(next_domain_id()))
        self.probe = Probe(int(env['ROS_DOMAIN_ID']))
        self.state = {c: self.probe.collect(msg.CubeState, f'/{c}/state') for c in ('cube1', 'cube2')}
        self.link = {c: self.probe.collect(msg.LinkStatus, f'/{c}/link_state', LATCHED)
                     for c in ('cube1', 'cube2', 'cube9')}
        self.drivers = {
            'cube1': start_driver('cube1', env, ble_name=self.cube1_id),
            'cube2': start_driver('cube2', env, ble_address=self.cube2_address),
            'cube9': start_driver('cube9', env, ble_name='Zz9', ble_scan_timeout_s=1.0, reconnect_max_attempts=1),
        }

    def connected(self, cube: str) -> bool:
        return bool(self.link[cube]) and self.link[cube][-1].state == msg.LinkStatus.CONNECTED \
            and self.link[cube][-1].firmware_version != ''

    def writes(self, index: int, char: C, since: float = 0.0) -> list:
        return [w for w in self.host.writes(index) if w.char is char and w.time >= since]

    def close(self) -> dict[str, str]:
        errors = {name: stop(proc) for name, proc in self.drivers.items()}
        self.probe.close()
        self.host.stop()
        return errors


@pytest.fixture(scope='module')
def rig():
    rig = Rig()
    yield rig
    errors = rig.close()
    for name, err in errors.items():
        assert not bad_lines(err), f'{name}: {err[-3000:]}'


def test_found_by_id_it_connects_reports_the_firmware_and_publishes_the_true_pose(rig):
    # the first wait includes starting three driver processes and DDS discovery
    assert rig.probe.spin_until(lambda: rig.connected('cube1') and rig.state['cube1'], 60), \
        f'cube1 never connected: {rig.link["cube1"][-1:]}'
    assert rig.link['cube1'][-1].firmware_version == '2.4.0'
    # states published while the firmware was still being read say CONNECTING; the next one says CONNECTED
    assert rig.probe.spin_until(
        lambda: rig.state['cube1'][-1].link_state == msg.CubeState.LINK_CONNECTED, 5), rig.state['cube1'][-1]
    state = rig.state['cube1'][-1]
    assert (state.x, state.y, state.on_mat) == (pytest.approx(100.0, abs=1.0), pytest.approx(250.0, abs=1.0), True)
    # the driver subscribed and configured through GATT: 50 Hz positions, always (the driver's settings)
    assert rig.probe.spin_until(
        lambda: bytes.fromhex('18 00 02 00') in [w.data for w in rig.writes(0, C.CONFIGURATION)], 5)


def test_found_by_address_it_connects_to_that_cube(rig):
    # a state published on the link's change before the first position has no pose yet (on_mat false): wait for
    # a position
    assert rig.probe.spin_until(lambda: rig.connected('cube2') and any(s.on_mat for s in rig.state['cube2']), 30), \
        f'cube2 never connected: {rig.link["cube2"][-1:]}'
    state = next(s for s in reversed(rig.state['cube2']) if s.on_mat)
    assert (state.x, state.y) == (pytest.approx(250.0, abs=1.0), pytest.approx(120.0, abs=1.0))
    assert state.theta == pytest.approx(math.pi / 2, abs=0.02)


def test_a_cube_that_never_advertises_ends_in_a_clear_timeout_error(rig):
    assert rig.probe.spin_until(lambda: rig.link['cube9'] and rig.link['cube9'][-1].state == msg.LinkStatus.FAILED,
                                30), rig.link['cube9'][-1:]
    detail = rig.link['cube9'][-1].detail
    assert "no toio cube advertising with 'Zz9' in its name within 1.0 s" in detail


def test_motor_light_and_sound_bytes_reach_the_virtual_cube_with_their_write_types(rig):
    assert rig.probe.spin_until(lambda: rig.connected('cube1'), 30)
    motor = rig.probe.publisher(msg.MotorCommand, '/cube1/motor_cmd')
    light = rig.probe.publisher(ColorRGBA, '/cube1/light')
    sound = rig.probe.publisher(UInt8, '/cube1/sound/effect')
    assert rig.probe.spin_until(lambda: all(x.get_subscription_count() for x in (motor, light, sound)), 10)
    x0 = rig.host.poses()[0, 0]
    for _ in range(6):
        motor.publish(msg.MotorCommand(left=60, right=60, duration_ms=300))
        rig.probe.spin_for(0.1)
    light.publish(ColorRGBA(r=0.0, g=1.0, b=0.0, a=1.0))
    sound.publish(UInt8(data=3))
    expected = {C.MOTOR_CONTROL: (bytes.fromhex('02 01 01 3c 02 01 3c 1e'), 'command'),
                C.LIGHT_CONTROL: (p.LightOn(0, 255, 0, 0).encode(), 'request'),
                C.SOUND_CONTROL: (p.SoundEffect(3, 255).encode(), 'request')}
    assert rig.probe.spin_until(
        lambda: all((data, kind) in [(w.data, w.kind) for w in rig.writes(0, char)]
                    for char, (data, kind) in expected.items()), 10), \
        {char.name: rig.writes(0, char)[-2:] for char in expected}
    # the cube drove along +x, and once it stops (its commands run out) its driver's state agrees with the truth
    assert rig.probe.spin_until(lambda: rig.state['cube1'][-1].x > x0 + 30, 10)
    assert rig.probe.spin_until(lambda: abs(rig.host.poses()[0, 0] - rig.state['cube1'][-1].x) < 2.0, 10), \
        (rig.host.poses()[0], rig.state['cube1'][-1].x)


def test_imu_notifications_and_a_move_to_pose_answered_by_the_firmware(rig):
    assert rig.probe.spin_until(lambda: rig.connected('cube2'), 30)
    imu = rig.probe.collect(Imu, '/cube2/imu')
    results = rig.probe.collect(msg.MoveToPoseResult, '/cube2/move_to_pose/result')
    goal = rig.probe.publisher(msg.MoveToPose, '/cube2/move_to_pose')
    assert rig.probe.spin_until(lambda: imu and goal.get_subscription_count(), 10)
    assert imu[-1].header.frame_id == 'cube2/base_link'
    goal.publish(msg.MoveToPose(goal_id=7, x=250.0, y=170.0, theta=math.pi / 2, max_speed=60,
                                angle_mode=msg.MoveToPose.ANGLE_SHORTEST, timeout_s=8.0))
    assert rig.probe.spin_until(lambda: results, 20)
    assert (results[-1].goal_id, results[-1].result) == (7, msg.MoveToPoseResult.REACHED), results[-1].text
    assert rig.writes(1, C.MOTOR_CONTROL)[-1].data[0] == 0x03            # the firmware's own target move
    assert rig.probe.spin_until(lambda: abs(rig.state['cube2'][-1].y - 170.0) <= 15.0, 5)


def test_a_vanishing_cube_stops_its_driver_reconnects_with_backoff_and_resends_the_settings(rig):
    assert rig.probe.spin_until(lambda: rig.connected('cube1'), 30)
    motor = rig.probe.publisher(msg.MotorCommand, '/cube1/motor_cmd')
    assert rig.probe.spin_until(lambda: motor.get_subscription_count(), 10)
    motor.publish(msg.MotorCommand(left=30, right=30, duration_ms=2500))
    assert rig.probe.spin_until(lambda: rig.host.call(lambda: abs(rig.host.world.wheel_speed[0]).max()) > 10, 5)
    reconnects = rig.link['cube1'][-1].reconnects

    rig.host.vanish(0)              # out of range: the link drops and BlueZ forgets the device
    # the cube stopped with its link, with most of its 2.5 s command still to run
    assert rig.host.call(lambda: not rig.host.world.wheel_command[0].any())
    assert rig.probe.spin_until(lambda: rig.link['cube1'][-1].state == msg.LinkStatus.RECONNECTING, 5)
    assert rig.probe.spin_until(lambda: rig.state['cube1'][-1].link_state == msg.CubeState.LINK_RECONNECTING, 5)

    rig.probe.spin_for(1.5)         # the driver retries (scanning for the address) while the cube is away
    back = time.monotonic()
    rig.host.reappear(0)
    assert rig.probe.spin_until(lambda: rig.connected('cube1') and rig.link['cube1'][-1].reconnects > reconnects,
                                20), rig.link['cube1'][-1]
    # the cube forgot its settings when the link dropped; it got them again (50 Hz positions, always)
    resent = [w.data for w in rig.writes(0, C.CONFIGURATION, since=back)]
    assert bytes.fromhex('18 00 02 00') in resent
    assert rig.probe.spin_until(lambda: rig.host.call(lambda: rig.host.firmware.id_interval[0]) == 0.02, 5)
    count = len(rig.state['cube1'])
    assert rig.probe.spin_until(lambda: len(rig.state['cube1']) > count + 10, 5)      # poses flow again
