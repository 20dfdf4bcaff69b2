"""SwarmController (control/controller.py): the wheels come from the core's reference-exact CubeHandle batch, the
tuned differences are named options, and a tick depends only on its stamps, states and goals (bag replay)."""
from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from toio_navigator.control.controller import SwarmController, stamp_seconds
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.control.wheels import Poses, WheelShaping, drive_wheels, saturate_keep_rotation
from toio_navigator.reference.cube_handle import CubeHandle
from toio_navigator.reference.handle_batch import wheels_batch
from toio_navigator.reference.params import CubeHandleParams, Fixes, NavigatorParams

T0 = 1_700_000_000_000_000_000          # an epoch stamp, ns: the node's ticks are on the ROS clock


def _controller(**kw) -> SwarmController:
    return SwarmController(NavigatorSettings(cubes=('cube1', 'cube2'), **kw), clock=lambda: math.nan)


def _poses(rng, n=64):
    x, y = rng.uniform(80, 420, n), rng.uniform(80, 420, n)
    th = rng.uniform(-math.pi, math.pi, n)
    return Poses(x, y, th), Poses(x + rng.normal(0, 3, n), y + rng.normal(0, 3, n), th + rng.normal(0, 0.1, n))


def _targets(rng, n=64):
    return np.column_stack([rng.uniform(60, 440, n), rng.uniform(60, 440, n)]), rng.uniform(10, 115, n)


def test_reference_options_give_the_scalar_cube_handle_wheels():
    rng = np.random.default_rng(3)
    hp = CubeHandleParams()
    seen, predicted = _poses(rng)
    target, spd = _targets(rng)
    left, right = drive_wheels(seen, predicted, target, spd, WheelShaping(hp, 250.0, 8.0, border_stop=False,
                                                                          saturation='reference'))
    for i in range(64):
        h = CubeHandle(hp)
        h.x, h.y, h.rad = seen.x[i], seen.y[i], seen.heading[i]
        h.xPred, h.yPred, h.radPred = predicted.x[i], predicted.y[i], predicted.heading[i]
        mv = h.move_to_target(target[i, 0], target[i, 1], max_spd=spd[i], rotate_time=250, tolerance=8)
        if mv.reached:
            assert left[i] == right[i] == 0.0
            continue
        sent = h.move(mv.translate, mv.rotate, border=False)      # dead zone and saturation, as the handle sends
        ul, ur = sent.translate + sent.rotate / 2, sent.translate - sent.rotate / 2
        assert (left[i], right[i]) == pytest.approx((ul, ur), abs=1e-9)


def test_a_cube_driving_backwards_gets_the_wheels_of_a_cube_facing_the_other_way_negated_and_swapped():
    rng = np.random.default_rng(4)
    hp = CubeHandleParams()
    seen, predicted = _poses(rng)
    target, spd = _targets(rng)
    shaping = WheelShaping(hp, 250.0, 8.0, border_stop=False)
    backward = rng.random(64) < 0.5
    left, right = drive_wheels(seen, predicted, target, spd, shaping, backward)
    flip = np.where(backward, math.pi, 0.0)
    mirror_l, mirror_r = drive_wheels(seen.turned(flip), predicted.turned(flip), target, spd, shaping)
    plain_l, plain_r = drive_wheels(seen, predicted, target, spd, shaping)
    assert np.array_equal(left[backward], -mirror_r[backward]) and np.array_equal(right[backward], -mirror_l[backward])
    assert np.array_equal(left[~backward], plain_l[~backward]) and np.array_equal(right[~backward], plain_r[~backward])
    # facing east, the target 100 u due west: straight back at full speed, no turn
    east = Poses(np.array([250.0]), np.array([250.0]), np.array([0.0]))
    left, right = drive_wheels(east, east, np.array([[150.0, 250.0]]), np.array([80.0]), shaping, np.array([True]))
    assert left[0] == right[0] == -80.0


