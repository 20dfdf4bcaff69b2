"""The codec against a byte vector of every message (docs/ble_protocol.md), both directions, plus a decoder fuzz."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toio_navigator.cube import protocol as p
from toio_navigator.cube.protocol import Characteristic as C


def h(text: str) -> bytes:
    return bytes.fromhex(text)


# (characteristic, bytes, decoded notification)
NOTIFICATION_VECTORS = [
    (C.ID_INFORMATION, '01 c5 02 7f 01 32 01 bc 02 82 01 32 01', p.PositionId(709, 383, 306, 700, 386, 306)),
    (C.ID_INFORMATION, '01 62 00 8e 00 00 00 6b 00 92 00 00 00', p.PositionId(98, 142, 0, 107, 146, 0)),
    (C.ID_INFORMATION, '02 00 00 38 00 15 00', p.StandardId(3670016, 21)),
    (C.ID_INFORMATION, '03', p.PositionIdMissed()),
    (C.ID_INFORMATION, '04', p.StandardIdMissed()),
    (C.MOTOR_CONTROL, '83 00 00', p.TargetMoveResult(0, p.TargetResult.REACHED)),
    (C.MOTOR_CONTROL, '83 07 01', p.TargetMoveResult(7, p.TargetResult.TIMEOUT)),
    (C.MOTOR_CONTROL, '83 00 05', p.TargetMoveResult(0, p.TargetResult.REPLACED)),
    (C.MOTOR_CONTROL, '84 05 07', p.MultiTargetMoveResult(5, p.TargetResult.APPEND_REJECTED)),
    (C.MOTOR_CONTROL, 'e0 32 00', p.MotorSpeed(50, 0)),
    (C.SENSOR_INFORMATION, '01 01 00 00 01 00', p.MotionSensor(True, False, False, 1, 0)),
    (C.SENSOR_INFORMATION, '01 00 01', p.MotionSensor(False, True)),
    (C.SENSOR_INFORMATION, '03 01 b4 00 00 00 4e ff', p.PostureEuler(180, 0, -178)),
    (C.SENSOR_INFORMATION, '03 02 00 00 80 3f 00 00 00 00 00 00 00 00 00 00 00 00', p.PostureQuaternion(1.0, 0, 0, 0)),
    (C.SENSOR_INFORMATION, '03 03 00 00 34 43 00 00 00 00 00 00 00 00', p.PostureEulerFloat(180.0, 0.0, 0.0)),
    (C.SENSOR_INFORMATION, '03 03 00 00 48 c1 00 00 50 40 00 00 b4 42', p.PostureEulerFloat(-12.5, 3.25, 90.0)),
    (C.SENSOR_INFORMATION, '02 00 c8 fd 00 0a', p.MagneticSensor(0, 200, -3, 0, 10)),
    (C.BUTTON_INFORMATION, '01 80', p.ButtonState(True)),
    (C.BUTTON_INFORMATION, '01 00', p.ButtonState(False)),
    (C.BATTERY_INFORMATION, '50', p.BatteryLevel(80)),
    (C.CONFIGURATION, '81 00 32 2e 34 2e 30', p.ProtocolVersion('2.4.0')),
    (C.CONFIGURATION, '81 00 32 2e 35 2e 30', p.ProtocolVersion('2.5.0')),
    (C.CONFIGURATION, '9c 00 00', p.ConfigResponse(0x9C, 0)),
    (C.CONFIGURATION, 'b2 00 0c 00', p.CurrentConnectionInterval(12)),
    (C.CONFIGURATION, 'b4 00 00', p.ConfigResponse(0xB4, 0)),
    (C.CONFIGURATION, 'b1 00 08 00 50 00', p.RequestedConnectionInterval(8, 80)),
]


@pytest.mark.parametrize('char, text, message', NOTIFICATION_VECTORS)
def test_notification_vectors_round_trip(char, text, message):
    assert p.decode(char, h(text)) == message
    assert message.encode() == h(text)


# (bytes on the wire, the command) for every command (docs/ble_protocol.md §5-§9)
COMMAND_VECTORS = [
    ('01 01 01 32 02 02 14', p.MotorControl(50, -20)),
    ('02 01 01 32 02 02 14 0a', p.MotorControlTimed(50, -20, 10)),
    ('01 01 01 64 02 02 14', p.MotorControl(100, -20)),
    ('01 01 01 00 02 01 00', p.MotorControl(0, 0)),
    ('03 00 05 00 50 00 00 bc 02 82 01 5a 00', p.MotorTarget(0, p.Target(700, 386, 90, 0), 5, 0, 80, 0)),
    ('03 07 0a 02 64 03 00 c8 00 2c 01 00 a0', p.MotorTarget(7, p.Target(200, 300, 0, 5), 10, 2, 100, 3)),
    ('03 2a 00 01 32 00 00 ff ff fa 00 0e 21', p.MotorTarget(0x2A, p.Target(0xFFFF, 250, 270, 1), 0, 1, 50, 0)),
    ('03 01 05 00 28 00 00 fa 00 fa 00 5a 60', p.MotorTarget(1, p.Target(250, 250, 90, 3), 5, 0, 40, 0)),
    ('04 00 05 00 50 00 00 01 64 00 64 00 00 00 c8 00 64 00 5a 00 c8 00 c8 00 b4 00',
     p.MotorMultiTarget(0, (p.Target(100, 100, 0), p.Target(200, 100, 90), p.Target(200, 200, 180)),
                        5, 0, 80, 0, True)),
    ('05 32 05 0f 00 00 00 00 64', p.MotorAcceleration(50, 5, 15, False, False, 100)),
    ('05 50 0a 5a 00 01 00 01 00', p.MotorAcceleration(80, 10, -90, False, True, 0)),
    ('03 10 01 01 ff 00 00', p.LightOn(255, 0, 0, 16)),
    ('04 00 02 1e 01 01 00 ff 00 1e 01 01 00 00 ff', p.LightSequence(((30, 0, 255, 0), (30, 0, 0, 255)), 0)),
    ('01', p.LightsOff()),
    ('02 01 01', p.LightOff()),
    ('02 04 ff', p.SoundEffect(4, 255)),
    ('03 01 03 1e 3c ff 1e 3e ff 1e 40 ff', p.SoundMidi(((30, 60, 255), (30, 62, 255), (30, 64, 255)), 1)),
    ('01', p.SoundStop()),
    ('70 00 01 01 32 ff 80 00', p.LightSmoothBlink(255, 128, 0, 50, 0)),
    ('83 02', p.SensorRequest(0x83, 2)),
    ('81', p.SensorRequest(0x81)),
    ('01 00', p.ConfigWrite(0x01)),
    ('18 00 01 01', p.ConfigWrite(0x18, (1, 1))),
    ('18 00 05 ff', p.ConfigWrite(0x18, (5, 0xFF))),
    ('19 00 0a', p.ConfigWrite(0x19, (10,))),
    ('1c 00 01', p.ConfigWrite(0x1C, (1,))),
    ('1d 00 02 05 00', p.ConfigWrite(0x1D, (2, 5, 0))),
    ('1b 00 02 05 01', p.ConfigWrite(0x1B, (2, 5, 1))),
    ('30 00 08 00 50 00', p.ConfigWrite(0x30, (8, 80))),
    ('30 00 0c 00 18 00', p.ConfigWrite(0x30, (12, 24))),
    ('06 00 03', p.ConfigWrite(0x06, (3,))),
    ('05 00 14', p.ConfigWrite(0x05, (20,))),
    ('34 00 0a', p.ConfigWrite(0x34, (10,))),
]


@pytest.mark.parametrize('text, command', COMMAND_VECTORS)
def test_command_vectors_round_trip(text, command):
    assert command.encode() == h(text)
    assert p.decode_command(command.CHAR, h(text)) == command


def test_messages_built_with_named_arguments_match_the_vectors():
    assert p.MotorControl(50, -20).encode() == h('01 01 01 32 02 02 14')
    assert p.MotorControlTimed(50, -20, 10).encode() == h('02 01 01 32 02 02 14 0a')
    assert p.MotorTarget(0, p.Target(700, 386, 90), timeout_s=5, max_speed=80).encode() == h(
        '03 00 05 00 50 00 00 bc 02 82 01 5a 00')
    assert p.MotorAcceleration(50, acceleration=5, rotation_deg_s=15, duration_10ms=100).encode() == h(
        '05 32 05 0f 00 00 00 00 64')
    assert p.LightOn(255, 0, 0, 16).encode() == h('03 10 01 01 ff 00 00')
    assert p.SoundEffect(4).encode() == h('02 04 ff')
    assert p.ConfigWrite.request_protocol_version().encode() == h('01 00')
    assert p.ConfigWrite.id_notification(1, p.ID_ON_CHANGE).encode() == h('18 00 01 01')
    assert p.ConfigWrite.id_missed_sensitivity(10).encode() == h('19 00 0a')
    assert p.ConfigWrite.motor_speed_notification(True).encode() == h('1c 00 01')
    assert p.ConfigWrite.posture_notification(2, 5, 0).encode() == h('1d 00 02 05 00')
    assert p.ConfigWrite.magnetic_sensor(2, 5, 1).encode() == h('1b 00 02 05 01')
    assert p.ConfigWrite.connection_interval(8, 80).encode() == h('30 00 08 00 50 00')
    assert p.ConfigWrite.collision_threshold(3).encode() == h('06 00 03')
    assert p.ConfigWrite.horizontal_threshold(20).encode() == h('05 00 14')
    assert p.ConfigWrite.power_off(10).encode() == h('34 00 0a')


def test_swapped_motor_blocks_decode_to_the_same_command():
    assert p.decode_command('motor', h('01 02 02 14 01 01 32')) == p.MotorControl(50, -20)


def test_characteristics_resolve_from_uuid_name_and_short_name():
    assert p.characteristic('10B20102-5B3B-4571-9508-CF3EFCD7BBAE') is C.MOTOR_CONTROL
    assert p.characteristic('motor') is C.MOTOR_CONTROL
    assert p.characteristic('configuration') is C.CONFIGURATION
    with pytest.raises(p.ProtocolError):
        p.characteristic('10b20105-5b3b-4571-9508-cf3efcd7bbae')  # there is no ...05


@pytest.mark.parametrize('char, text', [
    ('motor', '01 01 01 32 01 02 14'),           # same motor id twice
    ('motor', '01 01 03 32 02 02 14'),           # direction 3
    ('motor', '02 01 01 32 02 02 14'),           # 0x02 without its duration byte
    ('motor', '04 00 05 00 50 00 00 00'),        # zero targets
    ('motor', '03 00 05 00 50 00 00 bc 02 82 01 5a e0'),  # angle mode 7
    ('config', '18 00 01 02'),                   # bad ID condition
    ('config', '30 00 05 00 50 00'),             # interval below 7.5 ms
    ('config', '05 01 14'),                      # reserved byte not 0
    ('light', '03 10 01'),
    ('sound', '02 0b ff'),                       # effect 11
    ('id', '01 00'),
    ('battery', '01'),
])
def test_invalid_writes_raise_protocol_error(char, text):
    with pytest.raises(p.ProtocolError):
        p.decode_command(char, h(text))


@pytest.mark.parametrize('char, text', [
    ('id', '01 c5 02 7f 01 32 01 bc 02 82 01 32'),  # one byte short
    ('id', '05'), ('id', ''), ('motor', '83 00'), ('motor', '01 00 00'),
    ('sensor', '01 01 00 00'), ('sensor', '03 04 00'), ('button', '01 01'), ('battery', '65'),
    ('config', '81 00 ff fe fd'), ('config', '81 00 32 2e 34'), ('light', '01'),
])
def test_bad_notifications_raise_protocol_error(char, text):
    with pytest.raises(p.ProtocolError):
        p.decode(char, h(text))


def test_bad_values_for_encoders_raise_protocol_error():
    for call in (lambda: p.MotorControl(300, 0).encode(), lambda: p.MotorControlTimed(10, 10, 256).encode(),
                 lambda: p.ConfigWrite.id_notification(1, 7).encode(),
                 lambda: p.MotorTarget(0, p.Target(70000, 0)).encode(),
                 lambda: p.ConfigWrite.connection_interval(1, 2).encode(), lambda: p.decode_command('motor', '01 00'),
                 lambda: p.BatteryLevel(101).encode(), lambda: p.PositionId(-1, 0, 0, 0, 0, 0).encode(),
                 lambda: p.ProtocolVersion('2.x').encode()):
        with pytest.raises(p.ProtocolError):
            call()
    assert issubclass(p.ProtocolError, ValueError)


def test_every_setting_command_is_a_config_write():
    for command in p.SETTING_COMMANDS:
        assert command in p.CONFIG_LAYOUTS


@settings(max_examples=400, deadline=None, derandomize=True)
@given(char=st.sampled_from(list(C)), data=st.binary(max_size=40))
def test_fuzz_decoders_raise_only_protocol_error(char, data):
    for decoder in (p.decode, p.decode_command):
        try:
            decoder(char, data)
        except p.ProtocolError:
            pass


@settings(max_examples=300, deadline=None, derandomize=True)
@given(char=st.sampled_from(list(C)), head=st.sampled_from([0x01, 0x02, 0x03, 0x04, 0x05, 0x18, 0x1b, 0x30, 0x81,
                                                           0x83, 0x84, 0xb1, 0xb2, 0xe0, 0xf0, 0x70]),
       data=st.binary(max_size=30))
def test_fuzz_with_valid_type_bytes_round_trips_or_raises_protocol_error(char, head, data):
    """Bytes that start with a known type byte: either a clean ProtocolError or a message that re-encodes."""
    payload = bytes((head,)) + data
    try:
        message = p.decode(char, payload)
    except p.ProtocolError:
        message = None
    if message is not None:
        assert p.decode(char, message.encode()) == message or message != message  # NaN floats
    try:
        command = p.decode_command(char, payload)
    except p.ProtocolError:
        return
    assert p.decode_command(char, command.encode()) == command
