"""Decoding by characteristic: which message a write or a notification is, from the characteristic and its type
byte. (Encoding needs no dispatch: every message encodes itself.)"""
from __future__ import annotations

from typing import Callable, Union

from toio_navigator.cube.protocol.battery import BatteryLevel
from toio_navigator.cube.protocol.button import ButtonState
from toio_navigator.cube.protocol.common import Characteristic, CharLike, ProtocolError, as_bytes, characteristic, check
from toio_navigator.cube.protocol.configuration import (
    CONFIG_LAYOUTS,
    CONFIG_RESPONSES,
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
    MotorAcceleration,
    MotorControl,
    MotorControlTimed,
    MotorMultiTarget,
    MotorSpeed,
    MotorTarget,
    MultiTargetMoveResult,
    TargetMoveResult,
)
from toio_navigator.cube.protocol.sensor import (
    MagneticSensor,
    MotionSensor,
    PostureEuler,
    PostureEulerFloat,
    PostureQuaternion,
    SensorRequest,
    decode_posture,
)
from toio_navigator.cube.protocol.sound import SoundEffect, SoundMidi, SoundStop

Command = Union[MotorControl, MotorControlTimed, MotorTarget, MotorMultiTarget, MotorAcceleration, LightOn,
                LightSequence, LightsOff, LightOff, LightSmoothBlink, SoundEffect, SoundMidi, SoundStop,
                SensorRequest, ConfigWrite]

Notification = Union[PositionId, StandardId, PositionIdMissed, StandardIdMissed, TargetMoveResult,
                     MultiTargetMoveResult, MotorSpeed, MotionSensor, MagneticSensor, PostureEuler, PostureQuaternion,
                     PostureEulerFloat, ButtonState, BatteryLevel, ProtocolVersion, ConfigResponse,
                     RequestedConnectionInterval, CurrentConnectionInterval, SerializedInfo]

_COMMANDS_BY_CHAR: dict[Characteristic, dict[int, type]] = {
    Characteristic.MOTOR_CONTROL: {c.TYPE: c for c in (MotorControl, MotorControlTimed, MotorTarget, MotorMultiTarget,
                                                       MotorAcceleration)},
    Characteristic.LIGHT_CONTROL: {c.TYPE: c for c in (LightsOff, LightOff, LightOn, LightSequence, LightSmoothBlink)},
    Characteristic.SOUND_CONTROL: {c.TYPE: c for c in (SoundStop, SoundEffect, SoundMidi)},
    Characteristic.SENSOR_INFORMATION: {k: SensorRequest for k in (0x81, 0x82, 0x83)},
    Characteristic.CONFIGURATION: {k: ConfigWrite for k in CONFIG_LAYOUTS},
}


def decode_command(char: CharLike, data: bytes) -> Command:
    """Parse bytes written to a characteristic (the virtual cube's side). Raises ProtocolError if invalid."""
    data = as_bytes(data)
    table = _COMMANDS_BY_CHAR.get(characteristic(char))
    check(table is not None, f'{characteristic(char).name} is not writable')
    check(len(data) >= 1, 'empty write')
    cls = table.get(data[0])  # type: ignore[union-attr]
    check(cls is not None, f'unknown command 0x{data[0]:02x} on {characteristic(char).name}')
    return cls.decode(data)


def _by_type(what: str, decoders: dict[int, Callable[[bytes], Notification]]) -> Callable[[bytes], Notification]:
    def decode_typed(data: bytes) -> Notification:
        decoder = decoders.get(data[0])
        if decoder is None:
            raise ProtocolError(f'unknown {what} type 0x{data[0]:02x}')
        return decoder(data)
    return decode_typed


_DECODERS: dict[Characteristic, Callable[[bytes], Notification]] = {
    Characteristic.ID_INFORMATION: _by_type('ID information', {
        c.TYPE: c.decode for c in (PositionId, StandardId, PositionIdMissed, StandardIdMissed)}),
    Characteristic.MOTOR_CONTROL: _by_type('motor notification', {
        c.TYPE: c.decode for c in (TargetMoveResult, MultiTargetMoveResult, MotorSpeed)}),
    Characteristic.SENSOR_INFORMATION: _by_type('sensor notification', {
        0x01: MotionSensor.decode, 0x02: MagneticSensor.decode, 0x03: decode_posture}),
    Characteristic.BUTTON_INFORMATION: _by_type('button notification', {0x01: ButtonState.decode}),
    Characteristic.BATTERY_INFORMATION: BatteryLevel.decode,      # one byte, no type
    Characteristic.CONFIGURATION: _by_type('configuration notification', {
        **{c.TYPE: c.decode for c in (ProtocolVersion, RequestedConnectionInterval, CurrentConnectionInterval,
                                      SerializedInfo)},
        **{kind: ConfigResponse.decode for kind in CONFIG_RESPONSES}}),
}


def decode(char: CharLike, data: bytes) -> Notification:
    """Decode a notification or read from a characteristic (UUID, name or Characteristic)."""
    if type(data) is not bytes:
        data = as_bytes(data)
    resolved = char if type(char) is Characteristic else characteristic(char)
    decoder = _DECODERS.get(resolved)  # type: ignore[arg-type]
    if decoder is None or not data:
        raise ProtocolError(f'{resolved.name} sends no notifications' if decoder is None
                            else f'empty notification on {resolved.name}')
    return decoder(data)
