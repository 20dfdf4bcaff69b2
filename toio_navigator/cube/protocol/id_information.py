"""ID information characteristic (notify, read): the position on the mat (0x01), a card or sticker (0x02), and
that either was lost (0x03, 0x04)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from toio_navigator.cube.protocol.common import Characteristic, FixedLayout


@dataclass(frozen=True)
class PositionId(FixedLayout):
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
class StandardId(FixedLayout):
    """ID 0x02: a card / sticker value and the angle on it."""
    value: int
    angle: int
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x02
    FORMAT: ClassVar = '<BIH'


@dataclass(frozen=True)
class PositionIdMissed(FixedLayout):
    """ID 0x03: the cube lost the mat (lifted or off the edge)."""
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x03
    FORMAT: ClassVar = '<B'


@dataclass(frozen=True)
class StandardIdMissed(FixedLayout):
    """ID 0x04: the card / sticker went out of view."""
    CHAR: ClassVar = Characteristic.ID_INFORMATION
    TYPE: ClassVar = 0x04
    FORMAT: ClassVar = '<B'
