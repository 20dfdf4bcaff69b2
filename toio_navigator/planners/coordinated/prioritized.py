"""Planning around other cubes' plans: each cube by a shortest-time search in space and time around the plans of
the others (Silver 2005; Erdmann and Lozano-Perez 1987). Three uses:

* priority-based search (:func:`priority_search`, Ma et al., AAAI 2019) for few cubes: where free space forms a
  ring (a corridor between walls with room around it), a cube planned later takes the long way round while the
  earlier ones take the corridor, which a configuration-by-configuration search finds only after a very long
  detour;
* shortening a swarm plan (:func:`shorten`): each cube planned again around everyone else's path, kept where it
  arrives sooner (a neighbourhood of one in large neighbourhood search, Li et al., IJCAI 2021);
* improving it further (:func:`improve`): groups of cubes planned again together, kept where they arrive sooner.

A cube planned around others enters space they leave only after them, and leaves space they enter before them
(the ranks of :mod:`pibt` order each step's moves). Around a plan whose ranks are known it may do both in one step
where those ranks allow it; around cubes planned by priority (no ranks yet) only one of the two, so every step
keeps an order of moves. A cube that has arrived stays on its target, and a path is accepted only if nobody else
passes its target after it arrived.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np

from toio_navigator.planners.coordinated.graph import AFTER, BEFORE, EITHER, FREE, INVALID, CoordinationGraph
from toio_navigator.planners.coordinated.lacam import Plan, never

WORK_SLOT = 4          # work quarters (a quarter of a unit, about a microsecond here each) of one look at a move
                       # beside the planned cubes, plus one per vertex around it
WORK_PUSH = 6          # ... of a state a space-time search puts on its heap
WORK_LOOK = 3          # ... of a move a space-time search looks at from a state it takes off its heap


class _Reserved:
    """The timed vertices of the cubes planned so far (the last configuration holds for ever), and where known
    (``ranked``) the place of each of their moves in its step's order of moves."""

    def __init__(self, ranked: bool = False) -> None:
        self.paths: dict[int, list[int]] = {}
        self.ranks: dict[int, list[float]] = {}
        self.ranked = ranked
        self.horizon = 0
        self._occ: dict[int, dict[int, list[tuple[int, int, int]]]] = {}
        self.ops = 0                 # moves looked at and occupants compared (deterministic work)

    def rank(self, k: int, t: int) -> float:
        ranks = self.ranks.get(k, ())
        return ranks[t] if t < len(ranks) else 0.0

    def add(self, k: int, path: list[int], ranks: list[float] | None = None) -> None:
        self.paths[k] = path
        self.ranks[k] = list(ranks or ())
        self.horizon = max(self.horizon, len(path))
        self._occ.clear()

    def step(self, t: int) -> dict[int, list[tuple[int, int, int]]]:
        """vertex -> (cube, its move's two vertices) for the cubes on it at time t or t + 1 (the cubes a move in
        step t may meet)."""
        t = min(t, self.horizon)
        out = self._occ.get(t)
        if out is None:
            out = {}
            self.ops += len(self.paths)
            for k, path in self.paths.items():
                a, b = path[min(t, len(path) - 1)], path[min(t + 1, len(path) - 1)]
                out.setdefault(a, []).append((k, a, b))
                if b != a:
                    out.setdefault(b, []).append((k, a, b))
            self._occ[t] = out
        return out


def _slot(graph: CoordinationGraph, res: _Reserved, u: int, x: int, t: int) -> float | None:
    """May the cube being planned move u -> x in step t -> t+1 beside the cubes planned before it, and where in
    the step's order of moves (a rank between theirs), or None. It moves after the cubes whose space it enters
    and before those entering space it leaves. Where their ranks are known (``res.ranked``) it may do both if
    every cube it follows moves before every cube it precedes; else only one of the two (every cube then adds
    only incoming or only outgoing order edges, and a step's order never has a cycle), and moves whose edges
    meet count as following."""
    occ = res.step(t)
    seen = set()
    low, high = -math.inf, math.inf
    around = graph.around(u, x)             # (a few vertices: cheaper to look each up than to intersect sets)
    res.ops += WORK_SLOT + len(around)
    for y in around:     # (the answer does not depend on the order)
        here = occ.get(y)
        if here is None:
            continue
        for k, a, b in here:
            if k in seen:
                continue
            seen.add(k)
            rel = graph.relation(u, x, a, b)
            if rel == INVALID:
                return None
            if rel == AFTER or (rel == EITHER and not res.ranked):
                low = max(low, res.rank(k, t))
            elif rel == BEFORE:
                high = min(high, res.rank(k, t))
    if low >= high:
        return None
    if math.isinf(low):
        return 0.0 if math.isinf(high) else high - 1.0
    return low + 1.0 if math.isinf(high) else 0.5 * (low + high)


