"""The searches of `coordinated` as jobs for a planning host (:mod:`host`): a first complete plan fast, then
improvements of the plan under way, each a splice that leaves what the cubes are doing untouched.

* :func:`first_plan`: the lattice and the coordination graph for the cubes' starts and goals, then LaCAM (a few
  seeds while the work allows; the first complete plan is the one to beat) and, for a handful of cubes whose plan
  is long, priority-based search; the best of them (:func:`_rank`), shortened, as a dependency graph.
* :func:`improvement`: large-neighbourhood search on the plan under way from a *commit step* on: the plan's
  configuration there is the start of the search, its steps before it stay as they are. Groups of cubes planned
  again around the others (Li et al., IJCAI 2021). Each better plan is a splice: the old steps up
  to the commit step, the new ones after; every cube's path keeps its keypoints up to there, so a cube whose
  progress has not passed them is where the new plan has it, and the gates on what it already did are the old
  ones (docs/planners.md, the invariant).

Every job counts its work (:class:`host.Work`): the same inputs give the same plans and the same work numbers on
every machine.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from toio_navigator.planners.coordinated import dependencies, lacam, prioritized
from toio_navigator.planners.coordinated.dependencies import CyclicPlan, Dependencies
from toio_navigator.planners.coordinated.graph import CoordinationGraph
from toio_navigator.planners.coordinated.host import BUDGET_TIME, DONE, FIRST, IMPROVED, Work
from toio_navigator.planners.coordinated.lattice import ROW, Lattice
from toio_navigator.planners.coordinated.params import CoordinatedParams, Internal

WORK_LATTICE = 2.0       # work units (about a microsecond here each) per free-space cell or vertex of a candidate
WORK_FIELDS = 0.02       # ... per relaxation of an edge in the route fields
#: a first plan that finds no complete plan stops after this many times its budget, with the best it has (the cubes
#: drive it and plan again at its end)
FIRST_CAP = 10.0
FIRST_FLOOR = 1e6        # work units it may always take for that (about a second)


@dataclass(frozen=True)
class Problem:
    """What a first plan is made for (a snapshot: the job may run beside the ticks)."""
    starts: np.ndarray             # (N, 2) the cubes to plan
    goals: np.ndarray              # (N, 2)
    radius: float                  # the largest of their radii
    obstacles: np.ndarray          # (M, 2) cubes that stand still (not planned)
    obstacle_reach: np.ndarray     # (M,) distance a planned cube's centre keeps from each
    walls: np.ndarray              # (W, 5)
    area: tuple[float, float, float, float]
    closed: bool                   # real cubes (latency > 0): wider margins, the real-cube cost model
    speed: float                   # ideal discs: their speed (the cost model's)
    seed: int


@dataclass
class Planned:
    """A plan ready to be carried out: the graph, the plan, its dependency graph and what the model estimates."""
    graph: CoordinationGraph
    plan: lacam.Plan
    deps: Dependencies
    estimate: float                # s the cost model estimates it takes
    lattice: Lattice
    shared: np.ndarray | None = None       # (N,) a splice: arc length up to which each path is the old one's
    base: 'Planned | None' = field(default=None, repr=False)   # the plan a splice goes on from


def spacing_of(problem: Problem, params: CoordinatedParams) -> tuple[float, float, float]:
    """(pair distance D, lattice spacing, wall clearance of a cube's centre)."""
    distance = 2.0 * problem.radius + (params.loop_margin if problem.closed else params.margin)
    clearance = problem.radius + (params.loop_wall_margin if problem.closed else params.wall_margin)
    return distance, distance / ROW, clearance


def lattice_for(problem: Problem, params: CoordinatedParams, work: Work | None = None) -> Lattice:
    """The lattice over the area (the bounds, or the cubes and goals with room around)."""
    _d, spacing, clearance = spacing_of(problem, params)
    lattice = Lattice.build(problem.area, spacing, problem.walls, clearance)
    if work is not None:
        work.add(WORK_LATTICE * (lattice.build_work + lattice.size))
    return lattice


def _estimate(dep: Dependencies, problem: Problem, params: CoordinatedParams) -> float:
    model = (Internal.estimate_speed, Internal.estimate_turn, Internal.estimate_wait) if problem.closed else (
        problem.speed, 0.0, 0.0)
    return dependencies.duration(dep, *model, problem.closed and params.backward)


def _planned(graph, plan, problem, params, lattice, work: Work, fixed=None) -> Planned | None:
    """The plan as a dependency graph with its estimate; None if its graph has a cycle."""
    try:
        dep = dependencies.build(graph, plan, params.straight, fixed)
    except CyclicPlan:
        return None
    work.add(dep.work)
    return Planned(graph, plan, dep, _estimate(dep, problem, params), lattice)


def _rank(graph, plan: lacam.Plan, problem: Problem, params: CoordinatedParams, work: Work) -> tuple:
    """How candidate plans are compared: complete first, then the lower estimate of the plan's dependency graph
    without straightening (within a few per cent of the straightened one's, at a sixth of its cost); None if its
    graph has a cycle."""
    try:
        dep = dependencies.build(graph, plan, False)
    except CyclicPlan:
        return None
    work.add(dep.work)
    return (not plan.complete, _estimate(dep, problem, params))


def first_budget(n: int, params: CoordinatedParams) -> float:
    """Work units a first plan for ``n`` cubes may take once it has a complete plan: ``first_time_s`` at 16
    cubes, growing a little slower than the swarm (a few cubes: a tenth of it at least)."""
    return params.first_time_s * 1e6 * max(n / 16.0, 0.1) ** 0.8


def first_plan(problem: Problem, params: CoordinatedParams, lattice: Lattice | None = None):
    """The job's steps (:data:`host.Steps`) for a first plan; ``lattice``: one already built for this problem's
    area, walls and spacing (None: build it). Within :func:`first_budget` once a complete plan is found: LaCAM
    with several seeds (for real cubes, plans that stand a step before each turn: a real cube turns on the spot;
    plain LaCAM where those find nothing), priority-based search for a few cubes whose plan is long, then the
    best plan (:func:`_rank`) shortened one cube at a time and by groups."""
    def steps(work: Work):
        lat = lattice if lattice is not None else lattice_for(problem, params, work)
        distance, _spacing, _clearance = spacing_of(problem, params)
        graph = CoordinationGraph(lat, problem.starts, problem.goals, distance, problem.obstacles,
                                  problem.obstacle_reach)
        work.add(WORK_FIELDS * lat.field_work + 100 * graph.N)
        begun = work.count
        limit = [begun + 2.0 * first_budget(graph.N, params)]     # seeds while twice the budget lasts ...
        cap = begun + max(FIRST_CAP * first_budget(graph.N, params), FIRST_FLOOR)   # ... without one complete
        found: list[tuple[tuple, int, lacam.Plan]] = []      # (rank, number, plan), the best first

        def enough() -> bool:
            return work.spent() or work.count > cap or (any(not r[0] for r, _k, _p in found) and work.count > limit[0])

        def consider(plan: lacam.Plan | None, tidy: bool = True) -> None:
            if plan is not None:
                plan = lacam.without_detours(graph, plan) if tidy else plan
                rank = _rank(graph, plan, problem, params, work)
                if rank is not None:
                    found.append((rank, len(found), plan))
                    found.sort(key=lambda f: f[:2])

        half = (begun + cap) / 2.0                                # (the tries stop halfway to the cap)
        _searches(graph, problem, params, work, lambda: enough() or work.count > half, consider, enough)
        limit[0] = work.count + first_budget(graph.N, params)     # ... then shortening the best one
        if found and not enough():
            _polish(graph, problem, params, work, enough, consider, found[0][2])
        made = None
        for _rank_of, _k, plan in found:    # the best whose straightened graph has no cycle (nearly always the first)
            made = _planned(graph, plan, problem, params, lat, work)
            if made is not None:
                break
        yield made, work.why or FIRST, True
    return steps


def _searches(graph, problem, params, work, enough, consider, last) -> None:
    """LaCAM tries while ``enough`` says no (for a few cubes, priority-based search after the first), then plain
    LaCAM where none was complete, while ``last`` says no."""
    start = [graph.V + graph.N + k for k in range(graph.N)]
    turn_limit = Internal.turn_step if problem.closed else None
    budget = Internal.try_budget if problem.closed else params.search_budget
    found = []
    for k in range(Internal.first_tries):
        # (the seed decides a plan's shape far more than shortening it after: as many as the budget allows)
        if k and enough():
            break
        rng = np.random.default_rng([problem.seed, k])
        plan = lacam.search(graph, start, rng, budget, keep_right=Internal.keep_right * (k % 2),
                            turn_limit=turn_limit, stop=enough, work=work)
        found.append(plan.complete)
        consider(plan)
        if k == 0 and graph.N <= Internal.pbs_agents:
            # a corridor with room around it: one cube takes the long way round, which LaCAM finds late
            plan = prioritized.priority_search(graph, start, Internal.pbs_limit, Internal.pbs_budget, work.spent,
                                               work)
            found.append(plan is not None)
            consider(plan)
    if not any(found):
        # plans that turn as they go are found far sooner in a dense crowd
        consider(lacam.search(graph, start, np.random.default_rng([problem.seed, 99]), params.search_budget,
                              stop=last, work=work))


def _polish(graph, problem, params, work, enough, consider, best: lacam.Plan) -> None:
    """The best plan shortened one cube at a time, then by groups, while the budget lasts."""
    turn_limit, follow = (Internal.turn_step, Internal.follow_cost) if problem.closed else (None, 0.0)
    if not best.complete:
        return
    current = lacam.without_detours(graph, prioritized.shorten(
        graph, best, Internal.pbs_limit, turn_limit, Internal.shorten_moves * graph.N, follow, enough, work))
    consider(current, tidy=False)
    rng = np.random.default_rng([problem.seed, 7])
    while not enough():
        before = current.configs
        current = lacam.without_detours(graph, prioritized.improve(
            graph, current, rng, Internal.group_batch, params.group_size, Internal.pbs_limit, turn_limit,
            Internal.group_budget, None, follow, enough, work))
        if current.configs == before:
            break                          # a batch of groups found nothing: the rest of the budget would not
        consider(current, tidy=False)


def commit_points(base: Planned, commit: int) -> tuple[list[list[int]], np.ndarray]:
    """(per cube, the keypoints of its path kept up to the plan's step ``commit``; per cube the arc length of the
    last of them): a splice at that step keeps each path up to there."""
    configs = base.plan.configs
    fixed, shared = [], np.zeros(len(configs[0]))
    for i in range(len(configs[0])):
        moves = sum(1 for t in range(commit) if configs[t + 1][i] != configs[t][i])
        keys = [k for k in base.deps.keys[i] if k <= moves]
        fixed.append(keys)
        shared[i] = float(base.deps.arcs[i][len(keys) - 1])
    return fixed, shared


def splice(plan: lacam.Plan, commit: int, tail: lacam.Plan) -> lacam.Plan:
    """``plan`` up to step ``commit``, then ``tail`` (which starts where ``plan`` is at that step)."""
    return lacam.Plan(configs=list(plan.configs[:commit]) + list(tail.configs),
                      ranks=list(plan.ranks[:commit]) + list(tail.ranks), complete=tail.complete,
                      expanded=plan.expanded + tail.expanded)


def improvement(base: Planned, commit: int, problem: Problem, params: CoordinatedParams, seed: int,
                budget: float = float('inf')):
    """The job's steps for better plans than ``base`` from its step ``commit`` on (each a splice there, yielded as
    found, the last one final; None when nothing better was found), within ``budget`` work units."""
    def steps(work: Work):
        limit = work.count + budget
        yield from _improve(base, commit, problem, params, seed, work, lambda: work.spent() or work.count > limit)
    return steps


def _improve(base: Planned, commit: int, problem: Problem, params: CoordinatedParams, seed: int, work: Work,
             stop) -> Iterator:
    graph = base.graph
    at = min(commit, len(base.plan.configs) - 1)
    tail = lacam.Plan(configs=list(base.plan.configs[at:]), ranks=list(base.plan.ranks[at:]),
                      complete=base.plan.complete, expanded=0)
    fixed, shared = commit_points(base, at)
    turn_limit, follow = (Internal.turn_step, Internal.follow_cost) if problem.closed else (None, 0.0)
    rng = np.random.default_rng([seed, at])
    before = _rank(graph, base.plan, problem, params, work)
    current = tail
    for _batch in range(params.improve_rounds // Internal.group_batch):
        if stop() or len(current.configs) < 2:
            break
        candidate = lacam.without_detours(graph, prioritized.improve(
            graph, current, rng, Internal.group_batch, params.group_size, Internal.pbs_limit, turn_limit,
            Internal.group_budget, None, follow, stop, work))
        if candidate.configs == current.configs:
            break                          # a batch of groups found nothing: the rest of the budget would not
        current = candidate
    if current is not tail:
        spliced = splice(base.plan, at, current)
        rank = _rank(graph, spliced, problem, params, work)
        if rank is not None and before is not None and rank < (before[0], before[1] - Internal.better_s):
            made = _planned(graph, spliced, problem, params, base.lattice, work, fixed)
            if made is not None:
                made.shared, made.base = shared, base
                yield made, IMPROVED, False
    yield None, BUDGET_TIME if work.why == BUDGET_TIME else DONE, True
