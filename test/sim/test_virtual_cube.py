"""The virtual cube firmware, driven with the real bytes and judged by the real notifications."""
from __future__ import annotations

import math

import pytest

from toio_navigator.cube import protocol as p
from toio_navigator.cube.protocol import Characteristic as C
from toio_navigator.sim.virtual_cube import FirmwareParams, VirtualCubes, cube_name
from toio_navigator.sim.world import World, WorldParams


class Central:
    """A connected central that decodes and keeps every notification with its time."""

    def __init__(self, cubes: VirtualCubes, index: int = 0):
        self.cubes, self.cube, self.world = cubes, cubes[index], cubes.world
        self.log: list[tuple[float, p.Notification]] = []
        self.cube.connect()
        for char in (C.ID_INFORMATION, C.MOTOR_CONTROL, C.SENSOR_INFORMATION, C.BUTTON_INFORMATION,
                     C.BATTERY_INFORMATION, C.CONFIGURATION):
            self.cube.subscribe(char, lambda data, char=char: self.log.append((self.world.time, p.decode(char, data))))

    def write(self, char, data):
        self.cube.write(char, data)

    def of(self, kind):
        return [(t, m) for t, m in self.log if isinstance(m, kind)]


def setup(poses=((100, 250, 0),), version='2.4.0', params=None):
    world = World(list(poses), params=params)
    cubes = VirtualCubes(world, FirmwareParams(version=version))
    return world, cubes, Central(cubes)


def test_motor_with_duration_moves_103_units_then_stops():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorControlTimed(50, 50, 100).encode())
    world.step(0.1)
    assert world.x[0] == 100                     # the command delay: nothing happens for ~130 ms
    world.step(2.0)
    last = central.of(p.PositionId)[-1][1]
    assert 103.3 * 0.95 <= last.x - 100 <= 103.3 * 1.05
    world.step(1.0)
    assert central.of(p.PositionId)[-1][1].x == last.x


def test_motor_without_duration_runs_until_the_next_write():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorControl(30, 30).encode())
    world.step(3.0)
    moving = world.x[0]
    assert moving - 100 > 150
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())
    world.step(0.5)
    stopped = world.x[0]
    world.step(0.5)
    assert world.x[0] == stopped


def test_rotation_rate_seen_in_notifications():
    world, _, central = setup([(250, 250, 0)])
    central.write(C.MOTOR_CONTROL, p.MotorControlTimed(20, -20, 200).encode())
    world.step(0.6)
    t0, a0 = central.of(p.PositionId)[-1][0], central.of(p.PositionId)[-1][1].angle
    world.step(0.2)
    t1, a1 = central.of(p.PositionId)[-1][0], central.of(p.PositionId)[-1][1].angle
    rate = math.radians((a1 - a0) % 360) / (t1 - t0)
    assert rate == pytest.approx(40 * 2.0655 / 19.5225, rel=0.05)   # clockwise: the angle grows


def test_writes_closer_than_45_ms_are_ignored():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorControl(50, 50).encode())
    world.step(0.02)
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())     # 20 ms later: dropped
    world.step(1.0)
    assert world.x[0] > 150
    assert central.cube.dropped_writes == 1


def test_malformed_writes_are_dropped_silently():
    world, _, central = setup()
    for char, data in [(C.MOTOR_CONTROL, b'\x01\x01\x01\x32\x01\x02\x14'), (C.MOTOR_CONTROL, b''),
                       (C.CONFIGURATION, b'\x18\x00\x01\x07'), (C.LIGHT_CONTROL, b'\x03'), (C.SOUND_CONTROL, b'\xff')]:
        central.write(char, data)
    world.step(0.5)
    assert world.x[0] == 100
    assert central.cube.dropped_writes == 5
    assert not central.of(p.ConfigResponse)


def test_target_move_reaches_the_target_and_answers_once():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorTarget(42, p.Target(300, 150, 270), timeout_s=5, max_speed=80).encode())
    world.step(5.0)
    results = central.of(p.TargetMoveResult)
    assert [m for _, m in results] == [p.TargetMoveResult(42, p.TargetResult.REACHED)]
    final = central.of(p.PositionId)[-1][1]
    assert abs(final.x - 300) <= 15 and abs(final.y - 150) <= 15
    assert abs((final.angle - 270 + 180) % 360 - 180) <= 5


