"""Sound control characteristic: stop (0x01), a sound effect (0x02) and MIDI notes (0x03)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, check, hex_bytes, u8


@dataclass(frozen=True)
class SoundEffect:
    """Sound 0x02: effect 0..10 at volume (0 = mute, anything else = maximum)."""
    effect: int
    volume: int = 255
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x02

    def encode(self) -> bytes:
        check(isinstance(self.effect, int) and 0 <= self.effect <= 10,
               f'sound effect must be 0..10, got {self.effect!r}')
        return bytes((0x02, self.effect, u8('volume', self.volume)))

    @classmethod
    def decode(cls, data: bytes) -> 'SoundEffect':
        check(len(data) == 3 and data[1] <= 10, f'sound effect: bad bytes {hex_bytes(data)}')
        return cls(data[1], data[2])


@dataclass(frozen=True)
class SoundMidi:
    """Sound 0x03: notes of (duration_10ms, note 0..128 with 128 = rest, volume), repeated (0 = forever)."""
    notes: tuple[tuple[int, int, int], ...]
    repeat: int = 1
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x03

    def encode(self) -> bytes:
        check(1 <= len(self.notes) <= 59, f'MIDI needs 1..59 notes, got {len(self.notes)}')
        body = b''
        for duration, note, volume in self.notes:
            check(isinstance(note, int) and 0 <= note <= 128, f'MIDI note must be 0..128, got {note!r}')
            check(isinstance(duration, int) and 1 <= duration <= 255,
                   f'MIDI duration must be 1..255, got {duration!r}')
            body += bytes((duration, note, u8('volume', volume)))
        return bytes((0x03, u8('repeat', self.repeat), len(self.notes))) + body

    @classmethod
    def decode(cls, data: bytes) -> 'SoundMidi':
        check(len(data) >= 3, 'MIDI: too short')
        count = data[2]
        check(1 <= count <= 59 and len(data) == 3 + 3 * count, f'MIDI: bad length {len(data)} for {count} notes')
        notes = tuple((data[3 + 3 * k], data[4 + 3 * k], data[5 + 3 * k]) for k in range(count))
        check(all(d >= 1 and n <= 128 for d, n, _v in notes), 'MIDI: bad note')
        return cls(notes, data[1])


@dataclass(frozen=True)
class SoundStop:
    CHAR: ClassVar = Characteristic.SOUND_CONTROL
    TYPE: ClassVar = 0x01

    def encode(self) -> bytes:
        return b'\x01'

    @classmethod
    def decode(cls, data: bytes) -> 'SoundStop':
        check(len(data) == 1, 'sound stop: expected 1 byte')
        return cls()
