"""Motor control characteristic: wheel commands (0x01, 0x02), the cube's own target moves (0x03 one target, 0x04 up
to 29) and acceleration moves (0x05); notifications: target-move results (0x83, 0x84) and wheel speeds (0xE0)."""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, FixedLayout, check, u8, u16, unpack

MOTOR_LEFT, MOTOR_RIGHT = 1, 2
_FORWARD, _BACKWARD = 1, 2


def _motor_blocks(left: int, right: int) -> bytes:
    out = b''
    for motor_id, speed in ((MOTOR_LEFT, left), (MOTOR_RIGHT, right)):
        check(isinstance(speed, int) and -255 <= speed <= 255,
               f'motor speed must be an integer -255..255, got {speed!r}')
        out += bytes((motor_id, _BACKWARD if speed < 0 else _FORWARD, abs(speed)))
    return out


def _parse_motor_blocks(data: bytes) -> tuple[int, int]:
    speeds: dict[int, int] = {}
    for k in (0, 3):
        motor_id, direction, value = data[k], data[k + 1], data[k + 2]
        check(motor_id in (MOTOR_LEFT, MOTOR_RIGHT), f'motor id must be 1 or 2, got {motor_id}')
        check(motor_id not in speeds, 'the same motor id appears twice')
        check(direction in (_FORWARD, _BACKWARD), f'motor direction must be 1 or 2, got {direction}')
        speeds[motor_id] = -value if direction == _BACKWARD else value
    return speeds[MOTOR_LEFT], speeds[MOTOR_RIGHT]


@dataclass(frozen=True)
class MotorControl:
    """0x01: signed wheel speeds (motor units, negative = backwards) until the next motor write."""
    left: int
    right: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x01

    def encode(self) -> bytes:
        return bytes((0x01,)) + _motor_blocks(self.left, self.right)

    @classmethod
    def decode(cls, data: bytes) -> 'MotorControl':
        check(len(data) == 7, f'motor control: expected 7 bytes, got {len(data)}')
        return cls(*_parse_motor_blocks(data[1:7]))


@dataclass(frozen=True)
class MotorControlTimed:
    """0x02: signed wheel speeds for duration_10ms x 10 ms, then stop (0 = no limit)."""
    left: int
    right: int
    duration_10ms: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x02

    def encode(self) -> bytes:
        return bytes((0x02,)) + _motor_blocks(self.left, self.right) + bytes((u8('duration', self.duration_10ms),))

    @classmethod
    def decode(cls, data: bytes) -> 'MotorControlTimed':
        check(len(data) == 8, f'motor control with duration: expected 8 bytes, got {len(data)}')
        return cls(*_parse_motor_blocks(data[1:7]), data[7])


class AngleMode(enum.IntEnum):
    """Top three bits of a target angle field (0x03/0x04)."""
    ABSOLUTE_SHORTEST = 0
    ABSOLUTE_POSITIVE = 1
    ABSOLUTE_NEGATIVE = 2
    RELATIVE_POSITIVE = 3
    RELATIVE_NEGATIVE = 4
    NO_ROTATION = 5
    KEEP_HEADING = 6


KEEP_COORDINATE = 0xFFFF  # target X/Y "as at the time of writing"


@dataclass(frozen=True)
class Target:
    """One target pose of 0x03/0x04: mat units, degrees and the angle mode."""
    x: int
    y: int
    angle: int = 0
    angle_mode: int = AngleMode.ABSOLUTE_SHORTEST

    def encode(self) -> bytes:
        check(isinstance(self.angle, int) and 0 <= self.angle <= 0x1FFF,
               f'target angle must be an integer 0..8191, got {self.angle!r}')
        check(self.angle_mode in tuple(AngleMode), f'angle mode must be 0..6, got {self.angle_mode!r}')
        return struct.pack('<HHH', u16('target x', self.x), u16('target y', self.y),
                           (int(self.angle_mode) << 13) | self.angle)

    @classmethod
    def decode(cls, data: bytes) -> 'Target':
        x, y, field = struct.unpack('<HHH', data)
        mode = field >> 13
        check(mode <= 6, f'angle mode must be 0..6, got {mode}')
        return cls(x, y, field & 0x1FFF, mode)


def _target_header(type_byte: int, control_id: int, timeout_s: int, movement_type: int, max_speed: int,
                   speed_profile: int) -> bytes:
    check(movement_type in (0, 1, 2), f'movement type must be 0, 1 or 2, got {movement_type!r}')
    check(speed_profile in (0, 1, 2, 3), f'speed profile must be 0..3, got {speed_profile!r}')
    return bytes((type_byte, u8('control id', control_id), u8('timeout', timeout_s), movement_type,
                  u8('max speed', max_speed), speed_profile, 0))


def _parse_target_header(data: bytes) -> tuple[int, int, int, int, int]:
    control_id, timeout_s, movement_type, max_speed, speed_profile, _reserved = data[1:7]
    check(movement_type in (0, 1, 2), f'movement type must be 0, 1 or 2, got {movement_type}')
    check(speed_profile in (0, 1, 2, 3), f'speed profile must be 0..3, got {speed_profile}')
    return control_id, timeout_s, movement_type, max_speed, speed_profile


