"""Prioritized planning: cubes one after another, each by a shortest-time search in space and time around the
plans of the cubes before it (Silver 2005; Erdmann and Lozano-Perez 1987).

It is the fallback when the swarm search (:mod:`lacam`) runs out of budget: where free space forms a ring (a
corridor between walls with room around it), a cube planned later takes the long way round while the earlier
ones take the corridor, which a configuration-by-configuration search finds only after a very long detour. It is
not complete (an order may fail), so a few orders are tried.

A later cube may enter space an earlier one leaves but never the other way round, so the order of planning is the
order of the moves in every step (the ranks of :mod:`pibt`); a cube that has arrived stays on its target, and a
plan is accepted only if nobody planned earlier passes its target after it arrived.
"""
from __future__ import annotations

import heapq

import numpy as np

from toio_navigator.navigation.coordination.graph import AFTER, BEFORE, EITHER, FREE, INVALID, CoordinationGraph
from toio_navigator.navigation.coordination.lacam import Plan


class _Reserved:
    """The timed vertices of the cubes planned so far: ``at[t]`` vertex -> cube at time t, ``to[t]`` vertex ->
    cube arriving from step t (the last configuration holds for ever)."""

    def __init__(self) -> None:
        self.paths: dict[int, list[int]] = {}
        self.horizon = 0

    def where(self, k: int, t: int) -> int:
        path = self.paths[k]
        return path[min(t, len(path) - 1)]

    def add(self, k: int, path: list[int]) -> None:
        self.paths[k] = path
        self.horizon = max(self.horizon, len(path))


def _allowed(graph: CoordinationGraph, res: _Reserved, near: dict, u: int, x: int, t: int) -> bool:
    """May the cube being planned move u -> x in step t -> t+1 beside the cubes planned before it? It may enter
    space they leave (it moves after them) or leave space they enter (it moves before them), but not both in one
    step: so every cube adds only incoming or only outgoing order edges, and a step's order never has a cycle."""
    seen = set()
    after = before = False
    for y in graph.around(u, x):
        for k in near.get(y, ()):
            if k in seen:
                continue
            seen.add(k)
            rel = graph.relation(u, x, res.where(k, t), res.where(k, t + 1))
            if rel == FREE:
                continue
            if rel == INVALID:
                return False
            after |= rel in (AFTER, EITHER)
            before |= rel == BEFORE
            if after and before:
                return False
    return True


def step_ranks(graph: CoordinationGraph, configs: list[tuple[int, ...]], planned: list[int]) -> list[list[int]] | None:
    """For every step, an order of the cubes' moves that respects every pair's relation (for EITHER: the cube
    planned earlier first), cubes in ``planned`` order where nothing else decides."""
    n = len(planned)
    position = {k: p for p, k in enumerate(planned)}
    ranks = []
    for t in range(len(configs) - 1):
        now, nxt = configs[t], configs[t + 1]
        occ: dict[int, list[int]] = {}
        for k in range(n):
            occ.setdefault(now[k], []).append(k)
            occ.setdefault(nxt[k], []).append(k)
        first: dict[int, set[int]] = {k: set() for k in range(n)}     # k -> cubes that must move before k
        for i in range(n):
            for y in graph.around(now[i], nxt[i]):
                for k in occ.get(y, ()):
                    if k == i or position[k] > position[i]:
                        continue
                    rel = graph.relation(now[i], nxt[i], now[k], nxt[k])
                    if rel in (AFTER, EITHER):
                        first[i].add(k)
                    elif rel == BEFORE:
                        first[k].add(i)
        order, placed = [], set()
        while len(order) < n:
            ready = [k for k in planned if k not in placed and first[k] <= placed]
            if not ready:
                return None                   # a cycle: the plan cannot be carried out
            order.append(ready[0])
            placed.add(ready[0])
        rank = [0] * n
        for r, k in enumerate(order):
            rank[k] = r
        ranks.append(rank)
    return ranks


def _visitors(graph: CoordinationGraph, res: _Reserved) -> dict[int, set[int]]:
    """vertex -> the planned cubes that are ever on it (to find the cubes worth checking)."""
    out: dict[int, set[int]] = {}
    for k, path in res.paths.items():
        for x in path:
            out.setdefault(x, set()).add(k)
    return out


def _search(graph: CoordinationGraph, res: _Reserved, i: int, start: int, limit: int) -> list[int] | None:
    """Shortest-time path of cube i from ``start`` to its target around the reserved plans, None if none within
    ``limit`` steps."""
    goal = int(graph.target[i])
    near = _visitors(graph, res)
    step = graph.lattice.spacing

    def h(x: int) -> float:
        return graph.route(i, x) / step

    settle = res.horizon                 # from then on nothing planned moves: waiting longer changes nothing

    def tau(t: int) -> int:
        return min(t, settle + 1)

    pts = graph.points
    # among equally fast paths, the one with the fewest turns is expanded first (a real cube slows and turns at
    # each corner; without this the heap's order zigzags across the lattice): (f, turns so far, counter, ...)
    frontier = [(h(start), 0.0, 0, start, 0, -1)]
    came: dict[tuple[int, int], tuple[int, int] | None] = {(start, 0): None}
    counter = 0
    while frontier:
        _f, turns, _c, x, t, before = heapq.heappop(frontier)
        if x == goal and all(_allowed(graph, res, near, x, x, s) for s in range(t, max(settle, t + 1))):
            path = [x]
            state = (x, tau(t))
            while came[state] is not None:
                state = came[state]
                path.append(state[0])
            return path[::-1]
        if t >= limit:
            continue
        for y in graph.neighbours(i, x) + [x]:
            key = (y, tau(t + 1))
            if key in came or not _allowed(graph, res, near, x, y, t):
                continue
            came[key] = (x, tau(t))
            counter += 1
            turn = 0.0
            if y != x and before >= 0:
                way, step_to = pts[x] - pts[before], pts[y] - pts[x]
                turn = 1.0 - float(way @ step_to) / max(float(np.hypot(*way) * np.hypot(*step_to)), 1e-12)
            heapq.heappush(frontier, (t + 1 + h(y), turns + turn, counter, y, t + 1, x if y != x else before))
    return None