def test_keep_rotation_saturation_keeps_the_turn_the_reference_loses():
    hp = CubeHandleParams()
    tr, rot = np.array([110.0]), np.array([40.0])          # left 130 > 115: must give up speed, not the turn
    ref_l, ref_r = wheels_batch(tr, rot, hp)
    left, right = saturate_keep_rotation(*wheels_batch(tr, rot, replace(hp, max_spd=math.inf)), float(hp.max_spd))
    assert max(left[0], right[0]) == pytest.approx(115.0) and left[0] - right[0] == pytest.approx(40.0)
    assert ref_l[0] - ref_r[0] < 40.0 - 1.0                # B13: the reference truncates part of the turn


def test_border_stop_turns_a_cube_at_the_border_instead_of_driving_out():
    hp = CubeHandleParams()                                 # border 65..435
    west = Poses(np.array([60.0]), np.array([250.0]), np.array([math.pi]))
    args = (west, west, np.array([[20.0, 250.0]]), np.array([70.0]))
    out = drive_wheels(*args, WheelShaping(hp, 250.0, 8.0, border_stop=True))
    free = drive_wheels(*args, WheelShaping(hp, 250.0, 8.0, border_stop=False))
    assert free[0][0] > 0 and free[1][0] > 0               # heading west, target further west: drive on
    assert out[0][0] == 0 and out[1][0] == 0                # at the border: no outward translation


def test_the_tick_depends_on_stamps_not_on_when_it_runs():
    def run(clock_value: float, age_ms: int):
        c = SwarmController(NavigatorSettings(cubes=('cube1', 'cube2')), clock=lambda: clock_value)
        tick = T0 + 200_000_000
        c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, tick - age_ms * 1_000_000)
        c.update_state('cube2', 350.0, 260.0, math.pi, True, 2, tick - 5_000_000)
        c.set_goal('cube1', 1, 400.0, 300.0, 0, 0.0, 0.0)
        c.step(stamp_seconds(tick - 50_000_000))
        return c.step(stamp_seconds(tick))
    a, b = run(0.0, 10), run(12345.0, 10)                  # a different wall clock: the same decision
    assert [(c.motor, c.waypoint, c.state_stamp_ns) for c in a] == [(c.motor, c.waypoint, c.state_stamp_ns) for c in b]
    assert a[0].state_stamp_ns == T0 + 190_000_000 and a[0].goal.goal_id == 1 and a[1].goal is None
    older = run(0.0, 120)                                   # an older reading is predicted further along its arc
    assert older[0].motor != a[0].motor


def test_a_state_older_than_the_stale_timeout_stops_the_cube_whenever_it_arrived():
    c = _controller()
    tick = T0 + 1_000_000_000
    c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, tick - 600_000_000)   # read 0.6 s before the tick
    c.update_state('cube2', 350.0, 250.0, 0.0, True, 2, tick - 10_000_000)
    c.set_goal('cube1', 1, 400.0, 100.0, 0, 0.0, 0.0)
    out = c.step(stamp_seconds(tick))
    assert out[0].stale and out[0].motor[:2] == (0, 0)
    c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, tick + 40_000_000)
    out = c.step(stamp_seconds(tick + 50_000_000))
    assert not out[0].stale and out[0].motor[:2] != (0, 0)


def test_a_planner_is_told_the_time_that_passed_between_ticks_not_the_period():
    # a busy host ticks late and stalls: a planner that counted periods would think a command sent 0.4 s ago
    # was still running, and that a cube standing for 4 s had stood for 0.5 s (dt stays the control period)
    c = _controller(planner='orca')
    told = []
    step = c.planner.step
    c.planner.step = lambda state, dt: told.append((state.elapsed, dt)) or step(state, dt)
    c.set_goal('cube1', 1, 400.0, 100.0, 0, 0.0, 0.0)
    for at_ms in (0, 50, 170, 400, 10_000):
        tick = T0 + at_ms * 1_000_000
        c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, tick - 10_000_000)
        c.update_state('cube2', 350.0, 250.0, 0.0, True, 2, tick - 10_000_000)
        c.step(stamp_seconds(tick))
    # the first tick counts one period; a gap longer than the stale timeout counts that timeout
    assert [e for e, _dt in told] == pytest.approx([0.05, 0.05, 0.12, 0.23, 0.5], abs=1e-6)
    assert [dt for _e, dt in told] == [0.05] * 5


