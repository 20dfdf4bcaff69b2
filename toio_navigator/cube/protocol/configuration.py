"""Configuration characteristic: the writes that set up a cube (thresholds, notification settings, connection
interval, power off, ...) as one :class:`ConfigWrite` type with a fixed layout per command, and the cube's answers:
protocol version (0x81), setting results, connection intervals and the serialized information (0xF0)."""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Callable, ClassVar

from toio_navigator.cube.protocol.common import (
    Characteristic,
    ProtocolError,
    check,
    encodes,
    hex_bytes,
    parse_version,
    unpack,
)


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

    The parameter layout per type is fixed by :data:`CONFIG_LAYOUTS`; the named constructors below build the
    writes a driver sends with named arguments, e.g. ``ConfigWrite.id_notification(1, ID_ON_CHANGE).encode()``.
    """
    command: int
    values: tuple[int, ...] = ()
    CHAR: ClassVar = Characteristic.CONFIGURATION

    def encode(self) -> bytes:
        layouts = CONFIG_LAYOUTS.get(self.command)
        check(layouts is not None, f'unknown configuration command {self.command!r}')
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
        check(len(data) >= 1, 'configuration: empty write')
        layouts = CONFIG_LAYOUTS.get(data[0])
        check(layouts is not None, f'unknown configuration command 0x{data[0]:02x}')
        if data[0] == ConfigCommand.FACTORY_RESET:
            check(len(data) == 1, 'factory reset: expected 1 byte')
            return cls(data[0])
        for fmt, validate in layouts:
            if struct.calcsize('<BB' + fmt[1:]) == len(data):
                check(data[1] == 0, f'configuration 0x{data[0]:02x}: reserved byte must be 0')
                values = struct.unpack('<BB' + fmt[1:], data)[2:]
                validate(values)
                return cls(data[0], tuple(values))
        raise ProtocolError(f'configuration 0x{data[0]:02x}: bad length {len(data)}')

    # ---- named constructors
    @classmethod
    def request_protocol_version(cls) -> 'ConfigWrite':
        """0x01: the cube answers with its protocol version (0x81)."""
        return cls(ConfigCommand.PROTOCOL_VERSION)

    @classmethod
    def horizontal_threshold(cls, degrees: int = 45) -> 'ConfigWrite':
        """0x05: tilt (degrees, 1..45) beyond which the cube no longer counts as horizontal."""
        return cls(ConfigCommand.HORIZONTAL_THRESHOLD, (degrees,))

    @classmethod
    def collision_threshold(cls, level: int = 7) -> 'ConfigWrite':
        """0x06: collision detection level 1..10."""
        return cls(ConfigCommand.COLLISION_THRESHOLD, (level,))

    @classmethod
    def id_notification(cls, interval_10ms: int = 1, condition: int = ID_BALANCED) -> 'ConfigWrite':
        """0x18: minimum interval (x10 ms) and condition (0 always, 1 on change, 0xFF balanced)."""
        return cls(ConfigCommand.ID_NOTIFICATION, (interval_10ms, condition))

    @classmethod
    def id_missed_sensitivity(cls, delay_10ms: int = 7) -> 'ConfigWrite':
        """0x19: report "missed" only after the ID was lost this long (x10 ms)."""
        return cls(ConfigCommand.ID_MISSED_SENSITIVITY, (delay_10ms,))

    @classmethod
    def magnetic_sensor(cls, mode: int, interval_20ms: int = 0, condition: int = 0) -> 'ConfigWrite':
        """0x1B (v2.3.0 form): mode 0 off / 1 state / 2 force, interval x20 ms, condition 0 always / 1 on change."""
        return cls(ConfigCommand.MAGNETIC_SENSOR, (mode, interval_20ms, condition))

    @classmethod
    def motor_speed_notification(cls, enabled: bool) -> 'ConfigWrite':
        """0x1C: wheel-speed (0xE0) notifications on/off."""
        return cls(ConfigCommand.MOTOR_SPEED_NOTIFICATION, (1 if enabled else 0,))

    @classmethod
    def posture_notification(cls, kind: int, interval_10ms: int, condition: int = 0) -> 'ConfigWrite':
        """0x1D: posture angle kind 1 Euler / 2 quaternion / 3 float Euler, interval x10 ms (0 = off)."""
        return cls(ConfigCommand.POSTURE_NOTIFICATION, (kind, interval_10ms, condition))

    @classmethod
    def connection_interval(cls, min_1250us: int, max_1250us: int) -> 'ConfigWrite':
        """0x30: ask the central for a connection interval in 1.25 ms units (0xFFFF = no preference)."""
        return cls(ConfigCommand.CONNECTION_INTERVAL, (min_1250us, max_1250us))

    @classmethod
    def request_connection_interval(cls, actual: bool = True) -> 'ConfigWrite':
        """0x32 (the interval in use) or 0x31 (the one the cube asked for)."""
        return cls(ConfigCommand.CURRENT_CONNECTION_INTERVAL if actual
                   else ConfigCommand.REQUESTED_CONNECTION_INTERVAL)

    @classmethod
    def power_off(cls, delay_s: int = 0) -> 'ConfigWrite':
        """0x34: the cube switches itself off after ``delay_s`` seconds."""
        return cls(ConfigCommand.POWER_OFF, (delay_s,))


def _range(*bounds: tuple[int, int]) -> Callable[[tuple[int, ...]], None]:
    def validate(values: tuple[int, ...]) -> None:
        for value, (low, high) in zip(values, bounds):
            check(low <= value <= high, f'configuration value {value} outside {low}..{high}')
    return validate


def _options(*allowed: tuple[int, ...]) -> Callable[[tuple[int, ...]], None]:
    def validate(values: tuple[int, ...]) -> None:
        for value, options in zip(values, allowed):
            check(value in options, f'configuration value {value} not one of {options}')
    return validate


def _interval_ok(values: tuple[int, ...]) -> None:
    for value in values:
        check(value == 0xFFFF or 0x0006 <= value <= 0x0C80,
              f'connection interval {value} outside 6..3200 (x1.25 ms) and not 0xFFFF')
    low, high = values      # the Bluetooth core specification requires min <= max (0xFFFF: no preference)
    check(low == 0xFFFF or high == 0xFFFF or low <= high,
          f'connection interval minimum {low} exceeds the maximum {high} (x1.25 ms)')


_ANY = (0, 255)
#: per command: the accepted layouts ('<' + fields after the reserved byte) and a value check
CONFIG_LAYOUTS: dict[int, list[tuple[str, Callable[[tuple[int, ...]], None]]]] = {
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


# notifications

@dataclass(frozen=True)
class ProtocolVersion:
    """Config 0x81: the BLE protocol version string, e.g. '2.4.0'."""
    version: str
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0x81

    @property
    def as_tuple(self) -> tuple[int, int, int]:
        return parse_version(self.version)

    @encodes
    def encode(self) -> bytes:
        parse_version(self.version)
        return b'\x81\x00' + self.version.encode('ascii')

    @classmethod
    def decode(cls, data: bytes) -> 'ProtocolVersion':
        check(len(data) >= 3 and data[0] == 0x81 and data[1] == 0, f'protocol version: bad bytes {hex_bytes(data)}')
        try:
            text = data[2:].decode('ascii')
        except UnicodeDecodeError:
            raise ProtocolError(f'protocol version is not ASCII: {hex_bytes(data)}') from None
        parse_version(text)
        return cls(text)


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

    @encodes
    def encode(self) -> bytes:
        check(self.response_type in CONFIG_RESPONSES, f'unknown config response 0x{self.response_type:02x}')
        return bytes((self.response_type, 0, self.result))

    @classmethod
    def decode(cls, data: bytes) -> 'ConfigResponse':
        kind, reserved, result = unpack('<BBB', data, 'configuration response')
        check(kind in CONFIG_RESPONSES, f'unknown config response 0x{kind:02x}')
        check(reserved == 0, 'configuration response: reserved byte must be 0')
        return cls(kind, result)


@dataclass(frozen=True)
class RequestedConnectionInterval:
    """Config 0xB1: the connection interval the cube asked for (x1.25 ms)."""
    min_1250us: int
    max_1250us: int
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xB1

    @encodes
    def encode(self) -> bytes:
        return struct.pack('<BBHH', 0xB1, 0, self.min_1250us, self.max_1250us)

    @classmethod
    def decode(cls, data: bytes) -> 'RequestedConnectionInterval':
        kind, _reserved, low, high = unpack('<BBHH', data, 'requested connection interval')
        check(kind == 0xB1, f'requested connection interval: bad bytes {hex_bytes(data)}')
        return cls(low, high)


@dataclass(frozen=True)
class CurrentConnectionInterval:
    """Config 0xB2: the connection interval in use (x1.25 ms)."""
    interval_1250us: int
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xB2

    @encodes
    def encode(self) -> bytes:
        return struct.pack('<BBH', 0xB2, 0, self.interval_1250us)

    @classmethod
    def decode(cls, data: bytes) -> 'CurrentConnectionInterval':
        kind, _reserved, interval = unpack('<BBH', data, 'connection interval')
        check(kind == 0xB2, f'connection interval: bad bytes {hex_bytes(data)}')
        return cls(interval)


@dataclass(frozen=True)
class SerializedInfo:
    """Config 0xF0: the 19 packed bytes, kept raw (their bit order is unconfirmed on hardware)."""
    payload: bytes
    CHAR: ClassVar = Characteristic.CONFIGURATION
    TYPE: ClassVar = 0xF0

    @encodes
    def encode(self) -> bytes:
        check(len(self.payload) == 19, 'serialized info payload must be 19 bytes')
        return b'\xf0' + bytes(self.payload)

    @classmethod
    def decode(cls, data: bytes) -> 'SerializedInfo':
        check(len(data) == 20 and data[0] == 0xF0, f'serialized info: expected 20 bytes, got {len(data)}')
        return cls(data[1:])
