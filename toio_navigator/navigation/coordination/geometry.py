"""Distances from points to segments, vectorised with numpy broadcasting: arrays whose last axis is (x, y), any
leading axes, so one call answers for every (sample, segment) combination at once.
"""
from __future__ import annotations

import numpy as np

_EPS = 1e-12


def _point_segment_d2(px, py, ax, ay, dx, dy, inv):
    t = np.clip(((px - ax) * dx + (py - ay) * dy) * inv, 0.0, 1.0)
    ex = px - ax - t * dx
    ey = py - ay - t * dy
    return ex * ex + ey * ey


def point_segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance from points ``p`` to segments [a, b] (a == b is a point)."""
    dx, dy = b[..., 0] - a[..., 0], b[..., 1] - a[..., 1]
    inv = 1.0 / np.maximum(dx * dx + dy * dy, _EPS)
    return np.sqrt(_point_segment_d2(p[..., 0], p[..., 1], a[..., 0], a[..., 1], dx, dy, inv))
