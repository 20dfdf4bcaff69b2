"""Local planners SFM, TTC, VO, ORCA and orca_kr: interface, solver correctness, behaviour on small scenarios."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toio_navigator.bench.runner import run_scenario
from toio_navigator.bench.scenarios import Scenario, load_scenarios
from toio_navigator.cli import main
from toio_navigator.planners import BEST_PLANNER, PLANNERS, make_planner
from toio_navigator.planners.common import k_nearest
from toio_navigator.planners.interface import SwarmState
from toio_navigator.planners.orca import OrcaKeepRightPlanner, OrcaPlanner, solve_velocity

OURS = ('sfm', 'ttc', 'vo', 'orca', 'orca_kr')
SCENARIOS = {s.name: s for s in load_scenarios(
    Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'scenarios.yaml')}


def swarm(pos, goal, vel=None, walls=None, active=None, radius=16.5, speed=165.0) -> SwarmState:
    pos = np.asarray(pos, float)
    n = len(pos)
    return SwarmState(pos=pos, vel=np.zeros((n, 2)) if vel is None else np.asarray(vel, float),
                      heading=np.zeros(n), radius=np.full(n, radius), goal=np.asarray(goal, float),
                      max_speed=np.full(n, speed), active=np.ones(n, bool) if active is None else active,
                      walls=np.zeros((0, 5)) if walls is None else np.asarray(walls, float))


def test_registry_names_and_unknown_planner():
    assert set(OURS) | {'hlavoid'} <= set(PLANNERS)
    assert BEST_PLANNER == 'orca_kr'
    with pytest.raises(ValueError, match='unknown planner .*known: .*orca'):
        make_planner('rvo3')


@pytest.mark.parametrize('name', OURS)
def test_every_planner_answers_for_the_whole_swarm_within_limits(name):
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 400, (12, 2))
    active = np.ones(12, bool)
    active[5] = False
    state = swarm(pos, rng.uniform(0, 400, (12, 2)), vel=rng.normal(0, 60, (12, 2)), active=active,
                  walls=[[0, 0, 400, 0, 0], [200, 200, 200, 200, 20]])
    planner = make_planner(name)
    planner.reset(12, seed=1)
    out = planner.step(state, 0.05)
    assert out.velocity.shape == (12, 2) and out.waypoint.shape == (12, 2)
    assert out.speed_limit.shape == (12,) and out.collision.shape == (12,)
    assert np.all(np.isfinite(out.velocity))
    assert np.all(np.hypot(*out.velocity.T) <= 165.0 + 1e-9)
    assert np.all(out.velocity[5] == 0.0)                               # inactive cubes do not move
    ahead = out.waypoint - pos
    cross = ahead[:, 0] * out.velocity[:, 1] - ahead[:, 1] * out.velocity[:, 0]
    assert np.allclose(cross, 0.0, atol=1e-6)                          # the waypoint lies along the velocity


@pytest.mark.parametrize('name', OURS)
def test_a_lone_cube_heads_for_its_goal(name):
    planner = make_planner(name)
    planner.reset(1)
    out = planner.step(swarm([[100.0, 100.0]], [[400.0, 500.0]]), 0.05)
    direction = out.velocity[0] / np.linalg.norm(out.velocity[0])
    assert np.allclose(direction, [0.6, 0.8], atol=0.02)


@pytest.mark.parametrize('name', OURS)
def test_overlapping_cubes_are_flagged_in_collision(name):
    planner = make_planner(name)
    planner.reset(3)
    out = planner.step(swarm([[0, 0], [20, 0], [300, 0]], [[0, 100], [20, 100], [300, 100]]), 0.05)
    assert out.collision.tolist() == [True, True, False]


def test_vo_sampling_is_reproducible_per_seed():
    # two cubes about to meet head-on: the goal velocity is unsafe, so a random sample must win
    state = swarm([[0, 0], [60, 3]], [[300, 0], [-300, 0]], vel=[[100, 0], [-100, 0]])
    answers = []
    for seed in (7, 7, 8):
        planner = make_planner('vo')
        planner.reset(2, seed=seed)
        answers.append(planner.step(state, 0.05).velocity)
    assert np.array_equal(answers[0], answers[1])
    assert not np.array_equal(answers[0], answers[2])


def test_lp_projects_the_preferred_velocity_onto_a_half_plane():
    # one constraint v_x <= 4 (normal (-1, 0) through (4, 0)); the closest point to (10, 3) is (4, 3)
    v = solve_velocity(np.array([[[-1.0, 0.0]]]), np.array([[[4.0, 0.0]]]), np.ones((1, 1), bool),
                       np.zeros((1, 1), bool), np.array([165.0]), np.array([[10.0, 3.0]]))
    assert np.allclose(v, [[4.0, 3.0]])


def test_lp_infeasible_falls_back_to_least_violation_and_keeps_obstacles_hard():
    normal = np.array([[[1.0, 0.0], [-1.0, 0.0]]] * 2)            # v_x >= 5 and v_x <= 3
    point = np.array([[[5.0, 0.0], [3.0, 0.0]]] * 2)
    hard = np.array([[False, False], [False, True]])                # second row: v_x <= 3 is an obstacle
    # (the hard constraint comes last on purpose: the solver must not depend on the order)
    v = solve_velocity(normal, point, np.ones((2, 2), bool), hard, np.array([165.0, 165.0]),
                       np.array([[4.0, 0.0], [4.0, 0.0]]))
    assert v[0, 0] == pytest.approx(4.0)                            # both violated by 1: the smallest maximum
    assert v[1, 0] == pytest.approx(3.0)                            # the obstacle half-plane holds


def test_lp_matches_brute_force_on_random_feasible_programs():
    rng = np.random.default_rng(11)
    rows, m = 25, 5
    angle = rng.uniform(0, 2 * np.pi, (rows, m))
    normal = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    point = -normal * rng.uniform(0, 60, (rows, m, 1))              # every half-plane contains the origin
    target = rng.uniform(-200, 200, (rows, 2))
    vmax = np.full(rows, 100.0)
    v = solve_velocity(normal, point, np.ones((rows, m), bool), np.zeros((rows, m), bool), vmax, target)
    grid = np.stack(np.meshgrid(np.linspace(-100, 100, 201), np.linspace(-100, 100, 201)), -1).reshape(-1, 2)
    for r in range(rows):
        ok = (np.einsum('gd,md->gm', grid, normal[r]) >= np.einsum('md,md->m', point[r], normal[r])).all(1)
        ok &= np.hypot(*grid.T) <= 100.0
        best = np.min(np.hypot(*(grid[ok] - target[r]).T))
        assert np.all(np.einsum('md,md->m', v[r] - point[r], normal[r]) >= -1e-6)
        assert np.hypot(*v[r]) <= 100.0 + 1e-6
        assert np.hypot(*(v[r] - target[r])) <= best + 1e-6        # no feasible grid point is closer


def test_safety_stop_never_lets_a_contact_deepen():
    # a convoy A -> B -> C: B would run into the parked C, so B stops; then A would run into B, so A stops too.
    # A pair that separates keeps moving even though it overlaps.
    planner = OrcaKeepRightPlanner()
    planner.reset(5)
    state = swarm([[0, 0], [40, 0], [80, 0], [300, 0], [320, 0]], [[500, 0]] * 5)
    wanted = np.array([[165.0, 0.0], [165.0, 0.0], [0.0, 0.0], [-100.0, 0.0], [100.0, 0.0]])
    nbr, _ = k_nearest(state.pos, 4, 400.0)
    safe = planner._safety_stop(state, wanted, nbr, 0.05)
    assert np.array_equal(safe[:3], np.zeros((3, 2)))
    assert np.array_equal(safe[3:], wanted[3:])
    after = state.pos + safe * 0.05
    gaps = [np.linalg.norm(after[i] - after[j]) for i, j in [(0, 1), (1, 2)]]
    assert min(gaps) >= 40.0 - 1e-9


def result(planner, name, max_steps=None):
    return run_scenario(SCENARIOS[name], make_planner(planner), max_steps=max_steps).metrics


@pytest.mark.parametrize('name', ['head_on_pair', 'circle_swap_8', 'corridor_swap_2v2_w80'])
def test_best_planner_solves_symmetric_swaps_without_contact(name):
    r = result(BEST_PLANNER, name)
    assert r['success_collision_free'], r
    assert r['min_clearance'] > 0.0


def test_plain_orca_freezes_in_the_perfectly_symmetric_swap():
    # the reason orca_kr exists: RVO2-style ORCA deadlocks in the exactly symmetric circle
    r = result('orca', 'circle_swap_4', max_steps=120)               # 6 s: twice the time it needs
    assert not r['success'] and r['fraction_arrived'] == 0.0
    assert r['collisions'] == 0


def test_orca_kr_parameters_are_plain_orca_plus_switches():
    plain, best = OrcaPlanner().params, OrcaKeepRightPlanner().params
    assert (plain.time_horizon, plain.neighbor_dist, plain.max_neighbors) == (2.0, 400.0, 10)
    assert not (plain.keep_right or plain.unstick or plain.yield_to_movers or plain.safety_stop)
    assert best.keep_right and best.unstick and best.yield_to_movers and best.safety_stop
    assert OrcaKeepRightPlanner(time_horizon=1.0).params.time_horizon == 1.0
    diff = make_planner('orca_kr_diff').params                      # the differential-drive variant
    assert diff.keep_right and (diff.radius_margin, diff.safety_gap) == (3.0, 3.0)


def test_orca_kr_blocked_by_a_wall_goes_round_its_nearer_end():
    # the goal is straight through a long wall whose top end is 20 u above the cube's line: turning right
    # (down the mat) would follow 400 u of wall, turning towards the nearer end gets round it
    wall_end = Scenario(name='wall_end', category='t', n_agents=1, time_limit=8.0,
                        starts=np.array([[150.0, 320.0]]), goals=np.array([[350.0, 320.0]]),
                        segments=np.array([[250.0, 300.0, 250.0, 700.0]]))
    r = run_scenario(wall_end, OrcaKeepRightPlanner()).metrics
    assert r['success_collision_free'] and r['success_time'] < 5.0
    assert not run_scenario(wall_end, OrcaKeepRightPlanner(unstick_wall_range=0.0)).metrics['success']


def test_bench_max_agents_keeps_only_the_small_scenarios_and_refuses_nonsense(tmp_path, capsys):
    out = tmp_path / 'small.json'
    assert main(['bench', '--planner', 'coordinated', '--max-agents', '2', '--no-progress', '--out', str(out)]) == 0
    names = [r['name'] for r in json.loads(out.read_text())['scenarios']]
    assert names == ['head_on_pair']
    assert main(['bench', '--planner', 'coordinated', '--max-agents', '0', '--no-progress']) == 2
    assert '--max-agents must be >= 1' in capsys.readouterr().err
