"""The toio Core Cube BLE protocol as pure data: characteristics, commands, notifications and their bytes.

Everything a driver writes is a *command* dataclass, everything a cube sends (notification or read) is a
*notification* dataclass. Both directions are encoded and decoded here, so the driver (encode commands, decode
notifications) and the virtual cube firmware (decode commands, encode notifications) share one codec and cannot
disagree about a byte. Layouts follow docs/ble_protocol.md (toio BLE protocol v2.0.0-v2.5.0): little-endian,
type byte first, exact lengths.

Errors: any malformed, short, over-long, out-of-range or unknown input raises :class:`ProtocolError` and nothing
else -- the decoders are fuzzed for that.
"""
from __future__ import annotations

import dataclasses
import enum
import struct
from dataclasses import dataclass
from typing import Callable, ClassVar, Union


class ProtocolError(ValueError):
    """Bytes or values that are not a valid toio protocol message."""


# --------------------------------------------------------------------------------------------------------------
# Service and characteristics

SERVICE_UUID = '10b20100-5b3b-4571-9508-cf3efcd7bbae'


class Characteristic(str, enum.Enum):
    """The GATT characteristics of the toio service; the value is the lower-case UUID."""
    ID_INFORMATION = '10b20101-5b3b-4571-9508-cf3efcd7bbae'
    MOTOR_CONTROL = '10b20102-5b3b-4571-9508-cf3efcd7bbae'
    LIGHT_CONTROL = '10b20103-5b3b-4571-9508-cf3efcd7bbae'
    SOUND_CONTROL = '10b20104-5b3b-4571-9508-cf3efcd7bbae'
    SENSOR_INFORMATION = '10b20106-5b3b-4571-9508-cf3efcd7bbae'
    BUTTON_INFORMATION = '10b20107-5b3b-4571-9508-cf3efcd7bbae'
    BATTERY_INFORMATION = '10b20108-5b3b-4571-9508-cf3efcd7bbae'
    CONFIGURATION = '10b201ff-5b3b-4571-9508-cf3efcd7bbae'

    @property
    def uuid(self) -> str:
        return self.value


class Property(enum.Flag):
    READ = enum.auto()
    WRITE = enum.auto()                 # write with response
    WRITE_WITHOUT_RESPONSE = enum.auto()
    NOTIFY = enum.auto()


#: GATT properties of each characteristic as a real cube declares them
PROPERTIES: dict[Characteristic, Property] = {
    Characteristic.ID_INFORMATION: Property.READ | Property.NOTIFY,
    Characteristic.MOTOR_CONTROL: Property.WRITE_WITHOUT_RESPONSE | Property.READ | Property.NOTIFY,
    Characteristic.LIGHT_CONTROL: Property.WRITE,
    Characteristic.SOUND_CONTROL: Property.WRITE,
    Characteristic.SENSOR_INFORMATION: Property.WRITE | Property.READ | Property.NOTIFY,
    Characteristic.BUTTON_INFORMATION: Property.READ | Property.NOTIFY,
    Characteristic.BATTERY_INFORMATION: Property.READ | Property.NOTIFY,
    Characteristic.CONFIGURATION: Property.WRITE | Property.READ | Property.NOTIFY,
}

_SHORT_NAMES = {
    'id': Characteristic.ID_INFORMATION, 'motor': Characteristic.MOTOR_CONTROL,
    'light': Characteristic.LIGHT_CONTROL, 'sound': Characteristic.SOUND_CONTROL,
    'sensor': Characteristic.SENSOR_INFORMATION, 'button': Characteristic.BUTTON_INFORMATION,
    'battery': Characteristic.BATTERY_INFORMATION, 'config': Characteristic.CONFIGURATION,
    'configuration': Characteristic.CONFIGURATION,
}

CharLike = Union[Characteristic, str]


def characteristic(char: CharLike) -> Characteristic:
    """Resolve a Characteristic, a UUID string (any case) or a name ('motor', 'MOTOR_CONTROL', ...)."""
    if isinstance(char, Characteristic):
        return char
    if isinstance(char, str):
        key = char.strip().lower()
        if key in _SHORT_NAMES:
            return _SHORT_NAMES[key]
        for member in Characteristic:
            if key in (member.value, member.name.lower()):
                return member
    raise ProtocolError(f'unknown toio characteristic {char!r}')


# --------------------------------------------------------------------------------------------------------------
# Shared field helpers


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ProtocolError(message)


def _u8(name: str, value: int) -> int:
    _check(isinstance(value, int) and 0 <= value <= 0xFF, f'{name} must be an integer 0..255, got {value!r}')
    return value


def _u16(name: str, value: int) -> int:
    _check(isinstance(value, int) and 0 <= value <= 0xFFFF, f'{name} must be an integer 0..65535, got {value!r}')
    return value


def _as_bytes(data: object) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise ProtocolError(f'expected bytes, got {type(data).__name__}')


_STRUCTS: dict[str, struct.Struct] = {}


def _unpack(fmt: str, data: bytes, what: str) -> tuple:
    layout = _STRUCTS.get(fmt)
    if layout is None:
        layout = _STRUCTS[fmt] = struct.Struct(fmt)
    if len(data) != layout.size:
        raise ProtocolError(f'{what}: expected {layout.size} bytes, got {len(data)}')
    return layout.unpack(data)


def _hex(data: bytes) -> str:
    return data.hex(' ') if data else '(empty)'


def parse_version(text: str) -> tuple[int, int, int]:
    """'2.4.0' -> (2, 4, 0)."""
    parts = text.split('.')
    try:
        numbers = tuple(int(p) for p in parts)
    except ValueError:
        raise ProtocolError(f'not a protocol version: {text!r}') from None
    _check(len(numbers) == 3 and all(n >= 0 for n in numbers), f'not a protocol version: {text!r}')
    return numbers  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------------------
