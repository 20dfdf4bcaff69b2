"""Light control characteristic: all lights off (0x01), one light off (0x02), on in one colour (0x03), a sequence
(0x04) and, from protocol 2.5.0, a smooth blink (0x70)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, check, hex_bytes, u8


def _rgb(r: int, g: int, b: int) -> bytes:
    return bytes((u8('red', r), u8('green', g), u8('blue', b)))


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
        return bytes((0x03, u8('duration', self.duration_10ms), 1, 1)) + _rgb(self.r, self.g, self.b)

    @classmethod
    def decode(cls, data: bytes) -> 'LightOn':
        check(len(data) == 7 and data[2] == 1 and data[3] == 1, f'light on: bad bytes {hex_bytes(data)}')
        return cls(data[4], data[5], data[6], data[1])


@dataclass(frozen=True)
class LightSequence:
    """Light 0x04: steps of (duration_10ms, r, g, b), repeated `repeat` times (0 = forever)."""
    steps: tuple[tuple[int, int, int, int], ...]
    repeat: int = 0
    CHAR: ClassVar = Characteristic.LIGHT_CONTROL
    TYPE: ClassVar = 0x04

    def encode(self) -> bytes:
        check(1 <= len(self.steps) <= 29, f'light sequence needs 1..29 steps, got {len(self.steps)}')
        body = b''
        for duration, r, g, b in self.steps:
            check(isinstance(duration, int) and 1 <= duration <= 255,
                   f'light step duration must be 1..255, got {duration!r}')
            body += bytes((duration, 1, 1)) + _rgb(r, g, b)
        return bytes((0x04, u8('repeat', self.repeat), len(self.steps))) + body

    @classmethod
    def decode(cls, data: bytes) -> 'LightSequence':
        check(len(data) >= 3, 'light sequence: too short')
        count = data[2]
        check(1 <= count <= 29 and len(data) == 3 + 6 * count,
               f'light sequence: bad length {len(data)} for {count} steps')
        steps = []
        for k in range(count):
            duration, light_count, light_id, r, g, b = data[3 + 6 * k:9 + 6 * k]
            check(duration >= 1 and light_count == 1 and light_id == 1, f'light sequence: bad step {k}')
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
        check(len(data) == 1, 'lights off: expected 1 byte')
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
        check(data == b'\x02\x01\x01', f'light off: bad bytes {hex_bytes(data)}')
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
        check(isinstance(self.period_10ms, int) and 10 <= self.period_10ms <= 255,
               f'blink period must be 10..255, got {self.period_10ms!r}')
        return bytes((0x70, u8('count', self.count), 1, 1, self.period_10ms)) + _rgb(self.r, self.g, self.b)

    @classmethod
    def decode(cls, data: bytes) -> 'LightSmoothBlink':
        check(len(data) == 8 and data[2] == 1 and data[3] == 1 and data[4] >= 10,
               f'smooth blink: bad bytes {hex_bytes(data)}')
        return cls(data[5], data[6], data[7], data[4], data[1])