def _allowed(graph: CoordinationGraph, res: _Reserved, u: int, x: int, t: int) -> bool:
    return _slot(graph, res, u, x, t) is not None


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


def _search(graph: CoordinationGraph, res: _Reserved, i: int, start: int, limit: int,
            turn_limit: float | None = None, budget: list[int] | None = None,
            follow: float = 0.0) -> list[int] | None:
    """Shortest-time path of cube i from ``start`` to its target around the reserved plans, None if none within
    ``limit`` steps. ``turn_limit``: no move turning sharper than that (a cosine) from the move just made, as in
    :mod:`pibt` (a real cube stands a step to turn). ``budget``: [moves it may still try], counted down; None
    once it runs out. ``follow``: steps each move into a vertex another cube leaves in the same step costs (the
    cheapest path then, not the fastest: a real cube that follows another waits to see it go)."""
    goal = int(graph.target[i])
    step = graph.lattice.spacing

    def h(x: int) -> float:
        return graph.route(i, x) / step

    settle = res.horizon                 # from then on nothing planned moves: waiting longer changes nothing

    def tau(t: int) -> int:
        return min(t, settle + 1)

    # may it stay on its target in step s (s = settle: from then on)? Asked once per search, not at every time
    # the search reaches the target
    stays = [_allowed(graph, res, goal, goal, s) for s in range(settle + 1)]
    blocked = max((s for s in range(settle) if not stays[s]), default=-1)

    def arrived(t: int) -> bool:
        return t > blocked if t < settle else stays[settle]

    # a state is (vertex, time, the vertex it came from in the last step or -1: only where turns are limited)
    # among equally fast paths, the one with the fewest turns is expanded first (a real cube slows and turns at
    # each corner; without this the heap's order zigzags across the lattice): (f, turns so far, counter, ...)
    first = (start, 0, -1)
    frontier = [(h(start), 0.0, 0, first, 0, -1)]
    came: dict[tuple[int, int, int], tuple[int, int, int] | None] = {first: None}
    counter = 0
    while frontier:
        f, turns, _c, state, t, before = heapq.heappop(frontier)
        x, _tau, moved_from = state
        cost = f - h(x) if follow else float(t)     # the time, and what following cost on the way
        if x == goal and arrived(t):
            path = []
            while state is not None:
                path.append(state[0])
                state = came[state]
            return path[::-1]
        if t >= limit:
            continue
        options = graph.neighbours(i, x) + [x]
        res.ops += WORK_LOOK * len(options)
        for y in options:
            if turn_limit is not None and y != x and graph.turn_cosine(moved_from, x, y) < turn_limit:
                continue
            key = (y, tau(t + 1), graph.came_from(x, y, moved_from) if turn_limit is not None else -1)
            if key in came or not _allowed(graph, res, x, y, t):
                continue
            came[key] = state
            counter += 1
            res.ops += WORK_PUSH
            if budget is not None:
                budget[0] -= 1
                if budget[0] < 0:
                    return None
            turn = 1.0 - graph.turn_cosine(before, x, y) if y != x else 0.0
            moved = y != x and not graph.same_place(x, y)
            extra = follow if follow and moved and _follows_into(res.step(t), y) else 0.0
            heapq.heappush(frontier, (cost + 1 + extra + h(y), turns + turn, counter, key, t + 1,
                                      x if moved else before))
    return None


def _follows_into(occ: dict[int, list[tuple[int, int, int]]], y: int) -> bool:
    """Does some cube of ``occ`` (:meth:`_Reserved.step`) leave vertex y in that step?"""
    return any(a == y and b != a for _k, a, b in occ.get(y, ()))


def follows(graph: CoordinationGraph, configs) -> int:
    """How many moves of a plan (its configurations) enter a vertex another cube leaves in the same step."""
    out = 0
    for now, nxt in zip(configs, configs[1:]):
        leaving = {a for a, b in zip(now, nxt) if a != b}
        out += sum(1 for a, b in zip(now, nxt) if b in leaving and a != b and not graph.same_place(a, b))
    return out


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


