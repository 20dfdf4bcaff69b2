"""Where a differential-drive cube is after a while on constant wheel speeds: an exact arc, so no time stepping is
needed and many cubes (and many instants) go at once."""
from __future__ import annotations

import numpy as np


def drive_arc(x, y, th, left, right, seconds, k: float, track: float):
    """(x, y, heading) after ``seconds`` on wheel speeds ``left`` and ``right`` (motor units), from (x, y, th); all
    arrays broadcast. ``k`` mat units/s per motor unit, ``track`` the wheel track (mat units). The heading is not
    wrapped."""
    vl, vr = np.asarray(left, float) * k, np.asarray(right, float) * k
    v, w = 0.5 * (vl + vr), (vl - vr) / track
    turn = w * seconds
    straight = np.abs(turn) < 1e-9
    safe_w = np.where(straight, 1.0, w)
    dx = np.where(straight, v * seconds * np.cos(th), v / safe_w * (np.sin(th + turn) - np.sin(th)))
    dy = np.where(straight, v * seconds * np.sin(th), -v / safe_w * (np.cos(th + turn) - np.cos(th)))
    return x + dx, y + dy, th + turn
