"""HLAvoid, the reference's human-like collision avoidance (docs/navigator.md §2), for B egos at once.

Steps, each a numpy expression over arrays of shape (B, S) (S = nsample + 1 directions), (S, P) (P ego–other
pairs, in cache-sized blocks) or (Q, S) (Q ego–wall pairs that can matter):

* ``sample_rads``      §2.3 uniform directions plus the target bearing (with the reference's gap defect, B1)
* ``scan``             §2.4–§2.7 target ray, time-to-contact against other robots, circle casts against walls,
                       and the non-colliding / colliding combinations
* ``run_towards``      §2.8–§2.9 waypoint choice and speed limit
* ``run_away``         §2.10 flee choice and speed limit

The arithmetic follows the reference's order of operations so results agree to ~1e-12, quirks included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.reference.angles import ang, wrap
from toio_navigator.reference.batch import EgoBatch, PairBatch, segment_any, segment_min
from toio_navigator.reference.entities import line_coeffs
from toio_navigator.reference.params import Fixes, HLAvoidParams

_HALF_PI = math.pi / 2
_DOUBLE_MAX = np.finfo(float).max


@dataclass
class ScanResult:
    """Combined scans of B egos (§2.7). ``dists``: non-colliding; ``col_*``: objects the ego overlaps."""
    rads: np.ndarray          # (B, S) absolute sample directions
    dists: np.ndarray         # (B, S) free distance, capped at range + 1
    col_dists: np.ndarray     # (B, S) colliding "distances" (legacy, useSafety = false)
    col_safety: np.ndarray    # (B, S) safety from overlapped objects (1 where none)
    collision: np.ndarray     # (B,) overlapping any robot or wall
    target_slot: np.ndarray   # (B,) index of the target ray, −1 if the target bearing is not sampled
    cos_r: np.ndarray         # (B, S) cos / sin of the directions, reused by the runs
    sin_r: np.ndarray
    tar_rad: np.ndarray       # (B,) target bearing


@dataclass
class AvoidResult:
    """HLAvoid's answer for B egos plus its public diagnostics (test/data/conformance/FORMAT.md §5)."""
    vector: np.ndarray        # (B, 2) relative waypoint
    collision: np.ndarray     # (B,)
    speed_limit: np.ndarray   # (B,)
    index: np.ndarray         # (B,) waypointIndex
    rads: np.ndarray          # (B, S)
    dists: np.ndarray         # (B, S)
    safety: np.ndarray        # (B, S)


# ------------------------------------------------------------------------------------------------ sampling

def sample_rads(rad: np.ndarray, tar_rad: np.ndarray, n: int, fov: float, fix_gap: bool = False) -> np.ndarray:
    """(B, n + 1) sample directions: n uniform ones around the heading with the target bearing inserted.

    Reference rule (§2.3), replayed without a Python loop: iteration i writes slot i (uniform i, or the target
    when it falls in the gap before uniform i) and slot i + 1 (uniform i, pushed right); later iterations
    overwrite earlier ones, and a slot nobody writes keeps 0.0 (the gap defect).
    """
    b = rad.shape[0]
    s = fov / (n - 1)
    i = np.arange(n)
    radi = (rad - fov / 2)[:, None] + s * i
    d_t = wrap(tar_rad - rad)[:, None]
    d_i = wrap(radi - rad[:, None])
    if fix_gap:
        # uniform grid with the target always inserted before the first offset ≥ its own
        k = np.sum(d_i < d_t, axis=1)
        out = np.empty((b, n + 1))
        slot = np.arange(n + 1)[None, :]
        src = np.where(slot < k[:, None], slot, slot - 1)
        out[:] = np.take_along_axis(radi, np.clip(src, 0, n - 1), axis=1)
        out[np.arange(b), k] = tar_rad
        return out
    keep = d_t > d_i                          # uniform i stays at slot i
    insert = ~keep & (d_t + s > d_i)           # target at slot i, uniform i at slot i + 1
    push = ~keep & ~insert                     # uniform i at slot i + 1
    own = np.where(keep, radi, np.where(insert, tar_rad[:, None], 0.0))
    own_written = keep | insert
    from_prev = insert | push                  # iteration i writes slot i + 1
    out = np.zeros((b, n + 1))
    out[:, :n] = own
    prev_val = np.where(from_prev, radi, 0.0)
    # slot j (1..n) falls back to iteration j − 1's write when iteration j did not write it
    fallback = np.where(from_prev, prev_val, 0.0)
    out[:, 1:n] = np.where(own_written[:, 1:], own[:, 1:], fallback[:, :n - 1])
    out[:, 0] = np.where(own_written[:, 0], own[:, 0], 0.0)
    out[:, n] = fallback[:, n - 1]
    return out


