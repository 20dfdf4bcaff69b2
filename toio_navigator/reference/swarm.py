"""Swarm step: the Navigator query of every cube at once (docs/navigator.md §1.4–§1.5 over N cubes).

Every cube sees every other cube (the reference's CubeNavigator registry, relation BOIDS unless groups say
otherwise). Neighbour culling keeps the cost about linear in N at constant density: HLAvoid ignores a robot
farther than range + both avoid margins and Boids one farther than range + both Boids margins, so only pairs
within the larger of those two cut-offs are generated (uniform grid binning with cells of that size), and the
result is exactly the N single queries. The kernels then run on flat pair arrays of shape (P, S).
"""
from __future__ import annotations

import numpy as np

from toio_navigator.reference.batch import EgoBatch, PairBatch, ragged
from toio_navigator.reference.navigator import Direction, Mode, NaviBatch, navigate
from toio_navigator.reference.params import NavigatorParams

#: below this many cubes all pairs are cheaper than binning
_ALL_PAIRS_MAX_N = 96


def _as(values, n: int, default: float) -> np.ndarray:
    if values is None:
        return np.full(n, float(default))
    arr = np.asarray(values, dtype=float)
    return np.broadcast_to(arr, (n,)).astype(float) if arr.ndim == 0 else arr.astype(float).reshape(n)


def neighbour_pairs(pos: np.ndarray, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs (i, j), i ≠ j, with |p_i − p_j| ≤ cutoff, grouped by i (ascending)."""
    n = pos.shape[0]
    if n < 2:
        z = np.zeros(0, dtype=np.intp)
        return z, z
    c2 = cutoff * cutoff
    if n <= _ALL_PAIRS_MAX_N:
        d = pos[:, None, :] - pos[None, :, :]
        near = np.einsum('ijk,ijk->ij', d, d) <= c2
        np.fill_diagonal(near, False)
        i, j = np.nonzero(near)
        return i.astype(np.intp), j.astype(np.intp)
    cell = np.floor((pos - pos.min(axis=0)) / cutoff).astype(np.int64)
    width = int(cell[:, 1].max()) + 3
    key = (cell[:, 0] + 1) * width + (cell[:, 1] + 1)
    order = np.argsort(key, kind='stable')
    skey = key[order]
    ukey, ustart, ucount = np.unique(skey, return_index=True, return_counts=True)
    offsets = np.array([dx * width + dy for dx in (-1, 0, 1) for dy in (-1, 0, 1)], dtype=np.int64)
    want = key[:, None] + offsets[None, :]                       # (N, 9) neighbour cell keys
    loc = np.searchsorted(ukey, want)
    loc_c = np.minimum(loc, ukey.shape[0] - 1)
    found = ukey[loc_c] == want
    start = np.where(found, ustart[loc_c], 0).ravel()
    count = np.where(found, ucount[loc_c], 0).ravel()
    slot, within = ragged(count)                                 # slot = ego * 9 + neighbour cell
    ego = slot // 9
    other = order[start[slot] + within]
    px, py = pos[:, 0].copy(), pos[:, 1].copy()
    dx = px[ego] - px[other]
    dy = py[ego] - py[other]
    keep = (dx * dx + dy * dy <= c2) & (other != ego)
    # ego-major by construction; the others of one ego come cell by cell (their order only affects the
    # rounding of Boids' sums, at the 1e-15 level)
    return ego[keep].astype(np.intp), other[keep].astype(np.intp)


def swarm_step(pos, rad, spd, vel, w, goals, params: NavigatorParams | None = None, walls=None,
               mode: Mode | str = Mode.AVOID, direction: Direction | str = Direction.TOWARDS, *,
               margin=16.0, avoid_margin=None, boids_margin=None, groups=None, goal_vel=None) -> NaviBatch:
    """Navigator answers of N cubes at once.

    pos (N, 2), rad (N,), spd (N,) signed speed, vel (N, 2), w (N,) yaw rate, goals (N, 2): mat units, rad, s.
    ``margin`` is each cube's entity margin (16 for a cube); ``avoid_margin`` / ``boids_margin`` default to the
    params' margins (every cube uses the same parameters); ``groups`` (N,) ints: cubes flock only with cubes of
    the same group (relation BOIDS), others are avoided but not flocked with (relation NONE); default one flock.
    ``goal_vel`` (N, 2) is the velocity of a fled target (direction 'away'). Returns arrays of shape (N, ...).
    """
    prm = params or NavigatorParams()
    pos = np.asarray(pos, dtype=float).reshape(-1, 2)
    n = pos.shape[0]
    goals = np.asarray(goals, dtype=float).reshape(n, 2)
    vel = np.asarray(vel, dtype=float).reshape(n, 2)
    am = _as(avoid_margin, n, prm.avoid.margin)
    bm = _as(boids_margin, n, prm.boids.margin)
    gv = np.zeros((n, 2)) if goal_vel is None else np.asarray(goal_vel, dtype=float).reshape(n, 2)
    if not (np.isfinite(pos).all() and np.isfinite(goals).all() and np.isfinite(vel).all()):
        raise ValueError('swarm_step: positions, goals and velocities must be finite')
    egos = EgoBatch(pos[:, 0].copy(), pos[:, 1].copy(), _as(rad, n, 0), _as(spd, n, 0), _as(w, n, 0), am, bm,
                    goals[:, 0].copy(), goals[:, 1].copy(), gv[:, 0].copy(), gv[:, 1].copy())
    cutoff = max(prm.avoid.range + 2 * float(am.max(initial=0)), prm.boids.range + 2 * float(bm.max(initial=0)))
    i, j = neighbour_pairs(pos, cutoff * (1 + 1e-9) + 1e-9)
    ent = _as(margin, n, 16.0)
    same = np.ones(i.shape[0], dtype=bool) if groups is None else (np.asarray(groups)[i] == np.asarray(groups)[j])
    pairs = PairBatch(i, pos[j, 0], pos[j, 1], vel[j, 0], vel[j, 1], ent[j], am[j], bm[j], same)
    wall_arr = np.zeros((0, 5)) if walls is None else np.asarray(walls, dtype=float).reshape(-1, 5)
    with np.errstate(all='ignore'):
        return navigate(egos, pairs, wall_arr, prm, mode, direction)