# Commands (central -> cube)

MOTOR_LEFT, MOTOR_RIGHT = 1, 2
_FORWARD, _BACKWARD = 1, 2


def _motor_blocks(left: int, right: int) -> bytes:
    out = b''
    for motor_id, speed in ((MOTOR_LEFT, left), (MOTOR_RIGHT, right)):
        _check(isinstance(speed, int) and -255 <= speed <= 255,
               f'motor speed must be an integer -255..255, got {speed!r}')
        out += bytes((motor_id, _BACKWARD if speed < 0 else _FORWARD, abs(speed)))
    return out


def _parse_motor_blocks(data: bytes) -> tuple[int, int]:
    speeds: dict[int, int] = {}
    for k in (0, 3):
        motor_id, direction, value = data[k], data[k + 1], data[k + 2]
        _check(motor_id in (MOTOR_LEFT, MOTOR_RIGHT), f'motor id must be 1 or 2, got {motor_id}')
        _check(motor_id not in speeds, 'the same motor id appears twice')
        _check(direction in (_FORWARD, _BACKWARD), f'motor direction must be 1 or 2, got {direction}')
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
        _check(len(data) == 7, f'motor control: expected 7 bytes, got {len(data)}')
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
        return bytes((0x02,)) + _motor_blocks(self.left, self.right) + bytes((_u8('duration', self.duration_10ms),))

    @classmethod
    def decode(cls, data: bytes) -> 'MotorControlTimed':
        _check(len(data) == 8, f'motor control with duration: expected 8 bytes, got {len(data)}')
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
        _check(isinstance(self.angle, int) and 0 <= self.angle <= 0x1FFF,
               f'target angle must be an integer 0..8191, got {self.angle!r}')
        _check(self.angle_mode in tuple(AngleMode), f'angle mode must be 0..6, got {self.angle_mode!r}')
        return struct.pack('<HHH', _u16('target x', self.x), _u16('target y', self.y),
                           (int(self.angle_mode) << 13) | self.angle)

    @classmethod
    def decode(cls, data: bytes) -> 'Target':
        x, y, field = struct.unpack('<HHH', data)
        mode = field >> 13
        _check(mode <= 6, f'angle mode must be 0..6, got {mode}')
        return cls(x, y, field & 0x1FFF, mode)


def _target_header(type_byte: int, control_id: int, timeout_s: int, movement_type: int, max_speed: int,
                   speed_profile: int) -> bytes:
    _check(movement_type in (0, 1, 2), f'movement type must be 0, 1 or 2, got {movement_type!r}')
    _check(speed_profile in (0, 1, 2, 3), f'speed profile must be 0..3, got {speed_profile!r}')
    return bytes((type_byte, _u8('control id', control_id), _u8('timeout', timeout_s), movement_type,
                  _u8('max speed', max_speed), speed_profile, 0))


def _parse_target_header(data: bytes) -> tuple[int, int, int, int, int]:
    control_id, timeout_s, movement_type, max_speed, speed_profile, _reserved = data[1:7]
    _check(movement_type in (0, 1, 2), f'movement type must be 0, 1 or 2, got {movement_type}')
    _check(speed_profile in (0, 1, 2, 3), f'speed profile must be 0..3, got {speed_profile}')
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
        _check(len(data) == 13, f'motor target: expected 13 bytes, got {len(data)}')
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
        _check(1 <= len(self.targets) <= MAX_MULTI_TARGETS,
               f'multi-target needs 1..{MAX_MULTI_TARGETS} targets, got {len(self.targets)}')
        head = _target_header(0x04, self.control_id, self.timeout_s, self.movement_type, self.max_speed,
                              self.speed_profile)
        return head + bytes((1 if self.append else 0,)) + b''.join(t.encode() for t in self.targets)

    @classmethod
    def decode(cls, data: bytes) -> 'MotorMultiTarget':
        count, rest = divmod(len(data) - 8, 6)
        _check(len(data) >= 14 and rest == 0 and count <= MAX_MULTI_TARGETS,
               f'multi-target: length must be 8 + 6*N with N = 1..{MAX_MULTI_TARGETS}, got {len(data)}')
        control_id, timeout_s, movement, max_speed, profile = _parse_target_header(data)
        _check(data[7] in (0, 1), f'multi-target write mode must be 0 or 1, got {data[7]}')
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
        _check(isinstance(self.rotation_deg_s, int) and abs(self.rotation_deg_s) <= 0xFFFF,
               f'rotation must be an integer -65535..65535 deg/s, got {self.rotation_deg_s!r}')
        return struct.pack('<BBBHBBBB', 0x05, _u8('speed', self.speed), _u8('acceleration', self.acceleration),
                           abs(self.rotation_deg_s), 1 if self.rotation_deg_s < 0 else 0, 1 if self.backward else 0,
                           1 if self.rotation_priority else 0, _u8('duration', self.duration_10ms))

    @classmethod
    def decode(cls, data: bytes) -> 'MotorAcceleration':
        _, speed, acc, rot, rot_dir, travel, priority, duration = _unpack('<BBBHBBBB', data, 'motor acceleration')
        for name, value in (('rotation direction', rot_dir), ('travel direction', travel), ('priority', priority)):
            _check(value in (0, 1), f'{name} must be 0 or 1, got {value}')
        return cls(speed, acc, -rot if rot_dir else rot, travel == 1, priority == 1, duration)


def _rgb(r: int, g: int, b: int) -> bytes:
    return bytes((_u8('red', r), _u8('green', g), _u8('blue', b)))