@pytest.mark.parametrize('movement_type, profile', [(0, 1), (1, 2), (2, 3)])
def test_every_movement_type_and_profile_arrives(movement_type, profile):
    world, _, central = setup([(100, 250, math.pi)])
    central.write(C.MOTOR_CONTROL, p.MotorTarget(1, p.Target(350, 400, 90, p.AngleMode.ABSOLUTE_POSITIVE), timeout_s=10,
                                                 max_speed=100, movement_type=movement_type,
                                                 speed_profile=profile).encode())
    world.step(10.5)
    assert [m.result for _, m in central.of(p.TargetMoveResult)] == [p.TargetResult.REACHED]


def test_target_move_error_codes():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorTarget(1, p.Target(400, 250), max_speed=5).encode())
    world.step(0.2)
    central.write(C.MOTOR_CONTROL, p.MotorTarget(2, p.Target(0xFFFF, 0xFFFF, 0, p.AngleMode.KEEP_HEADING)).encode())
    world.step(0.2)
    central.write(C.MOTOR_CONTROL, p.MotorTarget(3, p.Target(450, 450), timeout_s=1, max_speed=20).encode())
    world.step(1.3)
    central.write(C.MOTOR_CONTROL, p.MotorTarget(4, p.Target(400, 100), timeout_s=5).encode())
    world.step(0.3)
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())
    world.step(0.3)
    codes = [(m.control_id, m.result) for _, m in central.of(p.TargetMoveResult)]
    assert codes == [(1, p.TargetResult.NOT_SUPPORTED), (2, p.TargetResult.INVALID_PARAMETERS),
                     (3, p.TargetResult.TIMEOUT), (4, p.TargetResult.REPLACED)]


def test_target_move_reports_id_missed_when_lifted():
    world, _, central = setup()
    central.write(C.MOTOR_CONTROL, p.MotorTarget(9, p.Target(400, 250)).encode())
    world.step(0.5)
    world.lift(0)
    world.step(0.1)
    assert [(m.control_id, m.result) for _, m in central.of(p.TargetMoveResult)] == [(9, p.TargetResult.ID_MISSED)]


def test_multi_target_and_append_rejection():
    world, _, central = setup()
    targets = [p.Target(200, 250, 0), p.Target(200, 350, 90, p.AngleMode.ABSOLUTE_SHORTEST)]
    central.write(C.MOTOR_CONTROL, p.MotorMultiTarget(5, tuple(targets), timeout_s=5, max_speed=80).encode())
    world.step(0.1)
    central.write(C.MOTOR_CONTROL, p.MotorMultiTarget(6, (p.Target(100, 350, 180),), append=True).encode())
    world.step(0.1)
    central.write(C.MOTOR_CONTROL, p.MotorMultiTarget(7, (p.Target(100, 100, 0),), append=True).encode())
    world.step(12.0)
    results = [(m.control_id, m.result) for _, m in central.of(p.MultiTargetMoveResult)]
    assert results == [(7, p.TargetResult.APPEND_REJECTED), (5, p.TargetResult.REACHED), (6, p.TargetResult.REACHED)]
    assert abs(world.x[0] - 100) <= 15 and abs(world.y[0] - 350) <= 15


def test_id_notification_conditions_and_interval():
    world, cubes, central = setup()
    world.step(0.1)
    assert central.of(p.PositionId)                              # the first reading is always sent
    central.log.clear()
    world.step(0.6)                                              # at rest, balanced default pauses after 300 ms
    assert len(central.of(p.PositionId)) <= 16
    central.log.clear()
    world.step(0.5)
    assert not central.of(p.PositionId)
    central.write(C.CONFIGURATION, p.ConfigWrite.id_notification(5, p.ID_ALWAYS).encode())
    world.step(1.0)
    times = [t for t, _ in central.of(p.PositionId)]
    # sends fall on 20 ms physics steps, so a 50 ms minimum interval gives one every 60 ms
    assert 15 <= len(times) <= 20 and min(b - a for a, b in zip(times, times[1:])) >= 0.05 - 1e-9
    assert central.of(p.ConfigResponse)[-1][1] == p.ConfigResponse(0x98, 0)
    central.write(C.CONFIGURATION, p.ConfigWrite.id_notification(1, p.ID_ON_CHANGE).encode())
    central.log.clear()
    world.step(1.0)
    assert not central.of(p.PositionId)                          # nothing changes by 2 units or 3 degrees


