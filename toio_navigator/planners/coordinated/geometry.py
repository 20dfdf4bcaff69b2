"""Distances from points to segments and between segments, vectorised with numpy broadcasting: arrays whose last
axis is (x, y), any leading axes, so one call answers for every (sample, segment) combination at once.
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


def segment_gaps(p: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least distance between the segment [p, q] and each segment [a, b] (M, 2) (a point is a == b)."""
    d = np.minimum(np.minimum(point_segment_distance(p[None], a, b), point_segment_distance(q[None], a, b)),
                   np.minimum(point_segment_distance(a, p[None], q[None]), point_segment_distance(b, p[None], q[None])))
    r = q - p
    s = b - a
    o1 = r[0] * (a[:, 1] - p[1]) - r[1] * (a[:, 0] - p[0])
    o2 = r[0] * (b[:, 1] - p[1]) - r[1] * (b[:, 0] - p[0])
    o3 = s[:, 0] * (p[1] - a[:, 1]) - s[:, 1] * (p[0] - a[:, 0])
    o4 = s[:, 0] * (q[1] - a[:, 1]) - s[:, 1] * (q[0] - a[:, 0])
    return np.where((o1 * o2 < 0.0) & (o3 * o4 < 0.0), 0.0, d)


def boxes_overlap(low: np.ndarray, high: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For boxes [low, high] (M, 2): does each overlap the box [lo, hi] (strictly)? The cheap test before
    :func:`segment_gaps`."""
    return np.all(low < hi, axis=1) & np.all(high > lo, axis=1)


def segments_gap_pairwise(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Least distance between segments [a, b] and [c, d], row by row (all (M, 2); a point is a == b)."""
    dist = np.minimum(np.minimum(point_segment_distance(a, c, d), point_segment_distance(b, c, d)),
                      np.minimum(point_segment_distance(c, a, b), point_segment_distance(d, a, b)))
    r, s = b - a, d - c
    o1 = r[:, 0] * (c[:, 1] - a[:, 1]) - r[:, 1] * (c[:, 0] - a[:, 0])
    o2 = r[:, 0] * (d[:, 1] - a[:, 1]) - r[:, 1] * (d[:, 0] - a[:, 0])
    o3 = s[:, 0] * (a[:, 1] - c[:, 1]) - s[:, 1] * (a[:, 0] - c[:, 0])
    o4 = s[:, 0] * (b[:, 1] - c[:, 1]) - s[:, 1] * (b[:, 0] - c[:, 0])
    return np.where((o1 * o2 < 0.0) & (o3 * o4 < 0.0), 0.0, dist)
