"""The dependency graph of `coordinated` and how it is carried out: no cycle of waits whatever the timing (property
tests: random delays, stalls, lost writes, late ticks), every cube arrives, cubes that follow their paths keep the
pair distance, gates hold a follower until its leader has gone on, and building the graph stays within its memory
bound however many items a crowd's plan has.

About 15 s: small plans (LaCAM on a 400-unit square) carried out by cubes that are points on their paths."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toio_navigator.planners.coordinated import dependencies, lacam
from toio_navigator.planners.coordinated.dependencies import Dependencies
from toio_navigator.planners.coordinated.execution import Execution, point_at
from toio_navigator.planners.coordinated.graph import CoordinationGraph
from toio_navigator.planners.coordinated.lattice import ROW, Lattice

R = 16.5
D = 2.0 * R + 13.0


def crowd_graph(seed: int, n: int) -> CoordinationGraph:
    """n cubes at random vertices of a 400-unit square (80 vertices at real-cube spacing), each going to another
    vertex; starts a few units off their vertices."""
    rng = np.random.default_rng(seed)
    lat = Lattice.build((40.0, 40.0, 460.0, 460.0), D / ROW, np.zeros((0, 5)), R + 7.0)
    picks = rng.choice(lat.size, 2 * n, replace=False)
    return CoordinationGraph(lat, lat.points[picks[:n]] + rng.uniform(-3, 3, (n, 2)), lat.points[picks[n:]], D)


def planned(seed: int, n: int, straight: bool = True) -> tuple[CoordinationGraph, Dependencies]:
    graph = crowd_graph(seed, n)
    start = [graph.V + graph.N + k for k in range(graph.N)]
    plan = lacam.without_detours(graph, lacam.search(graph, start, np.random.default_rng(seed), 3000))
    return graph, dependencies.build(graph, plan, straight)


def positions(ex: Execution, noise: np.ndarray | None = None) -> np.ndarray:
    dep = ex.deps
    pos = np.array([point_at(dep.paths[i], dep.arcs[i], ex.progress[i]) for i in range(dep.n)])
    return pos if noise is None else pos + noise


def carry_out(dep: Dependencies, rng: np.random.Generator, release: float, speed: float = 12.0,
              stall: float = 0.02, lost: float = 0.05, late: int = 1, onward: bool = False, ticks: int = 4000):
    """Carry ``dep`` out with point cubes on their paths: each tick each cube goes on by a random share of
    ``speed`` up to its limit, unless it stalls (for up to 40 ticks, probability ``stall`` per tick) or its write
    is lost (``lost``); limits are worked out every ``late`` ticks only (a late host: the cubes go on under the
    limits they had). Asserts at every look that each held cube waits for a cube with a smaller key. Returns
    (ticks it took, or None if not every cube arrived; the least distance between two cubes)."""
    ex = Execution(dep, release=release)
    n = dep.n
    stalled = np.zeros(n)
    limit = ex.progress.copy()
    least = np.inf
    for tick in range(ticks):
        pos = positions(ex)
        ex.track(pos, 1e-6)
        if tick % late == 0:
            ahead = rng.uniform(0.0, 10.0, n) if onward else None
            limit = ex.limits(pos, np.full(n, 100.0), ahead)
            key = ex.key()
            for i, bind in enumerate(ex.binding):
                if bind is not None and limit[i] <= ex.progress[i] + release:
                    assert key[bind[1]] < key[i], (i, bind, key[i], key[bind[1]])
            # the unfinished cube with the smallest key has room to go on
            left = np.nonzero(ex.progress < ex.ends - max(release, 1e-6))[0]
            if left.size:
                first = left[np.argmin(key[left])]
                assert limit[first] > ex.progress[first] + min(release, 1.0) * 0.5 or \
                    limit[first] >= ex.ends[first] - 1e-6
        if np.all(ex.progress >= ex.ends - max(release, 1e-6)):
            return tick, least
        stalled = np.where(rng.random(n) < stall, rng.integers(1, 40, n), np.maximum(stalled - 1, 0))
        step = np.where((stalled > 0) | (rng.random(n) < lost), 0.0, rng.uniform(0.0, speed, n))
        ex.progress = np.minimum(ex.progress + step, np.maximum(limit, ex.progress))
        gap = np.hypot(*(pos[:, None] - pos[None]).transpose(2, 0, 1)) + np.eye(n) * 1e9
        least = min(least, float(gap.min()))
    return None, least


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(4, 18), release=st.sampled_from([0.0, 6.0]),
       late=st.integers(1, 4), stall=st.floats(0.0, 0.05), lost=st.floats(0.0, 0.3))
def test_whatever_the_delays_no_cube_ever_waits_for_one_with_a_larger_key_and_every_cube_arrives(
        seed, n, release, late, stall, lost):
    _graph, dep = planned(seed, n)
    took, least = carry_out(dep, np.random.default_rng(seed), release, stall=stall, lost=lost, late=late)
    assert took is not None, 'not every cube arrived'
    # cubes on their paths keep the pair distance, less what counts as arrived early and a sample's hair
    assert least >= D - release - 2.5


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(4, 16))
def test_cubes_counted_on_ahead_of_their_progress_still_never_wait_in_a_cycle(seed, n):
    _graph, dep = planned(seed, n)
    took, _least = carry_out(dep, np.random.default_rng(seed), 6.0, onward=True)
    assert took is not None


def test_the_dependency_graph_of_a_crowd_plan_has_no_defect_and_numbers_every_action_in_order():
    for seed in range(3):
        graph, dep = planned(seed, 24)
        assert dep.defects == 0 and dep.gates() > 0
        for i in range(dep.n):
            assert np.all(np.diff(dep.order[i]) > 0)               # a cube's actions in their order
            for k in range(1, len(dep.arcs[i])):
                for j, reach, _d in dep.moving[i][k] + dep.standing[i][k]:
                    l_act = int(np.searchsorted(dep.arcs[j], reach - 1e-6))
                    assert dep.order[j][l_act] < dep.order[i][k]     # it waits only for what comes before


def test_straightened_paths_skip_corners_yet_keep_every_conflict_in_order():
    for seed in range(3):
        graph = crowd_graph(seed, 20)
        start = [graph.V + graph.N + k for k in range(graph.N)]
        plan = lacam.without_detours(graph, lacam.search(graph, start, np.random.default_rng(seed), 3000))
        zigzag, straight = dependencies.build(graph, plan), dependencies.build(graph, plan, straight=True)
        assert straight.defects == 0
        assert sum(len(p) for p in straight.paths) < sum(len(p) for p in zigzag.paths)
        for a, b, arc_a, arc_b in zip(zigzag.paths, straight.paths, zigzag.arcs, straight.arcs):
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[-1], b[-1]) and arc_b[-1] <= arc_a[-1] + 1e-9


def test_a_plan_whose_dependency_graph_has_a_cycle_is_refused():
    # two cubes swapping two vertices in one step: each would wait for the other
    lat = Lattice.build((0.0, 0.0, 300.0, 100.0), 60.0, np.zeros((0, 5)), R)
    a, b = 0, 1
    graph = CoordinationGraph(lat, lat.points[[a, b]], lat.points[[b, a]], 50.0)
    plan = lacam.Plan(configs=[(a, b), (b, a)], ranks=[[0, 1]], complete=True, expanded=0)
    with pytest.raises(dependencies.CyclicPlan):
        dependencies.build(graph, plan)


def test_candidate_pairs_come_in_bounded_chunks_each_pair_once():
    rng = np.random.default_rng(0)
    # 3000 items piled on 20 places, as a dense crowd's long plan piles them on its vertices
    centres = rng.uniform(0.0, 200.0, (20, 2))[rng.integers(0, 20, 3000)]
    low, high = centres - 10.0, centres + 10.0
    seen = set()
    chunks = 0
    for p, q in dependencies.candidate_pairs(low, high, 30.0, chunk=20_000):
        chunks += 1
        assert len(p) <= 2 * 20_000             # a chunk is yielded once it holds the bound
        for x, y in zip(p.tolist(), q.tolist()):
            assert x < y and (x, y) not in seen
            seen.add((x, y))
    overlap = np.all((low[:, None] <= high[None]) & (high[:, None] >= low[None]), axis=2)
    expected = {(x, y) for x, y in zip(*np.nonzero(np.triu(overlap, 1)))}
    assert seen == expected and chunks > 10


def test_a_follower_may_not_close_in_on_its_leader_before_the_leader_has_gone_on():
    lat = Lattice.build((0.0, 0.0, 400.0, 100.0), 40.0, np.zeros((0, 5)), R)
    row = lat.points[:, 1] == lat.points[:, 1].min()
    v = np.nonzero(row)[0][np.argsort(lat.points[row, 0])][:4]
    starts = lat.points[v[[0, 1]]]
    graph = CoordinationGraph(lat, starts, lat.points[v[[2, 3]]], 34.0)
    plan = lacam.search(graph, [graph.V + graph.N, graph.V + graph.N + 1], np.random.default_rng(0), 500)
    ex = Execution(dependencies.build(graph, plan))
    pos = np.array(starts)
    limit = ex.limits(pos, np.full(2, 200.0))
    follower = int(np.argmin(starts[:, 0]))
    leader = 1 - follower
    assert limit[leader] == pytest.approx(ex.ends[leader])
    gap = starts[leader, 0] - starts[follower, 0] - limit[follower]
    assert gap < 34.0 + 2.5 and limit[follower] < ex.ends[follower]
    assert ex.key()[follower] > ex.key()[leader] and ex.waits() == {follower: [leader]}
    onward = np.zeros(2)
    onward[leader] = 10.0                  # counted on to go on by 10 u: the follower may follow 10 u closer
    assert ex.limits(pos, np.full(2, 200.0), onward)[follower] == pytest.approx(limit[follower] + 10.0, abs=2.0)
    ex.progress[leader] = ex.ends[leader]
    pos[leader] = graph.points[graph.V + leader]
    assert ex.limits(pos, np.full(2, 400.0))[follower] == pytest.approx(ex.ends[follower])


def single(path) -> Dependencies:
    """A dependency graph of one cube on ``path`` (nobody to wait for)."""
    path = np.asarray(path, float)
    arcs = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(path, axis=0).T))])
    k = len(path)
    return Dependencies(vertices=[list(range(k))], paths=[path], arcs=[arcs], moving=[[[] for _ in range(k)]],
                        standing=[[[] for _ in range(k)]], order=[np.arange(k)], keys=[list(range(k))])


def test_a_cube_that_cuts_a_sharp_corner_onto_its_next_segment_counts_as_past_the_corner():
    ex = Execution(single([[0.0, 0.0], [100.0, 0.0], [50.0, 50.0]]), release=6.0, stray=5.0)
    for x in np.arange(0.0, 91.0, 10.0):
        ex.track(np.array([[x, 0.0]]), slack=4.0)
    assert ex.progress[0] == pytest.approx(90.0)
    ex.track(np.array([[93.0, 3.0]]), slack=4.0)      # 7.6 u from the corner, nearer the segment it came along
    assert ex.progress[0] < 100.0
    for _ in range(3):
        ex.track(np.array([[90.0, 8.0]]), slack=4.0)  # 1.4 u from the next segment, 12.8 u from the corner
    assert ex.progress[0] > 100.0 and ex.deviation[0] < 6.0


def test_a_cube_exactly_on_a_vertex_where_its_path_turns_back_does_not_skip_the_way_back():
    ex = Execution(single([[0.0, 0.0], [100.0, 0.0], [50.0, 0.0]]), release=0.0)
    ex.track(np.array([[0.0, 0.0]]), 1e-6)
    ex.progress[0] = 100.0
    ex.track(np.array([[100.0, 0.0]]), 1e-6)
    ex.track(np.array([[100.0, 0.0]]), 1e-6)
    assert ex.progress[0] == pytest.approx(100.0)
