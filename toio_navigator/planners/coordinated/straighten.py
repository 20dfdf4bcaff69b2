"""Straighter ways: a lattice path zigzags, and a real cube slows down at every corner and turns on the spot.

A cube's way on the lattice runs from vertex to vertex, so a cube that could drive straight to its goal makes a
turn at every row it crosses. Here each path keeps only some of its vertices (*keypoints*) and runs straight
between them, wherever that changes no order the plan sets: a straight segment from keypoint k to vertex m is
one move that the cube begins when the plan has it leave k and ends when the plan has it reach m. It is taken
only if it keeps the walls' clearance and static obstacles' distance, and if every item of another cube that it
would conflict with (come closer to than the pair distance) lies wholly before or wholly after it in the plan.
Conflicting items then keep a strict order in time, so the schedule built on the straightened paths has no cycle
of waits either (docs/planners.md).

Greedy, cube after cube, each segment as long as it can be: the cubes straightened first see the lattice items of
the others, the later ones the straightened items of the earlier.
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.coordinated.geometry import boxes_overlap, segment_gaps
from toio_navigator.planners.coordinated.graph import EPS, CoordinationGraph

Timing = tuple[list[float], list[float]]     # (arrive, leave): the steps a cube reaches and leaves each vertex


def items_of(keys: list[int], vs: list[int], timing: Timing):
    """The items of a path that keeps the vertices ``keys`` of ``vs``: (index in keys, vertex a, vertex b,
    start step, end step), standing on each kept vertex (a == b) and, after the first, moving to it from the one
    before."""
    arrive, leave = timing
    for q, k in enumerate(keys):
        yield q, vs[k], vs[k], arrive[k], leave[k]
        if q >= 1:
            yield q, vs[keys[q - 1]], vs[k], leave[keys[q - 1]], arrive[k]


class _Items:
    """Every cube's items as arrays: end vertex ids, time interval, owner (rebuilt for a cube once it changes)."""

    def __init__(self, graph: CoordinationGraph, vertices: list[list[int]], timing: list[Timing]) -> None:
        self.graph = graph
        self.per_cube = [self._of(i, list(range(len(vs))), vs, timing[i]) for i, vs in enumerate(vertices)]
        self._stack()

    @staticmethod
    def _of(i: int, keys: list[int], vs: list[int], timing: Timing) -> np.ndarray:
        rows = [(a, b, start, end, i) for _q, a, b, start, end in items_of(keys, vs, timing)]
        return np.array(rows, float).reshape(-1, 5)

    def _stack(self) -> None:
        rows = np.vstack(self.per_cube)
        self.a_id, self.b_id = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
        self.start, self.end, self.owner = rows[:, 2], rows[:, 3], rows[:, 4].astype(np.int64)
        pts = self.graph.points
        self.a, self.b = pts[self.a_id], pts[self.b_id]
        self.low, self.high = np.minimum(self.a, self.b), np.maximum(self.a, self.b)

    def replace(self, i: int, keys: list[int], vs: list[int], timing: Timing) -> None:
        self.per_cube[i] = self._of(i, keys, vs, timing)
        self._stack()

    def in_order(self, i: int, x: int, y: int, begin: float, finish: float) -> bool:
        """Does cube i's straight move from vertex x to vertex y, from step ``begin`` to step ``finish``, conflict
        only with items of other cubes that end before it begins or begin after it ends?"""
        g = self.graph
        p, q = g.points[x], g.points[y]
        # only items of other cubes that overlap it in time matter, and of those the ones near it
        near = boxes_overlap(self.low, self.high, np.minimum(p, q) - g.D, np.maximum(p, q) + g.D)
        rows = np.nonzero((self.end > begin) & (self.start < finish) & near & (self.owner != i))[0]
        if rows.size == 0:
            return True
        gap = segment_gaps(p, q, self.a[rows], self.b[rows])
        for k, d in zip(rows.tolist(), gap.tolist()):
            if d < g.D - EPS and d < g.relaxed_distance((x, y), (int(self.a_id[k]), int(self.b_id[k]))) - EPS:
                return False
        return True


def keypoints(graph: CoordinationGraph, vertices: list[list[int]], timing: list[Timing]) -> list[list[int]]:
    """Per cube, the indices into its vertices that its straightened path keeps (the first and the last always).
    ``timing[i]``: the steps at which the plan has cube i reach and leave each of its vertices (:func:`times`)."""
    items = _Items(graph, vertices, timing)
    out = []
    for i, vs in enumerate(vertices):
        arrive, leave = timing[i]
        keys = [0]
        k = 0
        while k < len(vs) - 1:
            best = k + 1
            for m in range(k + 2, len(vs)):
                if not graph.straight_ok(vs[k], vs[m]) or not items.in_order(i, vs[k], vs[m], leave[k], arrive[m]):
                    break
                best = m
            keys.append(best)
            k = best
        if len(keys) < len(vs):
            items.replace(i, keys, vs, timing[i])
        out.append(keys)
    return out


def times(moves: list[int], count: int) -> Timing:
    """(arrive, leave) steps of a cube's ``count`` distinct vertices, from the steps of its moves."""
    arrive = [0.0] + [float(t + 1) for t in moves]
    leave = [float(t) for t in moves] + [math.inf]
    return arrive[:count], leave[:count]
