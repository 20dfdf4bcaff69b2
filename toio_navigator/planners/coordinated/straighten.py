"""Straighter ways: a lattice path zigzags, and a real cube slows down at every corner and turns on the spot.

A cube's way on the lattice runs from vertex to vertex, so a cube that could drive straight to its goal makes a
turn at every row it crosses. Here each path keeps only some of its vertices (*keypoints*) and runs straight
between them, wherever that changes no order the plan sets: a straight segment from keypoint k to vertex m is
one move that the cube begins when the plan has it leave k and ends when the plan has it reach m. It is taken
only if it keeps the walls' clearance and static obstacles' distance, and if every item of another cube that it
would conflict with (come closer to than the pair distance) lies wholly before or wholly after it in the plan.
Conflicting items then keep a strict order in time, so the dependency graph built on the straightened paths has
no cycle either (docs/planners.md).

Greedy, cube after cube, each segment as long as it can be: the cubes straightened first see the lattice items of
the others, the later ones the straightened items of the earlier. Items are found through a grid of cells, so a
check looks only at the items near the segment.
"""
from __future__ import annotations

import math
from itertools import chain

import numpy as np

from toio_navigator.planners.coordinated.geometry import segments_gap_pairwise
from toio_navigator.planners.coordinated.graph import EPS, CoordinationGraph

Timing = tuple[list[float], list[float]]     # (arrive, leave): the steps a cube reaches and leaves each vertex
WINDOW = 4        # straight ways from one keypoint checked at once
ROWS_PER_UNIT = 6   # item rows compared per work unit (numpy compares them about six to a microsecond here)


def items_of(keys: list[int], vs: list[int], timing: Timing):
    """The items of a path that keeps the vertices ``keys`` of ``vs``: (index in keys, vertex a, vertex b,
    start step, end step), standing on each kept vertex (a == b) and, after the first, moving to it from the one
    before."""
    arrive, leave = timing
    for q, k in enumerate(keys):
        yield q, vs[k], vs[k], arrive[k], leave[k]
        if q >= 1:
            yield q, vs[keys[q - 1]], vs[k], leave[keys[q - 1]], arrive[k]