# ------------------------------------------------------------------------------------------------ scans

#: pairs per block of the time-to-contact scan: small enough that the (S, block) temporaries stay in cache
_PAIR_BLOCK = 2048


def _scan_others(egos: EgoBatch, pairs: PairBatch, rads: np.ndarray, cos_r: np.ndarray, sin_r: np.ndarray,
                 prm: HLAvoidParams, r1: float):
    """Time-to-contact scan against other robots (§2.5). Returns per-ego combined results."""
    b, s = rads.shape
    pairs, e, dpx, dpy, mag = _visible(egos, pairs, prm)
    free_t = np.full((s, b), r1)        # (S, B): minimum over the non-colliding others
    if e.shape[0] == 0:
        return free_t.T, np.full((b, s), r1), np.ones((b, s)), np.zeros(b, dtype=bool)
    margin_sum = egos.avoid_margin[e] + pairs.avoid_margin
    vmag_ego = np.maximum(egos.spd, prm.min_ego_speed)
    vmag = vmag_ego[e]
    pos2 = dpx * dpx + dpy * dpy
    # 2·(Δv·Δp) = Δv·(2Δp) and (4a)·c = a·(4c) exactly (scaling by powers of two), so the reference's roundings
    # are kept while the per-pair factors are applied once
    c4 = (pos2 - margin_sum * margin_sum) * 4
    dpx2, dpy2 = dpx * 2, dpy * 2
    ux_t = np.ascontiguousarray((cos_r * vmag_ego[:, None]).T)     # (S, B) ego velocity per direction
    uy_t = np.ascontiguousarray((sin_r * vmag_ego[:, None]).T)
    free_flat = free_t.ravel()
    col_pairs, col_idx, col_val = [], [], []
    n = e.shape[0]
    for lo in range(0, n, _PAIR_BLOCK):
        sl = slice(lo, min(n, lo + _PAIR_BLOCK))
        eb = e[sl]
        cand, t1, t2 = _ttc_block(eb, ux_t, uy_t, pairs.vx[sl], pairs.vy[sl], dpx2[sl], dpy2[sl], c4[sl], prm)
        if cand.size == 0:
            continue
        nb = eb.shape[0]
        srow = cand // nb
        col = cand - srow * nb
        fut = (t2 > 0) & (t1 > 0)
        now = (t2 > 0) & ~(t1 > 0)
        if now.any():
            colliding = np.zeros(nb, dtype=bool)        # pairs overlapping now: kept apart (§2.5)
            colliding[col[now]] = True
            in_col = colliding[col]
            keep = np.flatnonzero(in_col & (fut | now))
            col_pairs.append(np.flatnonzero(colliding) + lo)
            col_idx.append((srow[keep], col[keep] + lo, now[keep]))
            col_val.append(t1[keep] * vmag[col[keep] + lo])
            fut &= ~in_col
        sel = np.flatnonzero(fut)
        if sel.size == 0:
            continue
        g = col[sel] + lo
        # flat (direction, ego) keys are non-decreasing (candidates are sorted and pairs grouped by ego),
        # so the per-key minimum is a reduceat over runs of equal keys
        key = srow[sel] * b + e[g]
        val = t1[sel] * vmag[g]
        run = np.flatnonzero(key[1:] != key[:-1]) + 1
        starts = np.concatenate(([0], run))
        keys = key[starts]
        free_flat[keys] = np.minimum(free_flat[keys], np.minimum.reduceat(val, starts))
    if not col_pairs:
        return free_t.T.copy(), np.full((b, s), r1), np.ones((b, s)), np.zeros(b, dtype=bool)
    # colliding pairs: their full distance rows (legacy mode reads them) and their safety
    hit = np.concatenate(col_pairs)
    row_of = np.full(n, -1)
    row_of[hit] = np.arange(hit.shape[0])
    dist_c = np.full((hit.shape[0], s), r1)
    for (sr, g, is_now), val in zip(col_idx, col_val):
        ov = (ux_t[sr, e[g]] * dpx[g] + uy_t[sr, e[g]] * dpy[g]) / vmag[g] / np.sqrt(pos2[g]) \
            * prm.overlap_dist_scale
        dist_c[row_of[g], sr] = np.where(is_now, ov, val)
    ce = e[hit]
    m_e = egos.avoid_margin[ce]
    sev = np.maximum(0.0, (m_e + pairs.margin[hit]) - mag[hit]) / m_e
    away = ang(dpx[hit], dpy[hit])
    safety = np.cos(np.abs(wrap(rads[ce] - away[:, None]))) * (1 + sev)[:, None]
    order = np.argsort(ce, kind='stable')
    ce, dist_c, safety = ce[order], dist_c[order], safety[order]
    c_d = segment_min(dist_c, ce, b, r1)
    c_s = segment_min(safety, ce, b, 1.0)
    return free_t.T.copy(), c_d, c_s, segment_any(np.ones(ce.shape[0], dtype=bool), ce, b)


