"""Shared pieces of the velocity planners: uniform-grid neighbour search, goal velocity, wall geometry.

The neighbour search hashes points into square cells of the cut-off size and only compares points of adjacent
cells, so its cost grows with N times the local density instead of N squared.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.interface import PlannerOutput
from toio_navigator.reference.batch import ragged

#: up to this many points :func:`pairs_within` measures every pair instead of searching a grid
BRUTE_MAX = 40


def pairs_within(points: np.ndarray, cutoff: float, group: np.ndarray | None = None,
                 query: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All ordered pairs (q, p) with |points[q] - points[p]| < cutoff, q != p, both in the same ``group``.

    ``query`` restricts the first index to those rows. Returns (q, p, distance), unsorted.
    """
    n = len(points)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    if n < 2 or cutoff <= 0.0:
        return empty
    # cells at least as large as the cut-off (so the 3 x 3 block holds every partner), and at most 2^20 per
    # axis so the integer keys below cannot overflow whatever the cut-off
    extent = float(np.ptp(points, axis=0).max())
    cell = max(cutoff, extent / 2.0 ** 20)
    cells = np.floor(points / cell).astype(np.int64)
    cells -= cells.min(axis=0) - 1                      # every neighbour cell index stays >= 0
    span = int(cells[:, 1].max()) + 2
    key = cells[:, 0] * span + cells[:, 1]
    if group is not None:
        key = key + np.asarray(group, np.int64) * ((int(cells[:, 0].max()) + 2) * span)
    if n <= BRUTE_MAX:
        return _pairs_brute(points, cutoff, cells, span, key, query)
    order = np.argsort(key, kind='stable')
    sorted_key = key[order]
    rows = np.arange(n) if query is None else np.asarray(query, np.int64)
    q_out, p_out = [], []
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            target = key[rows] + dx * span + dy
            lo = np.searchsorted(sorted_key, target, 'left')
            hi = np.searchsorted(sorted_key, target, 'right')
            counts = hi - lo
            if not counts.any():
                continue
            slot, within = ragged(counts)           # each candidate's query row, and its place in that cell
            q_out.append(rows[slot])
            p_out.append(order[lo[slot] + within])
    if not q_out:
        return empty
    q, p = np.concatenate(q_out), np.concatenate(p_out)
    keep = q != p
    q, p = q[keep], p[keep]
    d = np.hypot(*(points[q] - points[p]).T)
    close = d < cutoff
    return q[close], p[close], d[close]