def test_a_goal_tolerance_below_the_handle_tolerance_is_refused():
    c = _controller()
    reason = c.set_goal('cube1', 1, 200.0, 200.0, 0, 0.0, 5.0)
    assert 'below the handle tolerance 8' in reason and c.goals[0] is None
    assert c.set_goal('cube1', 2, 200.0, 200.0, 0, 0.0, 8.0) == ''
    assert c.set_goal('cube1', 3, 200.0, 200.0, 0, 0.0, 0.0) == ''            # 0 = the navigator's default
    with pytest.raises(ValueError, match='tolerance: 6 is below handle_tolerance 8'):
        _controller(tolerance=6.0)


def test_a_stop_goal_is_reported_with_its_id_and_direction():
    c = _controller()
    c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, T0)
    c.update_state('cube2', 350.0, 250.0, 0.0, True, 2, T0)
    c.set_goal('cube1', 4, 300.0, 250.0, 0, 0.0, 0.0)
    c.step(stamp_seconds(T0 + 10_000_000))
    c.set_goal('cube1', 5, 0.0, 0.0, 2, 0.0, 0.0)
    out = c.step(stamp_seconds(T0 + 60_000_000))[0]
    assert (out.goal_id, out.goal.direction, out.active, out.motor[:2]) == (5, 2, False, (0, 0))


def test_fixed_speed_limit_units_turn_hlavoid_limits_into_motor_units():
    def limits(fix: bool):
        params = NavigatorParams(fixes=Fixes(speed_limit_units=fix))
        c = SwarmController(NavigatorSettings(cubes=('cube1', 'cube2'), max_speed=115.0), params,
                            clock=lambda: math.nan)
        c.update_state('cube1', 200.0, 250.0, 0.0, True, 2, T0)
        c.update_state('cube2', 245.0, 250.0, math.pi, True, 2, T0)       # head-on, close: HLAvoid limits
        c.set_goal('cube1', 1, 400.0, 250.0, 0, 0.0, 0.0)
        c.set_goal('cube2', 2, 100.0, 250.0, 0, 0.0, 0.0)
        return np.array([r.speed_limit for r in c.step(stamp_seconds(T0 + 10_000_000))])
    off, on = limits(False), limits(True)
    assert (off < 115.0).all()                              # the reference's dot/s value capped the speed
    assert on == pytest.approx(off / CubeHandleParams().k)


def test_stamp_seconds_splits_like_the_message_stamps():
    assert stamp_seconds(1_700_000_000_250_000_000) == 1_700_000_000 + 0.25
    assert stamp_seconds(0) == 0.0


def test_reconfigure_changes_the_next_tick_and_keeps_the_goals():
    c = _controller()
    c.update_state('cube1', 150.0, 250.0, 0.0, True, 2, T0)
    c.update_state('cube2', 350.0, 400.0, 0.0, True, 2, T0)
    c.set_goal('cube1', 7, 400.0, 250.0, 0, 0.0, 0.0)
    fast = c.step(stamp_seconds(T0 + 10_000_000))[0]
    config = SimpleNamespace(settings=NavigatorSettings(cubes=('cube1', 'cube2'), max_speed=30.0, planner='orca'),
                             params=NavigatorParams(), handle=CubeHandleParams())
    c.reconfigure(config)
    slow = c.step(stamp_seconds(T0 + 60_000_000))[0]
    assert fast.speed_limit > 30.0 >= slow.speed_limit > 0.0       # the new speed cap, the same goal
    assert (slow.goal_id, slow.active) == (7, True) and c.settings.planner == 'orca'


def test_reconfigure_refuses_another_list_of_cubes_or_bad_settings():
    c = _controller()
    other = SimpleNamespace(settings=NavigatorSettings(cubes=('cube1',)), params=NavigatorParams(),
                            handle=CubeHandleParams())
    with pytest.raises(ValueError, match='cubes: cannot change while running'):
        c.reconfigure(other)
    bad = SimpleNamespace(settings=NavigatorSettings(cubes=('cube1', 'cube2'), mode='FAST'),
                          params=NavigatorParams(), handle=CubeHandleParams())
    with pytest.raises(ValueError, match='mode'):
        c.reconfigure(bad)
    assert c.settings.mode == 'AVOID' and c.settings.cubes == ('cube1', 'cube2')