def _visible(egos: EgoBatch, pairs: PairBatch, prm: HLAvoidParams):
    """The pairs whose other robot the ego sees (navigator-level margins: distance and relative angle), with
    their egos and the ego − other offsets and distances: (pairs, ego, dx, dy, distance)."""
    e = pairs.ego
    dpx = egos.x[e] - pairs.x          # ego − other
    dpy = egos.y[e] - pairs.y
    mag = np.sqrt(dpx * dpx + dpy * dpy)
    rel = wrap(ang(pairs.x - egos.x[e], pairs.y - egos.y[e]) - egos.rad[e])
    seen = (mag < prm.range + egos.avoid_margin[e] + pairs.avoid_margin) & (np.abs(rel) < prm.fov / 2)
    if not np.all(seen):
        idx = np.nonzero(seen)[0]
        pairs = pairs.take(idx)
        e, dpx, dpy, mag = pairs.ego, dpx[idx], dpy[idx], mag[idx]
    return pairs, e, dpx, dpy, mag


def _ttc_block(e, ux_t, uy_t, ovx, ovy, dpx2, dpy2, c4, prm: HLAvoidParams):
    """Contact times of one block of pairs, for the (S, P) entries with a real root (flat indices).

    Solves |Δp + Δv·t|² = m² with Δv = u − v_o (a = |Δv|², b = 2Δv·Δp, c = |Δp|² − m²) in the reference's
    order of operations. Layout (S, P): the pair axis is long and contiguous so per-pair values broadcast
    cheaply; buffers are reused in place to keep the passes over memory few.
    """
    dvx = np.take(ux_t, e, axis=1)
    dvx -= ovx
    dvy = np.take(uy_t, e, axis=1)
    dvy -= ovy
    a = dvx * dvx
    tmp = dvy * dvy
    a += tmp
    dvx *= dpx2
    dvy *= dpy2
    bq = dvx
    bq += dvy                        # b = 2 Δv·Δp
    np.multiply(bq, bq, out=tmp)
    np.multiply(a, c4, out=dvy)
    tmp -= dvy                       # delta = b² − 4ac
    none = tmp < 0
    none |= a < prm.min_rel_speed_sq
    cand = np.flatnonzero(~none)
    if cand.size == 0:
        return cand, cand, cand
    ac, bc = a.ravel()[cand], bq.ravel()[cand]
    sq = np.sqrt(tmp.ravel()[cand])
    t1 = (-bc - sq) / 2 / ac
    t2 = (-bc + sq) / 2 / ac
    return cand, t1, t2