@dataclass(frozen=True)
class LightOn:
    """Light 0x03: the LED in one colour for duration_10ms x 10 ms (0 = until the next light write)."""
    r: int
    g: int
    b: int
    duration_10ms: int = 0
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x03

    def encode(self) -> bytes:
        return bytes((0x03, _u8('duration', self.duration_10ms), 1, 1)) + _rgb(self.r, self.g, self.b)

    @classmethod
    def decode(cls, data: bytes) -> 'LightOn':
        _check(len(data) == 7 and data[2] == 1 and data[3] == 1, f'light on: bad bytes {_hex(data)}')
        return cls(data[4], data[5], data[6], data[1])


@dataclass(frozen=True)
class LightSequence:
    """Light 0x04: steps of (duration_10ms, r, g, b), repeated `repeat` times (0 = forever)."""
    steps: tuple[tuple[int, int, int, int], ...]
    repeat: int = 0
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x04

    def encode(self) -> bytes:
        _check(1 <= len(self.steps) <= 29, f'light sequence needs 1..29 steps, got {len(self.steps)}')
        body = b''
        for duration, r, g, b in self.steps:
            _check(isinstance(duration, int) and 1 <= duration <= 255,
                   f'light step duration must be 1..255, got {duration!r}')
            body += bytes((duration, 1, 1)) + _rgb(r, g, b)
        return bytes((0x04, _u8('repeat', self.repeat), len(self.steps))) + body

    @classmethod
    def decode(cls, data: bytes) -> 'LightSequence':
        _check(len(data) >= 3, 'light sequence: too short')
        count = data[2]
        _check(1 <= count <= 29 and len(data) == 3 + 6 * count,
               f'light sequence: bad length {len(data)} for {count} steps')
        steps = []
        for k in range(count):
            duration, light_count, light_id, r, g, b = data[3 + 6 * k:9 + 6 * k]
            _check(duration >= 1 and light_count == 1 and light_id == 1, f'light sequence: bad step {k}')
            steps.append((duration, r, g, b))
        return cls(tuple(steps), data[1])


@dataclass(frozen=True)
class LightsOff:
    """Light 0x01: all lights off."""
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x01

    def encode(self) -> bytes:
        return b'\x01'

    @classmethod
    def decode(cls, data: bytes) -> 'LightsOff':
        _check(len(data) == 1, 'lights off: expected 1 byte')
        return cls()


@dataclass(frozen=True)
class LightOff:
    """Light 0x02: one light off (the cube has light 1 only)."""
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x02

    def encode(self) -> bytes:
        return b'\x02\x01\x01'

    @classmethod
    def decode(cls, data: bytes) -> 'LightOff':
        _check(data == b'\x02\x01\x01', f'light off: bad bytes {_hex(data)}')
        return cls()


@dataclass(frozen=True)
class LightSmoothBlink:
    """Light 0x70 (protocol 2.5.0): smooth blink, period_10ms 10..255, count 0 = forever."""
    r: int
    g: int
    b: int
    period_10ms: int
    count: int = 0
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x70

    def encode(self) -> bytes:
        _check(isinstance(self.period_10ms, int) and 10 <= self.period_10ms <= 255,
               f'blink period must be 10..255, got {self.period_10ms!r}')
        return bytes((0x70, _u8('count', self.count), 1, 1, self.period_10ms)) + _rgb(self.r, self.g, self.b)

    @classmethod
    def decode(cls, data: bytes) -> 'LightSmoothBlink':
        _check(len(data) == 8 and data[2] == 1 and data[3] == 1 and data[4] >= 10,
               f'smooth blink: bad bytes {_hex(data)}')
        return cls(data[5], data[6], data[7], data[4], data[1])


@dataclass(frozen=True)
class SoundEffect:
    """Sound 0x02: effect 0..10 at volume (0 = mute, anything else = maximum)."""
    effect: int
    volume: int = 255
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x02

    def encode(self) -> bytes:
        _check(isinstance(self.effect, int) and 0 <= self.effect <= 10,
               f'sound effect must be 0..10, got {self.effect!r}')
        return bytes((0x02, self.effect, _u8('volume', self.volume)))

    @classmethod
    def decode(cls, data: bytes) -> 'SoundEffect':
        _check(len(data) == 3 and data[1] <= 10, f'sound effect: bad bytes {_hex(data)}')
        return cls(data[1], data[2])


@dataclass(frozen=True)
class SoundMidi:
    """Sound 0x03: notes of (duration_10ms, note 0..128 with 128 = rest, volume), repeated (0 = forever)."""
    notes: tuple[tuple[int, int, int], ...]
    repeat: int = 1
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x03

    def encode(self) -> bytes:
        _check(1 <= len(self.notes) <= 59, f'MIDI needs 1..59 notes, got {len(self.notes)}')
        body = b''
        for duration, note, volume in self.notes:
            _check(isinstance(note, int) and 0 <= note <= 128, f'MIDI note must be 0..128, got {note!r}')
            _check(isinstance(duration, int) and 1 <= duration <= 255,
                   f'MIDI duration must be 1..255, got {duration!r}')
            body += bytes((duration, note, _u8('volume', volume)))
        return bytes((0x03, _u8('repeat', self.repeat), len(self.notes))) + body

    @classmethod
    def decode(cls, data: bytes) -> 'SoundMidi':
        _check(len(data) >= 3, 'MIDI: too short')
        count = data[2]
        _check(1 <= count <= 59 and len(data) == 3 + 3 * count, f'MIDI: bad length {len(data)} for {count} notes')
        notes = tuple((data[3 + 3 * k], data[4 + 3 * k], data[5 + 3 * k]) for k in range(count))
        _check(all(d >= 1 and n <= 128 for d, n, _v in notes), 'MIDI: bad note')
        return cls(notes, data[1])


