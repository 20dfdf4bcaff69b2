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
    n = len(start)
    target = tuple(int(t) for t in graph.target)
    pibt = Pibt(graph, rng.random(n) + 0.5)
    pibt.keep_right = keep_right
    pibt.turn_limit = turn_limit
    tie = rng.random(n) * 1e-3
    step = max(graph.longest_edge, graph.lattice.spacing)

    def make(config, parent, rank) -> _Node:
        routes = [graph.route(i, x) for i, x in enumerate(config)]
        if parent is None:
            heading = [-1] * n
            priority = np.minimum(np.array(routes) / graph.lattice.spacing, 1e6) * 1e-3   # unreachable: large
        else:
            # a cube that stood still keeps its direction (ties), or has turned meanwhile when turns cost a step
            heading = [h if p == c and turn_limit is None else graph.came_from(p, c, h)
                       for p, c, h in zip(parent.config, config, parent.heading)]
            at = np.array([c == t for c, t in zip(config, target)])
            priority = np.where(at, parent.priority - np.floor(parent.priority), parent.priority + 1.0)
        order = sorted(range(n), key=lambda i: -(priority[i] + tie[i]))
        node = _Node(config, parent, rank, heading, priority, order, 0 if parent is None else parent.g + 1,
                     h=max(routes, default=0.0) / step)
        node.tree.append(_Constraint())
        return node

    def closeness(node: _Node) -> float:
        return sum(graph.route(i, x) for i, x in enumerate(node.config))

    def rewire(node: _Node, goal: _Node | None) -> None:
        """Shorter ways found through ``node``: pass them on (Dijkstra over the known steps)."""
        queue = deque([node])
        while queue:
            a = queue.popleft()
            for b, rank in a.succ.values():
                if a.g + 1 < b.g:
                    b.g, b.parent, b.rank = a.g + 1, a, rank
                    queue.append(b)

    root = make(tuple(int(x) for x in start), None, [0] * n)
    explored = {root.config: root}
    stack = [root]
    best, best_close = root, closeness(root)
    expanded = 0
    goal_node = None
    limit = budget
    while stack and expanded < limit:
        if stop():
            break
        node = stack[-1]
        if goal_node is not None and node.g + node.h >= goal_node.g:
            stack.pop()                        # cannot lead to a shorter plan
            continue
        if node.config == target:
            if goal_node is None:
                goal_node = node
                limit = expanded + refine
            stack.pop()
            continue
        if not node.tree:
            stack.pop()
            continue
        low = node.tree.popleft()
        depth = len(low.who)
        if depth < n:
            i = node.order[depth]
            here = node.config[i]
            options = graph.neighbours(i, here) + [here]
            for x in (options[k] for k in rng.permutation(len(options))):
                node.tree.append(_Constraint(low.who + (i,), low.where + (x,)))
        expanded += 1
        before = pibt.ops
        out = pibt.step(list(node.config), node.order, list(zip(low.who, low.where)), node.heading)
        if work is not None:
            work.add(pibt.ops - before + n)
        if out is None:
            continue
        q_next, rank = out
        config = tuple(q_next)
        seen = explored.get(config)
        if seen is not None:
            node.succ[config] = (seen, list(rank))
            rewire(node, goal_node)
            stack.append(seen)
            continue
        child = make(config, node, list(rank))
        node.succ[config] = (child, list(rank))
        explored[config] = child
        stack.append(child)
        if goal_node is None:
            close = closeness(child)
            if close < best_close:
                best, best_close = child, close
        elif config == target:
            pass
    last = explored[target] if target in explored else best
    configs, ranks = [], []
    while last is not None:
        configs.append(last.config)
        ranks.append(last.rank)
        last = last.parent
    configs.reverse()
    ranks.reverse()
    # ranks[t] was stored with the configuration reached by step t-1 -> t: shift to step t -> t+1
    return Plan(configs=configs, ranks=ranks[1:], complete=target in explored, expanded=expanded)


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
