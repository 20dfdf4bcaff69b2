"""A complete search for the whole swarm's plan: LaCAM (Okumura, AAAI 2023) with PIBT as its successor generator.

The search walks configurations (one vertex per cube), depth first. From each configuration PIBT proposes the
next one; when the search comes back to a configuration, it asks PIBT again under one more constraint (cube c
must go to vertex x), so over time every successor is tried: the search finds a plan whenever one exists (given
enough budget), including the ones PIBT alone never finds (a swap in a one-lane corridor, where a pair must go
out, let the others through and come back). Priorities follow LaCAM: a cube's priority grows by one per
configuration it is not at its target and drops below one when it is, and PIBT decides in priority order.

The plan is the configurations from the start to the goal along the first path found, with each step's order
(:mod:`pibt`), which the execution layer turns into waits.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from toio_navigator.planners.coordinated.graph import FREE, CoordinationGraph
from toio_navigator.planners.coordinated.pibt import Pibt


@dataclass
class _Constraint:
    """Low-level node: the first ``len(who)`` cubes of the node's order are fixed to ``where``."""
    who: tuple[int, ...] = ()
    where: tuple[int, ...] = ()


@dataclass
class _Node:
    config: tuple[int, ...]
    parent: '_Node | None'
    rank: list[int]                       # order of the moves from the parent's configuration to this one
    heading: list[int]                    # per cube, the vertex it came from (-1: has not moved yet)
    priority: np.ndarray
    order: list[int]
    g: int                                # steps from the start along the best known path
    h: float                              # a lower bound of the steps still needed
    tree: deque = field(default_factory=deque)
    succ: dict = field(default_factory=dict)   # successor configuration -> (node, rank of that step)


def never() -> bool:
    """The ``stop`` of a search that nobody cuts short."""
    return False


@dataclass
class Plan:
    """configs[t][i]: cube i's vertex after t steps; ranks[t][i]: the order of cube i's move in step t -> t+1."""
    configs: list[tuple[int, ...]]
    ranks: list[list[int]]
    complete: bool                         # every cube ends on its target (False: the best configuration found)
    expanded: int


def search(graph: CoordinationGraph, start: list[int], rng: np.random.Generator, budget: int,
           refine: int = 0, keep_right: float = 0.0, turn_limit: float | None = None,
           stop: Callable[[], bool] = never, work=None) -> Plan:
    """A plan from ``start`` to every cube's target, trying at most ``budget`` successor configurations; when the
    budget runs out, the plan to the configuration closest to the targets (sum of routes) found so far. Once a
    plan is found, up to ``refine`` more successors are tried to shorten it (LaCAM*: every configuration keeps
    the shortest known way to it, and branches that cannot beat the plan are dropped). ``keep_right``: PIBT's
    preference for steps to the right of the way to the target (pibt.Pibt.keep_right). ``turn_limit``: PIBT
    proposes no move turning sharper than that (a cosine) from the way the cube came, unless it stood still the
    step before (pibt.Pibt.turn_limit: turning takes a real cube as long as a step; the search's own constraints
    may still ask for any move). ``stop``: asked before every successor; once it says True the search ends as if
    its budget had run out (a plan nobody waits for any more). ``work`` (host.Work): what the search does is added
    to it as it goes (PIBT's cubes looked at, and N per configuration made)."""
    return _Lacam(graph, start, rng, keep_right, turn_limit, work).run(budget, refine, stop)