def priority_search(graph: CoordinationGraph, start: list[int], limit: int, budget: int,
                    stop: Callable[[], bool] = never, work=None) -> Plan | None:
    """Priority-based search (Ma et al., AAAI 2019): every cube first takes its own fastest path; where two cubes
    interact without an order between them, the search branches on which one plans around the other (its path,
    and those of the cubes below it, planned again around everyone above). Depth first, cheaper child first; at
    most ``budget`` branches. The order found gives every step's order of moves. None if nothing is found (or
    once ``stop`` says True); ``work`` as in :func:`improve`."""
    n = len(start)
    paths: dict[int, list[int]] = {}
    for i in range(n):
        res = _Reserved()
        path = _search(graph, res, i, start[i], limit)
        if work is not None:
            work.add(res.ops / 4)
        if path is None:
            return None
        paths[i] = path
    stack = [(paths, frozenset())]
    branches = 0
    while stack and branches < budget and not stop():
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
                if work is not None:
                    work.add(res.ops / 4)
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


def _trim(path: list[int]) -> list[int]:
    """The path without the standing at its end."""
    end = len(path)
    while end > 1 and path[end - 1] == path[end - 2]:
        end -= 1
    return path[:end]


def _paths(configs: list[list[int]]) -> list[list[int]]:
    """Each cube's path of a plan's configurations, without the standing at its end."""
    return [_trim([c[k] for c in configs]) for k in range(len(configs[0]))]


def _moves(path: list[int]) -> int:
    return sum(a != b for a, b in zip(path, path[1:]))


def _replan(graph: CoordinationGraph, configs: list[list[int]], ranks: list[list[float]], paths: list[list[int]],
            group: list[int], limits: list[int], turn_limit: float | None, budget: list[int], follow: float = 0.0,
            work=None):
    """(configs, ranks, paths) with the paths of ``group`` planned again, one cube after the other in that order,
    around everyone else's (the later ones of the group also around the earlier ones), or None where one finds
    none within its limit; ``paths``: those of ``configs``; ``budget``: [moves the searches may still try]."""
    n = len(configs[0])
    res = _Reserved(ranked=True)
    mine = set(group)
    for k in range(n):
        if k not in mine:
            res.add(k, paths[k], [r[k] for r in ranks])
    found = {}
    for k, limit in zip(group, limits):
        path = _search(graph, res, k, paths[k][0], limit, turn_limit, budget, follow)
        if work is not None:
            work.add(res.ops / 4)
            res.ops = 0
        if path is None:
            return None
        slots = [_slot(graph, res, path[min(t, len(path) - 1)], path[min(t + 1, len(path) - 1)], t)
                 for t in range(max(res.horizon, len(path)))]
        res.add(k, path, slots)
        found[k] = path
    if work is not None:
        work.add(res.ops / 4)
    steps = max(len(configs), *(len(p) for p in found.values()))
    out = [list(configs[min(t, len(configs) - 1)]) for t in range(steps)]
    order = [list(ranks[min(t, len(ranks) - 1)]) if ranks else [0.0] * n for t in range(steps - 1)]
    for k, path in found.items():
        for t in range(steps):
            out[t][k] = path[min(t, len(path) - 1)]
        for t in range(steps - 1):
            order[t][k] = res.rank(k, t)
    return out, order, [_trim(found[k]) if k in found else path for k, path in enumerate(paths)]


def _finish(configs: list[list[int]], ranks: list[list[float]], plan: Plan) -> Plan:
    """The plan of ``configs`` without steps where nobody moves, every step's ranks as 0..n-1."""
    keep = [0] + [t + 1 for t in range(len(configs) - 1) if configs[t + 1] != configs[t]]
    whole = []
    for t in keep[1:]:
        order = sorted(range(len(ranks[t - 1])), key=lambda k: ranks[t - 1][k])
        rank = [0] * len(order)
        for r, k in enumerate(order):
            rank[k] = r
        whole.append(rank)
    return Plan(configs=[tuple(configs[t]) for t in keep], ranks=whole, complete=plan.complete,
                expanded=plan.expanded)


