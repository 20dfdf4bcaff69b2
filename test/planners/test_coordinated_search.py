"""The searches of `coordinated`: the lattice they run on, LaCAM's plans (valid steps, a step of standing before
each turn for real cubes, no pointless detours), large-neighbourhood search that shortens a plan and keeps it valid,
the first-plan job (deterministic work, within its budget) and improvements that splice onto the plan under way
without touching what the cubes do before the commit step.

About 15 s: plans for at most 20 cubes."""
from __future__ import annotations

import numpy as np
import pytest

from toio_navigator.planners.coordinated import dependencies, lacam, prioritized, search
from toio_navigator.planners.coordinated.graph import AFTER, BEFORE, INVALID, CoordinationGraph
from toio_navigator.planners.coordinated.host import InlineHost, PlanJob, Work
from toio_navigator.planners.coordinated.lattice import ROW, Lattice
from toio_navigator.planners.coordinated.params import CoordinatedParams

R = 16.5


def test_the_lattice_keeps_every_vertex_a_pair_distance_from_every_edge_it_is_not_on():
    walls = np.array([[250.0, 60.0, 250.0, 200.0, 0.0], [250.0, 290.0, 250.0, 440.0, 0.0],
                      [40.0, 40.0, 460.0, 40.0, 10.0]])
    distance = 46.0
    for walls_here in (walls, walls[2:]):             # a wall with a doorway; a mat's edge alone (regular)
        lat = Lattice.build((45.0, 45.0, 455.0, 455.0), distance / ROW, walls_here, R + 4.0)
        a, k = np.nonzero(lat.neighbours >= 0)
        b = lat.neighbours[a, k]
        assert len(a) > 200
        for u, v in zip(a.tolist(), b.tolist()):
            p, q = lat.points[u], lat.points[v]
            others = np.delete(np.arange(lat.size), [u, v])
            t = np.clip((lat.points[others] - p) @ (q - p) / ((q - p) @ (q - p)), 0.0, 1.0)
            gap = np.hypot(*(lat.points[others] - (p + t[:, None] * (q - p))).T)
            assert gap.min() >= distance - 1e-3
    lat = Lattice.build((45.0, 45.0, 455.0, 455.0), distance / ROW, walls, R + 4.0)
    a, k = np.nonzero(lat.neighbours >= 0)
    b = lat.neighbours[a, k]
    crossing = (lat.points[a, 0] - 250.0) * (lat.points[b, 0] - 250.0) < 0   # the doorway (y 200..290) passable
    assert crossing.any() and np.all(np.abs(lat.points[a[crossing], 1] - 245.0) < 45.0)


def test_a_mat_with_only_its_edges_gets_a_regular_lattice_filling_the_free_rectangle():
    edges = np.array([[40.0, 40.0, 40.0, 470.0, 10.0], [470.0, 40.0, 470.0, 470.0, 10.0],
                      [40.0, 40.0, 470.0, 40.0, 10.0], [40.0, 470.0, 470.0, 470.0, 10.0]])
    lat = Lattice.build((45.0, 45.0, 465.0, 465.0), 46.0 / ROW, edges, R + 7.0)
    assert lat.free.all() and lat.build_work == 0
    assert lat.points.min() >= 50.0 + R + 7.0 - 1e-9 and lat.points.max() <= 460.0 - R - 7.0 + 1e-9
    inner = (lat.neighbours >= 0).sum(axis=1)
    assert inner.max() == 6 and (inner == 6).sum() > 20


def corridor_graph() -> tuple[CoordinationGraph, list[int]]:
    walls = np.array([[150.0, 225.0, 350.0, 225.0, 0.0], [150.0, 275.0, 350.0, 275.0, 0.0]])
    starts = np.array([[170.0, 250.0], [330.0, 250.0]])
    lat = Lattice.build((40.0, 120.0, 460.0, 380.0), 36.0 / ROW, walls, R + 1.0)
    graph = CoordinationGraph(lat, starts, starts[::-1].copy(), 36.0)
    return graph, [graph.V + graph.N + i for i in range(graph.N)]


def crowd_graph(seed: int, n: int = 20) -> tuple[CoordinationGraph, list[int]]:
    rng = np.random.default_rng(seed)
    lat = Lattice.build((40.0, 40.0, 460.0, 460.0), 46.0 / ROW, np.zeros((0, 5)), R + 7.0)
    picks = rng.choice(lat.size, 2 * n, replace=False)
    graph = CoordinationGraph(lat, lat.points[picks[:n]] + rng.uniform(-3, 3, (n, 2)), lat.points[picks[n:]], 46.0)
    return graph, [graph.V + graph.N + i for i in range(graph.N)]