class _Lacam:
    """The state of one search (:func:`search`): the configurations explored and the depth-first stack."""

    def __init__(self, graph: CoordinationGraph, start: list[int], rng: np.random.Generator, keep_right: float,
                 turn_limit: float | None, work) -> None:
        n = len(start)
        self.graph, self.rng, self.n, self.turn_limit, self.work = graph, rng, n, turn_limit, work
        self.target = tuple(int(t) for t in graph.target)
        self.pibt = Pibt(graph, rng.random(n) + 0.5)
        self.pibt.keep_right = keep_right
        self.pibt.turn_limit = turn_limit
        self.tie = rng.random(n) * 1e-3
        self.step_len = max(graph.longest_edge, graph.lattice.spacing)
        self.root = self._make(tuple(int(x) for x in start), None, [0] * n)
        self.explored = {self.root.config: self.root}

    def _make(self, config, parent, rank) -> _Node:
        graph, n = self.graph, self.n
        routes = [graph.route(i, x) for i, x in enumerate(config)]
        if parent is None:
            heading = [-1] * n
            priority = np.minimum(np.array(routes) / graph.lattice.spacing, 1e6) * 1e-3   # unreachable: large
        else:
            # a cube that stood still keeps its direction (ties), or has turned meanwhile when turns cost a step
            heading = [h if p == c and self.turn_limit is None else graph.came_from(p, c, h)
                       for p, c, h in zip(parent.config, config, parent.heading)]
            at = np.array([c == t for c, t in zip(config, self.target)])
            priority = np.where(at, parent.priority - np.floor(parent.priority), parent.priority + 1.0)
        order = sorted(range(n), key=lambda i: -(priority[i] + self.tie[i]))
        node = _Node(config, parent, rank, heading, priority, order, 0 if parent is None else parent.g + 1,
                     h=max(routes, default=0.0) / self.step_len)
        node.tree.append(_Constraint())
        return node

    def _closeness(self, node: _Node) -> float:
        return sum(self.graph.route(i, x) for i, x in enumerate(node.config))

    @staticmethod
    def _rewire(node: _Node) -> None:
        """Shorter ways found through ``node``: pass them on (Dijkstra over the known steps)."""
        queue = deque([node])
        while queue:
            a = queue.popleft()
            for b, rank in a.succ.values():
                if a.g + 1 < b.g:
                    b.g, b.parent, b.rank = a.g + 1, a, rank
                    queue.append(b)

    def _successor(self, node: _Node) -> tuple[int, ...] | None:
        """Ask PIBT for the next configuration from ``node`` under its next low-level constraint (adding that
        constraint's children first); None when PIBT cannot meet it."""
        low = node.tree.popleft()
        depth = len(low.who)
        if depth < self.n:
            i = node.order[depth]
            here = node.config[i]
            options = self.graph.neighbours(i, here) + [here]
            for x in (options[k] for k in self.rng.permutation(len(options))):
                node.tree.append(_Constraint(low.who + (i,), low.where + (x,)))
        before = self.pibt.ops
        out = self.pibt.step(list(node.config), node.order, list(zip(low.who, low.where)), node.heading)
        if self.work is not None:
            self.work.add(self.pibt.ops - before + self.n)
        if out is None:
            return None
        q_next, rank = out
        self._rank = list(rank)
        return tuple(q_next)

    def run(self, budget: int, refine: int, stop: Callable[[], bool]) -> Plan:
        stack = [self.root]
        best, best_close = self.root, self._closeness(self.root)
        expanded, goal_node, limit = 0, None, budget
        while stack and expanded < limit and not stop():
            node = stack[-1]
            if goal_node is not None and node.g + node.h >= goal_node.g:
                stack.pop()                        # cannot lead to a shorter plan
                continue
            if node.config == self.target:
                if goal_node is None:
                    goal_node, limit = node, expanded + refine
                stack.pop()
                continue
            if not node.tree:
                stack.pop()
                continue
            expanded += 1
            config = self._successor(node)
            if config is None:
                continue
            seen = self.explored.get(config)
            if seen is not None:
                node.succ[config] = (seen, self._rank)
                self._rewire(node)
                stack.append(seen)
                continue
            child = self._make(config, node, self._rank)
            node.succ[config] = (child, self._rank)
            self.explored[config] = child
            stack.append(child)
            if goal_node is None:
                close = self._closeness(child)
                if close < best_close:
                    best, best_close = child, close
        return self._plan(self.explored.get(self.target, best), expanded)

    def _plan(self, last: _Node | None, expanded: int) -> Plan:
        configs, ranks = [], []
        while last is not None:
            configs.append(last.config)
            ranks.append(last.rank)
            last = last.parent
        configs.reverse()
        ranks.reverse()
        # ranks[t] was stored with the configuration reached by step t-1 -> t: shift to step t -> t+1
        return Plan(configs=configs, ranks=ranks[1:], complete=self.target in self.explored, expanded=expanded)


def without_detours(graph: CoordinationGraph, plan: Plan) -> Plan:
    """The plan with every pointless detour removed: a cube that moves u -> x, maybe waits there, and then goes
    straight back to u or on to a neighbour w of u stays on u instead until it moves u -> w, where that meets
    nobody else's way in those steps (searches like LaCAM leave such dithering in; a real cube would turn twice
    for nothing, sharply at x)."""
    configs = [list(c) for c in plan.configs]
    n = len(configs[0]) if configs else 0
    changed = True
    while changed:
        changed = False
        for t in range(len(configs) - 2):
            for i in range(n):
                u, x = configs[t][i], configs[t + 1][i]
                if u == x:
                    continue
                e = t + 2                  # the step after which the cube has left x again
                while e < len(configs) - 1 and configs[e][i] == x:
                    e += 1
                w = configs[e][i]
                if w == x or (w != u and w not in graph.neighbours(i, u)):
                    continue
                if all(graph.relation(u, u, configs[s][k], configs[s + 1][k]) == FREE
                       for s in range(t, e - 1) for k in range(n) if k != i) and \
                        all(graph.relation(u, w, configs[e - 1][k], configs[e][k]) == FREE for k in range(n) if k != i):
                    for s in range(t + 1, e):
                        configs[s][i] = u
                    changed = True
    # drop steps in which nobody moves any more
    keep = [0] + [t + 1 for t in range(len(configs) - 1) if configs[t + 1] != configs[t]]
    ranks = [plan.ranks[t - 1] for t in keep[1:]]
    return Plan(configs=[tuple(configs[t]) for t in keep], ranks=ranks, complete=plan.complete,
                expanded=plan.expanded)
