"""How a coordinated cube is driven along its claim. On ideal discs: a velocity that follows the claim exactly.
For a real cube (CubeHandle steering at a waypoint under a speed limit, commands that arrive late, a heading of
its own): the waypoint, the speed caps, and the checks that keep it from touching another cube. Plain functions
of the claims and the planner's parameters (``params``: CoordinatedParams); no state.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.navigation.coordination.claims import Claims
from toio_navigator.navigation.coordination.geometry import polyline_point, segment_distance
from toio_navigator.navigation.coordination.lattice import wall_gap

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]     # (i, j, distance) of every close pair, sorted by i


def stop_unsafe(pos: np.ndarray, planned: np.ndarray, radius: np.ndarray, gap: float, pairs: Pairs) -> np.ndarray:
    """The continuous safety layer, independent of the claims: a cube whose planned position would be closer
    than touching (+ ``gap``) to another cube's, and closer than the two are now, stands still; repeated until
    no such pair is left. A stopped pair cannot get closer, so no contact can start or deepen. Returns which
    cubes may move."""
    n = len(pos)
    keep = np.ones(n, bool)
    q, p, now = pairs
    if q.size == 0:
        return keep
    planned = planned.copy()
    limit = radius[q] + radius[p] + gap
    for _ in range(n):
        after = np.hypot(*(planned[q] - planned[p]).T)
        bad = (after < limit) & (after < now - 1e-9) & keep[q]
        culprits = np.unique(q[bad])
        if culprits.size == 0:
            break
        keep[culprits] = False
        planned[culprits] = pos[culprits]
    return keep


def overlapping(radius: np.ndarray, pairs: Pairs, n: int) -> np.ndarray:
    """Cubes whose discs overlap another one now."""
    q, p, d = pairs
    out = np.zeros(n, bool)
    out[q[d < radius[q] + radius[p]]] = True
    return out


def turn_cos(claims: Claims) -> np.ndarray:
    """cos of the turn at u from the cube's way in to its next edge (1 without a next edge)."""
    into, out = claims.u - claims.pos, claims.w - claims.u
    norm = np.hypot(*into.T) * np.hypot(*out.T)
    cos_t = np.einsum('nd,nd->n', into, out) / np.maximum(norm, 1e-12)
    return np.where(claims.has_next() & (norm > 1e-9), np.clip(cos_t, -1.0, 1.0), 1.0)


def corner_allowance(lines: np.ndarray, radius: np.ndarray, margin: float, pairs: Pairs, walls: np.ndarray,
                     params) -> np.ndarray:
    """How far (u) each cube may stray from its claim when it cuts a corner: half the room its claim has to spare
    beyond the pair distance to every other claim, between ``corner_cut`` and ``corner_cut_max`` (a cube alone in
    open space drives smooth curves, a cube in a crowd follows its claim closely), and never more than the room
    to the walls (their margin may be cut into, up to 1 u from touching)."""
    n = len(lines)
    room = np.full(n, params.corner_cut_max)
    q, other, _d = pairs
    if q.size:
        a0, a1 = lines[q, :-1][:, :, None], lines[q, 1:][:, :, None]
        b0, b1 = lines[other, :-1][:, None], lines[other, 1:][:, None]
        d = segment_distance(a0, a1, b0, b1).reshape(len(q), -1).min(axis=1)
        np.minimum.at(room, q, 0.5 * (d - radius[q] - radius[other] - margin))
    room = np.clip(room, params.corner_cut, params.corner_cut_max)
    if len(walls):
        samples = np.concatenate([lines, 0.5 * (lines[:, :-1] + lines[:, 1:])], axis=1).reshape(-1, 2)
        to_wall = wall_gap(samples, walls).reshape(n, -1).min(axis=1) - radius - 1.0
        room = np.clip(np.minimum(room, to_wall), 0.0, params.corner_cut_max)
    return room


