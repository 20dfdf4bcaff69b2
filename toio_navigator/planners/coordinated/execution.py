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
always stop before its limit. A cube may also be counted on to get further than its progress (``onward``: every
command still under way drives it on); the gates on it then measure its way from there, and a cube that slows
after all takes that back (the pair distance's margin and the planner's safety layer take it). The order of the
schedule is kept as it is: a cube held by a late one waits (letting it go first where the late one was still far
from their crossing made the swarm slower: docs/trial.md). A cube that ran past its limit (a late host) stands
already too near a way it waits for: ``overran``; :meth:`Execution.clear_behind` says how far back along its path
it stands clear again.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.planners.coordinated.geometry import point_segment_distance
from toio_navigator.planners.coordinated.schedule import Schedule
from toio_navigator.reference.batch import ragged

SAMPLE = 2.0      # u between the points of a cube's way checked against a gate
HAIR = 0.25       # u of rounding a gate's distance forgives


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
    """Progress and limits of the N cubes of one schedule."""

    def __init__(self, schedule: Schedule, release: float = 0.0, stray: float = 0.0) -> None:
        self.schedule = schedule
        self.release = release          # a gate is done this far before its arc length (cubes stop short)
        self.stray = stray              # a measured position counts only this much closer than a gate's distance
        self.progress = np.zeros(schedule.n)
        self.deviation = np.zeros(schedule.n)
        self.last_pos: np.ndarray | None = None
        self.binding: list[tuple[int, int] | None] = [None] * schedule.n
        self.overran = np.zeros(schedule.n, bool)      # the point of its progress is too near a live gate's way
        self.onward = np.zeros(schedule.n)           # how far beyond its progress each cube is counted on to get
        self._shifts: dict[int, np.ndarray] = {}     # where that moves a cube's measured position (this tick)
        self._feet: dict[tuple[int, float], tuple[float, np.ndarray]] = {}    # (j, reach) -> (start, way)

    @property
    def ends(self) -> np.ndarray:
        return np.array([a[-1] for a in self.schedule.arcs])

    def track(self, pos: np.ndarray, slack: float) -> None:
        """New measured positions. Progress follows each path segment by segment: the measured position is
        projected on the current segment, and the next one becomes current once the cube is past the segment's
        end or within ``release`` of it (a cube turning back at a vertex never gets past it), or has cut the corner
        onto the next segment (``_cut``); progress never goes back, and runs ahead of the last one by no more than
        the cube moved plus ``slack`` (so neither a cube cutting a corner nor one whose path comes back past where
        it is skips a part of its way).
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
        never gets past b nor near it; without this its progress stayed before b, its waypoint went back to the
        corner and it turned to and fro there for good. Where the path turns back on itself, a cube on a-b is
        near b-c too: it has not cut anything.)"""
        if float((p - b) @ (c - b)) <= 0.0:
            return False
        return float(point_segment_distance(p, b, c)) <= self.release < float(point_segment_distance(p, a, b))

    def waiting(self, j: int, reach: float, leave: bool) -> bool:
        """Is a gate on cube j still to be passed: j has not come within ``release`` of the vertex at arc
        ``reach``, or (``leave``) has not gone on beyond it by ``release`` (measurement noise moves progress on
        by a little where a cube stands) or half of its next segment if that is shorter? (Its progress counts
        with how far it is counted on to get: ``onward``.)"""
        s = float(self.progress[j] + self.onward[j])
        if leave:
            # gone on by release, or half way along a shorter next segment (a goal just beside the vertex)
            arcs = self.schedule.arcs[j]
            if s >= arcs[-1] - self.release and arcs[-1] > reach:
                return False                    # it has gone on to the end of its path (a goal beside the vertex)
            k = min(int(arcs.searchsorted(reach + 1e-6)), len(arcs) - 1)
            return s <= reach + min(self.release, 0.5 * max(float(arcs[k]) - reach, 0.0))
        return s < reach - self.release

    def _shift(self, j: int) -> np.ndarray:
        """Where ``onward`` moves cube j's measured position: from the point of its progress to the point that far
        along its path (computed once a tick, for the cubes that gates wait for)."""
        out = self._shifts.get(j)
        if out is None:
            out = np.zeros(2)
            if self.onward[j] > 0.0:
                sch, s = self.schedule, float(self.progress[j])
                out = (point_at(sch.paths[j], sch.arcs[j], s + float(self.onward[j]))
                       - point_at(sch.paths[j], sch.arcs[j], s))
            self._shifts[j] = out
        return out

    def _foot(self, j: int, reach: float) -> np.ndarray:
        """Cube j's way from its progress (and ``onward``) to arc length ``reach`` (kept while that start stays:
        many gates of other cubes ask for the same way in one tick)."""
        s = float(self.progress[j] + self.onward[j])
        kept = self._feet.get((j, reach))
        if kept is None or kept[0] != s:
            kept = (s, sub_path(self.schedule.paths[j], self.schedule.arcs[j], s, reach))
            self._feet[(j, reach)] = kept
        return kept[1]

    def limits(self, pos: np.ndarray, horizon: np.ndarray, onward: np.ndarray | None = None) -> np.ndarray:
        """How far along its path each cube may go now (arc length), looking ``horizon`` (N,) beyond its
        progress. ``onward`` (N,): how far beyond its progress each cube is counted on to get (default: nowhere);
        the gates on it measure its way, and its measured position, from there. ``binding[i]``: (segment, cube)
        of the gate that holds cube i, or None. The first segment with live gates of every cube is measured in
        one batch (it holds most held cubes); the rest cube by cube."""
        sch = self.schedule
        self.onward = np.zeros(sch.n) if onward is None else np.clip(onward, 0.0, self.ends - self.progress)
        self._shifts = {}
        out = self.progress.copy()
        self.binding: list[tuple[int, int] | None] = [None] * sch.n
        self.overran = np.zeros(sch.n, bool)
        until = np.minimum(self.progress + horizon, self.ends)
        jobs = []
        for i in range(sch.n):
            job = self._next_live(i, float(until[i]))
            if job is None:
                out[i] = until[i]
            else:
                jobs.append(job)
        for job, held in zip(jobs, self._check(jobs, pos)):
            i, m, lo, hi, live = job
            if held is None:
                held = (float(until[i]), None) if hi >= until[i] else self._limit(i, pos, float(until[i]), m=m + 1)
            out[i], self.binding[i] = held
            if held[1] is not None and held[0] <= lo <= self.progress[i]:
                # held where it is: is that point itself too near (not only the next one)?
                self.overran[i] = self._check([(i, m, lo, lo, live)], pos)[0] is not None
        return out

    def clear_behind(self, i: int, pos: np.ndarray, depth: float) -> float:
        """The arc length, at most ``depth`` back along cube i's segment from its progress (not before the
        segment's start), from which on the gates of that segment hold it: where a cube that overran its limit
        stands clear of the ways it waits for again."""
        s = float(self.progress[i])
        job = self._next_live(i, s)
        if job is None:
            return s
        _i, m, _lo, _hi, live = job
        lo = max(float(self.schedule.arcs[i][m - 1]), s - depth)
        if lo >= s:
            return s
        held = self._check([(i, m, lo, s, live)], pos)[0]
        return s if held is None else held[0]

    def _limit(self, i: int, pos: np.ndarray, until: float, m: int | None = None):
        """(limit of cube i, (segment, cube) of the gate that sets it or None), from its segment ``m`` on (default:
        the one it is on). ``until`` is not before its progress."""
        until = min(until, float(self.schedule.arcs[i][-1]))
        while True:
            job = self._next_live(i, until, m)
            if job is None:
                return until, None
            held = self._check([job], pos)[0]
            if held is not None:
                return held
            _i, m, _lo, hi, _live = job
            if hi >= until:
                return until, None
            m += 1

    def _next_live(self, i: int, until: float, m: int | None = None) -> tuple | None:
        """Cube i's first segment from ``m`` on (default: the one it is on) with a gate still to be passed before
        arc length ``until`` (from its progress up to its end at most): (i, segment, lo, hi, live gates), lo..hi
        the stretch of it to look at; None if there is none (then ``until`` is its limit)."""
        sch = self.schedule
        arcs, gates = sch.arcs[i], sch.gates[i]
        s = float(self.progress[i])
        if s >= float(arcs[-1]):
            return None                         # at its end (and so is until)
        if m is None:
            m = max(1, int(arcs.searchsorted(s, side='right')))
        while m < len(arcs) and arcs[m - 1] <= until:
            lo, hi = max(s, float(arcs[m - 1])), min(until, float(arcs[m]))
            live = [(j, reach, dist) for j, reach, dist, leave in gates[m]
                    if self.waiting(j, reach, leave)]
            if live:
                return i, m, lo, hi, live
            if hi >= until:
                return None
            m += 1
        return None

    def _check(self, jobs: list, pos: np.ndarray) -> list:
        """For each job (i, m, lo, hi, live) of :meth:`_next_live`, all at once: (limit, (m, cube of the gate
        that sets it)) if a point of cube i's segment m between lo and hi (sampled every :data:`SAMPLE`) comes
        too near to one of the live gates, else None. A point is too near to a gate on cube j if it is closer
        than the gate's distance (less a hair: on the lattice, distances of exactly the pair distance are common)
        to the way j still has to go to the gate, or closer than that less ``stray`` to j's measured position.
        The limit is the last sample before the first such point; of gates hit first, the one listed first."""
        if not jobs:
            return []
        sch = self.schedule
        counts = np.array([max(2, int(np.ceil((hi - lo) / SAMPLE)) + 1) for _i, _m, lo, hi, _l in jobs])
        lo = np.array([job[2] for job in jobs])
        hi = np.array([job[3] for job in jobs])
        job_of, local = ragged(counts)                                     # each sample's job, its number in it
        first = np.cumsum(counts) - counts
        # np.linspace(lo, hi, count) for every job (the same numbers: it computes exactly this)
        samples = local * ((hi - lo) / (counts - 1))[job_of] + lo[job_of]
        samples[first + counts - 1] = hi
        a = np.array([sch.paths[i][m - 1] for i, m, *_ in jobs])
        b = np.array([sch.paths[i][m] for i, m, *_ in jobs])
        start = np.array([sch.arcs[i][m - 1] for i, m, *_ in jobs])
        span = np.array([max(float(sch.arcs[i][m] - sch.arcs[i][m - 1]), 1e-12) for i, m, *_ in jobs])
        pts = a[job_of] + ((samples - start[job_of]) / span[job_of])[:, None] * (b - a)[job_of]
        # columns: the segments of every live gate's way, then the gates' cubes where they are
        seg_a, seg_b, seg_job, seg_gate, seg_limit = [], [], [], [], []
        at, at_job, at_gate, at_limit = [], [], [], []
        for k, (_i, _m, _lo, _hi, live) in enumerate(jobs):
            for g, (j, reach, dist) in enumerate(live):
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
        # every (sample, column) of the same job
        col, within = ragged(counts[col_job])
        row = first[col_job][col] + within
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
        for k in np.unique(hit_job):
            e = int(early[k])
            limit = float(samples[first[k] + e - 1]) if e else float(lo[k])
            out[k] = (limit, (jobs[k][1], jobs[k][4][int(gate[k])][0]))
        return out
