"""Battery information characteristic (notify, read): one byte, the charge in percent (no type byte)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, check, encodes, hex_bytes


@dataclass(frozen=True)
class BatteryLevel:
    """Battery: percent 0..100 (the cube reports 10 % steps)."""
    percent: int
    CHAR: ClassVar = Characteristic.BATTERY_INFORMATION

    @encodes
    def encode(self) -> bytes:
        check(0 <= self.percent <= 100, f'battery percent must be 0..100, got {self.percent}')
        return bytes((self.percent,))

    @classmethod
    def decode(cls, data: bytes) -> 'BatteryLevel':
        check(len(data) == 1 and data[0] <= 100, f'battery: bad bytes {hex_bytes(data)}')
        return cls(data[0])