class _Index:
    """Every cube's items (end vertex ids, time interval, owner) in a grid of cells; a cube's items are replaced
    once it is straightened (the old rows stay, marked dead)."""

    def __init__(self, graph: CoordinationGraph, vertices: list[list[int]], timing: list[Timing]) -> None:
        self.graph = graph
        self.cell = 2.0 * max(graph.D, graph.lattice.spacing)
        self.cells: dict[tuple[int, int], list[int]] = {}
        self._rows: list[np.ndarray] = []
        self._count = 0
        self._dirty = True
        self.live_of: list[np.ndarray] = []
        for i, vs in enumerate(vertices):
            self.live_of.append(self._add(i, list(range(len(vs))), vs, timing[i]))
        self.checked = 0                     # item rows compared (work)

    def _add(self, i: int, keys: list[int], vs: list[int], timing: Timing) -> np.ndarray:
        rows = np.array([(a, b, start, end, i) for _q, a, b, start, end in items_of(keys, vs, timing)],
                        float).reshape(-1, 5)
        ids = np.arange(self._count, self._count + len(rows))
        self._count += len(rows)
        self._rows.append(rows)
        pts = self.graph.points
        a, b = pts[rows[:, 0].astype(np.int64)], pts[rows[:, 1].astype(np.int64)]
        lo = np.floor(np.minimum(a, b) / self.cell).astype(np.int64)
        hi = np.floor(np.maximum(a, b) / self.cell).astype(np.int64)
        for k, (x0, y0), (x1, y1) in zip(ids.tolist(), lo.tolist(), hi.tolist()):
            for cx in range(x0, x1 + 1):
                for cy in range(y0, y1 + 1):
                    self.cells.setdefault((cx, cy), []).append(k)
        self._dirty = True
        return ids

    def replace(self, i: int, keys: list[int], vs: list[int], timing: Timing) -> None:
        self._arrays()
        self.alive[self.live_of[i]] = False
        self.live_of[i] = self._add(i, keys, vs, timing)

    def _arrays(self) -> None:
        if not self._dirty:
            return
        rows = np.vstack(self._rows)
        alive = np.ones(len(rows), bool)
        if hasattr(self, 'alive'):
            alive[:len(self.alive)] = self.alive
        self.alive = alive
        self.a_id, self.b_id = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
        self.start, self.end, self.owner = rows[:, 2], rows[:, 3], rows[:, 4].astype(np.int64)
        pts = self.graph.points
        self.a, self.b = pts[self.a_id], pts[self.b_id]
        self._dirty = False

    def in_order(self, i: int, x: int, ys: list[int], begin: float, finishes: list[float]) -> np.ndarray:
        """For cube i's straight moves from vertex x to each of ``ys``, from step ``begin`` to each of
        ``finishes``: does each conflict only with items of other cubes that end before it begins or begin after it
        ends? All at once: the items near any of them, then every (move, item) pair."""
        self._arrays()
        g = self.graph
        p = g.points[x]
        qs = g.points[np.array(ys, np.int64)].reshape(-1, 2)
        finish = np.asarray(finishes, float)
        lo = np.floor((np.minimum(p, qs.min(axis=0)) - g.D) / self.cell).astype(np.int64)
        hi = np.floor((np.maximum(p, qs.max(axis=0)) + g.D) / self.cell).astype(np.int64)
        near = [self.cells.get((cx, cy), ()) for cx in range(lo[0], hi[0] + 1) for cy in range(lo[1], hi[1] + 1)]
        ids = np.unique(np.fromiter(chain.from_iterable(near), np.int64))
        self.checked += len(ids) * len(ys) + 1
        out = np.ones(len(ys), bool)
        if ids.size == 0:
            return out
        rows = ids[self.alive[ids] & (self.end[ids] > begin) & (self.start[ids] < finish.max())
                   & (self.owner[ids] != i)]
        if rows.size == 0:
            return out
        m, r = len(ys), len(rows)
        move = np.repeat(np.arange(m), r)
        row = np.tile(rows, m)
        overlaps = self.start[row] < finish[move]
        gap = segments_gap_pairwise(np.broadcast_to(p, (m * r, 2)), qs[move], self.a[row], self.b[row])
        close = np.nonzero(overlaps & (gap < g.D - EPS))[0]
        for e in close.tolist():
            k, y = int(row[e]), ys[int(move[e])]
            if out[move[e]] and gap[e] < g.relaxed_distance((x, y), (int(self.a_id[k]), int(self.b_id[k]))) - EPS:
                out[move[e]] = False
        return out


def keypoints(graph: CoordinationGraph, vertices: list[list[int]], timing: list[Timing],
              fixed: list[list[int]] | None = None) -> tuple[list[list[int]], int]:
    """(per cube, the indices into its vertices that its straightened path keeps (the first and the last
    always), work units spent). ``timing[i]``: the steps at which the plan has cube i reach and leave each of its
    vertices (:func:`times`); ``fixed[i]``: keypoints kept as given (a prefix of the path, from index 0)."""
    items = _Index(graph, vertices, timing)
    out = []
    for i, vs in enumerate(vertices):
        arrive, leave = timing[i]
        keys = list(fixed[i]) if fixed is not None and fixed[i] else [0]
        k = keys[-1]
        while k < len(vs) - 1:
            best = k + 1
            for first in range(k + 2, len(vs), WINDOW):       # a few at a time: the first failure ends it
                ms = list(range(first, min(first + WINDOW, len(vs))))
                ok = graph.straight_ok_from(vs[k], [vs[m] for m in ms])
                upto = int(np.argmin(ok)) if not ok.all() else len(ms)     # the first way too near a wall
                if upto:
                    ok = items.in_order(i, vs[k], [vs[m] for m in ms[:upto]], leave[k],
                                        [arrive[m] for m in ms[:upto]])
                    upto = int(np.argmin(ok)) if not ok.all() else upto    # the first out of the plan's order
                if upto:
                    best = ms[upto - 1]
                if upto < len(ms):
                    break
            keys.append(best)
            k = best
        if len(keys) < len(vs):
            items.replace(i, keys, vs, timing[i])
        out.append(keys)
    return out, items.checked // ROWS_PER_UNIT


def times(moves: list[int], count: int) -> Timing:
    """(arrive, leave) steps of a cube's ``count`` distinct vertices, from the steps of its moves."""
    arrive = [0.0] + [float(t + 1) for t in moves]
    leave = [float(t) for t in moves] + [math.inf]
    return arrive[:count], leave[:count]