def assert_valid_steps(graph: CoordinationGraph, plan: lacam.Plan) -> None:
    """No step puts two cubes where they may not be, and each step's ranks order the moves that must be."""
    for now, nxt, rank in zip(plan.configs, plan.configs[1:], plan.ranks):
        for i in range(graph.N):
            for k in range(graph.N):
                if i == k:
                    continue
                rel = graph.relation(now[i], nxt[i], now[k], nxt[k])
                assert rel != INVALID
                if rel == AFTER:
                    assert rank[i] > rank[k]
                if rel == BEFORE:
                    assert rank[i] < rank[k]


def turns_while_moving(graph: CoordinationGraph, plan: lacam.Plan) -> int:
    """Moves that turn (60 degrees or more) from the way the cube came in the step before."""
    pts, count = graph.points, 0
    for i in range(graph.N):
        seq = [config[i] for config in plan.configs]
        came = None
        for a, b in zip(seq, seq[1:]):
            going = pts[b] - pts[a]
            if a == b:
                came = None
            elif np.hypot(*going) > 1e-6:
                if came is not None:
                    count += float(came @ going) < 0.6 * float(np.hypot(*came) * np.hypot(*going))
                came = going
    return count


def arrivals(plan: lacam.Plan) -> list[int]:
    configs = plan.configs
    return [max((t + 1 for t in range(len(configs) - 1) if configs[t][i] != configs[t + 1][i]), default=0)
            for i in range(len(configs[0]))]


def test_a_swap_in_a_one_lane_corridor_gets_a_complete_plan_whose_steps_are_all_valid():
    graph, start = corridor_graph()
    plan = lacam.search(graph, start, np.random.default_rng(0), 3000)
    assert plan.complete and plan.configs[-1] == tuple(int(t) for t in graph.target)
    assert_valid_steps(graph, plan)
    assert dependencies.build(graph, plan).gates() > 0          # the two cubes do wait for each other


def scatter_graph() -> tuple[CoordinationGraph, list[int]]:
    """Twelve cubes to twelve goals, scattered at least the pair distance of real cubes apart, on their lattice."""
    distance, rng = 2.0 * R + 13.0, np.random.default_rng(0)
    points: list[np.ndarray] = []
    for p in rng.uniform(100.0, 400.0, (400, 2)):
        if len(points) < 24 and all(np.hypot(*(p - q)) >= distance for q in points):
            points.append(p)
    starts, goals = np.array(points[:12]), np.array(points[12:])
    lat = Lattice.build((40.0, 40.0, 460.0, 460.0), distance / ROW, np.zeros((0, 5)), R + 7.0)
    graph = CoordinationGraph(lat, starts, goals, distance)
    return graph, [graph.V + graph.N + i for i in range(graph.N)]


def test_a_plan_for_real_cubes_stands_a_step_before_each_turn():
    graph, start = scatter_graph()
    turning = lacam.search(graph, start, np.random.default_rng(0), 3000)
    standing = lacam.search(graph, start, np.random.default_rng(0), 3000, turn_limit=0.6)
    assert turning.complete and standing.complete
    assert turns_while_moving(graph, standing) == 0 and turns_while_moving(graph, turning) > 10
    assert_valid_steps(graph, standing)


def test_a_detour_round_a_triangle_of_the_lattice_is_cut_unless_someone_else_needs_the_corner():
    graph, _start = corridor_graph()
    adj = graph.lattice_adj
    u, x, w, a, b = next((u, x, w, a, b) for u in range(graph.V) for x in adj[u] for w in adj[x] if w in adj[u]
                         for a in adj[u] for b in adj[u] if len({x, w, a, b}) == 4 and b not in adj[a])
    far = max(range(graph.V), key=lambda y: float(np.hypot(*(graph.points[y] - graph.points[u]))))
    plan = lacam.Plan(configs=[(u, far), (x, far), (x, far), (w, far)], ranks=[[0, 0]] * 3, complete=True,
                      expanded=0)
    assert [c[0] for c in lacam.without_detours(graph, plan).configs] == [u, w]
    plan = lacam.Plan(configs=[(u, a), (x, u), (x, b), (w, b)], ranks=[[0, 1]] * 3, complete=True, expanded=0)
    assert [c[0] for c in lacam.without_detours(graph, plan).configs] == [u, x, x, w]