def waypoints(claims: Claims, lines: np.ndarray, free: np.ndarray, remaining: np.ndarray, cut: np.ndarray,
              final: np.ndarray, params) -> np.ndarray:
    """Each cube's waypoint: ``lookahead`` along its free claim, but never so far round a turn at u that the
    straight line from the cube to it (CubeHandle drives straight at its waypoint) passes more than ``cut`` from
    the corner. A waypoint cut short on a straight stretch is pushed out to ``lookahead``, so the handle does not
    brake for it (the speed limit does); one at the end of the claim goes ``handle_reach`` further, so the cube
    stops at the end and not short of it (``final``: cubes on their final approach, left as they are)."""
    c, p = claims, params
    reach = np.minimum(free, p.lookahead)
    into, out = c.u - c.pos, c.w - c.u
    a = np.hypot(*into.T)
    norm = a * np.hypot(*out.T)
    cos_t = np.clip(np.einsum('nd,nd->n', into, out) / np.maximum(norm, 1e-12), -1.0, 1.0)
    sin_t = np.sqrt(1.0 - cos_t ** 2)
    # the chord from the cube (a before the corner) to a point b past it misses the corner by
    # a b sin(t) / |chord|; the largest b that keeps this within cut:
    den = a * a * sin_t * sin_t - cut * cut
    b = a * cut * (cut * cos_t + sin_t * np.sqrt(np.maximum(a * a - cut * cut, 0.0))) / np.maximum(den, 1e-12)
    b = np.where((den <= 0.0) | (cos_t >= 1.0 - 1e-12), np.inf, np.maximum(b, 0.0))
    b = np.where(cos_t < 0.0, 0.0, b)          # a cube that turns back goes to the corner first
    turning = c.has_next() & (norm > 1e-12) & (remaining < reach)
    reach = np.where(turning, np.minimum(reach, remaining + b), reach)
    chord = polyline_point(lines, reach) - c.pos
    length = np.hypot(*chord.T)
    straight = ~turning | (reach > remaining + 1e-9)           # no turn between the cube and the waypoint
    short = straight & (length < p.lookahead) & (length > 0.25 * p.lookahead) & ~final
    stretch = np.where(short, p.lookahead / np.maximum(length, 1e-9),
                       np.where(length > 1.0, 1.0 + p.handle_reach / np.maximum(length, 1e-9), 1.0))
    return c.pos + chord * stretch[:, None]


def near_speed(pos: np.ndarray, heading: np.ndarray, radius: np.ndarray, vmax: np.ndarray, pairs: Pairs,
               params) -> np.ndarray:
    """Speed caps from the nearest cubes a cube is heading towards: full speed with ``near_full`` of gap between
    the bodies, down to ``near_min`` of vmax with ``near_stop`` or less. A real cube strays from its path by about
    its speed times its latency, so near others it must go slowly."""
    p = params
    q, other, dist = pairs
    cap = np.array(vmax, float, copy=True)
    if q.size == 0:
        return cap
    facing = np.column_stack([np.cos(heading), np.sin(heading)])
    towards = np.einsum('kd,kd->k', facing[q], pos[other] - pos[q]) > 0.0
    gap = dist - radius[q] - radius[other]
    ramp = np.clip((gap - p.near_stop) / (p.near_full - p.near_stop), p.near_min, 1.0)
    np.minimum.at(cap, q, np.where(towards, ramp, 1.0) * vmax[q])
    return cap


def real_cube_speed(claims: Claims, free: np.ndarray, remaining: np.ndarray, cut: np.ndarray, vmax: np.ndarray,
                    commit: float, lead: float, near: np.ndarray, params) -> np.ndarray:
    """The speed limit of a real cube. At speed v it covers v * commit before it can stop (v * lead while this
    command is on its way, then the command's own run), so it goes at the speed that stops within its free
    claim, which it approaches exponentially (commit is long against the delay, so without overshoot). It slows
    for a turn at u: turning at speed v a cube drifts about v turn_time sin(turn) / 2 off its claim, which must
    stay within the room it has (``cut``). ``near`` caps it near other cubes. And it creeps at least, where there
    is room for what creeping carries on after a stop: below the motors' dead zone it would not move at all."""
    p = params
    brake = np.clip(free / commit, 0.0, vmax)
    cos_t = turn_cos(claims)
    sin_t = np.where(cos_t < 0.0, 1.0, np.sqrt(np.maximum(1.0 - cos_t ** 2, 0.0)))
    corner = np.minimum(vmax, cut / np.maximum(0.5 * p.turn_time * sin_t, 1e-9))
    before = np.clip(np.minimum(free, remaining) / commit, 0.0, vmax)
    brake = np.where(claims.has_next(), np.minimum(brake, corner + before), brake)
    brake = np.minimum(brake, near)
    creep = np.minimum(p.creep_speed, vmax)
    return np.where(free > creep * lead + p.creep_room, np.maximum(brake, creep), brake)


def coasting(pos: np.ndarray, heading: np.ndarray, speed: np.ndarray, seconds: float) -> np.ndarray:
    """Where each cube goes if it keeps its heading and speed for ``seconds``."""
    return pos + np.column_stack([np.cos(heading), np.sin(heading)]) * (speed * seconds)[:, None]