@dataclass(frozen=True)
class SoundStop:
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x01

    def encode(self) -> bytes:
        return b'\x01'

    @classmethod
    def decode(cls, data: bytes) -> 'SoundStop':
        _check(len(data) == 1, 'sound stop: expected 1 byte')
        return cls()


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
        _check(self.kind in tuple(SensorRequestKind), f'unknown sensor request {self.kind!r}')
        if self.kind == SensorRequestKind.POSTURE:
            _check(self.posture_kind in (1, 2, 3), f'posture kind must be 1..3, got {self.posture_kind!r}')
            return bytes((self.kind, self.posture_kind))
        return bytes((self.kind,))

    @classmethod
    def decode(cls, data: bytes) -> 'SensorRequest':
        if len(data) == 1 and data[0] in (0x81, 0x82):
            return cls(data[0])
        _check(len(data) == 2 and data[0] == 0x83 and data[1] in (1, 2, 3), f'sensor request: bad bytes {_hex(data)}')
        return cls(0x83, data[1])


class ConfigCommand(enum.IntEnum):
    """Type bytes of configuration writes."""
    PROTOCOL_VERSION = 0x01
    HORIZONTAL_THRESHOLD = 0x05
    COLLISION_THRESHOLD = 0x06
    FACTORY_RESET = 0x0F
    DOUBLE_TAP_INTERVAL = 0x17
    ID_NOTIFICATION = 0x18
    ID_MISSED_SENSITIVITY = 0x19
    MAGNETIC_SENSOR = 0x1B
    MOTOR_SPEED_NOTIFICATION = 0x1C
    POSTURE_NOTIFICATION = 0x1D
    SERIALIZED_NOTIFICATION = 0x1E
    CONNECTION_INTERVAL = 0x30
    REQUESTED_CONNECTION_INTERVAL = 0x31
    CURRENT_CONNECTION_INTERVAL = 0x32
    MUTE = 0x33
    POWER_OFF = 0x34


#: configuration writes that change what the cube reports; the cube forgets them on disconnect, so a
#: transport re-sends them after every reconnect
SETTING_COMMANDS = frozenset({
    ConfigCommand.HORIZONTAL_THRESHOLD, ConfigCommand.COLLISION_THRESHOLD, ConfigCommand.DOUBLE_TAP_INTERVAL,
    ConfigCommand.ID_NOTIFICATION, ConfigCommand.ID_MISSED_SENSITIVITY, ConfigCommand.MAGNETIC_SENSOR,
    ConfigCommand.MOTOR_SPEED_NOTIFICATION, ConfigCommand.POSTURE_NOTIFICATION,
    ConfigCommand.SERIALIZED_NOTIFICATION, ConfigCommand.CONNECTION_INTERVAL,
})

# ID notification conditions (0x18)
ID_ALWAYS, ID_ON_CHANGE, ID_BALANCED = 0x00, 0x01, 0xFF


@dataclass(frozen=True)
class ConfigWrite:
    """A configuration write: the command type and its parameter values (after the reserved byte).

    The parameter layout per type is fixed by :data:`_CONFIG_LAYOUTS`; use the ``encode_*`` helpers below to
    build one with named arguments.
    """
    command: int
    values: tuple[int, ...] = ()
    CHAR: ClassVar = Characteristic.CONFIGURATION

    def encode(self) -> bytes:
        layouts = _CONFIG_LAYOUTS.get(self.command)
        _check(layouts is not None, f'unknown configuration command {self.command!r}')
        for fmt, validate in layouts:
            if len(fmt) - 1 == len(self.values):
                if self.command == ConfigCommand.FACTORY_RESET:
                    return b'\x0f'
                try:
                    data = struct.pack('<BB' + fmt[1:], self.command, 0, *self.values)
                except struct.error as exc:
                    raise ProtocolError(f'configuration 0x{self.command:02x}: {exc}') from None
                validate(self.values)
                return data
        raise ProtocolError(f'configuration 0x{self.command:02x}: wrong number of values {self.values!r}')

    @classmethod
    def decode(cls, data: bytes) -> 'ConfigWrite':
        _check(len(data) >= 1, 'configuration: empty write')
        layouts = _CONFIG_LAYOUTS.get(data[0])
        _check(layouts is not None, f'unknown configuration command 0x{data[0]:02x}')
        if data[0] == ConfigCommand.FACTORY_RESET:
            _check(len(data) == 1, 'factory reset: expected 1 byte')
            return cls(data[0])
        for fmt, validate in layouts:
            if struct.calcsize('<BB' + fmt[1:]) == len(data):
                _check(data[1] == 0, f'configuration 0x{data[0]:02x}: reserved byte must be 0')
                values = struct.unpack('<BB' + fmt[1:], data)[2:]
                validate(values)
                return cls(data[0], tuple(values))
        raise ProtocolError(f'configuration 0x{data[0]:02x}: bad length {len(data)}')


def _range(*bounds: tuple[int, int]) -> Callable[[tuple[int, ...]], None]:
    def validate(values: tuple[int, ...]) -> None:
        for value, (low, high) in zip(values, bounds):
            _check(low <= value <= high, f'configuration value {value} outside {low}..{high}')
    return validate


def _options(*allowed: tuple[int, ...]) -> Callable[[tuple[int, ...]], None]:
    def validate(values: tuple[int, ...]) -> None:
        for value, options in zip(values, allowed):
            _check(value in options, f'configuration value {value} not one of {options}')
    return validate


