"""What every part of the codec shares: the error, the service and its characteristics, field checks, the
struct layouts and the base of the messages that are one fixed layout."""
from __future__ import annotations

import dataclasses
import enum
import functools
import struct
from typing import Any, Callable, ClassVar, Union


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


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ProtocolError(message)


def u8(name: str, value: int) -> int:
    check(isinstance(value, int) and 0 <= value <= 0xFF, f'{name} must be an integer 0..255, got {value!r}')
    return value


def u16(name: str, value: int) -> int:
    check(isinstance(value, int) and 0 <= value <= 0xFFFF, f'{name} must be an integer 0..65535, got {value!r}')
    return value


def as_bytes(data: object) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise ProtocolError(f'expected bytes, got {type(data).__name__}')


_STRUCTS: dict[str, struct.Struct] = {}


def unpack(fmt: str, data: bytes, what: str) -> tuple:
    layout = _STRUCTS.get(fmt)
    if layout is None:
        layout = _STRUCTS[fmt] = struct.Struct(fmt)
    if len(data) != layout.size:
        raise ProtocolError(f'{what}: expected {layout.size} bytes, got {len(data)}')
    return layout.unpack(data)


def hex_bytes(data: bytes) -> str:
    return data.hex(' ') if data else '(empty)'


def parse_version(text: str) -> tuple[int, int, int]:
    """'2.4.0' -> (2, 4, 0)."""
    parts = text.split('.')
    try:
        numbers = tuple(int(p) for p in parts)
    except ValueError:
        raise ProtocolError(f'not a protocol version: {text!r}') from None
    check(len(numbers) == 3 and all(n >= 0 for n in numbers), f'not a protocol version: {text!r}')
    return numbers  # type: ignore[return-value]


def encodes(method: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """Decorator of a notification's ``encode``: anything struct or a conversion refuses becomes a ProtocolError
    naming the message (the virtual cube encodes values it computed, a bad one must not pass as bytes)."""
    @functools.wraps(method)
    def encode(message) -> bytes:
        try:
            return method(message)
        except ProtocolError:
            raise
        except (struct.error, TypeError, ValueError, UnicodeEncodeError) as exc:
            raise ProtocolError(f'cannot encode {message!r}: {exc}') from None
    return encode


class FixedLayout:
    """A message that is exactly one struct layout: ``FORMAT`` holds the type byte (and the ``SUBTYPE`` byte when
    there is one), then the dataclass fields in order."""
    TYPE: ClassVar[int]
    FORMAT: ClassVar[str]
    SUBTYPE: ClassVar[int | None] = None

    @classmethod
    def _head(cls) -> tuple[int, ...]:
        return (cls.TYPE,) if cls.SUBTYPE is None else (cls.TYPE, cls.SUBTYPE)

    @encodes
    def encode(self) -> bytes:
        values = tuple(getattr(self, f.name) for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return struct.pack(self.FORMAT, *self._head(), *values)

    @classmethod
    def decode(cls, data: bytes):
        values = unpack(cls.FORMAT, data, cls.__name__)
        head = cls._head()
        check(values[:len(head)] == head, f'{cls.__name__}: type {hex_bytes(bytes(values[:len(head)]))} is not '
                                          f'{hex_bytes(bytes(head))}')
        return cls(*values[len(head):])
