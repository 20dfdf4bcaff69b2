"""The metrics of docs/metrics.md on hand-made trajectories whose metric values are worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toio_navigator.bench import metrics as m
from toio_navigator.bench.metrics import MetricSetup, b0_kernel, compute_metrics
from toio_navigator.planners import common
from toio_navigator.planners.common import pairs_within


def traj_of(*agents):
    """(K+1, N, 2) from per-agent lists of (x, y)."""
    return np.stack([np.asarray(a, float) for a in agents], axis=1)


def setup(goals, **kw):
    base = dict(agent_radius=1.0, dt=0.5, goal_tolerance=0.1, contact_tolerance=0.1, time_limit=100.0)
    base.update(kw)
    return MetricSetup(goals=np.asarray(goals, float), **base)


def test_straight_run_goal_time_path_and_smoothness():
    # agent 0 walks 1 u per 0.5 s step from (0,0) to (3,0); agent 1 sits on its goal far away
    traj = traj_of([(0, 0), (1, 0), (2, 0), (3, 0)], [(0, 10)] * 4)
    r = compute_metrics(traj, setup([(3, 0), (0, 10)]), name='straight')
    assert r['name'] == 'straight' and r['n_agents'] == 2
    assert r['success'] is True and r['success_time'] == pytest.approx(1.5)
    assert r['success_collision_free'] is True
    assert r['fraction_arrived'] == 1.0
    assert r['makespan'] == pytest.approx(1.5)                      # arrival steps 3 and 0
    assert r['mean_time_to_goal'] == pytest.approx(0.75)
    assert r['min_clearance'] == pytest.approx(10.0 - 2.0)          # closest centres 10 apart at k = 0
    assert r['collisions'] == 0 and r['contact_pair_steps'] == 0
    assert r['min_obstacle_clearance'] is None and r['obstacle_collisions'] == 0
    # agent 1 starts on its goal: no ratio; agent 0 walked exactly the straight line
    assert r['path_length_ratio_mean'] == pytest.approx(1.0) and r['path_length_ratio_max'] == pytest.approx(1.0)
    # v = 2 u/s from rest: a(0) = 4, a(1) = a(2) = 0; j(1) = -8, j(2) = 0 (agent 1 contributes nothing)
    assert r['mean_abs_accel'] == pytest.approx(4.0 / 3.0)
    assert r['max_abs_accel'] == pytest.approx(4.0)
    assert r['mean_abs_jerk'] == pytest.approx(4.0)
    assert list(r) == list(m.REPORT_KEYS)


def test_contact_events_count_runs_of_consecutive_steps():
    # threshold 2r - delta = 1.9: distances 1.5, 1.8 (one event), 3.0, 1.0 (second event), 1.9 (not a contact)
    traj = traj_of([(0, 0)] * 5, [(1.5, 0), (1.8, 0), (3.0, 0), (1.0, 0), (1.9, 0)])
    r = compute_metrics(traj, setup([(0, 0), (1.9, 0)]))
    assert r['collisions'] == 2
    assert r['contact_pair_steps'] == 3
    assert r['min_clearance'] == pytest.approx(-1.0)
    assert r['success'] is True and r['success_collision_free'] is False


def test_pushed_off_goal_fails_although_everyone_arrived():
    # agent 0 arrives at k=1 and is gone again at k=2, when agent 1 arrives: never all at goal together
    traj = traj_of([(5, 0), (0, 0), (3, 0)], [(0, 9), (0, 7), (0, 5)])
    r = compute_metrics(traj, setup([(0, 0), (0, 5)]))
    assert r['success'] is False and r['success_time'] is None
    assert r['fraction_arrived'] == 1.0
    assert r['makespan'] == pytest.approx(1.0)        # arrival steps 1 and 2
    assert r['success_collision_free'] is False


def test_success_after_time_limit_does_not_count():
    traj = traj_of([(0, 0), (1, 0), (2, 0)])
    assert compute_metrics(traj, setup([(2, 0)], time_limit=0.9))['success'] is False
    assert compute_metrics(traj, setup([(2, 0)], time_limit=1.0))['success'] is True


def test_agent_that_never_arrives_counts_its_whole_path():
    traj = traj_of([(0, 0), (1, 0), (2, 0), (4, 0)], [(0, 20), (0, 21), (0, 22), (0, 23)])
    r = compute_metrics(traj, setup([(4, 0), (0, 40)]))
    assert r['fraction_arrived'] == 0.5
    assert r['makespan'] is None and r['mean_time_to_goal'] == pytest.approx(1.5)
    # ratios only over agents that arrived: agent 0 walked 4 for a straight line of 4
    assert r['path_length_ratio_max'] == pytest.approx(1.0)
    # agent 0 (arrives at k=3): v = 2, 2, 4 -> |a| = 4, 0, 4 for k = 0, 1, 2
    # agent 1 never arrives so all its steps count: v = 2, 2, 2 -> |a| = 4, 0, 0
    assert r['mean_abs_accel'] == pytest.approx(12.0 / 6.0)
    assert r['max_abs_accel'] == pytest.approx(4.0)


def test_obstacle_distances_events_and_clearance():
    # disc centre (0,0) radius 1 and a segment from (10,-1) to (10,1); contact when distance < r - delta = 0.9
    discs = np.array([[0.0, 0.0, 1.0]])
    segments = np.array([[10.0, -1.0, 10.0, 1.0]])
    # agent: 1.5 from the disc surface, then 0.5 (contact), then 0.8 from the segment's end point (10, 1)
    traj = traj_of([(0, 2.5), (0, 1.5), (10.0, 1.8)])
    r = compute_metrics(traj, setup([(10, 1.8)], discs=discs, segments=segments))
    assert r['obstacle_collisions'] == 2                   # disc at k=1, segment end at k=2: two entities
    assert r['min_obstacle_clearance'] == pytest.approx(0.5 - 1.0)
    assert r['success'] is True and r['success_collision_free'] is False


def test_segment_distance_uses_nearest_point_of_the_segment():
    segments = np.array([[0.0, 0.0, 4.0, 0.0]])
    traj = traj_of([(2.0, 3.0), (6.0, 0.0)])                # 3 from the middle, then 2 from the end point
    events, clearance = m.obstacle_contacts(traj, 1.0, 0.1, None, segments)
    assert events == 0 and clearance == pytest.approx(2.0 - 1.0)


def naive_events(traj, threshold):
    k_count, n = traj.shape[:2]
    events = steps = 0
    for i in range(n):
        for j in range(i + 1, n):
            before = False
            for k in range(k_count):
                now = np.linalg.norm(traj[k, i] - traj[k, j]) < threshold
                steps += now
                events += now and not before
                before = now
    return events, steps


def test_contacts_match_brute_force_across_chunks(monkeypatch):
    rng = np.random.default_rng(7)
    traj = np.cumsum(rng.normal(0.0, 1.0, (40, 12, 2)), axis=0) + rng.uniform(0, 8, (1, 12, 2))
    monkeypatch.setattr(m, '_POINTS_PER_CHUNK', 50)         # forces many chunks of a few frames each
    events, steps, clearance = m.agent_contacts(traj, 1.0, 0.1)
    assert (events, steps) == naive_events(traj, 1.9)
    brute = min(np.linalg.norm(traj[k, i] - traj[k, j]) for k in range(40) for i in range(12) for j in range(i))
    assert clearance == pytest.approx(brute - 2.0)
    assert events > 0


def test_pair_search_is_exact_for_tiny_cut_offs_on_large_coordinates():
    points = np.array([[0.0, 0.0], [1e-7, 0.0], [9000.0, 9000.0], [9000.0, 9000.0 + 5e-8]])
    q, p, _d = pairs_within(points, 1e-6)
    assert sorted(zip(q.tolist(), p.tolist())) == [(0, 1), (1, 0), (2, 3), (3, 2)]


def test_pair_search_gives_the_same_pairs_in_the_same_order_below_and_above_the_brute_force_size(monkeypatch):
    """Few points are compared all at once, many through the grid: the navigator's safety layer goes through the
    pairs one by one, so the order matters too (groups, a query in any order, points on cell borders)."""
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(300):
        n = int(rng.integers(2, common.BRUTE_MAX + 1))
        points = rng.uniform(0.0, float(rng.choice([40.0, 400.0])), (n, 2)).round(int(rng.choice([0, 2])))
        cutoff = float(rng.uniform(1.0, 120.0))
        group = rng.integers(0, 3, n) if rng.random() < 0.3 else None
        query = rng.permutation(rng.choice(n, int(rng.integers(1, n + 1)), replace=False)) if rng.random() < 0.3 \
            else None
        brute = pairs_within(points, cutoff, group, query)
        monkeypatch.setattr(common, 'BRUTE_MAX', 0)
        grid = pairs_within(points, cutoff, group, query)
        monkeypatch.undo()
        assert all(np.array_equal(a, b) for a, b in zip(brute, grid))
        found += len(brute[0])
    assert found > 3000            # not a comparison of empty answers


def test_min_clearance_found_even_when_agents_are_far_apart():
    traj = traj_of([(0, 0)] * 2, [(1000, 0)] * 2)
    assert m.agent_contacts(traj, 16.5, 0.5)[2] == pytest.approx(1000 - 33.0)


def test_cost_fields_and_ratio_against_b0():
    traj = traj_of([(0, 0), (1, 0)], [(5, 5), (5, 5)])
    r = compute_metrics(traj, setup([(1, 0), (5, 5)]), step_ms=np.array([1.0, 2.0, 6.0]), b0_ms=np.array([0.5]))
    assert r['ms_per_step_mean'] == pytest.approx(3.0)
    assert r['ms_per_step_median'] == pytest.approx(2.0)
    assert r['us_per_agent_step'] == pytest.approx(1000.0 * 3.0 / 2)
    assert r['b0_ms_per_step'] == pytest.approx(0.5)
    assert r['cost_ratio_vs_b0'] == pytest.approx(6.0)
    assert r['dt'] == 0.5 and r['time_limit'] == 100.0


def test_b0_kernel_matches_brute_force():
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 300, (30, 2))
    goal = rng.uniform(0, 300, (30, 2))
    v_pref, nearest, valid = b0_kernel(pos, goal, 165.0, 0.05, 16.5)
    assert np.allclose(np.linalg.norm(v_pref, axis=1), 165.0)        # all goals farther than v_max dt
    d = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    for i in range(30):
        assert set(nearest[i]) == set(np.argsort(d[i])[:10])
        assert np.array_equal(valid[i], d[i, nearest[i]] <= 165.0)


def test_bad_trajectory_shape_is_rejected():
    with pytest.raises(ValueError, match='shape'):
        compute_metrics(np.zeros((3, 2)), setup([(0, 0)]))


def test_json_has_no_nan_or_inf():
    r = compute_metrics(traj_of([(0, 0)]), setup([(5, 0)]))       # one agent, one frame: most things undefined
    for key, value in r.items():
        assert not (isinstance(value, float) and not math.isfinite(value)), key
    assert r['min_clearance'] is None and r['mean_abs_accel'] is None