def _scan_walls(egos: EgoBatch, walls: np.ndarray, rads: np.ndarray, cos_r: np.ndarray, sin_r: np.ndarray,
                prm: HLAvoidParams, r1: float):
    """Circle casts of the ego's margin disc against wall capsules (§2.6), as the reference computes them.

    Per (ego, wall) quantities are (B, M); directions are only evaluated for the (ego, wall) pairs that can
    matter: overlapped walls, and walls whose capsule is nearer than range + 1 (a farther wall cannot cut a ray
    below range + 1, so skipping it is exact).
    """
    b, s = rads.shape
    nc_d = np.full((b, s), r1)
    c_d = np.full((b, s), r1)
    c_s = np.ones((b, s))
    if walls.shape[0] == 0:
        return nc_d, c_d, c_s, np.zeros(b, dtype=bool)
    x1, y1, x2, y2, wm = (walls[:, k][None, :] for k in range(5))       # (1, M)
    aw, bw, cw = _wall_lines(walls)
    ex = egos.x[:, None]
    ey = egos.y[:, None]                                                # (B, 1)
    m_e = egos.avoid_margin[:, None]
    signed = aw * ex + bw * ey + cw
    line_dist = np.abs(signed)                                          # (B, M)
    active = ~(line_dist - wm > r1)
    rr = m_e + wm                                                       # cast radius incl. wall margin
    foot = (((ex - x1) * (x2 - x1) + (ey - y1) * (y2 - y1)) >= 0) & \
           (((ex - x2) * (x1 - x2) + (ey - y2) * (y1 - y2)) >= 0)
    d1 = np.sqrt((ex - x1) ** 2 + (ey - y1) ** 2)
    d2 = np.sqrt((ex - x2) ** 2 + (ey - y2) ** 2)
    overlap = active & (((line_dist < rr) & foot) | (d1 < rr) | (d2 < rr))
    near1 = d1 < d2
    d_seg = np.where(foot, line_dist, np.where(near1, d1, d2))
    # ---- casts against walls not overlapped
    cast = active & ~overlap & (d_seg - rr <= r1 + 1e-6)
    if cast.any():
        qb, qm = np.nonzero(cast)
        wq = walls[qm]
        d = _wall_casts(ex[qb], ey[qb], cos_r[qb], sin_r[qb], wq[:, 0:1], wq[:, 1:2], wq[:, 2:3], wq[:, 3:4],
                        aw[0, qm][:, None], bw[0, qm][:, None], signed[qb, qm][:, None],
                        line_dist[qb, qm][:, None], rr[qb, qm][:, None], r1)
        nc_d = np.minimum(nc_d, segment_min(d, qb, b, r1))
    # ---- overlapped walls: severity and repulsion direction
    if not overlap.any():
        return nc_d, c_d, c_s, np.zeros(b, dtype=bool)
    ob, om = np.nonzero(overlap)
    ex_o, ey_o = egos.x[ob], egos.y[ob]
    wx1, wy1, wx2, wy2 = walls[om, 0], walls[om, 1], walls[om, 2], walls[om, 3]
    rr_o = rr[ob, om]
    sev = np.maximum(0.0, rr_o - d_seg[ob, om]) / egos.avoid_margin[ob]
    sgn = np.sign(signed[ob, om])
    ux1, uy1 = _unit(ex_o - wx1, ey_o - wy1)
    ux2, uy2 = _unit(ex_o - wx2, ey_o - wy2)
    ft, n1 = foot[ob, om], near1[ob, om]
    rx = np.where(ft, sgn * aw[0, om], np.where(n1, ux1, ux2))[:, None]
    ry = np.where(ft, sgn * bw[0, om], np.where(n1, uy1, uy2))[:, None]
    if prm.useSafety:
        safety = np.cos(np.abs(wrap(rads[ob] - ang(rx, ry)))) * (1 + sev)[:, None]
        c_s = segment_min(safety, ob, b, 1.0)
    else:
        cdist = np.maximum(prm.wall_overlap_floor, (cos_r[ob] * rx + sin_r[ob] * ry) * 100)
        c_d = segment_min(cdist, ob, b, r1)
    return nc_d, c_d, c_s, overlap.any(axis=1)


_LINE_CACHE: dict[bytes, tuple] = {}


def _wall_lines(walls: np.ndarray):
    """Line coefficients (1, M) of the walls; walls rarely change between ticks, so they are cached."""
    key = walls.tobytes()
    hit = _LINE_CACHE.get(key)
    if hit is None:
        if len(_LINE_CACHE) > 64:
            _LINE_CACHE.clear()
        hit = line_coeffs(walls[None, :, 0], walls[None, :, 1], walls[None, :, 2], walls[None, :, 3])
        _LINE_CACHE[key] = hit
    return hit


