"""Why a trial failed, in words: a dead-lock (which cube waits on which), a timeout, contacts.

Worked out from the true positions alone (the same frames the metrics use), so it reads the same for every
planner: a cube not at its goal at the end that came less than :data:`PROGRESS` units closer to it during the
last :data:`WINDOW_S` seconds made no progress; it waits on the nearest cube or obstacle lying within
:data:`CONE_DEG` of the direction to its goal (or on nothing: the planner itself holds it).
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.bench.scenarios import Scenario
from toio_navigator.planners.common import pairs_within

WINDOW_S = 3.0          # the stretch at the end of a run that progress is judged on
PROGRESS = 10.0         # mat units closer to the goal over that stretch = still progressing
CONE_DEG = 60.0         # half-angle around the goal direction in which a blocker is looked for
REACH = 4.0             # a blocker counts only within this many agent radii (surface to centre)
MAX_LISTED = 4          # contact events named in a failure text


def diagnose(traj: np.ndarray, scenario: Scenario, metrics: dict, names) -> str | None:
    """None for a run that reached every goal without contact, else a short explanation."""
    parts = []
    if not metrics['success']:
        parts.append(_why_not_arrived(traj, scenario, list(names)))
    if metrics['collisions'] or metrics['obstacle_collisions']:
        parts.append(_contacts(traj, scenario, list(names)))
    return '; '.join(parts) if parts else None


def _why_not_arrived(traj: np.ndarray, sc: Scenario, names: list[str]) -> str:
    last = traj[-1]
    dist = np.hypot(*(last - sc.goals).T)
    pending = np.nonzero(dist > sc.goal_tolerance)[0]
    if len(pending) == 0:        # each was at its goal at the end, just never all at one frame in time
        return 'timeout: every cube reached its goal, but never all at the same time within the time limit'
    back = max(0, len(traj) - 1 - int(round(WINDOW_S / sc.dt)))
    before = np.hypot(*(traj[back] - sc.goals).T)
    stuck = [i for i in pending if before[i] - dist[i] < PROGRESS]
    moving = [i for i in pending if i not in stuck]
    parts = []
    if stuck:
        waits = [f'{names[i]} waits on {_blocker(i, last, sc, names)}' for i in stuck]
        parts.append('deadlock: ' + ', '.join(waits))
    if moving:
        parts.append('timeout: ' + ', '.join(names[i] for i in moving) + ' still on the way')
    return '; '.join(parts)


def _blocker(i: int, pos: np.ndarray, sc: Scenario, names: list[str]) -> str:
    """The nearest cube or obstacle ahead of cube i (towards its goal), or 'nothing ahead'."""
    p, g = pos[i], sc.goals[i]
    heading = math.atan2(g[1] - p[1], g[0] - p[0])
    reach = REACH * sc.agent_radius
    best, label = math.inf, 'nothing ahead'
    for j in range(len(pos)):
        if j != i:
            d, ahead = _ahead(p, pos[j], heading)
            if ahead and d - sc.agent_radius < min(best, reach):
                best, label = d - sc.agent_radius, names[j]
    for k, (cx, cy, r) in enumerate(sc.discs):
        d, ahead = _ahead(p, np.array([cx, cy]), heading)
        if ahead and d - r < min(best, reach):
            best, label = d - r, f'disc {k}'
    for k, (ax, ay, bx, by) in enumerate(sc.segments):
        a, b = np.array([ax, ay]), np.array([bx, by])
        ab = b - a
        t = float(np.clip(np.dot(p - a, ab) / max(float(np.dot(ab, ab)), 1e-12), 0.0, 1.0))
        d, ahead = _ahead(p, a + t * ab, heading)
        if ahead and d < min(best, reach):
            best, label = d, f'segment {k}'
    return label


def _ahead(p: np.ndarray, q: np.ndarray, heading: float) -> tuple[float, bool]:
    d = float(np.hypot(*(q - p)))
    if d < 1e-9:
        return 0.0, True
    off = abs((math.atan2(q[1] - p[1], q[0] - p[0]) - heading + math.pi) % (2 * math.pi) - math.pi)
    return d, off <= math.radians(CONE_DEG)


def _contacts(traj: np.ndarray, sc: Scenario, names: list[str]) -> str:
    """The first frame of each contact event (agent pairs, then obstacles), earliest first."""
    k_count, n = traj.shape[:2]
    events: list[tuple[int, str]] = []
    threshold = 2.0 * sc.agent_radius - sc.contact_tolerance
    if n > 1:
        q, p, _d = pairs_within(traj.reshape(-1, 2), threshold, group=np.repeat(np.arange(k_count), n))
        keep = q < p
        frame, a, b = q[keep] // n, q[keep] % n, p[keep] % n
        events += _starts(frame, a * n + b, lambda key: f'{names[key // n]}-{names[key % n]}')
    m = len(sc.discs) + len(sc.segments)
    if m:
        a = np.vstack([sc.discs[:, :2], sc.segments[:, :2]])
        b = np.vstack([sc.discs[:, :2], sc.segments[:, 2:]])
        surface = np.concatenate([sc.discs[:, 2], np.zeros(len(sc.segments))])
        pts = traj[:, :, None, :]
        ab = b - a
        t = np.clip(np.sum((pts - a) * ab, axis=-1) / np.maximum(np.sum(ab * ab, axis=-1), 1e-12), 0.0, 1.0)
        dist = np.linalg.norm(pts - (a + t[..., None] * ab), axis=-1) - surface
        f, i, o = np.nonzero(dist < sc.agent_radius - sc.contact_tolerance)
        nd = len(sc.discs)
        events += _starts(f, i * m + o, lambda key: f'{names[key // m]}-' + (
            f'disc {key % m}' if key % m < nd else f'segment {key % m - nd}'))
    events.sort()
    listed = ', '.join(f'{what} at {frame * sc.dt:.2f} s' for frame, what in events[:MAX_LISTED])
    more = f' and {len(events) - MAX_LISTED} more' if len(events) > MAX_LISTED else ''
    return f'contact: {listed}{more}'


def _starts(frame: np.ndarray, key: np.ndarray, label) -> list[tuple[int, str]]:
    """(first frame, label) of every run of consecutive frames per key."""
    if len(frame) == 0:
        return []
    order = np.lexsort((frame, key))
    frame, key = frame[order], key[order]
    first = np.ones(len(frame), dtype=bool)
    first[1:] = (key[1:] != key[:-1]) | (frame[1:] != frame[:-1] + 1)
    return [(int(f), label(int(k))) for f, k in zip(frame[first], key[first])]
