"""A plan turned into an action dependency graph (the temporal plan graph of Hönig et al., RA-L 2019).

The plan says where each cube is after every step; real cubes are late, fast, slow or stopped, so the plan is kept
only as an order. Each cube follows its own *path* (its distinct vertices, straightened where that keeps every
order: :mod:`straighten`) as a polyline with arc length. Its *actions* are the segments of that path: action k
drives from vertex k-1 to vertex k and ends standing on vertex k (action 0: standing on the start).

Wherever two cubes' ways conflict (an *item*, a move along a segment or standing on a vertex, comes closer to
another's than the pair distance), the item that comes later in the plan waits for the earlier one: a *gate* on
the later cube's item (cube j, ``reach``: the arc length on j's path where j's earlier item ends, the distance
to keep). Gates only ever name moves: standing on a vertex ends with the move away from it, so a gate on it names
that move. A gate holds its cube only at positions of the item it belongs to (a move: the open segment and its
end; standing: the vertex), and only while j is short of ``reach``.

The gates define a graph over actions (action (j, l) before action (i, k)); :func:`build` numbers the actions in
a topological order (``order``) and refuses a plan whose graph has a cycle. That numbering is what makes the
execution safe from dead-locks, whatever the delays (:mod:`execution`).

Memory is bounded by construction: candidate pairs come from a grid of cells one pair distance wide, each pair
counted in one cell only, and are checked and reduced chunk by chunk (:data:`CHUNK` pairs at a time).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from toio_navigator.planners.coordinated import straighten
from toio_navigator.planners.coordinated.geometry import segments_gap_pairwise
from toio_navigator.planners.coordinated.graph import EPS, CoordinationGraph
from toio_navigator.planners.coordinated.lacam import Plan

CHUNK = 400_000        # candidate pairs checked at once (about 100 MB of temporaries at most)
#: a gate: (cube j, arc length on j's path j must reach, distance to keep)
Gate = tuple[int, float, float]


class CyclicPlan(ValueError):
    """A plan whose dependency graph has a cycle (it cannot be carried out in every timing)."""


@dataclass
class Dependencies:
    vertices: list[list[int]]            # per cube, the vertices of its path
    paths: list[np.ndarray]              # per cube (K + 1, 2) their points
    arcs: list[np.ndarray]               # per cube (K + 1,) arc length at each of them
    moving: list[list[list[Gate]]]       # per cube, per action k >= 1: gates on its move (index 0 unused)
    standing: list[list[list[Gate]]]     # per cube, per action k: gates on standing at vertex k
    order: list[np.ndarray]              # per cube (K + 1,) each action's number in a topological order
    times: list[np.ndarray] = field(default_factory=list)   # per cube (K + 1, 2) plan steps it reaches, leaves
    keys: list[list[int]] = field(default_factory=list)     # per cube, its path's vertices as indices into the
                                                             # plan's distinct vertices of that cube
    defects: int = 0                     # conflicting items the plan lets overlap in time (0 for a valid plan)
    work: int = 0                        # deterministic work units spent building it

    @property
    def n(self) -> int:
        return len(self.paths)

    @property
    def ends(self) -> np.ndarray:
        return np.array([a[-1] for a in self.arcs])

    def gates(self) -> int:
        return sum(len(g) for per in (self.moving, self.standing) for gates in per for g in gates)


@dataclass
class _Items:
    """Every item of every cube as arrays (one row each)."""
    cube: np.ndarray       # owner
    action: np.ndarray     # the action it belongs to (a move: its segment; standing on vertex k: k)
    a: np.ndarray          # vertex ids (a == b: standing)
    b: np.ndarray
    start: np.ndarray      # plan step it begins
    end: np.ndarray        # plan step it ends (inf: standing at the end)
    rank: np.ndarray       # a move of one plan step: its rank in that step
    long: np.ndarray       # a straight move across several plan steps

    def __len__(self) -> int:
        return len(self.cube)


def build(graph: CoordinationGraph, plan: Plan, straight: bool = False,
          fixed: list[list[int]] | None = None) -> Dependencies:
    """The dependency graph of a plan; ``straight``: on straightened paths, else vertex by vertex; ``fixed``
    (per cube, keypoints its path must keep as given from its first vertex: a plan that goes on from one already
    under way keeps the way behind the splice). CyclicPlan if its graph has a cycle."""
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
        keys, work = straighten.keypoints(graph, vertices, timing, fixed)
    else:
        keys, work = [list(range(len(vs))) for vs in vertices], 0
    items = _items(plan, vertices, moves, timing, keys)
    kept = [[vs[k] for k in ks] for vs, ks in zip(vertices, keys)]
    paths = [graph.points[np.array(vs)] for vs in kept]
    arcs = [np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))]) for p in paths]
    times = [np.column_stack([np.array(timing[i][0])[ks], np.array(timing[i][1])[ks]]) for i, ks in enumerate(keys)]
    rows, defects, pair_work = _constraints(graph, items)
    moving: list[list[list[Gate]]] = [[[] for _ in vs] for vs in kept]
    standing: list[list[list[Gate]]] = [[[] for _ in vs] for vs in kept]
    cube, act, stand, j, l_act, dist = rows
    for i_, k_, s_, j_, l_, d_ in zip(cube.tolist(), act.tolist(), stand.tolist(), j.tolist(), l_act.tolist(),
                                      dist.tolist()):
        (standing if s_ else moving)[i_][k_].append((j_, float(arcs[j_][l_]), d_))
    order = _topological(kept, rows)
    return Dependencies(vertices=kept, paths=paths, arcs=arcs, moving=moving, standing=standing, order=order,
                        times=times, keys=keys, defects=defects, work=work + pair_work + len(items))


def _items(plan: Plan, vertices, moves, timing, keys) -> _Items:
    """Standing on each kept vertex and moving to it from the one before, of every cube."""
    cols: dict[str, list] = {k: [] for k in ('cube', 'action', 'a', 'b', 'start', 'end', 'rank', 'long')}
    for i, (vs, ks) in enumerate(zip(vertices, keys)):
        arrive, leave = timing[i]
        for q, k in enumerate(ks):
            row = (i, q, vs[k], vs[k], arrive[k], leave[k], 0, False)
            for name, v in zip(cols, row):
                cols[name].append(v)
            if q:
                p = ks[q - 1]
                long = k > p + 1
                start = leave[p]
                rank = 0 if long else plan.ranks[int(start)][i]
                row = (i, q, vs[p], vs[k], start, arrive[k], rank, long)
                for name, v in zip(cols, row):
                    cols[name].append(v)
    ints = ('cube', 'action', 'a', 'b', 'rank')
    return _Items(**{k: np.array(v, np.int64 if k in ints else bool if k == 'long' else float)
                     for k, v in cols.items()})


def candidate_pairs(low: np.ndarray, high: np.ndarray, cell: float, chunk: int = CHUNK):
    """Pairs (p, q), p < q, of boxes [low, high] (M, 2) that overlap, in chunks of about ``chunk`` candidates
    (twice that at most): each box goes into the grid cells it covers, and a pair is made in the one cell that
    holds the low corner of the two boxes' overlap (so no pair comes twice, and no chunk holds the pairs of the
    whole swarm at once)."""
    m = len(low)
    if m < 2:
        return
    origin = low.min(axis=0)
    c_lo = np.floor((low - origin) / cell).astype(np.int64)
    c_hi = np.floor((high - origin) / cell).astype(np.int64)
    span = c_hi - c_lo + 1
    per = span[:, 0] * span[:, 1]
    width = int(c_hi[:, 1].max()) + 1
    owner = np.repeat(np.arange(m), per)
    local = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
    cx = c_lo[owner, 0] + local // span[owner, 1]
    cy = c_lo[owner, 1] + local % span[owner, 1]
    key = cx * width + cy
    order = np.lexsort((owner, key))
    key, owner = key[order], owner[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, len(key)])
    batch: list[tuple[np.ndarray, np.ndarray]] = []
    count = 0
    for s, k in zip(starts.tolist(), sizes.tolist()):
        if k < 2:
            continue
        members = owner[s:s + k]
        cell_key = int(key[s])
        for lo in range(0, k, max(1, chunk // k)):
            rows = np.arange(lo, min(k, lo + max(1, chunk // k)))
            p = np.repeat(members[rows], k)
            q = np.tile(members, len(rows))
            keep = p < q
            p, q = p[keep], q[keep]
            both_lo = np.maximum(low[p], low[q])
            both_hi = np.minimum(high[p], high[q])
            home = np.floor((both_lo - origin) / cell).astype(np.int64)
            keep = (home[:, 0] * width + home[:, 1] == cell_key) & np.all(both_lo <= both_hi, axis=1)
            batch.append((p[keep], q[keep]))
            count += int(keep.sum())
            if count >= chunk:
                yield np.concatenate([b[0] for b in batch]), np.concatenate([b[1] for b in batch])
                batch, count = [], 0
    if batch:
        yield np.concatenate([b[0] for b in batch]), np.concatenate([b[1] for b in batch])


def _constraints(graph: CoordinationGraph, it: _Items):
    """The gates of every pair of conflicting items, reduced to one per (cube, action, moving or standing, other
    cube, distance) with the furthest reach: (cube, action, standing, j, j's action, distance) arrays, the
    number of pairs the plan lets overlap in time, and the work units spent."""
    pts = graph.points
    a, b = pts[it.a], pts[it.b]
    half = 0.5 * graph.D
    low, high = np.minimum(a, b) - half, np.maximum(a, b) + half
    out: list[tuple] = []
    defects = 0
    work = 0
    last = np.zeros(int(it.cube.max()) + 1 if len(it) else 0, np.int64)
    np.maximum.at(last, it.cube, it.action)
    for p, q in candidate_pairs(low, high, max(graph.D, graph.lattice.spacing)):
        work += len(p)
        keep = it.cube[p] != it.cube[q]
        p, q = p[keep], q[keep]
        hit, dist = _conflict(graph, it, p, q)
        p, q, dist = p[hit], q[hit], dist[hit]
        first, later, overlap = _order(it, p, q)
        defects += int(overlap.sum())
        # standing as the earlier item: it ends with the move away from it (none after the last vertex)
        stands = it.a[first] == it.b[first]
        l_act = it.action[first] + stands
        ok = (l_act <= last[it.cube[first]]) & (it.action[later] >= 1)
        first, later, l_act, dist = first[ok], later[ok], l_act[ok], dist[ok]
        out.append(_reduce(it.cube[later], it.action[later], it.a[later] == it.b[later], it.cube[first], l_act,
                           np.round(dist, 6)))
    if not out:
        empty = np.zeros(0, np.int64)
        return (empty, empty, empty.astype(bool), empty, empty, np.zeros(0)), defects, work
    return _reduce(*(np.concatenate(col) for col in zip(*out))), defects, work


def _reduce(cube, act, stand, j, l_act, dist):
    """One row per (cube, action, standing, j, distance): the furthest action of j it waits for."""
    if len(cube) == 0:
        return cube, act, stand, j, l_act, dist
    order = np.lexsort((-l_act, dist, j, stand, act, cube))
    cube, act, stand, j, l_act, dist = (x[order] for x in (cube, act, stand, j, l_act, dist))
    new = np.r_[True, (cube[1:] != cube[:-1]) | (act[1:] != act[:-1]) | (stand[1:] != stand[:-1])
                | (j[1:] != j[:-1]) | (dist[1:] != dist[:-1])]
    return cube[new], act[new], stand[new], j[new], l_act[new], dist[new]


def _conflict(graph: CoordinationGraph, it: _Items, p: np.ndarray, q: np.ndarray):
    """For item pairs (p, q): do they conflict, and the distance they must keep (less than D between two starts
    or two goals that lie closer)."""
    v, n = graph.V, graph.N
    pa, pb, qa, qb = it.a[p], it.b[p], it.a[q], it.b[q]
    lattice = (pa < v) & (pb < v) & (qa < v) & (qb < v) & ~it.long[p] & ~it.long[q]
    hit = np.zeros(len(p), bool)
    dist = np.full(len(p), graph.D)
    hit[lattice] = ((pa == qa) | (pa == qb) | (pb == qa) | (pb == qb))[lattice]
    rest = np.flatnonzero(~lattice)
    if rest.size:
        pts = graph.points
        ra, rb, sa, sb = pa[rest], pb[rest], qa[rest], qb[rest]
        gap = segments_gap_pairwise(pts[ra], pts[rb], pts[sa], pts[sb])
        need = np.full(len(rest), graph.D)
        for lo, hi in ((v + n, v + 2 * n), (v, v + n)):        # starts, then goals
            x = np.where((ra >= lo) & (ra < hi), ra, np.where((rb >= lo) & (rb < hi), rb, -1))
            y = np.where((sa >= lo) & (sa < hi), sa, np.where((sb >= lo) & (sb < hi), sb, -1))
            both = (x >= 0) & (y >= 0)
            apart = np.hypot(*(pts[np.maximum(x, 0)] - pts[np.maximum(y, 0)]).T) - 1e-3
            need = np.where(both, np.minimum(need, apart), need)
        hit[rest] = (gap < graph.D - EPS) & (gap < need - EPS)
        dist[rest] = need
    return hit, dist


def _order(it: _Items, p: np.ndarray, q: np.ndarray):
    """(the item of each pair that comes first, the other, whether the two overlap in time: a plan defect). Two
    moves of one step go by their ranks; otherwise the one that ends before the other begins (standing that ends
    in the step a move begins comes first); overlapping ones by (start, rank)."""
    moves = (it.a[p] != it.b[p]) & (it.a[q] != it.b[q]) & ~it.long[p] & ~it.long[q]
    same = moves & (it.start[p] == it.start[q])
    p_first = np.where(same, it.rank[p] < it.rank[q], False)
    before = it.end[p] <= it.start[q]
    after = it.end[q] <= it.start[p]
    overlap = ~same & ~before & ~after
    tie = (it.start[p] < it.start[q]) | ((it.start[p] == it.start[q]) & (it.rank[p] < it.rank[q]))
    p_first = np.where(same, p_first, np.where(before, True, np.where(after, False, tie)))
    return np.where(p_first, p, q), np.where(p_first, q, p), overlap


def _topological(kept: list[list[int]], rows) -> list[np.ndarray]:
    """Each action's number in a topological order of the graph (Kahn's algorithm, the lowest-numbered ready
    cube first); CyclicPlan if there is none."""
    sizes = [len(vs) for vs in kept]
    offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    total = int(offset[-1])
    cube, act, _stand, j, l_act, _d = rows
    src = offset[j] + l_act
    dst = offset[cube] + act
    follows = np.ones(total, bool)
    follows[offset[:-1]] = False                  # each cube's action k >= 1 comes after its action k - 1
    own = np.flatnonzero(follows)
    src = np.concatenate([src, own - 1])
    dst = np.concatenate([dst, own])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    indegree = np.bincount(dst, minlength=total)
    order_out = np.argsort(src, kind='stable')
    src_sorted, dst_sorted = src[order_out], dst[order_out]
    first = np.searchsorted(src_sorted, np.arange(total + 1))
    number = np.full(total, -1, np.int64)
    ready = [int(x) for x in np.flatnonzero(indegree == 0)]
    ready.reverse()
    indeg = indegree.tolist()
    fs = first.tolist()
    ds = dst_sorted.tolist()
    count = 0
    while ready:
        x = ready.pop()
        number[x] = count
        count += 1
        for e in range(fs[x], fs[x + 1]):
            y = ds[e]
            indeg[y] -= 1
            if indeg[y] == 0:
                ready.append(y)
    if count < total:
        raise CyclicPlan(f'{total - count} actions of the plan wait for each other in a cycle')
    return [number[offset[i]:offset[i + 1]] for i in range(len(kept))]


def duration(dep: Dependencies, speed: float, turn_time: float, wait_time: float, both_ways: bool = False) -> float:
    """A rough time to carry the plan out, to choose between plans: every action takes its length at ``speed``
    plus ``turn_time`` per half turn at its start (``both_ways``: a cube that drives backwards too turns through
    the smaller of the angle and its supplement), and starts when the action before it and every action it waits
    for are done, ``wait_time`` later when it had to wait for another cube. The latest end is the estimate."""
    flat = [(int(dep.order[i][k]), i, k) for i in range(dep.n) for k in range(len(dep.arcs[i]))]
    flat.sort()
    done: dict[tuple[int, int], float] = {}
    for _num, i, k in flat:
        if k == 0:
            done[(i, 0)] = 0.0
            continue
        start = done[(i, k - 1)]
        waited = max((done[(j, _action_of(dep, j, reach))] for j, reach, _d in dep.moving[i][k] + dep.standing[i][k]),
                     default=0.0)
        if waited > start:
            start = waited + wait_time
        path = dep.paths[i]
        seg = path[k] - path[k - 1]
        turn = 0.0
        if k >= 2:
            before = path[k - 1] - path[k - 2]
            norm = float(np.hypot(*seg) * np.hypot(*before))
            if norm > 1e-9:
                turn = math.acos(max(-1.0, min(1.0, float(seg @ before) / norm))) / math.pi
                turn = min(turn, 1.0 - turn) if both_ways else turn
        done[(i, k)] = start + float(np.hypot(*seg)) / speed + turn_time * turn
    return max(done.values(), default=0.0)


def _action_of(dep: Dependencies, j: int, reach: float) -> int:
    """The action of cube j that ends at arc length ``reach``."""
    return int(np.searchsorted(dep.arcs[j], reach - 1e-6, side='left'))
