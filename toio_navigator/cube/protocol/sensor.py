"""Sensor information characteristic: requests for one reading (0x81 motion, 0x82 magnet, 0x83 posture) and the
notifications: motion (0x01), magnet (0x02) and posture angles (0x03 with sub-type 1 Euler, 2 quaternion, 3 float
Euler)."""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, FixedLayout, check, encodes, hex_bytes, unpack


class SensorRequestKind(enum.IntEnum):
    MOTION = 0x81
    MAGNETIC = 0x82
    POSTURE = 0x83


@dataclass(frozen=True)
class SensorRequest:
    """Sensor 0x81 / 0x82 / 0x83 tt: ask for one motion, magnet or posture notification (tt = posture kind 1..3)."""
    kind: int
    posture_kind: int = 1
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION

    def encode(self) -> bytes:
        check(self.kind in tuple(SensorRequestKind), f'unknown sensor request {self.kind!r}')
        if self.kind == SensorRequestKind.POSTURE:
            check(self.posture_kind in (1, 2, 3), f'posture kind must be 1..3, got {self.posture_kind!r}')
            return bytes((self.kind, self.posture_kind))
        return bytes((self.kind,))

    @classmethod
    def decode(cls, data: bytes) -> 'SensorRequest':
        if len(data) == 1 and data[0] in (0x81, 0x82):
            return cls(data[0])
        check(len(data) == 2 and data[0] == 0x83 and data[1] in (1, 2, 3),
              f'sensor request: bad bytes {hex_bytes(data)}')
        return cls(0x83, data[1])


# notifications

@dataclass(frozen=True)
class MotionSensor:
    """Sensor 0x01. Fields added by later firmware are None when the cube sent the shorter form."""
    horizontal: bool
    collision: bool
    double_tap: bool | None = None
    posture: int | None = None   # 1 top up .. 6 left side up
    shake: int | None = None     # 0 none, 1..10
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x01

    @encodes
    def encode(self) -> bytes:
        optional = (self.double_tap, self.posture, self.shake)
        present = [v for v in optional if v is not None]
        check(optional[:len(present)] == tuple(present) and len(present) in (0, 2, 3),
              'motion: give double_tap and posture together, shake only with both')
        return bytes((0x01, 1 if self.horizontal else 0, 1 if self.collision else 0, *[int(v) for v in present]))

    @classmethod
    def decode(cls, data: bytes) -> 'MotionSensor':
        check(len(data) in (3, 5, 6) and data[0] == 0x01, f'motion: expected 3, 5 or 6 bytes, got {hex_bytes(data)}')
        check(data[1] in (0, 1) and data[2] in (0, 1), f'motion: bad flags {hex_bytes(data)}')
        if len(data) == 3:
            return cls(data[1] == 1, data[2] == 1)
        check(data[3] in (0, 1) and 1 <= data[4] <= 6, f'motion: bad double-tap/posture {hex_bytes(data)}')
        shake = None
        if len(data) == 6:
            check(data[5] <= 10, f'motion: shake level {data[5]} > 10')
            shake = data[5]
        return cls(data[1] == 1, data[2] == 1, data[3] == 1, data[4], shake)


@dataclass(frozen=True)
class MagneticSensor:
    """Sensor 0x02: magnet state; strength and direction are None in the 2-byte (v2.2.0) form."""
    state: int
    strength: int | None = None
    x: int | None = None
    y: int | None = None
    z: int | None = None
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x02

    @encodes
    def encode(self) -> bytes:
        if self.strength is None:
            return bytes((0x02, self.state))
        return struct.pack('<BBBbbb', 0x02, self.state, self.strength, self.x, self.y, self.z)

    @classmethod
    def decode(cls, data: bytes) -> 'MagneticSensor':
        check(len(data) >= 1 and data[0] == 0x02, f'magnet: bad bytes {hex_bytes(data)}')
        if len(data) == 2:
            check(data[1] <= 6, f'magnet: state {data[1]} > 6')
            return cls(data[1])
        _, state, strength, x, y, z = unpack('<BBBbbb', data, 'magnetic sensor')
        check(state <= 6, f'magnet: state {state} > 6')
        return cls(state, strength, x, y, z)


@dataclass(frozen=True)
class PostureEuler(FixedLayout):
    """Sensor 0x03 0x01: integer Euler angles in degrees."""
    roll: int
    pitch: int
    yaw: int
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<BBhhh'
    SUBTYPE: ClassVar = 0x01


@dataclass(frozen=True)
class PostureQuaternion(FixedLayout):
    """Sensor 0x03 0x02: orientation quaternion."""
    w: float
    x: float
    y: float
    z: float
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<BBffff'
    SUBTYPE: ClassVar = 0x02


@dataclass(frozen=True)
class PostureEulerFloat(FixedLayout):
    """Sensor 0x03 0x03: float Euler angles in degrees."""
    roll: float
    pitch: float
    yaw: float
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<BBfff'
    SUBTYPE: ClassVar = 0x03


#: posture angle notifications (0x03) by their sub-type byte
POSTURES = {cls.SUBTYPE: cls for cls in (PostureEuler, PostureQuaternion, PostureEulerFloat)}


def decode_posture(data: bytes) -> PostureEuler | PostureQuaternion | PostureEulerFloat:
    """A posture angle notification of any sub-type."""
    check(len(data) >= 2, 'posture: missing sub-type')
    check(data[1] in POSTURES, f'unknown posture sub-type 0x{data[1]:02x}')
    return POSTURES[data[1]].decode(data)
