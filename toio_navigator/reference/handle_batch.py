"""CubeHandle's stateless steps for N cubes at once, exactly as the scalar CubeHandle (docs/navigator.md §4.4–§4.5).

* ``move_to_target_batch``  §4.5 (translate, rotate, duration, reached) from observed and predicted poses
* ``wheels_batch``          §4.4 steps 1–4: dead-zone shift and the reference's asymmetric saturation (B13)

The prediction (§4.2) and the border limitation (§4.4 step 5) keep per-cube history and stay in CubeHandle.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.reference.angles import deg2rad, wrap
from toio_navigator.reference.params import CubeHandleParams


def move_to_target_batch(x, y, rad, x_pred, y_pred, rad_pred, tx, ty, max_spd, params: CubeHandleParams,
                         rotate_time: int = 250, tolerance: float = 8.0):
    """Arrays (N,) → translate, rotate (motor units), duration_ms (int), reached (bool)."""
    p = params
    x, y, rad, x_pred, y_pred, rad_pred, tx, ty, v = (np.asarray(a, dtype=float) for a in (
        x, y, rad, x_pred, y_pred, rad_pred, tx, ty, max_spd))
    k, wt, d = p.k, p.wheel_track, float(p.dead_zone)
    dxp, dyp = tx - x_pred, ty - y_pred
    dist = np.sqrt(dxp * dxp + dyp * dyp)
    drad_pred = wrap(wrap(np.arctan2(dyp, dxp)) - rad_pred)
    drad = wrap(wrap(np.arctan2(ty - y, tx - x)) - rad)
    bx = x * (1 - p.p_mv2tar_reach_pred) + x_pred * p.p_mv2tar_reach_pred
    by = y * (1 - p.p_mv2tar_reach_pred) + y_pred * p.p_mv2tar_reach_pred
    reached = np.sqrt((bx - tx) ** 2 + (by - ty) ** 2) < tolerance
    tau = rotate_time / 1000.0
    end_deg = p.m2t_max_turn_deg * np.minimum(1.0, np.maximum(dist, 20) / np.maximum(1.0, v) / k
                                              / p.m2t_turn_time_factor / tau)
    tr = v * np.clip(1 - (np.abs(drad) - float(deg2rad(p.m2t_full_speed_deg))) / deg2rad(end_deg), 0, 1)
    half = np.maximum(v, d) * 0.5
    tr = tr * (np.clip(dist, d * 0.5, half) / half)
    rot = drad_pred / tau * wt / k
    miu = np.abs(tr) / p.max_spd
    rot = rot * (np.abs(tr / p.m2t_blend_speed) * miu + 1 * (1 - miu))
    tr = np.where(reached, 0.0, tr)
    rot = np.where(reached, 0.0, rot)
    dur = np.where(reached, p.reached_duration_ms, int(rotate_time))
    return tr, rot, dur, reached


def wheels_batch(translate, rotate, params: CubeHandleParams):
    """(uL, uR) after the dead-zone shift and the saturation of CubeHandle.move (before the border step)."""
    d = float(params.dead_zone)
    m = float(params.max_spd)
    tr = np.asarray(translate, dtype=float)
    rot = np.asarray(rotate, dtype=float)
    left = tr + rot / 2
    right = tr - rot / 2
    big, small = np.maximum(left, right), np.minimum(left, right)
    s = left + right
    gap = np.abs(left - right)
    fine = ((left == 0) | (left >= d) | (left <= -d)) & ((right == 0) | (right >= d) | (right <= -d))
    narrow_k = np.where(s > 0, d - small, np.where(s < 0, -d - big, 0.0))
    mid_k = np.where(s > 0, np.where(small < d / 2, -small, d - small),
                     np.where(s < 0, np.where(big > -d / 2, -big, -d - big), 0.0))
    wide_pos = np.where(small < -d / 2, -d - small, np.where(small > d / 2, d - small, -small))
    wide_neg = np.where(small < -d / 2, -d - big, np.where(small > d / 2, d - big, -big))
    wide_k = np.where(s > 0, wide_pos, wide_neg)
    shift = np.where(gap < d, narrow_k, np.where(gap < 2 * d, mid_k, wide_k))
    mid_zero = ~fine & (gap >= d) & (gap < 2 * d) & (s == 0)    # sign(left)·D, sign(right)·D
    ul = np.where(fine, left, np.where(mid_zero, np.sign(left) * d, left + shift))
    ur = np.where(fine, right, np.where(mid_zero, np.sign(right) * d, right + shift))
    # saturation: the excess is recomputed after the left wheel moved (B13)
    hi = np.maximum(ul, ur) > m
    lo = ~hi & (np.minimum(ul, ur) < -m)
    ul2 = np.where(hi, ul - (np.maximum(ul, ur) - m), np.where(lo, ul - (np.minimum(ul, ur) + m), ul))
    ur2 = np.where(hi, ur - (np.maximum(ul2, ur) - m), np.where(lo, ur - (np.minimum(ul2, ur) + m), ur))
    return ul2, ur2
