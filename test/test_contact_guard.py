"""The controller's contact guard: a cube never drives into another one, whatever its planner says."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from conftest import navigator_setting
from toio_navigator.bench.cli import DEFAULT_SCENARIOS
from toio_navigator.bench.scenarios import load_scenarios
from toio_navigator.bench.trial.profiles import LOADED
from toio_navigator.bench.trial.runner import run_trial
from toio_navigator.navigation.contact_guard import WHEEL_COAST_S, guard_caps
from toio_navigator.navigation.controller import NavigatorSettings, SwarmController
from toio_navigator.navigation.params import NavigatorParams
from toio_navigator.units import BODY_RADIUS, WHEEL_TRACK_UNITS
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT as K

R = BODY_RADIUS
TOUCH = 2 * R
TRACK = WHEEL_TRACK_UNITS
RUN = 0.15
GAP = 3.0
NEED = TOUCH + GAP


def caps(a_pose, b_pose, a_new=(50, 50), b_old=(0, 0), b_new=None, cap=50.0):
    """The cap of cube a (driven with wheels ``a_new`` this tick, nothing running) beside cube b."""
    pose = np.array([a_pose, b_pose], float)
    new = np.array([a_new, b_new or (0, 0)], float)
    old = np.array([(0, 0), b_old], float)
    out = guard_caps(pose, np.array([cap, cap]), old, np.array([0.0, 0.13]), new, np.array([True, b_new is not None]),
                     np.full(2, R), RUN, GAP, K, TRACK, 8.0)
    return float(out[0])


def test_a_cube_heading_into_a_near_one_only_turns():
    assert caps((100, 100, 0.0), (100 + NEED + 1, 100, 0.0)) == 0.0


def test_a_cube_already_touching_may_drive_away_but_not_deeper():
    assert caps((100, 100, math.pi), (100 + TOUCH - 2, 100, 0.0)) == 50.0
    assert caps((100, 100, 0.0), (100 + TOUCH - 2, 100, 0.0)) == 0.0


def test_cubes_passing_side_by_side_are_not_slowed():
    assert caps((100, 100, 0.0), (130, 100 + NEED + 2, 0.0)) == 50.0


def test_a_cube_closing_from_afar_slows_to_stop_before_touching_plus_gap():
    dist = 45.0
    cap = caps((100, 100, 0.0), (100 + dist, 100, 0.0))
    assert 8.0 <= cap < 50.0
    # at that cap its whole way until it stops (the command, then the wheels coasting) keeps the gap
    assert dist - cap * K * (RUN + WHEEL_COAST_S) >= NEED - 1e-6


def test_a_cube_coming_head_on_counts_with_the_others_running_command():
    alone = caps((100, 100, 0.0), (150, 100, math.pi))
    oncoming = caps((100, 100, 0.0), (150, 100, math.pi), b_old=(50, 50))
    assert alone == 50.0 and oncoming < alone


def test_two_cubes_driven_in_the_same_tick_share_the_room():
    dist = 40.0
    alone = caps((100, 100, 0.0), (100 + dist, 100, math.pi))
    both = caps((100, 100, 0.0), (100 + dist, 100, math.pi), b_new=(50, 50))
    assert 0.0 < both < alone < 50.0
    # both at that cap keep touching + gap apart
    assert dist - 2 * both * K * (RUN + WHEEL_COAST_S) >= NEED - 1e-6


def test_a_cube_turning_into_another_one_is_stopped_though_its_heading_misses_it():
    b = (140, 100 - 30, 0.0)             # ahead and to the side (mat y down: negative y is left)
    assert caps((100, 100, 0.0), b, a_new=(82.5, 82.5), cap=82.5) == 82.5      # straight on it passes
    assert caps((100, 100, 0.0), b, a_new=(50, 115), cap=82.5) < 82.5          # a hard left turn runs into it


def test_a_cap_below_the_dead_zone_is_zero():
    # just beyond need: a small allowed speed that the dead-zone shift would raise to 8 motor units
    assert caps((100, 100, 0.0), (100 + NEED + 2, 100, 0.0)) == 0.0


def run_pair(guard: bool) -> float:
    """Two cubes whose planner (HLAvoid, wherever it may lead) is told to drive straight through each other:
    goals swapped on one line, no avoidance (a zero margin). The smallest distance between them."""
    settings = NavigatorSettings(cubes=('a', 'b'), contact_guard=guard, stuck_time_s=0.0, command_duration_ms=150)
    blind = NavigatorParams(avoid=replace(NavigatorParams().avoid, margin=0.0))
    ctl = SwarmController(settings, params=blind)
    pose = {'a': [150.0, 250.0, 0.0], 'b': [350.0, 250.0, math.pi]}
    ctl.set_goal('a', 1, 350.0, 250.0, 0, 50.0, 0.0)
    ctl.set_goal('b', 1, 150.0, 250.0, 0, 50.0, 0.0)
    closest, t = math.inf, 0.0
    for _ in range(200):
        for c, (x, y, th) in pose.items():
            ctl.update_state(c, x, y, th, True, 2, stamp_ns=int(t * 1e9))
        for cmd in ctl.step(now=t):
            if cmd.motor:
                left, right, _ = cmd.motor
                x, y, th = pose[cmd.cube]
                v, w = 0.5 * (left + right) * K, (left - right) * K / ctl.handle.wheel_track
                pose[cmd.cube] = [x + v * 0.05 * math.cos(th), y + v * 0.05 * math.sin(th), th + w * 0.05]
        t += 0.05
        closest = min(closest, math.dist(pose['a'][:2], pose['b'][:2]))
    return closest


@pytest.mark.parametrize('guard', [True, False])
def test_the_controller_stops_two_cubes_told_to_drive_through_each_other(guard):
    closest = run_pair(guard)
    if guard:
        assert closest >= TOUCH
    else:
        assert closest < TOUCH        # what the guard prevents: without it they meet


# runs of the reference HLAvoid on a loaded host (toio-nav trial --profile loaded) that touched without the guard
TOUCHED = [('circle_swap_8', 0), ('random_mat_d05_s3', 0), ('random_mat_d05_s3', 1), ('random_mat_d05_s3', 2)]


@pytest.fixture(scope='module')
def scenarios():
    return {s.name: s for s in load_scenarios(DEFAULT_SCENARIOS)}


@pytest.mark.parametrize('name, seed', TOUCHED)
def test_the_shipped_guard_keeps_hlavoid_swaps_on_a_loaded_host_free_of_contacts(scenarios, name, seed):
    assert navigator_setting('contact_guard') is True        # what every bringup and the trial run
    guarded = run_trial(scenarios[name], 'hlavoid', LOADED, seed).record
    bare = run_trial(scenarios[name], 'hlavoid', LOADED, seed, {'contact_guard': False}).record
    assert bare['collisions'] > 0                            # the case is one where HLAvoid alone touches
    assert guarded['collisions'] == 0 and guarded['success'], guarded['failure']
