"""Entities, walls and mat borders (docs/navigator.md §1.1, §1.3; geometry of §2.6).

An :class:`Entity` is the state of one robot or of a target point. A :class:`Wall` is a segment with a margin
that HLAvoid treats as a capsule. ``line_coeffs`` gives the normalised line a·x + b·y + c = 0 through two points
exactly as the reference builds it (axis-parallel lines get a = 1 or b = 1 without normalising), so that the
circle casts of hlavoid.py round like the reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.reference.angles import wrap


@dataclass
class Entity:
    """State of one robot (or a target). Velocities are used exactly as given, never derived."""
    x: float
    y: float
    rad: float = 0.0
    spd: float = 0.0
    vx: float = 0.0
    vy: float = 0.0
    w: float = 0.0
    spdL: float = 0.0
    spdR: float = 0.0
    margin: float = 0.0

    @classmethod
    def from_cube(cls, x: float, y: float, rad: float, spd_l: float, spd_r: float, wheel_track: float,
                  margin: float = 16.0) -> 'Entity':
        """Fill the fields the way the reference's cube entity does: v along the heading, w from the wheels."""
        spd = (spd_l + spd_r) / 2
        return cls(x=x, y=y, rad=rad, spd=spd, vx=spd * math.cos(rad), vy=spd * math.sin(rad),
                   w=(spd_l - spd_r) / wheel_track, spdL=spd_l, spdR=spd_r, margin=margin)

    def rel_angle(self, px: float, py: float) -> float:
        """wrap(ang(p − pos) − rad): negative = to the robot's left (counter-clockwise on the mat image)."""
        return float(wrap(wrap(math.atan2(py - self.y, px - self.x)) - self.rad))


@dataclass(frozen=True)
class Wall:
    """Segment (x1, y1)–(x2, y2) with a half thickness ``margin``. The endpoints must differ."""
    x1: float
    y1: float
    x2: float
    y2: float
    margin: float = 0.0

    def __post_init__(self) -> None:
        if self.x1 == self.x2 and self.y1 == self.y2:
            raise ValueError(f'wall endpoints are the same point ({self.x1}, {self.y1})')
        for name in ('x1', 'y1', 'x2', 'y2', 'margin'):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f'wall {name} is not a finite number')

    def as_row(self) -> tuple[float, float, float, float, float]:
        return (self.x1, self.y1, self.x2, self.y2, self.margin)


def border_walls(width: float = 20, x1: float = 40, x2: float = 460, y1: float = 40,
                 y2: float = 460) -> list[Wall]:
    """The reference's AddBorder: left, right, top, bottom, each with margin = width (§1.3)."""
    return [Wall(x1, y1, x1, y2, width), Wall(x2, y1, x2, y2, width),
            Wall(x1, y1, x2, y1, width), Wall(x1, y2, x2, y2, width)]


def walls_array(walls) -> np.ndarray:
    """Walls (Wall objects or rows) as an (M, 5) float array x1, y1, x2, y2, margin."""
    rows = [w.as_row() if isinstance(w, Wall) else tuple(w) for w in walls]
    arr = np.asarray(rows, dtype=float).reshape(-1, 5)
    same = (arr[:, 0] == arr[:, 2]) & (arr[:, 1] == arr[:, 3])
    if same.any():
        raise ValueError(f'wall {int(np.argmax(same))} has two identical endpoints')
    return arr


def line_coeffs(x1, y1, x2, y2):
    """(a, b, c) of a·x + b·y + c = 0 through two distinct points, built as the reference builds it."""
    x1, y1, x2, y2 = (v if isinstance(v, np.ndarray) else np.asarray(v, dtype=float) for v in (x1, y1, x2, y2))
    c = x1 * y2 - x2 * y1
    a = y1 - y2
    b = x2 - x1
    vertical = b == 0       # x1 == x2 exactly (a difference of doubles is 0 only for equal operands)
    horizontal = a == 0     # y1 == y2 exactly
    with np.errstate(invalid='ignore', divide='ignore'):
        mag = np.sqrt(a * a + b * b)
        a = a / mag
        b = b / mag
        c = c / mag
    if not (vertical.any() or horizontal.any()):
        return a, b, c
    # axis-parallel: (1, 0, −x1) or (0, 1, −y1), with c = +0.0 when the coordinate is 0 (0.0 − 0.0 = +0.0)
    a = np.where(vertical, 1.0, np.where(horizontal, 0.0, a))
    b = np.where(vertical, 0.0, np.where(horizontal, 1.0, b))
    c = np.where(vertical, 0.0 - x1, np.where(horizontal, 0.0 - y1, c))
    return a, b, c