def _unit(x, y):
    m = np.sqrt(x * x + y * y)
    zero = (x == 0) & (y == 0)
    m = np.where(zero, 1.0, m)
    return np.where(zero, 0.0, x / m), np.where(zero, 0.0, y / m)


def _wall_casts(E_x, E_y, c_, s_, x1, y1, x2, y2, aw, bw, signed, line_dist, rr, r1):
    """Distance the ego centre travels along each direction before its disc (radius rr) meets the segment.

    One row per (ego, wall) pair: per-pair values (Q, 1), directions (Q, S); result (Q, S), r1 if no hit.
    """
    # the cast line through the origin and origin + dir, built like the reference (then its direction vector)
    p2x = E_x + c_
    p2y = E_y + s_
    ac, bc, cc = line_coeffs(E_x, E_y, p2x, p2y)
    ddx = p2x - E_x
    ddy = p2y - E_y
    # side hit: intersect with the segment shifted by rr along its normal towards the ego (both ends bounded)
    step = np.sign(signed) * rr
    sx = step * aw
    sy = step * bw
    q1x, q1y, q2x, q2y = x1 + sx, y1 + sy, x2 + sx, y2 + sy
    am, bm, cm = line_coeffs(q1x, q1y, q2x, q2y)
    det = ac * bm - am * bc
    det_safe = np.where(det == 0, 1.0, det)
    secx = (bc * cm - bm * cc) / det_safe
    secy = (am * cc - ac * cm) / det_safe
    on_cast = ((secx - E_x) * ddx + (secy - E_y) * ddy) >= 0
    on_seg = (((secx - q1x) * (q2x - q1x) + (secy - q1y) * (q2y - q1y)) >= 0) & \
             (((secx - q2x) * (q1x - q2x) + (secy - q2y) * (q1y - q2y)) >= 0)
    side = (line_dist >= rr) & (det != 0) & on_cast & on_seg
    side_d = np.sqrt((secx - E_x) ** 2 + (secy - E_y) ** 2)
    # end caps
    h, d = _cap_cast(E_x, E_y, c_, s_, ac, bc, cc, ddx, ddy, np.stack([x1, x2]), np.stack([y1, y2]), rr)
    h1, h2, d1, d2 = h[0], h[1], d[0], d[1]
    first = h1 & (~h2 | (d1 < d2))
    cap_d = np.where(first, d1, d2)
    return np.where(side, side_d, np.where(h1 | h2, cap_d, r1))


def _cap_cast(E_x, E_y, c_, s_, ac, bc, cc, ddx, ddy, px, py, R):
    """Circle casts against the endpoints (the reference's point cast, origin not inside); px, py (2, Q, 1)."""
    in_front = ((px - E_x) * ddx + (py - E_y) * ddy) >= 0
    k = ac * px + bc * py + cc
    lat = np.abs(k)
    hit = in_front & (lat <= R)
    back = np.sqrt(np.maximum(R * R - lat * lat, 0.0))
    fx = px - k * ac
    fy = py - k * bc
    along = (fx - E_x) * c_ + (fy - E_y) * s_
    t = along - back
    hx = E_x + c_ * t
    hy = E_y + s_ * t
    return hit, np.sqrt((hx - E_x) ** 2 + (hy - E_y) ** 2)


