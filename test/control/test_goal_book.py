"""The goal bookkeeping without ROS (control/goals.py): pre-emption across interfaces, outcomes with reasons,
distance and estimated time, and the failure rules (stale, off the mat, blocked) for goals that give up."""
from __future__ import annotations

import math

import pytest

from toio_navigator.control import goals as g


def book(**policy) -> g.GoalBook:
    return g.GoalBook(('cube1', 'cube2'), g.GoalPolicy(**policy))


def goal(cube='cube1', goal_id=1, source='action', x=300.0, y=200.0, speed=100.0, started=0.0, give_up=True,
         owner=None) -> g.TrackedGoal:
    return g.TrackedGoal(cube, goal_id, source, x, y, speed, started, give_up, owner)


def test_a_goal_is_reached_when_the_controller_says_so_and_reports_progress_before():
    b = book()
    b.replace('cube1', goal(), 0.0, by='x')
    p = b.update('cube1', 0.5, 100.0, 200.0, reached=False, stale=False, on_mat=True)
    assert isinstance(p, g.Progress) and p.distance == pytest.approx(200.0)
    assert p.eta_s == pytest.approx(2.0)          # no approach speed measured yet: the nominal 100 units/s
    assert p.elapsed == pytest.approx(0.5)
    end = b.update('cube1', 1.0, 295.0, 200.0, reached=True, stale=False, on_mat=True)
    assert isinstance(end, g.Ended) and end.outcome == g.REACHED and end.reason == ''
    assert end.distance == pytest.approx(5.0) and end.elapsed == pytest.approx(1.0)
    assert b.active('cube1') is None
    assert b.update('cube1', 1.1, 295.0, 200.0, reached=True, stale=False, on_mat=True) is None


def test_the_estimate_follows_the_measured_approach_speed_within_bounds():
    b = book()
    b.replace('cube1', goal(speed=100.0), 0.0, by='x')
    b.update('cube1', 0.0, 0.0, 200.0, False, False, True)
    p = b.update('cube1', 1.0, 50.0, 200.0, False, False, True)        # 50 units/s measured
    assert p.eta_s == pytest.approx(250.0 / 50.0)
    p = b.update('cube1', 2.0, 50.0, 200.0, False, False, True)        # stopped: never slower than a fifth
    assert p.eta_s == pytest.approx(250.0 / 40.0)
    b2 = book()
    b2.replace('cube1', goal(speed=10.0), 0.0, by='x')
    b2.update('cube1', 0.0, 0.0, 200.0, False, False, True)
    p = b2.update('cube1', 1.0, 100.0, 200.0, False, False, True)      # faster than its cap: the cap
    assert p.eta_s == pytest.approx(200.0 / 10.0)


def test_a_newer_goal_from_any_source_preempts_with_the_source_named():
    b = book()
    first = goal(owner='handle-1')
    b.replace('cube1', first, 0.0, by='x')
    ended = b.replace('cube1', goal(goal_id=2, source='goal_pose'), 1.0, by='a newer goal from goal_pose')
    assert ended.goal is first and ended.outcome == g.PREEMPTED
    assert ended.reason == 'pre-empted by a newer goal from goal_pose' and ended.name == 'pre-empted'
    ended = b.replace('cube1', None, 2.0, by='a STOP from the goal topic')          # a STOP ends it too
    assert ended.goal.goal_id == 2 and ended.reason == 'pre-empted by a STOP from the goal topic'
    assert b.replace('cube2', None, 2.0, by='y') is None                             # nothing to pre-empt


def test_cancel_ends_only_the_goal_its_owner_owns():
    b = book()
    b.replace('cube1', goal(owner='A'), 0.0, by='x')
    assert b.cancel('cube1', 'B', 1.0) is None
    ended = b.cancel('cube1', 'A', 1.0)
    assert ended.outcome == g.CANCELLED and b.active('cube1') is None


@pytest.mark.parametrize('stale, on_mat, outcome, words', [
    (True, True, g.STALE, 'no state from the cube for 2.0 s'),
    (False, False, g.OFF_MAT, 'the cube is off the mat for 2.0 s'),
])
def test_a_goal_that_gives_up_fails_after_trouble_without_a_break(stale, on_mat, outcome, words):
    b = book(fail_after_s=2.0)
    b.replace('cube1', goal(), 0.0, by='x')
    assert isinstance(b.update('cube1', 0.0, 100.0, 200.0, False, stale, on_mat), g.Progress)
    assert isinstance(b.update('cube1', 1.5, 100.0, 200.0, False, False, True), g.Progress)   # a break: restart
    assert isinstance(b.update('cube1', 2.0, 100.0, 200.0, False, stale, on_mat), g.Progress)
    assert isinstance(b.update('cube1', 3.9, 100.0, 200.0, False, stale, on_mat), g.Progress)
    ended = b.update('cube1', 4.0, 100.0, 200.0, False, stale, on_mat)
    assert ended.outcome == outcome and ended.reason == words


def test_a_goal_that_gives_up_fails_when_blocked_and_progress_resets_the_clock():
    b = book(blocked_after_s=5.0, progress_distance=10.0)
    b.replace('cube1', goal(x=300.0), 0.0, by='x')
    b.update('cube1', 0.0, 100.0, 200.0, False, False, True)
    b.update('cube1', 4.0, 105.0, 200.0, False, False, True)      # 5 units closer: not progress
    b.update('cube1', 4.5, 112.0, 200.0, False, False, True)      # 12 units closer than the best: progress
    assert isinstance(b.update('cube1', 9.4, 112.0, 200.0, False, False, True), g.Progress)
    ended = b.update('cube1', 9.5, 112.0, 200.0, False, False, True)
    assert ended.outcome == g.BLOCKED
    assert ended.reason == 'no progress towards the goal (188 units away) for 5.0 s'


def test_topic_and_service_goals_never_give_up_and_blocked_zero_means_never():
    b = book(fail_after_s=1.0, blocked_after_s=1.0)
    b.replace('cube1', goal(give_up=False, source='the goal topic'), 0.0, by='x')
    for t in range(1, 30):
        assert isinstance(b.update('cube1', float(t), math.nan, math.nan, False, True, False), g.Progress)
    b = book(blocked_after_s=0.0)
    b.replace('cube1', goal(), 0.0, by='x')
    for t in range(0, 300, 10):
        assert isinstance(b.update('cube1', float(t), 100.0, 200.0, False, False, True), g.Progress)


def test_unseen_cubes_count_as_stale_and_report_no_distance():
    b = book(fail_after_s=1.0)
    b.replace('cube1', goal(), 0.0, by='x')
    p = b.update('cube1', 0.5, math.nan, math.nan, False, False, True)
    assert math.isnan(p.distance) and math.isnan(p.eta_s)
    ended = b.update('cube1', 1.5, math.nan, math.nan, False, False, True)
    assert ended.outcome == g.STALE and math.isnan(ended.distance)


def test_own_goal_ids_stay_clear_of_the_callers_and_bad_policies_are_named():
    b = book()
    ids = {b.next_goal_id() for _ in range(3)}
    assert len(ids) == 3 and min(ids) > g.FIRST_OWN_GOAL_ID
    with pytest.raises(ValueError, match='fail_after_s'):
        g.GoalPolicy(fail_after_s=math.nan).check()
    with pytest.raises(ValueError, match='blocked_after_s'):
        book(blocked_after_s=-1.0)
    assert b.end_owned('nobody') is None
    b.replace('cube2', goal(cube='cube2', owner='H'), 0.0, by='x')
    assert b.end_owned('H').cube == 'cube2' and b.active('cube2') is None
