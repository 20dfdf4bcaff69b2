"""The safety layer under the plan: real cubes never close in on each other, or on walls, nearer than touching +
``apart``, whatever their commands still under way do; and what it does never makes the plan dead-lock.

A cube that would come closer than touching + ``apart`` to another one, and closer than it is now, before it can
stop slows to what stops it in time. Its way until it stops (:func:`ways`): the fastest command still under way
until a new command takes effect, turning on as it turns now, then the new speed for the command's duration while
CubeHandle steers it towards its waypoint. The other cube stands, goes on as commanded, or as fast as what is
still under way. A cube may go on to where its way enters the other one's disc of touching + ``apart`` where it
stands, and no nearer than that to it at all where it moves: half of the room where it comes towards this one
(whose own check takes the other half). Cubes passing side by side, or moving apart, are not slowed.

Precedence (docs/planners.md): the plan's waits only ever point to a cube with a smaller key
(:meth:`execution.Execution.key`). When this layer slows a cube for one with a *larger* key, that wait is not the
plan's and could close a cycle with it; so the cube with the larger key is named in ``make_way``: the driving
layer moves it back onto its path, or back along it, until it no longer stands in the way. A cube slowed for one
with a smaller key only waits as the plan would have it wait.
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.common import pairs_within
from toio_navigator.planners.coordinated.lattice import wall_gap
from toio_navigator.planners.coordinated.params import Internal

WALL_CHECKS = np.linspace(0.0, 1.0, 6)   # fractions of a cube's way ahead checked against the walls
WAY_SEGMENTS = (4, 6)     # straight pieces of a cube's way: before its new command takes effect, and under it


def keep_apart(pos: np.ndarray, idx: np.ndarray, waypoint: np.ndarray, speed: np.ndarray,
               vel: tuple[np.ndarray, np.ndarray], radius: np.ndarray, turning: tuple[np.ndarray, np.ndarray],
               running: np.ndarray, before: tuple[np.ndarray, float], key: np.ndarray, apart: float):
    """(speeds, make_way): the speeds of the cubes ``idx`` (rows of the swarm) slowed where they would close
    in, and {row of a cube with a larger key in the way: row of the cube it holds}. ``vel``: every cube's
    velocity as last commanded, and as the fastest command under way; ``turning``: (heading now, heading when
    the next command takes effect) of the cubes ``idx``, the way they drive; ``running``: the fastest command
    under way of each; ``before``: (s until a new command takes effect (K,), s it runs); ``key``: (N,) every
    cube's key (inf: not in the plan)."""
    lead, run = before
    heading, later = turning
    make_way: dict[int, int] = {}
    horizon = lead + run
    fastest = max(float(np.hypot(*np.asarray(v, float).T).max(initial=0.0)) for v in vel)
    reach = float(max(speed.max(initial=0.0), running.max(initial=0.0)) + fastest) * float(horizon.max(initial=0.0))
    q, o, d = pairs_within(pos, 2.0 * float(radius.max()) + apart + reach + 1.0)
    where = np.full(len(pos), -1)
    where[idx] = np.arange(len(idx))
    mine = where[q] >= 0
    q, o, d = q[mine], o[mine], d[mine]
    if q.size == 0:
        return speed, make_way
    k = where[q]
    toward = waypoint - pos[idx]
    bearing = np.arctan2(toward[:, 1], toward[:, 0])
    way_args = (heading, later, bearing, lead)
    others = np.stack([np.zeros((len(q), 2)), vel[0][o], vel[1][o]], axis=1)               # (P, 3, 2)
    moves = np.hypot(others[..., 0], others[..., 1]) > 1e-9                                 # (P, 3)
    rel = pos[o] - pos[q]
    need = radius[q] + radius[o] + apart
    disp, time, travelled = (w[k] for w in ways(*way_args, running, speed, run))
    closest = closest_approach(rel, disp, time, others)                                    # (P, 3)
    closes = (closest < need[:, None]) & (closest < d[:, None] - 1e-6)                     # (P, 3)
    entry = entry_distance(rel, disp, travelled, need)                                      # (P,)
    slowed = np.zeros(len(idx), bool)
    slowed[k[closes.any(axis=1)]] = True
    out = speed.copy()
    for e in np.nonzero(slowed[k])[0]:
        i = k[e]
        if out[i] <= 0.0:
            continue
        if out[i] < speed[i]:          # slowed by an earlier pair: is this one still closing in?
            one = slice(e, e + 1)
            way_e = ways(*(w[i:i + 1] for w in way_args), running[i:i + 1], out[i:i + 1], run)
            closest[e] = closest_approach(rel[one], *way_e[:2], others[one])[0]
            closes[e] = (closest[e] < need[e]) & (closest[e] < d[e] - 1e-6)
            entry[e] = entry_distance(rel[one], way_e[0], way_e[2], need[one])[0]
        closing = closes[e]
        if not closing.any():
            continue
        # standing: up to where its way enters that disc; moving: the disc's distance from here, half of it
        # when the other one comes towards it (each takes half, as the other's own check does)
        towards = closing & moves[e] & (others[e] @ rel[e] < 0.0)
        room = max(0.0, min(float(entry[e]) if closing[0] else math.inf,
                            float(d[e] - need[e]) * (0.5 if towards.any() else 1.0)
                            if (closing & moves[e]).any() else math.inf))
        cap = max(0.0, min((room - running[i] * lead[i]) / run, room / (lead[i] + run)))
        # slower than the wheels' dead zone is no slower: CubeHandle shifts such a command out of it
        out[i] = min(out[i], cap if cap >= Internal.min_speed else 0.0)
        if out[i] < speed[i] and key[o[e]] > key[idx[i]]:
            make_way.setdefault(int(o[e]), int(idx[i]))
    return out, make_way