def _interval_ok(values: tuple[int, ...]) -> None:
    for value in values:
        _check(value == 0xFFFF or 0x0006 <= value <= 0x0C80,
               f'connection interval {value} outside 6..3200 (x1.25 ms) and not 0xFFFF')
    low, high = values      # the Bluetooth core specification requires min <= max (0xFFFF: no preference)
    _check(low == 0xFFFF or high == 0xFFFF or low <= high,
           f'connection interval minimum {low} exceeds the maximum {high} (x1.25 ms)')


_ANY = (0, 255)
# per command: the accepted layouts ('<' + fields after the reserved byte) and a value check
_CONFIG_LAYOUTS: dict[int, list[tuple[str, Callable[[tuple[int, ...]], None]]]] = {
    ConfigCommand.PROTOCOL_VERSION: [('<', _range())],
    ConfigCommand.HORIZONTAL_THRESHOLD: [('<B', _range((1, 45)))],
    ConfigCommand.COLLISION_THRESHOLD: [('<B', _range((1, 10)))],
    ConfigCommand.FACTORY_RESET: [('<', _range())],
    ConfigCommand.DOUBLE_TAP_INTERVAL: [('<B', _range((0, 7)))],
    ConfigCommand.ID_NOTIFICATION: [('<BB', _options(tuple(range(256)), (ID_ALWAYS, ID_ON_CHANGE, ID_BALANCED)))],
    ConfigCommand.ID_MISSED_SENSITIVITY: [('<B', _range(_ANY))],
    ConfigCommand.MAGNETIC_SENSOR: [('<B', _range((0, 1))), ('<BBB', _range((0, 2), _ANY, (0, 1)))],
    ConfigCommand.MOTOR_SPEED_NOTIFICATION: [('<B', _range((0, 1)))],
    ConfigCommand.POSTURE_NOTIFICATION: [('<BBB', _range((1, 3), _ANY, (0, 1)))],
    ConfigCommand.SERIALIZED_NOTIFICATION: [('<BB', _range(_ANY, (0, 1)))],
    ConfigCommand.CONNECTION_INTERVAL: [('<HH', _interval_ok)],
    ConfigCommand.REQUESTED_CONNECTION_INTERVAL: [('<', _range())],
    ConfigCommand.CURRENT_CONNECTION_INTERVAL: [('<', _range())],
    ConfigCommand.MUTE: [('<B', _range((0, 2)))],
    ConfigCommand.POWER_OFF: [('<B', _range(_ANY))],
}

Command = Union[MotorControl, MotorControlTimed, MotorTarget, MotorMultiTarget, MotorAcceleration, LightOn,
                LightSequence, LightsOff, LightOff, LightSmoothBlink, SoundEffect, SoundMidi, SoundStop,
                SensorRequest, ConfigWrite]

_COMMANDS_BY_CHAR: dict[Characteristic, dict[int, type]] = {
    Characteristic.MOTOR_CONTROL: {c.TYPE: c for c in (MotorControl, MotorControlTimed, MotorTarget, MotorMultiTarget,
                                                       MotorAcceleration)},
    Characteristic.LIGHT_CONTROL: {c.TYPE: c for c in (LightsOff, LightOff, LightOn, LightSequence, LightSmoothBlink)},
    Characteristic.SOUND_CONTROL: {c.TYPE: c for c in (SoundStop, SoundEffect, SoundMidi)},
    Characteristic.SENSOR_INFORMATION: {k: SensorRequest for k in (0x81, 0x82, 0x83)},
    Characteristic.CONFIGURATION: {k: ConfigWrite for k in _CONFIG_LAYOUTS},
}


def encode_command(command: Command) -> bytes:
    """The bytes to write for a command (its characteristic is ``command.CHAR``)."""
    encode = getattr(command, 'encode', None)
    _check(callable(encode) and hasattr(command, 'CHAR'), f'not a toio command: {command!r}')
    return encode()


def decode_command(char: CharLike, data: bytes) -> Command:
    """Parse bytes written to a characteristic (the virtual cube's side). Raises ProtocolError if invalid."""
    data = _as_bytes(data)
    table = _COMMANDS_BY_CHAR.get(characteristic(char))
    _check(table is not None, f'{characteristic(char).name} is not writable')
    _check(len(data) >= 1, 'empty write')
    cls = table.get(data[0])  # type: ignore[union-attr]
    _check(cls is not None, f'unknown command 0x{data[0]:02x} on {characteristic(char).name}')
    return cls.decode(data)


# Named builders: what a driver calls. Each returns bytes for the characteristic named in its docstring.

