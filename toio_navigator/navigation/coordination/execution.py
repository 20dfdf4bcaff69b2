"""Carrying out a schedule with cubes that are measured, not commanded: progress, and how far each cube may go.

Every tick, each cube's *progress* is the arc length of its measured position projected on its path (never going
back: noise must not undo progress, and a cube does not drive its path backwards). Its *limit* is how far along
its path it may be: up to where a point of its way would come closer than a gate's distance to what is left of
the path of the cube that gate waits for (from that cube's progress to the gate's arc length, and its measured
position, which may stray ``stray`` from the path before it holds anyone back: the pair distance has room for
that). A gate on a move is done when that cube's progress has come within ``release`` of the vertex it moves to
(a real cube stops a few units short of where it is sent; the pair distance leaves room for that); a gate on
standing at a vertex when it has gone on beyond it by ``release``.

Limits only grow while the other cubes progress, so a cube that keeps within its limit stays clear of every cube
whose way conflicts with its own, however late its commands take effect: the planner drives it so that it can
always stop before its limit.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.navigation.coordination.geometry import point_segment_distance
from toio_navigator.navigation.coordination.schedule import Schedule

SAMPLE = 2.0      # u between the points of a cube's way checked against a gate
HAIR = 0.25       # u of rounding a gate's distance forgives


def point_at(path: np.ndarray, arcs: np.ndarray, s: float) -> np.ndarray:
    """The point at arc length s along a path (clamped to its ends)."""
    if s <= 0.0 or len(path) == 1:
        return path[0].copy()
    if s >= arcs[-1]:
        return path[-1].copy()
    m = int(np.searchsorted(arcs, s, side='right'))
    t = (s - arcs[m - 1]) / max(arcs[m] - arcs[m - 1], 1e-12)
    return path[m - 1] + t * (path[m] - path[m - 1])


def sub_path(path: np.ndarray, arcs: np.ndarray, s0: float, s1: float) -> np.ndarray:
    """The points of the path between arc lengths s0 and s1 (its vertices in between, and both ends)."""
    inner = path[(arcs > s0) & (arcs < s1)]
    return np.vstack([point_at(path, arcs, s0)[None], inner, point_at(path, arcs, s1)[None]])


class Execution:
    """Progress and limits of the N cubes of one schedule."""

    def __init__(self, schedule: Schedule, release: float = 0.0, stray: float = 0.0) -> None:
        self.schedule = schedule
        self.release = release          # a gate is done this far before its arc length (cubes stop short)
        self.stray = stray              # a measured position counts only this much closer than a gate's distance
        self.progress = np.zeros(schedule.n)
        self.deviation = np.zeros(schedule.n)
        self.last_pos: np.ndarray | None = None

    @property
    def ends(self) -> np.ndarray:
        return np.array([a[-1] for a in self.schedule.arcs])

    def track(self, pos: np.ndarray, slack: float) -> None:
        """New measured positions. Progress follows each path segment by segment: the measured position is
        projected on the current segment, and the next one becomes current once the cube is past the segment's
        end or within ``release`` of it (a cube turning back at a vertex never gets past it); progress never goes
        back, and runs ahead of the last one by no more than the cube moved plus ``slack`` (so neither a cube
        cutting a corner nor one whose path comes back past where it is skips a part of its way).
        ``deviation``: the distance from the measured position to the point of progress."""
        sch = self.schedule
        pos = np.asarray(pos, float)
        if self.last_pos is None:
            self.last_pos = pos.copy()
        moved = np.hypot(*(pos - self.last_pos).T)
        self.last_pos = pos.copy()
        for i in range(sch.n):
            path, arcs = sch.paths[i], sch.arcs[i]
            s = float(self.progress[i])
            best = s
            m = max(1, int(np.searchsorted(arcs, s, side='right')))
            while m < len(arcs):
                a, b = path[m - 1], path[m]
                ab = b - a
                length = float(np.hypot(*ab))
                u = float((pos[i] - a) @ ab) / max(length * length, 1e-12)
                near_end = float(np.hypot(*(pos[i] - b))) <= self.release
                if (u >= 1.0 or near_end) and m + 1 < len(arcs):
                    best = max(best, float(arcs[m]))
                    m += 1
                    continue
                best = max(best, float(arcs[m - 1]) + min(max(u, 0.0), 1.0) * length)
                break
            self.progress[i] = min(best, s + moved[i] + slack) if best > s else s
            self.deviation[i] = float(np.hypot(*(pos[i] - point_at(path, arcs, self.progress[i]))))

    def waiting(self, j: int, reach: float, leave: bool) -> bool:
        """Is a gate on cube j still to be passed: j has not come within ``release`` of the vertex at arc
        ``reach``, or (``leave``) has not gone on beyond it by ``release`` (measurement noise moves progress on
        by a little where a cube stands)?"""
        if leave:
            return self.progress[j] <= reach + self.release
        return self.progress[j] < reach - self.release

    def limits(self, pos: np.ndarray, horizon: np.ndarray, ready: np.ndarray | None = None) -> np.ndarray:
        """How far along its path each cube may go now (arc length), looking ``horizon`` (N,) beyond its
        progress. ``ready`` (N,) False holds a cube where it is."""
        sch = self.schedule
        out = self.progress.copy()
        for i in range(sch.n):
            if ready is not None and not ready[i]:
                continue
            out[i] = self._limit(i, pos, float(self.progress[i] + horizon[i]))
        return out

    def _limit(self, i: int, pos: np.ndarray, until: float) -> float:
        sch = self.schedule
        path, arcs, gates = sch.paths[i], sch.arcs[i], sch.gates[i]
        s = float(self.progress[i])
        end = float(arcs[-1])
        until = min(until, end)
        if s >= end:
            return end
        m = max(1, int(np.searchsorted(arcs, s, side='right')))
        while m < len(arcs) and arcs[m - 1] <= until:
            lo, hi = max(s, float(arcs[m - 1])), min(until, float(arcs[m]))
            live = [(j, reach, dist) for j, reach, dist, leave in gates[m] if self.waiting(j, reach, leave)]
            if live:
                count = max(2, int(np.ceil((hi - lo) / SAMPLE)) + 1)
                samples = np.linspace(lo, hi, count)
                a, b = path[m - 1], path[m]
                span = max(float(arcs[m] - arcs[m - 1]), 1e-12)
                pts = a + ((samples - arcs[m - 1]) / span)[:, None] * (b - a)
                bad = np.zeros(count, bool)
                for j, reach, dist in live:
                    foot = sub_path(sch.paths[j], sch.arcs[j], float(self.progress[j]), reach)
                    d = point_segment_distance(pts[:, None, :], foot[None, :-1], foot[None, 1:]).min(axis=1)
                    # (less a hair: on the lattice, distances of exactly the pair distance are common)
                    bad |= (d < dist - HAIR) | (np.hypot(*(pts - pos[j]).T) < dist - self.stray)
                if bad.any():
                    k = int(np.argmax(bad))
                    return float(samples[k - 1]) if k else lo
            if hi >= until:
                return until
            m += 1
        return until