@dataclass(frozen=True)
class MotorTarget:
    """0x03: drive to one target pose with the firmware controller; answered by one 0x83."""
    control_id: int
    target: Target
    timeout_s: int = 0          # 0 means 10 s
    movement_type: int = 0      # 0 rotate while moving, 1 without reversing, 2 rotate then move
    max_speed: int = 80
    speed_profile: int = 0      # 0 constant, 1 accelerate, 2 decelerate, 3 both
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x03

    def encode(self) -> bytes:
        return _target_header(0x03, self.control_id, self.timeout_s, self.movement_type, self.max_speed,
                              self.speed_profile) + self.target.encode()

    @classmethod
    def decode(cls, data: bytes) -> 'MotorTarget':
        check(len(data) == 13, f'motor target: expected 13 bytes, got {len(data)}')
        control_id, timeout_s, movement, max_speed, profile = _parse_target_header(data)
        return cls(control_id, Target.decode(data[7:13]), timeout_s, movement, max_speed, profile)


MAX_MULTI_TARGETS = 29


@dataclass(frozen=True)
class MotorMultiTarget:
    """0x04: drive through 1..29 targets; answered by one 0x84. append=True queues behind a running 0x04."""
    control_id: int
    targets: tuple[Target, ...]
    timeout_s: int = 0
    movement_type: int = 0
    max_speed: int = 80
    speed_profile: int = 0
    append: bool = False
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x04

    def encode(self) -> bytes:
        check(1 <= len(self.targets) <= MAX_MULTI_TARGETS,
               f'multi-target needs 1..{MAX_MULTI_TARGETS} targets, got {len(self.targets)}')
        head = _target_header(0x04, self.control_id, self.timeout_s, self.movement_type, self.max_speed,
                              self.speed_profile)
        return head + bytes((1 if self.append else 0,)) + b''.join(t.encode() for t in self.targets)

    @classmethod
    def decode(cls, data: bytes) -> 'MotorMultiTarget':
        count, rest = divmod(len(data) - 8, 6)
        check(len(data) >= 14 and rest == 0 and count <= MAX_MULTI_TARGETS,
               f'multi-target: length must be 8 + 6*N with N = 1..{MAX_MULTI_TARGETS}, got {len(data)}')
        control_id, timeout_s, movement, max_speed, profile = _parse_target_header(data)
        check(data[7] in (0, 1), f'multi-target write mode must be 0 or 1, got {data[7]}')
        targets = tuple(Target.decode(data[8 + 6 * k:14 + 6 * k]) for k in range(count))
        return cls(control_id, targets, timeout_s, movement, max_speed, profile, data[7] == 1)


@dataclass(frozen=True)
class MotorAcceleration:
    """0x05: unicycle command -- translational speed (motor units) and rotation (deg/s, positive = clockwise)."""
    speed: int
    acceleration: int = 0         # speed increment per 100 ms; 0 = immediately
    rotation_deg_s: int = 0       # signed: negative = counter-clockwise on the mat
    backward: bool = False
    rotation_priority: bool = False
    duration_10ms: int = 0
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x05

    def encode(self) -> bytes:
        check(isinstance(self.rotation_deg_s, int) and abs(self.rotation_deg_s) <= 0xFFFF,
               f'rotation must be an integer -65535..65535 deg/s, got {self.rotation_deg_s!r}')
        return struct.pack('<BBBHBBBB', 0x05, u8('speed', self.speed), u8('acceleration', self.acceleration),
                           abs(self.rotation_deg_s), 1 if self.rotation_deg_s < 0 else 0, 1 if self.backward else 0,
                           1 if self.rotation_priority else 0, u8('duration', self.duration_10ms))

    @classmethod
    def decode(cls, data: bytes) -> 'MotorAcceleration':
        _, speed, acc, rot, rot_dir, travel, priority, duration = unpack('<BBBHBBBB', data, 'motor acceleration')
        for name, value in (('rotation direction', rot_dir), ('travel direction', travel), ('priority', priority)):
            check(value in (0, 1), f'{name} must be 0 or 1, got {value}')
        return cls(speed, acc, -rot if rot_dir else rot, travel == 1, priority == 1, duration)


# notifications

class TargetResult(enum.IntEnum):
    """Result codes of 0x83 / 0x84."""
    REACHED = 0x00
    TIMEOUT = 0x01
    ID_MISSED = 0x02
    INVALID_PARAMETERS = 0x03
    INVALID_STATE = 0x04
    REPLACED = 0x05
    NOT_SUPPORTED = 0x06
    APPEND_REJECTED = 0x07


@dataclass(frozen=True)
class TargetMoveResult(FixedLayout):
    """Motor 0x83: result of a single-target move (result: see TargetResult; unknown codes kept as ints)."""
    control_id: int
    result: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x83
    FORMAT: ClassVar = '<BBB'


@dataclass(frozen=True)
class MultiTargetMoveResult(FixedLayout):
    """Motor 0x84: result of a multi-target move."""
    control_id: int
    result: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x84
    FORMAT: ClassVar = '<BBB'


@dataclass(frozen=True)
class MotorSpeed(FixedLayout):
    """Motor 0xE0: wheel speed magnitudes in motor units (unsigned: take the sign from the last command)."""
    left: int
    right: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0xE0
    FORMAT: ClassVar = '<BBB'