@pytest.mark.parametrize('seed', [0, 1])
def test_large_neighbourhood_search_shortens_a_plan_and_keeps_it_valid_and_the_same_for_the_same_seed(seed):
    graph, start = crowd_graph(seed)
    plan = lacam.without_detours(graph, lacam.search(graph, start, np.random.default_rng(0), 3000, turn_limit=0.6))
    short = lacam.without_detours(graph, prioritized.shorten(graph, plan, 300, turn_limit=0.6))
    assert all(s <= a for s, a in zip(arrivals(short), arrivals(plan)))
    assert sum(arrivals(short)) <= 0.7 * sum(arrivals(plan))
    better = prioritized.improve(graph, short, np.random.default_rng(0), 60, 3, 300, turn_limit=0.6)
    assert sum(arrivals(better)) < sum(arrivals(short))
    assert better.complete and better.configs[-1] == short.configs[-1]
    assert_valid_steps(graph, better)
    assert turns_while_moving(graph, better) == 0
    assert dependencies.build(graph, better, straight=True).defects == 0
    again = prioritized.improve(graph, short, np.random.default_rng(0), 60, 3, 300, turn_limit=0.6)
    assert again.configs == better.configs and again.ranks == better.ranks


def problem(seed: int, n: int = 16, closed: bool = True) -> search.Problem:
    graph, _start = crowd_graph(seed, n)
    return search.Problem(starts=graph.points[graph.V + graph.N:], goals=graph.points[graph.V:graph.V + graph.N],
                          radius=R, obstacles=np.zeros((0, 2)), obstacle_reach=np.zeros(0), walls=np.zeros((0, 5)),
                          area=(40.0, 40.0, 460.0, 460.0), closed=closed, speed=165.0, seed=seed)


def run_job(steps) -> list:
    host = InlineHost()
    host.submit(PlanJob(steps))
    return host.poll()


def test_a_first_plan_is_the_same_plan_with_the_same_work_every_time_and_keeps_within_its_budget():
    params = CoordinatedParams()
    first, again = (run_job(search.first_plan(problem(3), params)) for _ in range(2))
    assert len(first) == 1 and first[0].final and first[0].why == 'first'
    made = first[0].plan
    assert made.plan.complete and made.deps.defects == 0
    assert first[0].work == again[0].work and made.plan.configs == again[0].plan.plan.configs
    # the budget bounds what it spends once it has a complete plan (a search under way finishes its round)
    assert first[0].work < 3.0 * search.first_budget(16, params) + 500_000
    tight = run_job(search.first_plan(problem(3), CoordinatedParams(first_time_s=0.0)))[0]
    assert tight.plan.plan.complete and tight.work <= first[0].work
    # more time: the best plan shortened further: never a slower one by the estimate
    ample = run_job(search.first_plan(problem(3), CoordinatedParams(first_time_s=2.0)))[0]
    assert ample.work > first[0].work and ample.plan.estimate <= made.estimate


def test_a_first_plan_told_to_stop_keeps_the_best_it_has_and_says_why():
    steps = search.first_plan(problem(4), CoordinatedParams())
    work = Work(lambda w: 'budget_time' if w.count > 20_000 else None)
    made, why, final = next(steps(work))
    assert final and why == 'budget_time'
    assert made is not None and made.deps.n == 16


def distinct(points: np.ndarray) -> np.ndarray:
    """The points without repeats in a row (a start or goal on a lattice vertex: two vertices in one place)."""
    keep = np.r_[True, np.hypot(*np.diff(points, axis=0).T) > 1e-9]
    return points[keep]


def test_an_improvement_splices_onto_the_plan_under_way_and_keeps_every_path_up_to_the_commit_step():
    params = CoordinatedParams(improve_rounds=30)
    prob = problem(5, 14)
    base = run_job(search.first_plan(prob, CoordinatedParams(first_time_s=0.0)))[0].plan
    commit = 3
    updates = run_job(search.improvement(base, commit, prob, params, seed=1))
    assert updates[-1].final
    better = [u.plan for u in updates if u.plan is not None]
    assert better, 'nothing better found'
    for made in better:
        assert made.base is base
        # (private: the order improvements are adopted by) faster by the estimate of the unstraightened graph
        rank = search._rank(made.graph, made.plan, prob, params, Work())
        assert rank < search._rank(base.graph, base.plan, prob, params, Work())
        assert made.plan.configs[:commit + 1] == base.plan.configs[:commit + 1]
        for i in range(made.deps.n):
            upto = made.shared[i]
            old, new = base.deps, made.deps
            keep_old = old.arcs[i] <= upto + 1e-9
            keep_new = new.arcs[i] <= upto + 1e-9
            assert np.array_equal(distinct(old.paths[i][keep_old]), distinct(new.paths[i][keep_new]))
        assert made.deps.defects == 0
    # the same job again: the same plans with the same work
    again = run_job(search.improvement(base, commit, prob, params, seed=1))
    assert [u.work for u in again] == [u.work for u in updates]