def _conflict(graph: CoordinationGraph, paths: dict[int, list[int]], ordered: set[tuple[int, int]],
              horizon: int) -> tuple[int, int] | None:
    """The first pair of cubes, neither planned around the other, whose paths interact in some step."""
    def at(k: int, t: int) -> int:
        path = paths[k]
        return path[min(t, len(path) - 1)]

    for t in range(horizon):
        occ: dict[int, list[int]] = {}
        for k in paths:
            occ.setdefault(at(k, t), []).append(k)
            occ.setdefault(at(k, t + 1), []).append(k)
        for i in paths:
            u, x = at(i, t), at(i, t + 1)
            for y in graph.around(u, x):
                for k in occ.get(y, ()):
                    if k <= i or (i, k) in ordered or (k, i) in ordered:
                        continue
                    if graph.relation(u, x, at(k, t), at(k, t + 1)) != FREE:
                        return i, k
    return None


def _around(ordered: set[tuple[int, int]], k: int, below: bool) -> set[int]:
    """The cubes planned around k (``below``), or those k is planned around, transitively; k not included."""
    edges = ordered if below else {(lo, hi) for hi, lo in ordered}
    out, todo = set(), [k]
    while todo:
        a = todo.pop()
        for src, dst in edges:
            if src == a and dst not in out:
                out.add(dst)
                todo.append(dst)
    return out


def _topological(n: int, ordered: set[tuple[int, int]]) -> list[int] | None:
    """Cubes with every higher one before it, or None for a cycle."""
    before = {k: {hi for hi, lo in ordered if lo == k} for k in range(n)}
    out, placed = [], set()
    while len(out) < n:
        ready = [k for k in range(n) if k not in placed and before[k] <= placed]
        if not ready:
            return None
        out.append(ready[0])
        placed.add(ready[0])
    return out


def priority_search(graph: CoordinationGraph, start: list[int], limit: int, budget: int) -> Plan | None:
    """Priority-based search (Ma et al., AAAI 2019): every cube first takes its own fastest path; where two cubes
    interact without an order between them, the search branches on which one plans around the other (its path,
    and those of the cubes below it, planned again around everyone above). Depth first, cheaper child first; at
    most ``budget`` branches. The order found gives every step's order of moves. None if nothing is found."""
    n = len(start)
    paths: dict[int, list[int]] = {}
    for i in range(n):
        path = _search(graph, _Reserved(), i, start[i], limit)
        if path is None:
            return None
        paths[i] = path
    stack = [(paths, frozenset())]
    branches = 0
    while stack and branches < budget:
        paths, ordered = stack.pop()
        horizon = max(len(p) for p in paths.values())
        pair = _conflict(graph, paths, set(ordered), horizon)
        if pair is None:
            configs = [tuple(p[min(t, len(p) - 1)] for p in (paths[k] for k in range(n))) for t in range(horizon)]
            ranks = step_ranks(graph, configs, _topological(n, set(ordered)))
            if ranks is None:
                continue
            return Plan(configs=configs, ranks=ranks, complete=True, expanded=branches)
        children = []
        for hi, lo in (pair, pair[::-1]):
            branches += 1
            new_order = set(ordered) | {(hi, lo)}
            order = _topological(n, new_order)
            if order is None:
                continue
            new_paths = dict(paths)
            ok = True
            todo = {lo} | _around(new_order, lo, below=True)
            for k in [k for k in order if k in todo]:
                res = _Reserved()
                for h in _around(new_order, k, below=False):
                    res.add(h, new_paths[h])
                path = _search(graph, res, k, start[k], limit)
                if path is None:
                    ok = False
                    break
                new_paths[k] = path
            if ok:
                cost = sum(len(p) for p in new_paths.values())
                children.append((cost, new_paths, frozenset(new_order)))
        children.sort(key=lambda c: -c[0])
        stack.extend((p, o) for _c, p, o in children)
    return None


def plan(graph: CoordinationGraph, start: list[int], orders: list[list[int]], limit: int) -> Plan | None:
    """The first of ``orders`` (lists of cubes) for which every cube finds a path; None if none does."""
    for order in orders:
        res = _Reserved()
        ok = True
        for i in order:
            path = _search(graph, res, i, start[i], limit)
            if path is None:
                ok = False
                break
            res.add(i, path)
        if not ok:
            continue
        n = len(start)
        configs = [tuple(res.where(k, t) for k in range(n)) for t in range(res.horizon)]
        ranks = step_ranks(graph, configs, order)
        if ranks is not None:
            return Plan(configs=configs, ranks=ranks, complete=True, expanded=0)
    return None


def default_orders(graph: CoordinationGraph, start: list[int], rng: np.random.Generator, count: int) -> list[list[int]]:
    """Cubes farthest from their targets first, nearest first, then random orders."""
    n = len(start)
    far = sorted(range(n), key=lambda i: -graph.route(i, start[i]))
    orders = [far, far[::-1]]
    orders += [list(rng.permutation(n)) for _ in range(max(0, count - 2))]
    return orders
