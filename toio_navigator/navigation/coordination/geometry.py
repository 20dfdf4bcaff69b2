"""Distances between points, segments and short polylines, vectorised with numpy broadcasting.

Every function takes arrays whose last axis is (x, y) and broadcasts over the leading axes, so one call answers
for every (cube, candidate, neighbour) combination at once.
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


def segment_distance(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """Smallest distance between segments [a0, a1] and [b0, b1] (0 where they cross), broadcasting."""
    a0x, a0y, a1x, a1y = a0[..., 0], a0[..., 1], a1[..., 0], a1[..., 1]
    b0x, b0y, b1x, b1y = b0[..., 0], b0[..., 1], b1[..., 0], b1[..., 1]
    adx, ady, bdx, bdy = a1x - a0x, a1y - a0y, b1x - b0x, b1y - b0y
    ainv = 1.0 / np.maximum(adx * adx + ady * ady, _EPS)
    binv = 1.0 / np.maximum(bdx * bdx + bdy * bdy, _EPS)
    d2 = np.minimum(np.minimum(_point_segment_d2(a0x, a0y, b0x, b0y, bdx, bdy, binv),
                               _point_segment_d2(a1x, a1y, b0x, b0y, bdx, bdy, binv)),
                    np.minimum(_point_segment_d2(b0x, b0y, a0x, a0y, adx, ady, ainv),
                               _point_segment_d2(b1x, b1y, a0x, a0y, adx, ady, ainv)))
    # a proper crossing: each segment's end points lie strictly on both sides of the other's line
    o1 = adx * (b0y - a0y) - ady * (b0x - a0x)
    o2 = adx * (b1y - a0y) - ady * (b1x - a0x)
    o3 = bdx * (a0y - b0y) - bdy * (a0x - b0x)
    o4 = bdx * (a1y - b0y) - bdy * (a1x - b0x)
    crossing = (o1 * o2 < 0.0) & (o3 * o4 < 0.0)
    return np.where(crossing, 0.0, np.sqrt(d2))


def polyline_distance(segment_a: tuple[np.ndarray, np.ndarray], polyline: np.ndarray) -> np.ndarray:
    """Distance from segments (a0, a1) of shape (..., 2) to polylines of shape (..., P, 2) (P >= 2 points;
    repeated points make shorter polylines)."""
    a0, a1 = segment_a
    starts, ends = polyline[..., :-1, :], polyline[..., 1:, :]
    return segment_distance(a0[..., None, :], a1[..., None, :], starts, ends).min(axis=-1)


def polyline_point(polyline: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The point at arc length ``s`` (N,) along each polyline (N, P, 2), clamped to its end."""
    seg = polyline[:, 1:] - polyline[:, :-1]
    seg_len = np.hypot(seg[..., 0], seg[..., 1])
    before = np.concatenate([np.zeros((len(polyline), 1)), np.cumsum(seg_len, axis=1)], axis=1)
    s = np.clip(s, 0.0, before[:, -1])
    k = np.clip((s[:, None] >= before[:, 1:]).sum(axis=1), 0, seg.shape[1] - 1)
    rows = np.arange(len(polyline))
    t = (s - before[rows, k]) / np.maximum(seg_len[rows, k], _EPS)
    return polyline[rows, k] + np.clip(t, 0.0, 1.0)[:, None] * seg[rows, k]


def polyline_length(polyline: np.ndarray) -> np.ndarray:
    seg = polyline[..., 1:, :] - polyline[..., :-1, :]
    return np.hypot(seg[..., 0], seg[..., 1]).sum(axis=-1)