def keep_off_walls(walls: np.ndarray, pos: np.ndarray, heading: np.ndarray, speed: np.ndarray, radius: np.ndarray,
                   react: np.ndarray, apart: float) -> np.ndarray:
    """The same for walls and disc obstacles: a real cube whose way ahead (its heading, for its reaction time at
    its speed) comes closer to a wall than touching + ``apart`` / 2, closer than it is now, slows to stop before
    that."""
    moving = np.nonzero(speed > 0.0)[0]
    if len(walls) == 0 or moving.size == 0:
        return speed
    t = WALL_CHECKS
    way = np.column_stack([np.cos(heading[moving]), np.sin(heading[moving])])
    reach = (speed[moving] * react[moving])[:, None, None] * t[None, :, None]
    ahead = pos[moving][:, None, :] + way[:, None, :] * reach              # (M, 6, 2)
    gap = wall_gap(ahead.reshape(-1, 2), walls).reshape(len(moving), -1) - radius[moving][:, None]
    need = 0.5 * apart
    closing = (gap[:, 1:].min(axis=1) < need) & (gap[:, 1:].min(axis=1) < gap[:, 0])
    out = speed.copy()
    out[moving[closing]] = np.minimum(out[moving[closing]],
                                      np.maximum(gap[closing, 0] - need, 0.0) / react[moving[closing]])
    return out


def ways(heading: np.ndarray, later: np.ndarray, bearing: np.ndarray, lead: np.ndarray, running: np.ndarray,
         speed: np.ndarray, run: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where K cubes go until they stop, as the safety layer reckons: ((K, S, 2) displacement, (K, S) time,
    (K, S) distance travelled) at S moments from now. Until its new command takes effect (``lead`` s) a cube runs
    on at ``running``, its heading going on from ``heading`` to ``later`` as it turns now; then for ``run`` s at
    ``speed`` while CubeHandle steers it towards its waypoint (at ``bearing``): the heading error falls by e
    every ``steer_time`` s. (Headings: the way it drives.)"""
    first, then = WAY_SEGMENTS
    time = np.concatenate([lead[:, None] * np.linspace(0.0, 1.0, first + 1)[None],
                           lead[:, None] + run * np.linspace(0.0, 1.0, then + 1)[None, 1:]], axis=1)
    mid = 0.5 * (time[:, 1:] + time[:, :-1])
    early = np.arange(first + then) < first
    turned = (later - heading + math.pi) % (2.0 * math.pi) - math.pi
    off = (later - bearing + math.pi) % (2.0 * math.pi) - math.pi
    steer = Internal.steer_time
    theta = np.where(early, heading[:, None] + turned[:, None] * mid / np.maximum(lead, 1e-9)[:, None],
                     bearing[:, None] + off[:, None] * np.exp(-np.maximum(mid - lead[:, None], 0.0) / steer))
    step = np.where(early, running[:, None], speed[:, None]) * np.diff(time, axis=1)
    disp = np.zeros((len(heading), first + then + 1, 2))
    disp[:, 1:, 0] = np.cumsum(step * np.cos(theta), axis=1)
    disp[:, 1:, 1] = np.cumsum(step * np.sin(theta), axis=1)
    travelled = np.concatenate([np.zeros((len(heading), 1)), np.cumsum(step, axis=1)], axis=1)
    return disp, time, travelled


def closest_approach(rel: np.ndarray, disp: np.ndarray, time: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(P, V) the nearest a cube comes to another one, over every pair at once: ``rel`` (P, 2) the other one from
    it; the cube moves by ``disp`` (P, S, 2) at ``time`` (P, S) (:func:`ways`, straight between them) while the
    other one goes on at each of ``others`` (P, V, 2)."""
    gap = rel[:, None, None, :] + others[:, :, None, :] * time[:, None, :, None] - disp[:, None, :, :]  # (P,V,S,2)
    a, ab = gap[..., :-1, :], np.diff(gap, axis=-2)
    ab2 = (ab * ab).sum(axis=-1)
    t = np.clip(-(a * ab).sum(axis=-1) / np.maximum(ab2, 1e-12), 0.0, 1.0)
    miss = a + ab * t[..., None]
    return np.hypot(miss[..., 0], miss[..., 1]).min(axis=-1)


def entry_distance(rel: np.ndarray, disp: np.ndarray, travelled: np.ndarray, need: np.ndarray) -> np.ndarray:
    """(P,) how far a cube travels along its way (``disp``, ``travelled`` of :func:`ways`) before it enters the
    disc of radius ``need`` round a standing cube at ``rel`` from it (inf: never; 0: it is inside already)."""
    a = disp[:, :-1] - rel[:, None]                      # (P, S - 1, 2) the cube seen from the other one
    ab = np.diff(disp, axis=1)
    qa = (ab * ab).sum(axis=-1)
    qb = 2.0 * (a * ab).sum(axis=-1)
    qc = (a * a).sum(axis=-1) - need[:, None] ** 2
    disc = qb * qb - 4.0 * qa * qc
    u = (-qb - np.sqrt(np.maximum(disc, 0.0))) / np.maximum(2.0 * qa, 1e-12)
    hit = (qc > 0.0) & (disc >= 0.0) & (qa > 1e-12) & (u >= 0.0) & (u <= 1.0)
    at = np.where(hit, travelled[:, :-1] + u * np.diff(travelled, axis=1), np.inf).min(axis=1)
    return np.where(qc[:, 0] <= 0.0, 0.0, at)