def test_missed_after_the_sensitivity_and_back_on_the_mat():
    world, _, central = setup()
    world.step(0.1)
    world.lift(0)
    lifted_at = world.time
    world.step(0.5)
    missed = central.of(p.PositionIdMissed)
    assert len(missed) == 1 and missed[0][0] - lifted_at >= 0.07 - 1e-9
    world.place(0, 200, 200, 0)
    world.step(0.1)
    back = [m for t, m in central.of(p.PositionId) if t > missed[0][0]]
    assert back and back[0].x == 200 and back[0].y == 200
    assert central.cube.read(C.ID_INFORMATION)[0] == 0x01


def test_settings_are_forgotten_on_disconnect_and_a_disconnected_cube_stops():
    world, cubes, central = setup()
    central.write(C.CONFIGURATION, p.ConfigWrite.motor_speed_notification(True).encode())
    central.write(C.MOTOR_CONTROL, p.MotorControl(40, 40).encode())
    world.step(0.5)
    assert central.of(p.MotorSpeed)
    central.cube.disconnect()
    world.step(0.5)
    assert world.wheel_speed[0].max() == 0
    again = Central(cubes)
    again.write(C.MOTOR_CONTROL, p.MotorControl(40, 40).encode())
    world.step(0.5)
    assert not again.of(p.MotorSpeed)
    assert cubes.id_condition[0] == p.ID_BALANCED


def test_events_button_battery_collision_and_requests():
    world, _, central = setup([(200, 250, 0), (240, 250, math.pi)])
    world.press_button(0)
    world.step(0.04)
    world.press_button(0, False)
    world.set_battery(0, 57)
    world.step(5.1)
    assert [m.pressed for _, m in central.of(p.ButtonState)] == [True, False]
    assert p.BatteryLevel(50) in [m for _, m in central.of(p.BatteryLevel)]
    central.write(C.MOTOR_CONTROL, p.MotorControl(100, 100).encode())
    world.step(1.0)
    motions = [m for _, m in central.of(p.MotionSensor)]
    assert any(m.collision for m in motions) and not motions[-1].collision
    central.write(C.SENSOR_INFORMATION, p.SensorRequest(0x83, 1).encode())
    central.write(C.CONFIGURATION, p.ConfigWrite.request_connection_interval().encode())
    assert isinstance(central.log[-2][1], p.PostureEuler)
    assert central.log[-1][1] == p.CurrentConnectionInterval(12)


def test_acceleration_command_turns_at_the_requested_rate():
    world, _, central = setup([(250, 250, 0)])
    central.write(C.MOTOR_CONTROL, p.MotorAcceleration(0, rotation_deg_s=180, duration_10ms=200).encode())
    world.step(0.6)
    start = world.theta[0]
    world.step(0.5)
    rate = math.degrees((world.theta[0] - start) % (2 * math.pi)) / 0.5
    assert rate == pytest.approx(180, rel=0.05)


def test_protocol_version_and_old_firmware():
    world, _, central = setup(version='2.0.0', params=WorldParams(dead_zone=10, max_motor=100))
    central.write(C.CONFIGURATION, p.ConfigWrite.request_protocol_version().encode())
    assert central.log[-1][1] == p.ProtocolVersion('2.0.0')
    central.write(C.MOTOR_CONTROL, p.MotorTarget(1, p.Target(300, 250)).encode())      # 0x03 does not exist in 2.0.0
    central.write(C.SENSOR_INFORMATION, b'\x81')                            # nor sensor requests
    world.step(1.0)
    assert not central.of(p.TargetMoveResult) and world.x[0] == 100
    world.set_posture(0, 2)
    world.step(0.04)
    assert central.of(p.MotionSensor)[-1][1] == p.MotionSensor(False, False)   # the 3-byte form


def test_power_off_answers_then_disconnects():
    world, cubes, central = setup(version='2.5.0')
    central.write(C.CONFIGURATION, p.ConfigWrite.power_off(1).encode())
    assert central.log[-1][1] == p.ConfigResponse(0xB4, 0)
    world.step(1.1)
    assert not central.cube.connected and not central.cube.powered
    with pytest.raises(ConnectionRefusedError):
        central.cube.connect()


def test_names_and_lookup():
    world = World([[100, 100, 0]] * 3)
    cubes = VirtualCubes(world)
    assert cube_name(0).startswith('toio-') and len(cube_name(0)) == 8
    assert len({c.name for c in cubes.cubes}) == 3
    assert cubes.by_name(cubes[2].name[-3:]) is cubes[2]
    with pytest.raises(KeyError):
        cubes.by_name('zzz')


