"""Carrying out a dependency graph with cubes that are measured, not commanded: progress, limits and precedence.

Every tick, each cube's *progress* is the arc length of its measured position projected on its path (never going
back: noise must not undo progress). A gate (:mod:`dependencies`) on cube j is *live* while j's progress is short
of its ``reach`` by more than ``release`` (a real cube stops a few units short of where it is sent). A cube's
*limit* is how far along its path it may go: up to the first position, from its progress on, of an item with a
live gate where it would come closer than the gate's distance to what is left of j's way up to ``reach`` (or,
less ``stray``, to j's measured position).

The invariant (docs/planners.md): a cube's *key* is the topological number of the action it is in or about to
enter, ``release`` ahead of its progress. A cube held by a live gate on cube j (its limit less than ``release``
ahead) has a key greater than j's: the gate belongs to an action numbered after the action of j it names, which
j has not finished, and keys only grow along a path. So the waits always point to smaller keys: they form no
cycle, whatever the delays, and the unfinished cube with the smallest key always has room to go on. Whatever else
holds a cube (the safety layer, standing aside) may delay it but must never be what a cube of a smaller key
waits for; :attr:`Execution.key` is what the safety layer orders the cubes by.

A cube may also be counted on to get further than its progress (``onward``: every command still under way drives
it on); gates and keys then count from there. A cube that ran past its limit (a late host) stands already too
near a way it waits for: ``overran``; :meth:`Execution.clear_behind` says how far back along its path it stands
clear again.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.planners.coordinated.dependencies import Dependencies
from toio_navigator.planners.coordinated.geometry import point_segment_distance
from toio_navigator.reference.batch import ragged

SAMPLE = 2.0      # u between the points of a cube's way checked against a gate
HAIR = 0.25       # u of rounding a gate's distance forgives (on the lattice, distances of exactly D are common)
TINY = 1e-6       # u: a position this far into a segment belongs to it


def point_at(path: np.ndarray, arcs: np.ndarray, s: float) -> np.ndarray:
    """The point at arc length s along a path (clamped to its ends)."""
    if s <= 0.0 or len(path) == 1:
        return path[0].copy()
    if s >= arcs[-1]:
        return path[-1].copy()
    m = int(arcs.searchsorted(s, side='right'))
    t = (s - arcs[m - 1]) / max(arcs[m] - arcs[m - 1], 1e-12)
    return path[m - 1] + t * (path[m] - path[m - 1])


def sub_path(path: np.ndarray, arcs: np.ndarray, s0: float, s1: float) -> np.ndarray:
    """The points of the path between arc lengths s0 and s1 (its vertices in between, and both ends)."""
    inner = path[(arcs > s0) & (arcs < s1)]
    out = np.empty((len(inner) + 2, 2))
    out[0], out[1:-1], out[-1] = point_at(path, arcs, s0), inner, point_at(path, arcs, s1)
    return out


class Execution:
    """Progress, limits and keys of the N cubes of one dependency graph."""

    def __init__(self, deps: Dependencies, release: float = 0.0, stray: float = 0.0) -> None:
        self.deps = deps
        self.release = release          # a gate is done this far before its reach (cubes stop short)
        self.stray = stray              # a measured position counts only this much closer than a gate's distance
        n = deps.n
        self.progress = np.zeros(n)
        self.deviation = np.zeros(n)
        self.last_pos: np.ndarray | None = None
        self.binding: list[tuple[int, int] | None] = [None] * n    # (action, cube) of the gate holding each
        self.overran = np.zeros(n, bool)      # the point of its progress is too near a live gate's way
        self.onward = np.zeros(n)             # how far beyond its progress each cube is counted on to get
        self._shifts: dict[int, np.ndarray] = {}
        self._feet: dict[tuple[int, float], tuple[float, np.ndarray]] = {}    # (j, reach) -> (start, way)
        self.ends = deps.ends
        self.work = 0                         # sample-gate checks made (deterministic work units)

    @property
    def schedule(self) -> Dependencies:
        return self.deps

    # ---------------------------------------------------------------------------------------------- progress
    def track(self, pos: np.ndarray, slack: float) -> None:
        """New measured positions. Progress follows each path segment by segment: the measured position is
        projected on the current segment, and the next one becomes current once the cube is past the segment's
        end or within ``release`` of it, or has cut the corner onto the next segment (``_cut``); progress never
        goes back, and runs ahead of the last one by no more than the cube moved plus ``slack`` (so neither a
        cube cutting a corner nor one whose path comes back past where it is skips a part of its way).
        ``deviation``: the distance from the measured position to the point of progress."""
        dep = self.deps
        pos = np.asarray(pos, float)
        if self.last_pos is None:
            self.last_pos = pos.copy()
        moved = np.hypot(*(pos - self.last_pos).T)
        self.last_pos = pos.copy()
        for i in range(dep.n):
            path, arcs = dep.paths[i], dep.arcs[i]
            s = float(self.progress[i])
            best = s
            m = max(1, int(arcs.searchsorted(s, side='right')))
            while m < len(arcs):
                a, b = path[m - 1], path[m]
                ab = b - a
                length = float(np.hypot(*ab))
                u = float((pos[i] - a) @ ab) / max(length * length, 1e-12)
                near_end = float(np.hypot(*(pos[i] - b))) <= self.release
                if m + 1 < len(arcs) and (u >= 1.0 or near_end or self._cut(pos[i], a, b, path[m + 1])):
                    best = max(best, float(arcs[m]))
                    m += 1
                    continue
                best = max(best, float(arcs[m - 1]) + min(max(u, 0.0), 1.0) * length)
                break
            self.progress[i] = min(best, s + moved[i] + slack) if best > s else s
            self.deviation[i] = float(np.hypot(*(pos[i] - point_at(path, arcs, self.progress[i]))))

    def _cut(self, p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bool:
        """Has a cube at ``p`` cut the corner at ``b`` (segment a-b, then b-c): it is beyond b along b-c, within
        ``release`` of that segment and further than that from a-b? (A cube that swerves early into a sharp turn
        never gets past b nor near it. Where the path turns back on itself, a cube on a-b is near b-c too: it has
        not cut anything.)"""
        if float((p - b) @ (c - b)) <= 0.0:
            return False
        return float(point_segment_distance(p, b, c)) <= self.release < float(point_segment_distance(p, a, b)) - TINY

    # ---------------------------------------------------------------------------------------------- order
    def ahead(self) -> np.ndarray:
        """(N,) each cube's position as the gates and keys count it: progress + onward."""
        return self.progress + self.onward

    def live(self, j: int, reach: float) -> bool:
        """Is a gate on cube j still to be passed (j short of ``reach`` by more than ``release``)?"""
        return float(self.progress[j] + self.onward[j]) + self.release + TINY < reach

    def key(self) -> np.ndarray:
        """(N,) the topological number of the action each cube is in or about to enter (``release`` ahead of
        where it counts as being); a cube at the end of its path: after every action."""
        dep = self.deps
        out = np.empty(dep.n)
        at = self.ahead() + self.release + TINY
        for i in range(dep.n):
            arcs = dep.arcs[i]
            if self.progress[i] >= arcs[-1] - self.release:
                out[i] = np.inf
            else:
                out[i] = float(dep.order[i][min(int(arcs.searchsorted(at[i], side='left')), len(arcs) - 1)])
        return out

    def waits(self) -> dict[int, list[int]]:
        """The cubes each cube is held for now by a live gate (as of the last :meth:`limits`)."""
        return {i: [b[1]] for i, b in enumerate(self.binding) if b is not None}

    # ---------------------------------------------------------------------------------------------- limits
    def limits(self, pos: np.ndarray, horizon: np.ndarray, onward: np.ndarray | None = None) -> np.ndarray:
        """How far along its path each cube may go now (arc length), looking ``horizon`` (N,) beyond its
        progress. ``onward`` (N,): how far beyond its progress each cube is counted on to get (default: nowhere);
        the gates on it measure its way, and its measured position, from there. ``binding[i]``: (action, cube) of
        the gate that holds cube i, or None. Every item with a live gate within reach of every cube is measured
        in one batch."""
        dep = self.deps
        self.onward = np.zeros(dep.n) if onward is None else np.clip(onward, 0.0, self.ends - self.progress)
        self._shifts = {}
        until = np.minimum(self.progress + horizon, self.ends)
        out = until.copy()
        self.binding = [None] * dep.n
        self.overran = np.zeros(dep.n, bool)
        queue = [self._jobs(i, float(self.progress[i]), float(until[i])) for i in range(dep.n)]
        # round after round, the next item of every cube not held yet (most are held at their first, or free)
        for r in range(max((len(q) for q in queue), default=0)):
            jobs = [q[r] for q in queue if len(q) > r]
            for job, hit in zip(jobs, self._check(jobs, pos)):
                if hit is None:
                    continue
                i = job[0]
                queue[i] = queue[i][:r + 1]
                out[i], self.binding[i] = hit
                self.overran[i] = hit[0] <= self.progress[i] + TINY and job[2] <= self.progress[i] + TINY
        return np.maximum(np.minimum(out, until), np.minimum(self.progress, until))

    def _jobs(self, i: int, s: float, until: float) -> list[tuple]:
        """Cube i's items with live gates from position ``s`` up to ``until``, in the order of its path: (i,
        action, lo, hi, live gates, standing), lo..hi the stretch of it to look at."""
        dep = self.deps
        arcs = dep.arcs[i]
        out = []
        k = max(1, int(arcs.searchsorted(s, side='left')))
        if s >= arcs[-1]:
            return out
        while k < len(arcs) and arcs[k - 1] <= until:
            lo, hi = max(s, float(arcs[k - 1]) + TINY), min(until, float(arcs[k]))
            for standing, gates in ((False, dep.moving[i][k]), (True, dep.standing[i][k])):
                if standing and arcs[k] > until:
                    break
                live = [(j, reach, dist) for j, reach, dist in gates if self.live(j, reach)]
                if live:
                    out.append((i, k, float(arcs[k]) if standing else lo, hi if not standing else float(arcs[k]),
                                live, standing))
            k += 1
        return out

    def clear_behind(self, i: int, pos: np.ndarray, depth: float) -> float:
        """The arc length, at most ``depth`` back along cube i's path from its progress (not before the start of
        the action it is in), from which on the gates of that action hold it: where a cube that overran its limit
        stands clear of the ways it waits for again."""
        dep = self.deps
        s = float(self.progress[i])
        arcs = dep.arcs[i]
        k = max(1, int(arcs.searchsorted(s, side='left')))
        if k >= len(arcs):
            return s
        live = [(j, reach, dist) for j, reach, dist in dep.moving[i][k] if self.live(j, reach)]
        lo = max(float(arcs[k - 1]), s - depth)
        if not live or lo >= s:
            return s
        held = self._check([(i, k, lo, s, live, False)], pos)[0]
        return s if held is None else held[0]

    def _foot(self, j: int, reach: float) -> np.ndarray:
        """Cube j's way from where it counts as being to arc length ``reach`` (kept while that start stays: many
        gates of other cubes ask for the same way in one tick)."""
        s = float(self.progress[j] + self.onward[j])
        kept = self._feet.get((j, reach))
        if kept is None or kept[0] != s:
            kept = (s, sub_path(self.deps.paths[j], self.deps.arcs[j], s, reach))
            self._feet[(j, reach)] = kept
        return kept[1]

    def _shift(self, j: int) -> np.ndarray:
        """Where ``onward`` moves cube j's measured position: from the point of its progress to the point that far
        along its path."""
        out = self._shifts.get(j)
        if out is None:
            out = np.zeros(2)
            if self.onward[j] > 0.0:
                dep, s = self.deps, float(self.progress[j])
                out = point_at(dep.paths[j], dep.arcs[j], s + float(self.onward[j])) - point_at(dep.paths[j],
                                                                                                dep.arcs[j], s)
            self._shifts[j] = out
        return out

    def _check(self, jobs: list, pos: np.ndarray) -> list:
        """For each job (i, k, lo, hi, live, standing) of :meth:`_jobs`, all at once: (limit, (k, cube of the gate
        that sets it)) if a point of cube i's path between lo and hi (every :data:`SAMPLE`; standing: the vertex
        alone) comes too near one of the live gates, else None. A point is too near a gate on cube j if it is
        closer than the gate's distance (less a hair) to the way j still has to go to the gate's reach, or closer
        than that less ``stray`` to j's measured position. The limit is the last sample before the first such
        point (for the vertex of standing: a sample before it); of gates hit first, the one listed first."""
        if not jobs:
            return []
        dep = self.deps
        counts = np.array([1 if st else max(2, int(np.ceil((hi - lo) / SAMPLE)) + 1)
                           for _i, _k, lo, hi, _l, st in jobs])
        lo = np.array([job[2] for job in jobs])
        hi = np.array([job[3] for job in jobs])
        job_of, local = ragged(counts)
        first = np.cumsum(counts) - counts
        step = np.where(counts > 1, (hi - lo) / np.maximum(counts - 1, 1), 0.0)
        samples = local * step[job_of] + lo[job_of]
        samples[first + counts - 1] = hi
        a = np.array([dep.paths[i][k - 1] for i, k, *_ in jobs])
        b = np.array([dep.paths[i][k] for i, k, *_ in jobs])
        start = np.array([dep.arcs[i][k - 1] for i, k, *_ in jobs])
        span = np.array([max(float(dep.arcs[i][k] - dep.arcs[i][k - 1]), 1e-12) for i, k, *_ in jobs])
        pts = a[job_of] + np.clip((samples - start[job_of]) / span[job_of], 0.0, 1.0)[:, None] * (b - a)[job_of]
        seg_a, seg_b, seg_job, seg_gate, seg_limit = [], [], [], [], []
        at, at_job, at_gate, at_limit = [], [], [], []
        for k, job in enumerate(jobs):
            for g, (j, reach, dist) in enumerate(job[4]):
                foot = self._foot(j, reach)
                seg_a.append(foot[:-1])
                seg_b.append(foot[1:])
                seg_job += [k] * (len(foot) - 1)
                seg_gate += [g] * (len(foot) - 1)
                seg_limit += [dist - HAIR] * (len(foot) - 1)
                at.append(j)
                at_job.append(k)
                at_gate.append(g)
                at_limit.append(dist - self.stray)
        col_job = np.array(seg_job + at_job)
        col_gate = np.array(seg_gate + at_gate)
        n_seg = len(seg_job)
        col, within = ragged(counts[col_job])
        row = first[col_job][col] + within
        self.work += len(row)
        is_seg = col < n_seg
        bad = np.empty(len(col), bool)
        ends_a, ends_b = np.concatenate(seg_a), np.concatenate(seg_b)
        r, c = row[is_seg], col[is_seg]
        bad[is_seg] = point_segment_distance(pts[r], ends_a[c], ends_b[c]) < np.array(seg_limit)[c]
        r, c = row[~is_seg], col[~is_seg] - n_seg
        there = (pos[np.array(at)] + np.array([self._shift(j) for j in at]).reshape(-1, 2))[c]
        bad[~is_seg] = np.hypot(pts[r, 0] - there[:, 0], pts[r, 1] - there[:, 1]) < np.array(at_limit)[c]
        out: list = [None] * len(jobs)
        if not bad.any():
            return out
        hit_job, hit_sample, hit_gate = job_of[row[bad]], local[row[bad]], col_gate[col[bad]]
        early = np.full(len(jobs), np.iinfo(np.int64).max)
        np.minimum.at(early, hit_job, hit_sample)
        sel = hit_sample == early[hit_job]
        gate = np.full(len(jobs), np.iinfo(np.int64).max)
        np.minimum.at(gate, hit_job[sel], hit_gate[sel])
        for k in np.unique(hit_job).tolist():
            e = int(early[k])
            i, action, lo_k, _hi, live, standing = jobs[k]
            if standing:
                limit = max(float(self.progress[i]), lo_k - SAMPLE)
            else:
                limit = float(samples[first[k] + e - 1]) if e else max(float(self.progress[i]), lo_k - TINY)
            out[k] = (limit, (action, live[int(gate[k])][0]))
        return out
