"""Button information characteristic (notify, read): the function button (0x01)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, check, encodes, hex_bytes


@dataclass(frozen=True)
class ButtonState:
    """Button 0x01: the function button."""
    pressed: bool
    CHAR: ClassVar = Characteristic.BUTTON_INFORMATION
    TYPE: ClassVar = 0x01

    @encodes
    def encode(self) -> bytes:
        return bytes((0x01, 0x80 if self.pressed else 0x00))

    @classmethod
    def decode(cls, data: bytes) -> 'ButtonState':
        check(len(data) == 2 and data[0] == 0x01 and data[1] in (0x00, 0x80), f'button: bad bytes {hex_bytes(data)}')
        return cls(data[1] == 0x80)