def scan(egos: EgoBatch, pairs: PairBatch, walls: np.ndarray, prm: HLAvoidParams,
         fixes: Fixes = Fixes()) -> ScanResult:
    """Sample, scan the target, the others and the walls, and combine (§2.3–§2.7)."""
    r1 = prm.range + 1
    tar_rad = ang(egos.tx - egos.x, egos.ty - egos.y)
    rads = sample_rads(egos.rad, tar_rad, prm.n, prm.fov, fixes.sampling_gap)
    cos_r = np.cos(rads)
    sin_r = np.sin(rads)
    b, s = rads.shape
    # target ray: the first slot holding exactly the target bearing is cut at the target distance
    dx = egos.tx - egos.x
    dy = egos.ty - egos.y
    tdist = np.sqrt(dx * dx + dy * dy)
    eq = rads == tar_rad[:, None]
    has = eq.any(axis=1)
    slot = np.where(has, np.argmax(eq, axis=1), -1)
    tar_d = np.full((b, s), r1)
    rows = np.nonzero(has)[0]
    tar_d[rows, slot[rows]] = np.minimum(r1, tdist[rows])
    o_nc, o_cd, o_cs, o_col = _scan_others(egos, pairs, rads, cos_r, sin_r, prm, r1)
    w_nc, w_cd, w_cs, w_col = _scan_walls(egos, walls, rads, cos_r, sin_r, prm, r1)
    dists = np.minimum(np.minimum(tar_d, o_nc), w_nc)
    col_d = np.full((b, s), r1)
    col_s = np.ones((b, s))
    for flag, cd, cs in ((o_col, o_cd, o_cs), (w_col, w_cd, w_cs)):
        f = flag[:, None]
        col_d = np.where(f, np.minimum(col_d, cd), col_d)
        col_s = np.where(f, np.minimum(col_s, cs), col_s)
    return ScanResult(rads, dists, col_d, col_s, o_col | w_col, slot, cos_r, sin_r, tar_rad)


# ------------------------------------------------------------------------------------------------ speed limit

def _speed_limit(egos: EgoBatch, sc: ScanResult, index: np.ndarray, prm: HLAvoidParams, fixes: Fixes,
                 near_only: bool, back: np.ndarray) -> np.ndarray:
    """Turning-radius limit (§2.9 step 1) and the overlap stop rule (step 2). ``back`` = wrap(θ − φ_i)."""
    rads, d = sc.rads, sc.dists
    b = rads.shape[0]
    th = egos.rad[:, None]
    wr = rads[np.arange(b), index][:, None]
    m = prm.slow_between_margin
    rel = wrap(rads - th)
    between = ((rel > m) & (wrap(wr - rads) > m)) | ((back > m) & (wrap(rads - wr) > m))
    if near_only:
        between &= d < prm.slow_obstacle_dist
    diff = np.abs(rel) if fixes.heading_wrap else np.abs(rads - th)
    if fixes.heading_wrap:
        between &= np.arange(rads.shape[1])[None, :] != sc.target_slot[:, None]
    with np.errstate(divide='ignore', invalid='ignore'):
        radius = (d + prm.slow_radius_add) / (2 * np.sin(diff))
    min_r = np.minimum(prm.unlimited_radius, np.min(np.where(between, radius, np.inf), axis=1))
    limit = np.maximum(prm.min_speed_limit, min_r * np.maximum(1.0, np.abs(egos.w)))
    if not sc.collision.any():
        return limit
    # stop when heading into an overlapped object
    window = (np.abs(rel) < math.pi * 2 / prm.n) & (sc.col_safety <= 0) & sc.collision[:, None]
    hit = window.any(axis=1)
    first = np.argmax(window, axis=1)
    s_first = sc.col_safety[np.arange(b), first]
    stop = prm.stop_scale * np.maximum(0.0, s_first * 2 + 1)
    if fixes.speed_limit_min:
        stop = np.minimum(stop, limit)
    return np.where(hit, stop, limit)


# ------------------------------------------------------------------------------------------------ runs

