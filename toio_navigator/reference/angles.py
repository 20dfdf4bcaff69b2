"""Angle and vector helpers with the reference's exact semantics (docs/navigator.md §0.3, §0.4).

``wrap`` is fmod(r + 3π, 2π) − π with a truncating remainder, as in the reference: the result lies in [−π, π)
for r > −3π and is wrong below (B29). Everything works on floats and numpy arrays alike.
"""
from __future__ import annotations

import math

import numpy as np

_THREE_PI = math.pi * 3
_MIN = np.minimum.reduce
_MAX = np.maximum.reduce
_TWO_PI = math.pi * 2


def wrap(r):
    """Reference angle wrap (to [−π, π) for r > −3π), bit-identical to fmod(r + 3π, 2π) − π.

    For 0 ≤ r + 3π < 8π the remainder is taken by subtracting 4π and then 2π where needed: each subtraction
    is exact (Sterbenz), so the result equals fmod's exact remainder while avoiding its slow libm call.
    """
    x = np.asarray(r, dtype=float) + _THREE_PI
    if x.ndim == 0:
        return float(np.fmod(x, _TWO_PI) - math.pi)
    if x.size < 2048:           # small arrays: one libm call is cheaper than the exact-subtraction steps
        return np.fmod(x, _TWO_PI) - math.pi
    flat = x.reshape(-1)
    if flat.size and (_MIN(flat) < 0 or _MAX(flat) >= 4 * _TWO_PI):
        return np.fmod(x, _TWO_PI) - math.pi
    fast = x - (x >= 2 * _TWO_PI) * (2 * _TWO_PI)    # subtracting 0.0 leaves x unchanged
    fast -= (fast >= _TWO_PI) * _TWO_PI
    fast -= math.pi
    return fast


def wrap_deg(d):
    """Reference degree wrap (to [−180, 180) for d > −540)."""
    return np.fmod(d + 540.0, 360.0) - 180.0


def abs_wrap(r):
    return np.abs(wrap(r))


def ang(x, y):
    """Heading of the vector (x, y): wrap(atan2(y, x)); (0, 0) gives wrap(0)."""
    return wrap(np.arctan2(y, x))


def deg2rad(d):
    """Reference conversion, which wraps."""
    return wrap(d * math.pi / 180.0)


def rad2deg(r):
    return wrap_deg(r * 180.0 / math.pi)


def norm(x, y):
    return np.sqrt(x * x + y * y)


def unit(x, y):
    """Unit vector; (0, 0) for the zero vector."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    m = np.sqrt(x * x + y * y)
    zero = (x == 0) & (y == 0)
    safe = np.where(zero, 1.0, m)
    return np.where(zero, 0.0, x / safe), np.where(zero, 0.0, y / safe)


def clip_len(x, y, max_len):
    """Scale (x, y) down to ``max_len`` if longer (reference Vector.clip)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    m = np.sqrt(x * x + y * y)
    longer = (m > max_len) & (m > 0)
    safe = np.where(longer, m, 1.0)
    return np.where(longer, x * max_len / safe, x), np.where(longer, y * max_len / safe, y)
