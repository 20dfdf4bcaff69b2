"""The toio Core Cube BLE protocol as pure data: characteristics, commands, notifications and their bytes.

Everything a driver writes is a *command* dataclass, everything a cube sends (notification or read) is a
*notification* dataclass. Every message encodes itself (``message.encode()``) and decodes itself
(``Class.decode(data)``); when only the characteristic is known, :func:`decode` (notifications and reads) and
:func:`decode_command` (writes) find the message by its type byte. So the driver (encode commands, decode
notifications) and the virtual cube firmware (decode commands, encode notifications) share one codec and cannot
disagree about a byte. Layouts follow docs/ble_protocol.md (toio BLE protocol v2.0.0-v2.5.0): little-endian,
type byte first, exact lengths. One module per characteristic; import the messages from here::

    from toio_navigator.cube import protocol as p
    p.MotorControlTimed(50, -20, 10).encode()                  # b'\x02\x01\x01\x32\x02\x02\x14\x0a'
    p.ConfigWrite.id_notification(1, p.ID_ON_CHANGE).encode()
    p.decode(p.Characteristic.ID_INFORMATION, data)             # -> p.PositionId(...), p.PositionIdMissed(), ...

Errors: any malformed, short, over-long, out-of-range or unknown input raises :class:`ProtocolError` and nothing
else -- the decoders are fuzzed for that.
"""
from toio_navigator.cube.protocol.battery import BatteryLevel
from toio_navigator.cube.protocol.button import ButtonState
from toio_navigator.cube.protocol.codec import Command, Notification, decode, decode_command
from toio_navigator.cube.protocol.common import (
                                                 PROPERTIES,
                                                 SERVICE_UUID,
                                                 Characteristic,
                                                 CharLike,
                                                 Property,
                                                 ProtocolError,
                                                 characteristic,
                                                 parse_version,
)
from toio_navigator.cube.protocol.configuration import (
                                                 CONFIG_LAYOUTS,
                                                 CONFIG_RESPONSES,
                                                 ID_ALWAYS,
                                                 ID_BALANCED,
                                                 ID_ON_CHANGE,
                                                 SETTING_COMMANDS,
                                                 ConfigCommand,
                                                 ConfigResponse,
                                                 ConfigWrite,
                                                 CurrentConnectionInterval,
                                                 ProtocolVersion,
                                                 RequestedConnectionInterval,
                                                 SerializedInfo,
)
from toio_navigator.cube.protocol.id_information import PositionId, PositionIdMissed, StandardId, StandardIdMissed
from toio_navigator.cube.protocol.light import LightOff, LightOn, LightSequence, LightSmoothBlink, LightsOff
from toio_navigator.cube.protocol.motor import (
                                                 KEEP_COORDINATE,
                                                 MAX_MULTI_TARGETS,
                                                 MOTOR_LEFT,
                                                 MOTOR_RIGHT,
                                                 AngleMode,
                                                 MotorAcceleration,
                                                 MotorControl,
                                                 MotorControlTimed,
                                                 MotorMultiTarget,
                                                 MotorSpeed,
                                                 MotorTarget,
                                                 MultiTargetMoveResult,
                                                 Target,
                                                 TargetMoveResult,
                                                 TargetResult,
)
from toio_navigator.cube.protocol.sensor import (
                                                 MagneticSensor,
                                                 MotionSensor,
                                                 PostureEuler,
                                                 PostureEulerFloat,
                                                 PostureQuaternion,
                                                 SensorRequest,
                                                 SensorRequestKind,
)
from toio_navigator.cube.protocol.sound import SoundEffect, SoundMidi, SoundStop

__all__ = [
    # common
    'ProtocolError', 'SERVICE_UUID', 'Characteristic', 'CharLike', 'Property', 'PROPERTIES', 'characteristic',
    'parse_version',
    # decoding by characteristic
    'Command', 'Notification', 'decode', 'decode_command',
    # motor
    'MOTOR_LEFT', 'MOTOR_RIGHT', 'KEEP_COORDINATE', 'MAX_MULTI_TARGETS', 'AngleMode', 'Target', 'MotorControl',
    'MotorControlTimed', 'MotorTarget', 'MotorMultiTarget', 'MotorAcceleration', 'TargetResult', 'TargetMoveResult',
    'MultiTargetMoveResult', 'MotorSpeed',
    # light, sound
    'LightOn', 'LightSequence', 'LightsOff', 'LightOff', 'LightSmoothBlink', 'SoundEffect', 'SoundMidi', 'SoundStop',
    # sensor
    'SensorRequestKind', 'SensorRequest', 'MotionSensor', 'MagneticSensor', 'PostureEuler', 'PostureQuaternion',
    'PostureEulerFloat',
    # ID, button, battery
    'PositionId', 'StandardId', 'PositionIdMissed', 'StandardIdMissed', 'ButtonState', 'BatteryLevel',
    # configuration
    'ConfigCommand', 'ConfigWrite', 'CONFIG_LAYOUTS', 'SETTING_COMMANDS', 'ID_ALWAYS', 'ID_ON_CHANGE', 'ID_BALANCED',
    'ProtocolVersion', 'CONFIG_RESPONSES', 'ConfigResponse', 'RequestedConnectionInterval',
    'CurrentConnectionInterval', 'SerializedInfo',
]
