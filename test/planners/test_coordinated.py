"""The `coordinated` planner as the navigator uses it: the dead-lock patterns it solves in closed loop where plain
ORCA does not, its determinism, a first plan that the cubes hold for and then set off on, plans made on a host
beside the ticks (a live navigator's thread, a trial's modelled clock), and what the controller does with it.

About 30 s in all: short closed-loop trials (the ble profile, and one run under the loaded one; fixed seeds).
The searches, the dependency graph and driving have their own files (test_coordinated_*.py)."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from toio_navigator.bench.runner import run_scenario
from toio_navigator.bench.scenarios import Scenario, load_scenarios
from toio_navigator.bench.trial.profiles import BLE, LOADED
from toio_navigator.bench.trial.runner import run_trial
from toio_navigator.control.controller import NavigatorSettings, SwarmController
from toio_navigator.planners import make_planner
from toio_navigator.planners.coordinated.geometry import point_segment_distance
from toio_navigator.planners.coordinated.host import InlineHost, ModelledHost, ThreadHost

R = 16.5
PACKAGED = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'scenarios.yaml'


def scenario(name, starts, goals, segments=(), time_limit=10.0) -> Scenario:
    return Scenario(name=name, category='deadlock', n_agents=len(starts), time_limit=time_limit,
                    starts=np.array(starts, float), goals=np.array(goals, float),
                    segments=np.array(segments, float).reshape(-1, 4))


GRID3 = np.array([[x, y] for y in (200.0, 250.0, 300.0) for x in (200.0, 250.0, 300.0)])

#: each a situation no local planner gets out of; mat units
PATTERNS = {
    # a corridor one cube wide (walls 60 apart) between two cubes that must swap through it
    'corridor_swap': scenario('corridor_swap', [[100, 250], [400, 250]], [[400, 250], [100, 250]],
                              [[180, 220, 320, 220], [180, 280, 320, 280]], time_limit=12.0),
    # a wall with a doorway one cube wide, two cubes on each side swapping sides
    'doorway': scenario('doorway', [[170, 225], [170, 275], [330, 225], [330, 275]],
                        [[330, 225], [330, 275], [170, 225], [170, 275]],
                        [[250, 100, 250, 220], [250, 280, 250, 400]], time_limit=24.0),
    # a cube inside a U whose closed end lies between it and its goal
    'u_trap': scenario('u_trap', [[260, 250]], [[420, 120]],
                       [[200, 180, 300, 180], [300, 180, 300, 320], [200, 320, 300, 320]], time_limit=10.0),
    # nine cubes packed 50 apart (17 units of gap), each going out through the centre to the opposite side
    'dense_crowd': scenario('dense_crowd', GRID3, 250.0 + 2.4 * (250.0 - GRID3), time_limit=22.0),
}


@pytest.mark.parametrize('name', sorted(PATTERNS))
def test_each_dead_lock_pattern_is_solved_in_closed_loop_by_coordinated_and_not_by_plain_orca(name):
    sc = PATTERNS[name]
    ours = run_trial(sc, 'coordinated', BLE, seed=0).record
    assert ours['success_collision_free'], (name, ours['failure'])
    orca = run_trial(sc, 'orca', BLE, seed=0).record
    assert not orca['success_collision_free'], name


def test_a_coordinated_trial_is_the_same_for_the_same_seed():
    sc = PATTERNS['corridor_swap']
    first = run_trial(sc, 'coordinated', BLE, seed=2)
    again = run_trial(sc, 'coordinated', BLE, seed=2)
    assert json.dumps(first.record, sort_keys=True) == json.dumps(again.record, sort_keys=True)
    assert np.array_equal(first.trajectory, again.trajectory)
    assert first.record['success_collision_free']


@pytest.mark.parametrize('name', sorted(PATTERNS))
def test_each_pattern_is_solved_on_ideal_discs_too(name):
    metrics = run_scenario(PATTERNS[name], make_planner('coordinated')).metrics
    assert metrics['success_collision_free'], name
    assert metrics['min_clearance'] is None or metrics['min_clearance'] > 0.0


def test_a_single_cube_drives_straight_to_its_goal_instead_of_along_the_lattice():
    sc = scenario('single', [[100, 250]], [[400, 250]], time_limit=10.0)
    record = run_trial(sc, 'coordinated', BLE, seed=0).record
    # 300 u at 165 u/s is 1.8 s; along the lattice's zigzag it took 5.3 s (a stop at every corner)
    assert record['success_collision_free'] and record['makespan'] < 2.8, record['makespan']
    assert record['path_length_ratio_max'] < 1.05


def test_a_busy_navigator_host_makes_the_doorway_slower_not_stuck():
    # the loaded profile ticks late (8 Hz instead of 20 on average) and stalls; when the planner counted ticks as
    # periods, it believed its commands ran 2.5 times longer than they did, crawled, and 7 of 8 cubes arrived
    sc = next(s for s in load_scenarios(PACKAGED) if s.name == 'obst_doorway_4v4')
    record = run_trial(sc, 'coordinated', LOADED, seed=0).record
    assert record['success_collision_free'], record['failure']


def test_the_controller_drives_coordinated_cubes_and_leaves_their_dead_locks_to_it():
    settings = NavigatorSettings(cubes=('a', 'b'), planner='coordinated', stuck_time_s=0.3,
                                 mat_rect=(45.0, 45.0, 455.0, 455.0))
    now = [0.0]
    controller = SwarmController(settings, clock=lambda: now[0])
    for cube, x in (('a', 150.0), ('b', 350.0)):
        controller.update_state(cube, x, 250.0, 0.0, True, 2, stamp_ns=0)
    assert controller.set_goal('a', 1, 350.0, 250.0, 0, 0.0, 0.0) == ''
    assert controller.set_goal('b', 1, 150.0, 250.0, 0, 0.0, 0.0) == ''
    for k in range(40):                      # the cubes stand still: no progress for 2 s
        now[0] = k * 0.05
        for cube, x in (('a', 150.0), ('b', 350.0)):
            controller.update_state(cube, x, 250.0, 0.0, True, 2, stamp_ns=int(now[0] * 1e9))
        commands = controller.step(now[0])
    assert all(c.motor is not None for c in commands)
    assert any(c.motor[:2] != (0, 0) for c in commands)     # at least one of them is sent on its way
    assert controller.sidesteps.sum() == 0   # its own coordination, not the controller's side-steps
    assert controller.planner.plans >= 1


#: two cubes side by side, each driving 200 u straight ahead: (starts, goals)
SIDE_BY_SIDE = ({'a': (150.0, 150.0), 'b': (150.0, 350.0)}, {'a': (350.0, 150.0), 'b': (350.0, 350.0)})


def _controller(starts: dict[str, tuple[float, float]], goals: dict[str, tuple[float, float]],
                realtime: bool = False) -> tuple[SwarmController, list[float]]:
    """A coordinated controller on its own clock (``now[0]``), each cube seen at its start and given its goal."""
    settings = NavigatorSettings(cubes=tuple(starts), planner='coordinated', mat_rect=(45.0, 45.0, 455.0, 455.0))
    now = [0.0]
    controller = SwarmController(settings, clock=lambda: now[0], realtime=realtime)
    for cube, (x, y) in starts.items():
        controller.update_state(cube, x, y, 0.0, True, 2, stamp_ns=0)
    for cube, (x, y) in goals.items():
        assert controller.set_goal(cube, 1, x, y, 0, 0.0, 0.0) == ''
    return controller, now


def _tick(controller: SwarmController, now: list[float], where: dict[str, tuple[float, float]]):
    now[0] += 0.05
    for cube, (x, y) in where.items():
        controller.update_state(cube, x, y, 0.0, True, 2, stamp_ns=int(now[0] * 1e9))
    return {c.cube: c for c in controller.step(now[0])}


def test_a_cube_that_has_arrived_is_reported_reached():
    # the live demo with `coordinated`: every cube stood on its goal and none was ever reported there (its
    # waypoint, pushed out of CubeHandle's reach to steer by, stayed 14 u off)
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal)
    while not any(c.motor is not None and c.motor[:2] != (0, 0) for c in _tick(controller, now, at_start).values()):
        assert now[0] < 5.0, 'nobody was sent on its way'
    for _ in range(3):
        commands = _tick(controller, now, at_goal)
    assert all(commands[c].reached for c in ('a', 'b'))
    assert all(commands[c].motor[:2] == (0, 0) for c in ('a', 'b'))


def test_a_cube_that_ran_past_the_end_of_its_path_creeps_back_onto_its_goal():
    # a 64-cube swap under ble: a cube whose progress had reached the end of its path stood 10.2 u off its goal,
    # beyond the goal tolerance (10), for good: it counted as arrived, and the goal was never reported reached
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal)
    controller.settings.tolerance = 10.0
    while controller.planner.execution is None:
        _tick(controller, now, at_start)
    past = {'a': (at_goal['a'][0] + 12.0, at_goal['a'][1]), 'b': at_goal['b']}
    for _ in range(3):
        commands = _tick(controller, now, past)
    assert controller.planner.driver.why[list(controller.planner.agents).index(0)] == 'settle'
    assert not commands['a'].reached and commands['a'].motor[:2] != (0, 0)
    assert commands['b'].reached and commands['b'].motor[:2] == (0, 0)
    for _ in range(3):
        commands = _tick(controller, now, at_goal)
    assert commands['a'].reached and commands['a'].motor[:2] == (0, 0)


def test_a_cube_out_for_a_moment_is_held_in_the_plan_while_the_others_drive_on():
    # a live 8-cube swap beside a loaded test run never arrived: a cube's states stopped for 0.1-0.4 s every few
    # seconds, and each time everyone stopped and planned again, twice (out, and back)
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal)
    planner = controller.planner
    while planner.execution is None:
        _tick(controller, now, at_start)
    plan = planner.execution
    for _ in range(15):                             # 0.75 s without a state of b: stale after 0.5 s
        commands = _tick(controller, now, {'a': at_start['a']})
    assert not controller.live()[1]
    assert commands['a'].motor[:2] != (0, 0) and commands['b'].motor[:2] == (0, 0)
    assert planner.execution is plan and planner.reasons == []
    _tick(controller, now, at_start)                # back
    assert controller.live()[1] and ('goals or cubes changed' not in [why for _t, why in planner.reasons])


def test_a_live_navigator_plans_in_the_background_and_holds_the_cubes_meanwhile():
    # a plan made within the tick kept the navigator node from reading states for seconds: the cubes went stale,
    # which changed what to plan for, and it planned again, for ever (the live demo: no cube reached its goal)
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal, realtime=True)
    planner = controller.planner
    assert planner.plan_in_background
    commands = _tick(controller, now, at_start)
    assert isinstance(planner.host, ThreadHost) and planner.status == 'planning'
    assert all(c.motor[:2] == (0, 0) for c in commands.values())
    # a new goal while it plans: that plan is dropped, and one for the new goals is made
    assert controller.set_goal('b', 2, 350.0, 300.0, 0, 0.0, 0.0) == ''
    started = time.monotonic()
    while planner.execution is None:
        assert time.monotonic() - started < 60.0, 'no plan'
        time.sleep(0.01)
        commands = _tick(controller, now, at_start)
    assert planner.plans == 1
    ends = {int(planner.agents[k]): planner.execution.deps.paths[k][-1] for k in range(2)}
    assert ends[1] == pytest.approx((350.0, 300.0))
    for _ in range(5):
        commands = _tick(controller, now, at_start)
    assert any(c.motor[:2] != (0, 0) for c in commands.values())
    # trials, benchmarks and replays plan on another host: the same plan at the same tick every time
    assert not make_planner('coordinated').plan_in_background


def test_a_plan_for_goals_given_up_meanwhile_is_stopped_and_the_new_goals_planned_at_once():
    # goals sent one cube after another (a user's script, a launch file) each change what to plan for; an outdated
    # plan must not run to its end before the next one begins
    ring = [(250.0 + 150.0 * math.cos(a), 250.0 + 150.0 * math.sin(a)) for a in np.arange(16) * math.pi / 8]
    starts = {f'c{k}': xy for k, xy in enumerate(ring)}
    controller, now = _controller(starts, {f'c{k}': ring[(k + 8) % 16] for k in range(16)}, realtime=True)
    planner = controller.planner
    _tick(controller, now, starts)
    host = planner.host
    swap = host._stop
    assert swap is not None and planner.status == 'planning'
    moved = {cube: (x, y + 10.0) for cube, (x, y) in starts.items()}
    for cube, (x, y) in moved.items():
        assert controller.set_goal(cube, 2, x, y, 0, 0.0, 0.0) == ''
    _tick(controller, now, starts)
    assert swap.is_set(), 'the plan for the swap was not told to stop'
    started = time.monotonic()
    while planner.execution is None:
        assert time.monotonic() - started < 60.0, 'no plan'
        time.sleep(0.01)
        _tick(controller, now, starts)
    ends = {int(planner.agents[k]): planner.execution.deps.paths[k][-1] for k in range(16)}
    assert all(ends[k] == pytest.approx(moved[f'c{k}']) for k in range(16))


def test_a_trial_charging_compute_holds_the_cubes_until_the_modelled_time_of_the_first_plan():
    # a trial's host releases a plan when the modelled cost of its work has passed on the simulated clock: the
    # cubes stand until then, and the same seed gives the same record whatever the machine
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal)
    planner = controller.planner
    planner.host = ModelledHost(clock=lambda: now[0], cost=lambda work: 1e-5 * work)
    while True:
        commands = _tick(controller, now, at_start)
        if planner.execution is not None:
            break
        assert all(c.motor[:2] == (0, 0) for c in commands.values()) and now[0] < 10.0
    released = now[0]
    charged = planner.host.compute_s
    assert charged > 0.1 and charged <= released <= charged + 0.05 + 0.05 + 1e-9   # submitted at the first tick
    free, free_now = _controller(at_start, at_goal)
    free.planner.host = InlineHost()
    _tick(free, free_now, at_start)
    assert free.planner.execution is not None         # no compute charged: the plan is there at the first tick


@pytest.mark.parametrize('realtime', [True, False])
def test_only_a_live_navigator_limits_how_long_its_plans_improve(realtime):
    # trials, benchmarks and replays plan within the tick and must give the same plan every time: no clock in it
    controller, now = _controller(*SIDE_BY_SIDE, realtime=realtime)
    given = []
    step = controller.planner.step
    controller.planner.step = lambda state, dt: given.append(state.plan_time) or step(state, dt)
    _tick(controller, now, SIDE_BY_SIDE[0])
    controller.settings.plan_time_s = 3.0                 # a run-time change: the next plan takes it
    _tick(controller, now, SIDE_BY_SIDE[0])
    assert given == ([NavigatorSettings().plan_time_s, 3.0] if realtime else [0.0, 0.0])


def test_a_cube_held_by_a_late_one_keeps_waiting_the_order_of_the_plan_is_kept():
    # two cubes crossing; the one that goes first in the plan is late (it never moves). The other comes up to the
    # pair distance before their crossing and waits there, however far the late one still is from it
    where = {'a': (120.0, 250.0), 'b': (250.0, 120.0)}
    controller, now = _controller(where, {'a': (380.0, 250.0), 'b': (250.0, 380.0)})
    planner = controller.planner
    while planner.execution is None:
        _tick(controller, now, where)
        assert now[0] < 5.0, 'no plan'
    dep = planner.execution.deps
    held = next(k for k in range(2) if any(dep.moving[k]) or any(dep.standing[k]))
    late = 1 - held
    assert all(j == late for per in (dep.moving, dep.standing) for gates in per[held] for j, *_rest in gates)
    s = np.arange(0.0, float(dep.arcs[held][-1]), 1.0)
    pts = np.column_stack([np.interp(s, dep.arcs[held], dep.paths[held][:, k]) for k in range(2)])
    way = dep.paths[late]
    gap = np.min([point_segment_distance(pts, a, b) for a, b in zip(way[:-1], way[1:])], axis=0)
    conflict = float(s[np.argmax(gap < planner.current.graph.D - 0.5)])
    name = 'ab'[int(planner.agents[held])]
    limits = []
    for _ in range(40):                 # 2 s: the held cube drives up to its limit, the late one stays at its start
        _tick(controller, now, where)
        limit = float(planner.last['limit'][held])
        limits.append(limit)
        where[name] = tuple(np.interp(limit, dep.arcs[held], dep.paths[held][:, k]) for k in range(2))
    assert planner.plans == 1
    assert conflict - 2.5 <= limits[-1] <= conflict + 0.5 and max(limits) == limits[-1]
    assert planner.waits() == {int(planner.agents[held]): [int(planner.agents[late])]}


def test_a_late_tick_still_counts_the_command_sent_at_the_tick_before_as_under_way():
    # a host ticking later than a command's duration: the command model says the last command has run out (the
    # velocity planners see the cube standing), but over the radio it may reach the cube only now and run its
    # whole duration. `coordinated` reckoned with nothing under way there (a crowd under `loaded`)
    at_start, at_goal = SIDE_BY_SIDE
    controller, now = _controller(at_start, at_goal)
    seen = []
    step = controller.planner.step

    def spy(state, dt):
        seen.append(state)
        return step(state, dt)

    controller.planner.step = spy
    while not any(c.motor is not None and c.motor[:2] != (0, 0) for c in _tick(controller, now, at_start).values()):
        assert now[0] < 5.0, 'nobody was sent on its way'
    sent = {c: controller.last_cmd[i].copy() for i, c in enumerate(controller.settings.cubes)}
    now[0] += controller.settings.command_duration_ms / 1000.0     # the next tick comes after the command's end
    _tick(controller, now, at_start)
    state = seen[-1]
    moving = [i for i, c in enumerate(controller.settings.cubes) if sent[c].sum() != 0]
    assert moving and np.all(np.hypot(*state.vel[moving].T) == 0.0)        # run out in the command model
    expected = [abs(sent[controller.settings.cubes[i]].sum()) * 0.5 * controller.handle.k for i in moving]
    assert state.sent[moving] == pytest.approx(expected) and min(expected) > 0.0