def shorten(graph: CoordinationGraph, plan: Plan, limit: int, turn_limit: float | None = None,
            budget: int = 60000, follow: float = 0.0, stop: Callable[[], bool] = never, work=None) -> Plan:
    """The plan with each cube's path planned again, one cube at a time, around everyone else's (a neighbourhood
    of one in large neighbourhood search, Li et al., IJCAI 2021): kept where the cube then arrives sooner, or as
    soon with fewer moves. A swarm search leaves cubes pushed far out of the way and back when nobody needed that
    much; every other cube's path stays as it was, so the plan stays valid. In each step the cube moves after
    the cubes whose space it enters and before those entering space it leaves (``_slot``), so each step keeps an
    order of moves. The searches try at most ``budget`` moves in all (cubes furthest beyond their shortest route
    first); ``follow`` as in :func:`improve`, for the searches only; ``stop`` and ``work`` as there."""
    left = [budget]
    configs = [list(c) for c in plan.configs]
    ranks: list[list[float]] = [[float(r) for r in rank] for rank in plan.ranks]
    n = len(configs[0])
    paths = _paths(configs)
    excess = [_moves(paths[k]) - graph.route(k, configs[0][k]) / graph.lattice.spacing for k in range(n)]
    for i in sorted(range(n), key=lambda k: -excess[k]):
        if left[0] <= 0 or stop():
            break
        old = paths[i]
        if len(old) <= 2 or old[-1] != graph.target[i]:
            continue
        made = _replan(graph, configs, ranks, paths, [i], [min(limit, len(old) - 1)], turn_limit, left, follow, work)
        if made is None:
            continue
        new = made[2][i]
        if (len(new), _moves(new)) < (len(old), _moves(old)):
            configs, ranks, paths = made
    return _finish(configs, ranks, plan)


def improve(graph: CoordinationGraph, plan: Plan, rng: np.random.Generator, rounds: int, size: int, limit: int,
            turn_limit: float | None = None, budget: int = 20000, total: int | None = None,
            follow: float = 0.0, stop: Callable[[], bool] = never, work=None) -> Plan:
    """Large neighbourhood search (Li et al., IJCAI 2021) over a plan: ``rounds`` times, the paths of ``size``
    cubes are planned again one after the other in a random order around everyone else's; the new paths are
    kept where the cubes then arrive sooner in all (sum of their arrival steps; then fewer moves). A group is
    either random or a cube late against its shortest route with the cubes whose paths come nearest its own
    (the ones most likely in its way). Each search tries at most ``budget`` moves, all of them together at most
    ``total`` (None: no limit; the rounds stop when it is spent). Planning one cube at a time (:func:`shorten`)
    cannot undo two cubes blocking each other; a group can. ``follow``: steps each move into a vertex another cube
    leaves in the same step adds to the sum (and costs the searches): the plan a real swarm carries out sooner.
    ``stop``: asked before every group; once it says True the plan improved so far is returned. ``work``
    (host.Work): the moves tried are added to it."""
    configs = [list(c) for c in plan.configs]
    ranks: list[list[float]] = [[float(r) for r in rank] for rank in plan.ranks]
    n = len(configs[0])
    size = min(size, n)
    points = graph.points

    def cost(configs: list[list[int]], paths: list[list[int]]) -> tuple[float, int]:
        return (sum(len(p) for p in paths) + (follow * follows(graph, configs) if follow else 0),
                sum(_moves(p) for p in paths))

    paths = _paths(configs)
    best = cost(configs, paths)
    left = math.inf if total is None else total
    for _ in range(rounds):
        if left <= 0 or stop():
            break
        if rng.random() < 0.5:
            group = [int(k) for k in rng.choice(n, size, replace=False)]
        else:
            late = np.array([len(paths[k]) - graph.route(k, paths[k][0]) / graph.lattice.spacing
                             for k in range(n)])
            weight = np.maximum(late, 0.0) + 0.1
            first = int(rng.choice(n, p=weight / weight.sum()))
            mine = points[paths[first]]
            near = [float(np.hypot(*(points[paths[k]][:, None] - mine[None]).transpose(2, 0, 1)).min())
                    for k in range(n)]
            group = [first] + [int(k) for k in np.argsort(near) if k != first][:size - 1]
        rng.shuffle(group)
        given = min(budget, left)
        allowance = [given]
        made = _replan(graph, configs, ranks, paths, group, [limit] * len(group), turn_limit, allowance, follow, work)
        left -= given - max(allowance[0], 0)
        if made is None:
            continue
        score = cost(made[0], made[2])
        if score < best:
            best, (configs, ranks, paths) = score, made
    return _finish(configs, ranks, plan)