def run_towards(egos: EgoBatch, pairs: PairBatch, walls: np.ndarray, prm: HLAvoidParams,
                fixes: Fixes = Fixes()) -> AvoidResult:
    """Waypoint towards the target (§2.8) with its speed limit (§2.9), for every ego."""
    sc = scan(egos, pairs, walls, prm, fixes)
    rads, d = sc.rads, sc.dists
    b = rads.shape[0]
    ar = np.arange(b)
    cos_r, sin_r = sc.cos_r, sc.sin_r
    ex, ey = egos.x[:, None], egos.y[:, None]
    tx, ty = egos.tx[:, None], egos.ty[:, None]
    tar_rad = sc.tar_rad[:, None]
    tdist = np.sqrt((ex - tx) * (ex - tx) + (ey - ty) * (ey - ty))
    nearest = np.maximum(np.cos(tar_rad - rads) * tdist, prm.nearest_min)
    ad = np.abs(d)
    qx, qy = ad * cos_r, ad * sin_r
    qm = np.sqrt(qx * qx + qy * qy)
    longer = qm > nearest
    qm_safe = np.where(longer, qm, 1.0)
    qx = np.where(longer, qx * nearest / qm_safe, qx)
    qy = np.where(longer, qy * nearest / qm_safe, qy)
    cx = tx - (ex + qx)
    cy = ty - (ey + qy)
    cost = np.sqrt(cx * cx + cy * cy)
    back = wrap(egos.rad[:, None] - rads)
    psi = np.abs(back)
    cost = cost + np.maximum(psi, prm.turn_penalty_floor) * prm.turn_penalty_k
    cost = cost + np.maximum(psi - _HALF_PI, 0) * prm.rear_penalty_k
    cost = np.where(np.isnan(cost), np.inf, cost)
    if prm.useSafety:
        allowed = (sc.col_safety > prm.p_waypoint_safety_threshold) & (cost < _DOUBLE_MAX)
        masked = np.where(allowed, cost, np.inf)
        ok = allowed.any(axis=1)
        index = np.where(ok, np.argmin(masked, axis=1), 0)
        vx = np.where(ok, qx[ar, index], 0.0)
        vy = np.where(ok, qy[ar, index], 0.0)
        safety = np.where(sc.collision[:, None], sc.col_safety, 1.0)
    else:
        i_free = np.argmin(cost, axis=1)
        i_col = np.argmax(sc.col_dists, axis=1)
        col = sc.collision
        index = np.where(col, i_col, i_free)
        acd = np.abs(sc.col_dists[ar, index])
        vx = np.where(col, acd * cos_r[ar, index], qx[ar, index])
        vy = np.where(col, acd * sin_r[ar, index], qy[ar, index])
        safety = np.ones_like(d)
    limit = _speed_limit(egos, sc, index, prm, fixes, near_only=True, back=back)
    return AvoidResult(np.stack([vx, vy], axis=1), sc.collision.copy(), limit, index, rads, d, safety)


def run_away(egos: EgoBatch, pairs: PairBatch, walls: np.ndarray, prm: HLAvoidParams,
             fixes: Fixes = Fixes()) -> AvoidResult:
    """Waypoint fleeing the target (§2.10), predicting a moving threat, with its speed limit."""
    sc = scan(egos, pairs, walls, prm, fixes)
    rads, d = sc.rads, sc.dists
    b = rads.shape[0]
    ar = np.arange(b)
    ad = np.abs(d)
    qx, qy = ad * sc.cos_r, ad * sc.sin_r
    ex, ey = egos.x[:, None], egos.y[:, None]
    px = ex + qx * prm.p_runaway_range / prm.range
    py = ey + qy * prm.p_runaway_range / prm.range
    fx = (egos.tx + egos.tvx * prm.runaway_pred_far)[:, None]
    fy = (egos.ty + egos.tvy * prm.runaway_pred_far)[:, None]
    score = np.sqrt((px - fx) ** 2 + (py - fy) ** 2)
    away = ang((egos.x - egos.tx) - egos.tvx * prm.runaway_pred_near,
               (egos.y - egos.ty) - egos.tvy * prm.runaway_pred_near)[:, None]
    score = score - (-math.pi + np.abs(wrap(rads - away))) * prm.p_runaway_penalty_away_k
    score = score - (-math.pi + np.abs(wrap(rads - egos.rad[:, None]))) * prm.p_runaway_penalty_keeprad_k
    away0 = ang(egos.x - egos.tx, egos.y - egos.ty)[:, None]
    danger = (np.abs(wrap(rads - away0)) - math.pi + prm.runaway_danger_half) > 0
    score = np.where(danger, 0.0, score)
    allowed = (sc.col_safety > prm.p_waypoint_safety_threshold) & (score > 0)
    masked = np.where(allowed, score, -np.inf)
    ok = allowed.any(axis=1)
    index = np.where(ok, np.argmax(masked, axis=1), 0)
    vx = np.where(ok, qx[ar, index], 0.0)
    vy = np.where(ok, qy[ar, index], 0.0)
    safety = np.where(sc.collision[:, None] & prm.useSafety, sc.col_safety, 1.0)
    limit = _speed_limit(egos, sc, index, prm, fixes, near_only=False, back=wrap(egos.rad[:, None] - rads))
    return AvoidResult(np.stack([vx, vy], axis=1), sc.collision.copy(), limit, index, rads, d, safety)