def test_periodic_posture_and_magnet_notifications_follow_their_settings():
    world, _, central = setup([(250, 250, 0)])
    central.write(C.CONFIGURATION, p.ConfigWrite.posture_notification(2, 10, 0).encode())      # quaternion every 100 ms
    central.write(C.CONFIGURATION, p.ConfigWrite.magnetic_sensor(2, 10, 0).encode())           # force every 200 ms
    central.write(C.MOTOR_CONTROL, p.MotorControl(30, -30).encode())
    world.step(1.0)
    quaternions = central.of(p.PostureQuaternion)
    magnets = central.of(p.MagneticSensor)
    assert 9 <= len(quaternions) <= 11 and 4 <= len(magnets) <= 6
    assert magnets[0][1] == p.MagneticSensor(0, 0, 0, 0, 0)
    w, z = quaternions[-1][1].w, quaternions[-1][1].z
    assert w * w + z * z == pytest.approx(1.0, abs=1e-5) and abs(z) > 0.05     # the yaw turned
    central.write(C.CONFIGURATION, p.ConfigWrite.posture_notification(2, 0, 0).encode())      # interval 0 = off
    central.log.clear()
    world.step(0.5)
    assert not central.of(p.PostureQuaternion)


def test_a_protocol_2_3_cube_ignores_quaternion_settings():
    world, cubes, central = setup(version='2.3.0')
    central.write(C.CONFIGURATION, p.ConfigWrite.posture_notification(2, 10, 0).encode())
    central.write(C.CONFIGURATION, p.ConfigWrite.posture_notification(1, 10, 0).encode())
    world.step(0.5)
    assert not central.of(p.PostureQuaternion) and central.of(p.PostureEuler)
    assert central.cube.dropped_writes == 1


class WallClock:
    """A host clock finer than the physics step: the simulated time at which a write arrives."""

    def __init__(self, world: World):
        self.world, self.offset = world, 0.0

    def __call__(self) -> float:
        return self.world.time + self.offset


def test_the_45_ms_rule_is_judged_on_arrival_times_not_on_the_20_ms_physics_steps():
    world = World([(100, 250, 0)])
    clock = WallClock(world)
    cubes = VirtualCubes(world, arrival_clock=clock)
    central = Central(cubes)
    # writes 50 ms apart (a 20 Hz navigator) that arrive 1 ms and 11 ms after a physics step: on the step clock
    # they would be 40 ms apart and the second one dropped
    clock.offset = 0.001
    central.write(C.MOTOR_CONTROL, p.MotorControl(50, 50).encode())     # arrives at 1 ms (step clock: 0 ms)
    world.step(0.04)
    clock.offset = 0.011
    central.write(C.MOTOR_CONTROL, p.MotorControl(-50, -50).encode())   # 51 ms (step clock: 40 ms)
    assert central.cube.dropped_writes == 0
    clock.offset = 0.011 + 0.030
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())       # 30 ms after the second: too soon
    assert central.cube.dropped_writes == 1
    world.step(1.0)
    assert world.x[0] < 100                                    # the accepted reverse command won


def test_on_the_plain_step_clock_writes_two_steps_apart_are_still_dropped():
    world, _, central = setup()        # no arrival clock: a write arrives at world.time
    central.write(C.MOTOR_CONTROL, p.MotorControl(50, 50).encode())
    world.step(0.04)
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())       # 40 ms: too soon
    world.step(0.02)
    central.write(C.MOTOR_CONTROL, p.MotorControl(0, 0).encode())       # 60 ms: accepted
    assert central.cube.dropped_writes == 1


def test_the_command_delay_counts_from_the_arrival_time():
    world = World([(100, 250, 0)], params=WorldParams(command_delay=0.05))
    clock = WallClock(world)
    central = Central(VirtualCubes(world, arrival_clock=clock))
    clock.offset = 0.015                  # arrives 15 ms after t = 0: acts at the first step at or after 65 ms
    central.write(C.MOTOR_CONTROL, p.MotorControl(50, 50).encode())
    world.step(0.06)
    assert world.x[0] == 100              # steps at 0, 20, 40 ms: not yet (a step-clock firmware acts at 60 ms)
    world.step(0.04)
    assert world.x[0] > 100
