"""A plan turned into waits that hold whatever the timing: a temporal plan graph (Hönig et al., 2016 and 2019).

The plan says where each cube is after every step. Real cubes do not move in steps: they are late, fast, slow or
stopped. So the plan is kept only as an order: each cube follows its own path (its distinct vertices, as a
polyline with arc length), and wherever two cubes' ways conflict (come closer than the distance they must keep),
the one that goes there later in the plan waits until the other has passed. A cube's way consists of *items*:
standing on a vertex (a point) and moving along an edge (a segment). For every item of a cube, its *gates* list
the conflicting items of other cubes that come first in the plan: (cube j, the vertex along its path j must have
reached, or left when standing there is what conflicts, the distance to keep). The cube may advance along an
item only while every point it reaches keeps that distance from what is left of j's path up to there.

The plan never lets two conflicting items overlap in time, and within a step its ranks order the moves, so
"comes first" is a strict order of the items and the waits form no cycle: the cube holding the earliest item
that is not done can always go on. No dead-lock, whatever the delays; no contact, as long as each cube stays
near its path and within what it is granted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import pairs_within
from toio_navigator.planners.coordinated import straighten
from toio_navigator.planners.coordinated.geometry import boxes_overlap, segment_gaps
from toio_navigator.planners.coordinated.graph import CoordinationGraph
from toio_navigator.planners.coordinated.lacam import Plan

#: gates[i][m]: the gates of cube i's segment m (m >= 1; the segment ends at vertex m, and standing there is part
#: of it): (cube j, arc length of the vertex j must have reached, distance to keep, whether j must also have left
#: that vertex)
Gate = tuple[int, float, float, bool]


@dataclass
class Schedule:
    vertices: list[list[int]]            # per cube, its distinct vertices in order
    paths: list[np.ndarray]              # per cube (K + 1, 2) their points
    arcs: list[np.ndarray]               # per cube (K + 1,) arc length at each of them
    gates: list[list[list[Gate]]]        # per cube, per segment (index 0 unused)
    overlaps: int = 0                    # conflicting items the plan lets overlap in time (a defect: 0)

    @property
    def n(self) -> int:
        return len(self.paths)


@dataclass
class _Item:
    cube: int
    index: int          # the vertex it ends on (its segment index; 0: standing on the start)
    a: int              # vertex ids: a == b when standing
    b: int
    start: int          # step it begins (a move: the step; standing: the step the cube arrived)
    end: float          # step it ends (a move: start + 1; standing: the step the cube leaves, inf at the end)
    rank: int           # a move: its rank in its step
    long: bool = False  # a straight move across several steps (straightened: skips vertices of the plan)


def build(graph: CoordinationGraph, plan: Plan, straight: bool = False) -> Schedule:
    """The schedule of a plan; ``straight``: on straightened paths (``straighten``), else vertex by vertex."""
    configs = plan.configs
    n = len(configs[0])
    steps = len(configs) - 1
    vertices, moves = [], []
    for i in range(n):
        vs, ts = [configs[0][i]], []
        for t in range(steps):
            if configs[t + 1][i] != configs[t][i]:
                vs.append(configs[t + 1][i])
                ts.append(t)
        vertices.append(vs)
        moves.append(ts)
    timing = [straighten.times(ts, len(vs)) for vs, ts in zip(vertices, moves)]
    if straight:
        keys = straighten.keypoints(graph, vertices, timing)
    else:
        keys = [list(range(len(vs))) for vs in vertices]
    items: list[_Item] = []
    for i in range(n):
        for q, a, b, start, end in straighten.items_of(keys[i], vertices[i], timing[i]):
            if a == b:
                items.append(_Item(i, q, a, b, int(start), end, 0))
            elif keys[i][q] > keys[i][q - 1] + 1:        # a straight move past vertices of the plan
                items.append(_Item(i, q, a, b, int(start), end, 0, True))
            else:
                items.append(_Item(i, q, a, b, int(start), end, plan.ranks[int(start)][i]))
    vertices = [[vs[k] for k in ks] for vs, ks in zip(vertices, keys)]
    paths = [graph.points[np.array(vs)] for vs in vertices]
    arcs = [np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))]) for p in paths]
    gates: list[list[list[Gate]]] = [[[] for _ in vs] for vs in vertices]
    overlaps = 0
    merged: dict[tuple[int, int, int, float], float] = {}   # one gate per (cube, segment, cube, distance)
    for x, y in _close_pairs(graph, items):
        first, later, overlap = _order(x, y)
        hit, distance = graph.items_conflict((first.a, first.b), (later.a, later.b), exact=x.long or y.long)
        if not hit:
            continue
        overlaps += overlap
        if later.index:
            key = (later.cube, later.index, first.cube, round(distance, 6))
            # standing on a vertex is done when the cube leaves it, a move when it gets there
            done = (float(arcs[first.cube][first.index]), first.a == first.b)
            merged[key] = max(merged.get(key, (-1.0, False)), done)
    for (i, m, j, distance), (reach, leave) in merged.items():
        gates[i][m].append((j, reach, distance, leave))
    return Schedule(vertices=vertices, paths=paths, arcs=arcs, gates=gates, overlaps=overlaps)


def _order(x: _Item, y: _Item) -> tuple[_Item, _Item, bool]:
    """(the item that comes first, the other, whether they overlap in time: two items the plan must keep
    apart)."""
    both_move = x.a != x.b and y.a != y.b and not (x.long or y.long)
    if both_move and x.start == y.start:                        # two moves of one step: their ranks
        return (x, y, False) if x.rank < y.rank else (y, x, False)
    if x.end <= y.start:
        return x, y, False
    if y.end <= x.start:
        return y, x, False
    return (x, y, True) if (x.start, x.rank) < (y.start, y.rank) else (y, x, True)


def _close_pairs(graph: CoordinationGraph, items: list[_Item]):
    """Pairs of items of different cubes whose geometry could come within the pair distance."""
    pts = graph.points
    a = pts[[it.a for it in items]]
    b = pts[[it.b for it in items]]
    long = np.array([it.long for it in items], bool)
    short = np.nonzero(~long)[0]
    mid = 0.5 * (a[short] + b[short])
    half = 0.5 * np.hypot(*(b[short] - a[short]).T)
    reach = 2.0 * float(half.max(initial=0.0)) + graph.D + 1.0
    q, p, d = pairs_within(mid, reach)
    keep = (q < p) & (d < half[q] + half[p] + graph.D + 1.0)
    for k, m in zip(short[q[keep]].tolist(), short[p[keep]].tolist()):
        if items[k].cube != items[m].cube:
            yield items[k], items[m]
    # a straightened move can be long: compared with every item (each pair of two long ones once)
    cube = np.array([it.cube for it in items])
    low, high = np.minimum(a, b), np.maximum(a, b)
    for k in np.nonzero(long)[0].tolist():
        reach = graph.D + 1.0
        rows = np.nonzero((cube != items[k].cube) & (~long | (np.arange(len(items)) > k))
                          & boxes_overlap(low, high, low[k] - reach, high[k] + reach))[0]
        near = segment_gaps(a[k], b[k], a[rows], b[rows]) < reach
        for m in rows[near].tolist():
            yield items[k], items[m]


def duration(sch: Schedule, speed: float, turn_time: float, wait_time: float, both_ways: bool = False) -> float:
    """A rough time to carry the schedule out, to choose between plans: every segment takes its length at
    ``speed`` plus ``turn_time`` per half turn at its start (``both_ways``: a cube that drives backwards too turns
    through the smaller of the angle and its supplement), and starts when the segment before it and everything
    it waits for are done, ``wait_time`` later when it had to wait for another cube (a real cube stops there and
    sets off again). The latest end is the estimate."""
    def needs(i: int, m: int) -> list[tuple[int, int]]:
        out = []
        for j, reach, _d, leave in sch.gates[i][m]:
            arcs = sch.arcs[j]
            k = int(np.searchsorted(arcs, reach - 1e-6, side='left')) + (1 if leave else 0)
            if min(k, len(arcs) - 1) >= 1:
                out.append((j, min(k, len(arcs) - 1)))
        return out

    done: dict[tuple[int, int], float] = {}
    budget = 50 * sum(len(a) for a in sch.arcs) + 100      # the waits have no cycle; this only guards that
    for i in range(sch.n):
        for last in range(1, len(sch.arcs[i])):
            stack = [(i, last)]
            while stack:                       # depth first, each segment after what it depends on
                budget -= 1
                if budget < 0:
                    return math.inf
                node = stack[-1]
                if node in done:
                    stack.pop()
                    continue
                x, m = node
                pending = [d for d in ([(x, m - 1)] if m >= 2 else []) + needs(x, m) if d not in done]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                start = done.get((x, m - 1), 0.0)
                waited = max((done[d] for d in needs(x, m)), default=0.0)
                if waited > start:
                    start = waited + wait_time
                path = sch.paths[x]
                seg = path[m] - path[m - 1]
                turn = 0.0
                if m >= 2:
                    before = path[m - 1] - path[m - 2]
                    norm = float(np.hypot(*seg) * np.hypot(*before))
                    if norm > 1e-9:
                        turn = math.acos(max(-1.0, min(1.0, float(seg @ before) / norm))) / math.pi
                        turn = min(turn, 1.0 - turn) if both_ways else turn
                done[node] = start + float(np.hypot(*seg)) / speed + turn_time * turn
    return max(done.values(), default=0.0)