def _pairs_brute(points: np.ndarray, cutoff: float, cells: np.ndarray, span: int, key: np.ndarray,
                 query: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pairs_within` for a few points: every pair looked at at once (a grid search costs more in numpy
    calls than it saves), returned in the grid search's order, so callers that go through the pairs one by one do
    the same: by the neighbour cell's offset (dx, then dy), then by the query row, then by index."""
    rows = np.arange(len(points)) if query is None else np.asarray(query, np.int64)
    off = cells[None, :, :] - cells[rows][:, None, :]                        # (R, N, 2) cell of p - cell of q
    # neighbour cells, and the same group: the keys differ by exactly the cells' offset
    mask = (np.abs(off) <= 1).all(axis=2) & (key[None, :] - key[rows][:, None] == off[..., 0] * span + off[..., 1])
    mask &= rows[:, None] != np.arange(len(points))[None, :]
    slot, p = np.nonzero(mask)                                               # by query row, then by index
    q = rows[slot]
    d = np.hypot(*(points[q] - points[p]).T)
    close = d < cutoff
    sel = off[slot[close], p[close]]
    order = np.argsort((sel[:, 0] + 1) * 3 + sel[:, 1] + 1, kind='stable')
    return q[close][order], p[close][order], d[close][order]


def k_nearest(points: np.ndarray, k: int, cutoff: float,
              start_cutoff: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest other points of every row within ``cutoff``: (N, k) indices (-1 = none), distances.

    Like a shrinking-radius tree search it first looks in ``start_cutoff`` and widens (doubling) only for the
    rows that have not found ``k`` yet, so a dense crowd does not pay for the full cut-off disc.
    """
    n = len(points)
    idx = np.full((n, k), -1, np.int64)
    dist = np.full((n, k), np.inf)
    if n < 2 or k < 1:
        return idx, dist
    radius = cutoff if start_cutoff is None else min(start_cutoff, cutoff)
    todo = np.arange(n)
    while todo.size:
        q, p, d = pairs_within(points, radius, query=todo)
        order = np.lexsort((d, q))
        q, p, d = q[order], p[order], d[order]
        starts = np.searchsorted(q, q, 'left')
        rank = np.arange(len(q)) - starts
        keep = rank < k
        idx[q[keep], rank[keep]] = p[keep]
        dist[q[keep], rank[keep]] = d[keep]
        if radius >= cutoff:
            break
        found = np.bincount(q, minlength=n)[todo]
        todo = todo[found < k]
        radius = min(2.0 * radius, cutoff)
    return idx, dist


def goal_velocity(pos: np.ndarray, goal: np.ndarray, speed: np.ndarray, dt: float,
                  arrival_time: float) -> np.ndarray:
    """Preferred velocity towards the goal at ``speed``, slowed to arrive in ``arrival_time`` without overshoot."""
    delta = goal - pos
    dist = np.hypot(delta[:, 0], delta[:, 1])
    wanted = np.minimum(speed, dist / max(arrival_time, dt))
    return delta * (wanted / np.maximum(dist, 1e-12))[:, None]


def nearest_on_walls(pos: np.ndarray, walls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every (cube, wall): the nearest point of the wall's segment (N, M, 2) and the distance to the wall's
    surface (segment distance minus its margin) (N, M)."""
    a, b, margin = walls[:, 0:2], walls[:, 2:4], walls[:, 4]
    ab = b - a
    length2 = np.maximum(np.einsum('md,md->m', ab, ab), 1e-12)
    t = np.clip(np.einsum('nmd,md->nm', pos[:, None, :] - a[None], ab) / length2, 0.0, 1.0)
    nearest = a[None] + t[..., None] * ab[None]
    gap = np.hypot(*(pos[:, None, :] - nearest).transpose(2, 0, 1)) - margin[None]
    return nearest, gap


def clip_speed(vel: np.ndarray, max_speed: np.ndarray) -> np.ndarray:
    speed = np.hypot(vel[:, 0], vel[:, 1])
    scale = np.minimum(1.0, max_speed / np.maximum(speed, 1e-12))
    return vel * scale[:, None]


def waypoint_output(state, velocity: np.ndarray, collision: np.ndarray, horizon: float):
    """Wrap a holonomic velocity as a PlannerOutput: a waypoint ``horizon`` seconds ahead at that speed, so a
    CubeHandle-style move-to-target can follow it too."""
    speed = np.hypot(velocity[:, 0], velocity[:, 1])
    return PlannerOutput(velocity=velocity, waypoint=state.pos + velocity * horizon, speed_limit=speed,
                         collision=collision)


def cap_norm(vec: np.ndarray, limit: float) -> np.ndarray:
    """Scale rows of ``vec`` down to length ``limit`` where longer."""
    length = np.hypot(vec[:, 0], vec[:, 1])
    return vec * np.minimum(1.0, limit / np.maximum(length, 1e-12))[:, None]


@dataclass
class NeighbourGeometry:
    """Pair quantities (docs/local_planners.md §2.2) for every (cube i, neighbour slot k); invalid slots point at i."""
    j: np.ndarray           # (N, K) neighbour index (i itself where invalid)
    valid: np.ndarray       # (N, K) bool
    combined: np.ndarray    # (N, K) r_ij = r_i + r_j
    gap: np.ndarray         # (N, K) s_ij = d_ij - r_ij (inf where invalid)
    normal: np.ndarray      # (N, K, 2) n_ij, unit vector from j to i
    tangent: np.ndarray     # (N, K, 2) t_ij = (-n_y, n_x)


def neighbour_geometry(state, nbr: np.ndarray) -> NeighbourGeometry:
    valid = nbr >= 0
    j = np.where(valid, nbr, np.arange(len(nbr))[:, None])
    rel = state.pos[:, None, :] - state.pos[j]
    dist = np.hypot(rel[..., 0], rel[..., 1])
    combined = state.radius[:, None] + state.radius[j]
    normal = rel / np.maximum(dist, 1e-12)[..., None]
    tangent = np.stack([-normal[..., 1], normal[..., 0]], axis=-1)
    gap = np.where(valid, dist - combined, np.inf)
    return NeighbourGeometry(j=j, valid=valid, combined=combined, gap=gap, normal=normal, tangent=tangent)


def goal_force_and_neighbours(state, params, dt: float):
    """The part the force models (SFM, TTC) share: the driving force towards the preferred goal velocity
    ((v_goal - v) / relaxation_time), the K nearest neighbours within the sensing gap, and which of them count.
    ``params`` needs relaxation_time, arrival_steps, max_neighbors and sensing_gap. Returns (force, geometry, near)."""
    v_goal = goal_velocity(state.pos, state.goal, state.max_speed, dt, params.arrival_steps * dt)
    force = (v_goal - state.vel) / params.relaxation_time
    r_max = float(state.radius.max())
    nbr, _ = k_nearest(state.pos, params.max_neighbors, params.sensing_gap + 2.0 * r_max, start_cutoff=4.0 * r_max)
    g = neighbour_geometry(state, nbr)
    return force, g, g.valid & (g.gap < params.sensing_gap)


def time_to_collision(rel_pos: np.ndarray, rel_vel: np.ndarray, combined: np.ndarray,
                      velocity_error: float = 0.0) -> np.ndarray:
    """Time until two discs touch under constant velocities (docs/local_planners.md §2.5): 0 if they overlap now,
    inf if they never do; ``velocity_error`` (epsilon) inflates the test for uncertain velocities."""
    a = np.einsum('...d,...d->...', rel_vel, rel_vel) - velocity_error ** 2
    b = np.einsum('...d,...d->...', rel_pos, rel_vel) - velocity_error * combined
    c = np.einsum('...d,...d->...', rel_pos, rel_pos) - combined ** 2
    disc = b * b - a * c
    approaching = (b < 0.0) & (disc > 0.0)
    denom = np.where(approaching, -b + np.sqrt(np.maximum(disc, 0.0)), 1.0)
    tau = np.where(approaching, c / denom, np.inf)
    return np.where(c < 0.0, 0.0, tau)


def wall_time_to_collision(pos: np.ndarray, vel: np.ndarray, walls: np.ndarray, radius: np.ndarray,
                           velocity_error: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time until each cube's disc reaches each static obstacle moving at ``vel`` ((N, 2) or (N, S, 2)).

    A disc obstacle (zero-length wall with margin R) uses the exact disc-disc time; a segment uses the tangent
    line at its nearest point (conservative: the wall is taken as infinite there). Returns (tau (N, [S,] M),
    unit normal from the wall to the cube (N, M, 2), body gap (N, M))."""
    on_wall, wall_gap = nearest_on_walls(pos, walls)
    away = pos[:, None, :] - on_wall
    dist = np.hypot(away[..., 0], away[..., 1])
    normal = away / np.maximum(dist, 1e-12)[..., None]
    body_gap = wall_gap - radius[:, None]
    sampled = vel.ndim == 3
    v = vel[:, :, None, :] if sampled else vel[:, None, :]                     # (N, [S,] 1, 2)
    shape = v.shape[:-2] + (walls.shape[0],)
    lift = (lambda a: a[:, None]) if sampled else (lambda a: a)
    is_disc = np.hypot(walls[:, 2] - walls[:, 0], walls[:, 3] - walls[:, 1]) < 1e-9
    disc_tau = time_to_collision(np.broadcast_to(lift(away), shape + (2,)), np.broadcast_to(v, shape + (2,)),
                                 np.broadcast_to(lift(radius[:, None] + walls[None, :, 4]), shape), velocity_error)
    closing = -np.einsum('...d,...d->...', np.broadcast_to(v, shape + (2,)), lift(normal)) + velocity_error
    gap = np.broadcast_to(lift(body_gap), shape)
    line_tau = np.where(closing > 0.0, np.maximum(gap, 0.0) / np.maximum(closing, 1e-12), np.inf)
    line_tau = np.where(gap <= 0.0, 0.0, line_tau)
    return np.where(is_disc, disc_tau, line_tau), normal, body_gap