def encode_motor(left: int, right: int, duration_ms: int | None = None) -> bytes:
    """Motor: 0x01 without a duration, else 0x02 with duration_ms rounded down to 10 ms (1..2550 ms)."""
    if duration_ms is None:
        return MotorControl(left, right).encode()
    _check(isinstance(duration_ms, int) and 10 <= duration_ms <= 2550,
           f'duration must be 10..2550 ms, got {duration_ms!r}')
    return MotorControlTimed(left, right, duration_ms // 10).encode()


def encode_motor_target(control_id: int, x: int, y: int, angle: int = 0,
                        angle_mode: int = AngleMode.ABSOLUTE_SHORTEST, *, timeout_s: int = 0,
                        movement_type: int = 0, max_speed: int = 80, speed_profile: int = 0) -> bytes:
    """Motor 0x03."""
    return MotorTarget(control_id, Target(x, y, angle, angle_mode), timeout_s, movement_type, max_speed,
                       speed_profile).encode()


def encode_motor_multi_target(control_id: int, targets: list[Target] | tuple[Target, ...], *, timeout_s: int = 0,
                              movement_type: int = 0, max_speed: int = 80, speed_profile: int = 0,
                              append: bool = False) -> bytes:
    """Motor 0x04."""
    return MotorMultiTarget(control_id, tuple(targets), timeout_s, movement_type, max_speed, speed_profile,
                            append).encode()


def encode_motor_acceleration(speed: int, rotation_deg_s: int = 0, *, acceleration: int = 0, backward: bool = False,
                              rotation_priority: bool = False, duration_ms: int = 0) -> bytes:
    """Motor 0x05 (duration 0 = unlimited)."""
    _check(isinstance(duration_ms, int) and 0 <= duration_ms <= 2550,
           f'duration must be 0..2550 ms, got {duration_ms!r}')
    return MotorAcceleration(speed, acceleration, rotation_deg_s, backward, rotation_priority,
                             duration_ms // 10).encode()


def encode_light(r: int, g: int, b: int, duration_ms: int = 0) -> bytes:
    """Light 0x03 (0 ms = until the next light write); all-zero colour = off."""
    _check(isinstance(duration_ms, int) and 0 <= duration_ms <= 2550,
           f'duration must be 0..2550 ms, got {duration_ms!r}')
    return LightOn(r, g, b, duration_ms // 10).encode()


def encode_lights_off() -> bytes:
    return LightsOff().encode()


def encode_sound_effect(effect: int, volume: int = 255) -> bytes:
    return SoundEffect(effect, volume).encode()


def encode_sound_stop() -> bytes:
    return SoundStop().encode()


def encode_request_protocol_version() -> bytes:
    return ConfigWrite(ConfigCommand.PROTOCOL_VERSION).encode()


def encode_id_notification(interval_10ms: int = 1, condition: int = ID_BALANCED) -> bytes:
    """Config 0x18: minimum interval (x10 ms) and condition (0 always, 1 on change, 0xFF balanced)."""
    return ConfigWrite(ConfigCommand.ID_NOTIFICATION, (interval_10ms, condition)).encode()


def encode_id_missed_sensitivity(delay_10ms: int = 7) -> bytes:
    """Config 0x19: report "missed" only after the ID was lost this long (x10 ms)."""
    return ConfigWrite(ConfigCommand.ID_MISSED_SENSITIVITY, (delay_10ms,)).encode()


def encode_motor_speed_notification(enabled: bool) -> bytes:
    """Config 0x1C: wheel-speed (0xE0) notifications on/off."""
    return ConfigWrite(ConfigCommand.MOTOR_SPEED_NOTIFICATION, (1 if enabled else 0,)).encode()


def encode_magnetic_sensor(mode: int, interval_20ms: int = 0, condition: int = 0) -> bytes:
    """Config 0x1B (v2.3.0 form): mode 0 off / 1 state / 2 force."""
    return ConfigWrite(ConfigCommand.MAGNETIC_SENSOR, (mode, interval_20ms, condition)).encode()


def encode_posture_notification(kind: int, interval_10ms: int, condition: int = 0) -> bytes:
    """Config 0x1D: posture angle kind 1 Euler / 2 quaternion / 3 float Euler, interval x10 ms (0 = off)."""
    return ConfigWrite(ConfigCommand.POSTURE_NOTIFICATION, (kind, interval_10ms, condition)).encode()


def encode_horizontal_threshold(degrees: int = 45) -> bytes:
    return ConfigWrite(ConfigCommand.HORIZONTAL_THRESHOLD, (degrees,)).encode()


def encode_collision_threshold(level: int = 7) -> bytes:
    return ConfigWrite(ConfigCommand.COLLISION_THRESHOLD, (level,)).encode()


def encode_connection_interval(min_1250us: int, max_1250us: int) -> bytes:
    """Config 0x30: ask the central for a connection interval in 1.25 ms units (0xFFFF = no preference)."""
    return ConfigWrite(ConfigCommand.CONNECTION_INTERVAL, (min_1250us, max_1250us)).encode()


def encode_request_connection_interval(actual: bool = True) -> bytes:
    """Config 0x32 (actual interval) or 0x31 (the requested one)."""
    kind = ConfigCommand.CURRENT_CONNECTION_INTERVAL if actual else ConfigCommand.REQUESTED_CONNECTION_INTERVAL
    return ConfigWrite(kind).encode()


def encode_power_off(delay_s: int = 0) -> bytes:
    return ConfigWrite(ConfigCommand.POWER_OFF, (delay_s,)).encode()


# --------------------------------------------------------------------------------------------------------------
# Notifications (cube -> central)


@dataclass(frozen=True)
class PositionId:
    """ID 0x01: the cube centre and the ID-sensor point in mat units, angles in degrees (clockwise)."""
    x: int
    y: int
    angle: int
    sensor_x: int
    sensor_y: int
    sensor_angle: int
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x01
    FORMAT: ClassVar = '<BHHHHHH'


@dataclass(frozen=True)
class StandardId:
    """ID 0x02: a card / sticker value and the angle on it."""
    value: int
    angle: int
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x02
    FORMAT: ClassVar = '<BIH'


@dataclass(frozen=True)
class PositionIdMissed:
    """ID 0x03: the cube lost the mat (lifted or off the edge)."""
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<B'


@dataclass(frozen=True)
class StandardIdMissed:
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x04
    FORMAT: ClassVar = '<B'


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
class TargetMoveResult:
    """Motor 0x83: result of a single-target move (result: see TargetResult; unknown codes kept as ints)."""
    control_id: int
    result: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x83
    FORMAT: ClassVar = '<BBB'


@dataclass(frozen=True)
class MultiTargetMoveResult:
    """Motor 0x84: result of a multi-target move."""
    control_id: int
    result: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0x84
    FORMAT: ClassVar = '<BBB'


@dataclass(frozen=True)
class MotorSpeed:
    """Motor 0xE0: wheel speed magnitudes in motor units (unsigned: take the sign from the last command)."""
    left: int
    right: int
    CHAR: ClassVar = Characteristic.MOTOR_CONTROL
    TYPE: ClassVar = 0xE0
    FORMAT: ClassVar = '<BBB'


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


@dataclass(frozen=True)
class PostureEuler:
    """Sensor 0x03 0x01: integer Euler angles in degrees."""
    roll: int
    pitch: int
    yaw: int
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<BBhhh'
    SUBTYPE: ClassVar = 0x01


@dataclass(frozen=True)
class PostureQuaternion:
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
class PostureEulerFloat:
    """Sensor 0x03 0x03: float Euler angles in degrees."""
    roll: float
    pitch: float
    yaw: float
    CHAR: ClassVar = Characteristic.SENSOR_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<BBfff'
    SUBTYPE: ClassVar = 0x03


@dataclass(frozen=True)
class ButtonState:
    """Button 0x01: the function button."""
    pressed: bool
    CHAR: ClassVar = Characteristic.BUTTON_INFORMATION
    TYPE: ClassVar = 0x01


@dataclass(frozen=True)
class BatteryLevel:
    """Battery: percent 0..100 (the cube reports 10 % steps)."""
    percent: int
    CHAR: ClassVar = Characteristic.BATTERY_INFORMATION


@dataclass(frozen=True)
class ProtocolVersion:
    """Config 0x81: the BLE protocol version string, e.g. '2.4.0'."""
    version: str
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0x81

    @property
    def as_tuple(self) -> tuple[int, int, int]:
        return parse_version(self.version)


#: config response type -> the command it answers
CONFIG_RESPONSES = {0x98: 0x18, 0x99: 0x19, 0x9B: 0x1B, 0x9C: 0x1C, 0x9D: 0x1D, 0x9E: 0x1E, 0xB0: 0x30,
                    0xB3: 0x33, 0xB4: 0x34, 0x8F: 0x0F}


@dataclass(frozen=True)
class ConfigResponse:
    """Config 0x98/0x99/0x9B/0x9C/0x9D/0x9E/0xB0/0xB3/0xB4/0x8F: result of a setting (0 = OK)."""
    response_type: int
    result: int
    CHAR: ClassVar = Characteristic.CONFIGURATION

    @property
    def command(self) -> int:
        return CONFIG_RESPONSES[self.response_type]

    @property
    def ok(self) -> bool:
        return self.result == 0


@dataclass(frozen=True)
class RequestedConnectionInterval:
    """Config 0xB1: the connection interval the cube asked for (x1.25 ms)."""
    min_1250us: int
    max_1250us: int
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xB1


@dataclass(frozen=True)
class CurrentConnectionInterval:
    """Config 0xB2: the connection interval in use (x1.25 ms)."""
    interval_1250us: int
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xB2


@dataclass(frozen=True)
class SerializedInfo:
    """Config 0xF0: the 19 packed bytes, kept raw (their bit order is unconfirmed on hardware)."""
    payload: bytes
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xF0


Notification = Union[PositionId, StandardId, PositionIdMissed, StandardIdMissed, TargetMoveResult,
                     MultiTargetMoveResult, MotorSpeed, MotionSensor, MagneticSensor, PostureEuler, PostureQuaternion,
                     PostureEulerFloat, ButtonState, BatteryLevel, ProtocolVersion, ConfigResponse,
                     RequestedConnectionInterval, CurrentConnectionInterval, SerializedInfo]

_FIXED = (PositionId, StandardId, PositionIdMissed, StandardIdMissed, TargetMoveResult, MultiTargetMoveResult,
          MotorSpeed)


def encode_notification(message: Notification) -> bytes:
    """The bytes a cube sends for a notification (used by the virtual cube)."""
    try:
        if isinstance(message, _FIXED):
            return struct.pack(message.FORMAT, message.TYPE, *_fields(message))
        if isinstance(message, (PostureEuler, PostureQuaternion, PostureEulerFloat)):
            return struct.pack(message.FORMAT, 0x03, message.SUBTYPE, *_fields(message))
        if isinstance(message, MotionSensor):
            optional = (message.double_tap, message.posture, message.shake)
            present = [v for v in optional if v is not None]
            _check(optional[:len(present)] == tuple(present) and len(present) in (0, 2, 3),
                   'motion: give double_tap and posture together, shake only with both')
            return bytes((0x01, 1 if message.horizontal else 0, 1 if message.collision else 0,
                          *[int(v) for v in present]))
        if isinstance(message, MagneticSensor):
            if message.strength is None:
                return bytes((0x02, message.state))
            return struct.pack('<BBBbbb', 0x02, message.state, message.strength, message.x, message.y, message.z)
        if isinstance(message, ButtonState):
            return bytes((0x01, 0x80 if message.pressed else 0x00))
        if isinstance(message, BatteryLevel):
            _check(0 <= message.percent <= 100, f'battery percent must be 0..100, got {message.percent}')
            return bytes((message.percent,))
        if isinstance(message, ProtocolVersion):
            parse_version(message.version)
            return b'\x81\x00' + message.version.encode('ascii')
        if isinstance(message, ConfigResponse):
            _check(message.response_type in CONFIG_RESPONSES, f'unknown config response 0x{message.response_type:02x}')
            return bytes((message.response_type, 0, message.result))
        if isinstance(message, RequestedConnectionInterval):
            return struct.pack('<BBHH', 0xB1, 0, message.min_1250us, message.max_1250us)
        if isinstance(message, CurrentConnectionInterval):
            return struct.pack('<BBH', 0xB2, 0, message.interval_1250us)
        if isinstance(message, SerializedInfo):
            _check(len(message.payload) == 19, 'serialized info payload must be 19 bytes')
            return b'\xf0' + bytes(message.payload)
    except (struct.error, TypeError, ValueError, UnicodeEncodeError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f'cannot encode {message!r}: {exc}') from None
    raise ProtocolError(f'not a toio notification: {message!r}')


def _fields(message: object) -> tuple:
    return tuple(getattr(message, field.name) for field in dataclasses.fields(message))  # type: ignore[arg-type]


def _decode_fixed(cls: type, data: bytes) -> Notification:
    values = _unpack(cls.FORMAT, data, cls.__name__)
    return cls(*values[1:])


_ID_MESSAGES = {0x01: PositionId, 0x02: StandardId, 0x03: PositionIdMissed, 0x04: StandardIdMissed}
_MOTOR_MESSAGES = {0x83: TargetMoveResult, 0x84: MultiTargetMoveResult, 0xE0: MotorSpeed}


def _decode_id(data: bytes) -> Notification:
    cls = _ID_MESSAGES.get(data[0])
    if cls is None:
        raise ProtocolError(f'unknown ID information type 0x{data[0]:02x}')
    return _decode_fixed(cls, data)


def _decode_motor(data: bytes) -> Notification:
    cls = _MOTOR_MESSAGES.get(data[0])
    if cls is None:
        raise ProtocolError(f'unknown motor notification type 0x{data[0]:02x}')
    return _decode_fixed(cls, data)


def _decode_sensor(data: bytes) -> Notification:
    kind = data[0]
    if kind == 0x01:
        _check(len(data) in (3, 5, 6), f'motion: expected 3, 5 or 6 bytes, got {len(data)}')
        _check(data[1] in (0, 1) and data[2] in (0, 1), f'motion: bad flags {_hex(data)}')
        if len(data) == 3:
            return MotionSensor(data[1] == 1, data[2] == 1)
        _check(data[3] in (0, 1) and 1 <= data[4] <= 6, f'motion: bad double-tap/posture {_hex(data)}')
        shake = None
        if len(data) == 6:
            _check(data[5] <= 10, f'motion: shake level {data[5]} > 10')
            shake = data[5]
        return MotionSensor(data[1] == 1, data[2] == 1, data[3] == 1, data[4], shake)
    if kind == 0x02:
        if len(data) == 2:
            _check(data[1] <= 6, f'magnet: state {data[1]} > 6')
            return MagneticSensor(data[1])
        _, state, strength, x, y, z = _unpack('<BBBbbb', data, 'magnetic sensor')
        _check(state <= 6, f'magnet: state {state} > 6')
        return MagneticSensor(state, strength, x, y, z)
    if kind == 0x03:
        _check(len(data) >= 2, 'posture: missing sub-type')
        table = {0x01: PostureEuler, 0x02: PostureQuaternion, 0x03: PostureEulerFloat}
        _check(data[1] in table, f'unknown posture sub-type 0x{data[1]:02x}')
        cls = table[data[1]]
        return cls(*_unpack(cls.FORMAT, data, cls.__name__)[2:])
    raise ProtocolError(f'unknown sensor notification type 0x{kind:02x}')


def _decode_button(data: bytes) -> Notification:
    _check(len(data) == 2 and data[0] == 0x01 and data[1] in (0x00, 0x80), f'button: bad bytes {_hex(data)}')
    return ButtonState(data[1] == 0x80)


def _decode_battery(data: bytes) -> Notification:
    _check(len(data) == 1 and data[0] <= 100, f'battery: bad bytes {_hex(data)}')
    return BatteryLevel(data[0])


def _decode_config(data: bytes) -> Notification:
    kind = data[0]
    if kind == 0x81:
        _check(len(data) >= 3 and data[1] == 0, f'protocol version: bad bytes {_hex(data)}')
        try:
            text = data[2:].decode('ascii')
        except UnicodeDecodeError:
            raise ProtocolError(f'protocol version is not ASCII: {_hex(data)}') from None
        parse_version(text)
        return ProtocolVersion(text)
    if kind in CONFIG_RESPONSES:
        _, reserved, result = _unpack('<BBB', data, 'configuration response')
        _check(reserved == 0, 'configuration response: reserved byte must be 0')
        return ConfigResponse(kind, result)
    if kind == 0xB1:
        return RequestedConnectionInterval(*_unpack('<BBHH', data, 'requested connection interval')[2:])
    if kind == 0xB2:
        return CurrentConnectionInterval(_unpack('<BBH', data, 'connection interval')[2])
    if kind == 0xF0:
        _check(len(data) == 20, f'serialized info: expected 20 bytes, got {len(data)}')
        return SerializedInfo(data[1:])
    raise ProtocolError(f'unknown configuration notification type 0x{kind:02x}')


_DECODERS: dict[Characteristic, Callable[[bytes], Notification]] = {
    Characteristic.ID_INFORMATION: _decode_id,
    Characteristic.MOTOR_CONTROL: _decode_motor,
    Characteristic.SENSOR_INFORMATION: _decode_sensor,
    Characteristic.BUTTON_INFORMATION: _decode_button,
    Characteristic.BATTERY_INFORMATION: _decode_battery,
    Characteristic.CONFIGURATION: _decode_config,
}


def decode(char: CharLike, data: bytes) -> Notification:
    """Decode a notification or read from a characteristic (UUID, name or Characteristic)."""
    if type(data) is not bytes:
        data = _as_bytes(data)
    resolved = char if type(char) is Characteristic else characteristic(char)
    decoder = _DECODERS.get(resolved)  # type: ignore[arg-type]
    if decoder is None or not data:
        raise ProtocolError(f'{resolved.name} sends no notifications' if decoder is None
                            else f'empty notification on {resolved.name}')
    return decoder(data)
