"""The web console's view of the swarm (no ROS): what the page is told about each cube as states, results and
answers arrive, at the times they arrive."""
from __future__ import annotations

import copy
import json
import math

import pytest

from toio_navigator.units import METRES_PER_UNIT, UNITS_PER_S_PER_MOTOR_UNIT
from toio_navigator.web.view import ViewState

CONNECTED, RECONNECTING = 2, 3


def state(cube='cube1', x=100.0, y=100.0, theta=0.0, on_mat=True, battery=90, link=CONNECTED):
    return ('cube_state', (cube, x, y, theta, on_mat, battery, link))


def result(cube='cube1', goal=(300.0, 100.0, 0), goal_id=7, active=True, reached=False, speed=0.0):
    return ('nav_result', (cube, goal_id, active, reached, False, (150.0, 100.0), goal, speed, 'AVOID', 'hlavoid'))


def cube(view, now, name='cube1') -> dict:
    return next(c for c in view.snapshot(now)['cubes'] if c['name'] == name)


def test_a_cube_is_unseen_then_ok_then_stale_then_lost_and_says_when_its_link_is_down():
    view = ViewState(['cube1', 'cube2'], stale_s=0.5, lost_s=3.0)
    assert cube(view, 0.0)['health'] == 'unseen' and cube(view, 0.0)['x'] is None
    view.feed(1.0, [state()])
    assert cube(view, 1.2)['health'] == 'ok'
    assert cube(view, 1.6)['health'] == 'stale'
    assert cube(view, 4.1)['health'] == 'lost'
    view.feed(5.0, [state(link=RECONNECTING)])
    assert cube(view, 5.0)['health'] == 'link reconnecting'
    view.feed(6.0, [state(on_mat=False)])
    assert cube(view, 6.0)['health'] == 'off the mat'
    assert cube(view, 6.0, 'cube2')['health'] == 'unseen'


def test_the_status_line_gives_the_goal_the_distance_and_an_eta_from_the_approach_speed():
    view = ViewState(['cube1'])
    view.feed(0.0, [('navigator_parameters', ({'max_speed': 50.0, 'tolerance': 20.0},))])
    view.feed(0.0, [result(), state(x=100.0)])
    c = cube(view, 0.0)
    assert c['status'] == 'moving' and c['goal'] == [300.0, 100.0, 'towards'] and c['waypoint'] == [150.0, 100.0]
    assert c['distance_mm'] == pytest.approx(200.0 * METRES_PER_UNIT * 1000, abs=0.1)
    cap = 50.0 * UNITS_PER_S_PER_MOTOR_UNIT
    assert c['eta_s'] == pytest.approx(180.0 / (0.2 * cap), abs=0.1)          # no approach measured yet
    for k in range(1, 61):                                                  # 3 s at 40 units/s
        view.feed(k * 0.05, [result(), state(x=100.0 + 2.0 * k)])
    c = cube(view, 3.0)                                                     # 60 units to the tolerance
    assert c['eta_s'] == pytest.approx(60.0 / 40.0, rel=0.1)
    view.feed(3.1, [result(reached=True), state(x=290.0)])
    c = cube(view, 3.1)
    assert c['status'] == 'reached' and c['eta_s'] == 0.0
    view.feed(3.2, [result(goal=(290.0, 100.0, 2), goal_id=8, active=False)])
    c = cube(view, 3.2)
    assert c['status'] == 'stopped' and c['distance_mm'] is None and c['eta_s'] is None and c['waypoint'] is None


def test_a_refusal_shows_in_the_cube_status_until_a_newer_goal_or_for_ten_seconds():
    view = ViewState(['cube1'])
    view.feed(0.0, [state(), result()])
    view.feed(1.0, [('note', (False, 'cube1: goal (20, 250) refused: off the mat', 'cube1', 'off the mat'))])
    assert cube(view, 1.0)['status'] == 'refused: off the mat'
    assert view.snapshot(1.0)['notes'][-1] == [1.0, False, 'cube1: goal (20, 250) refused: off the mat']
    assert cube(view, 10.9)['status'] == 'refused: off the mat'
    assert cube(view, 11.1)['status'] == 'moving'
    view.feed(12.0, [('note', (False, 'refused again', 'cube1', ''))])
    view.feed(12.5, [result(goal=(200.0, 200.0, 0), goal_id=9)])
    assert cube(view, 12.5)['status'] == 'moving'


def test_contacts_are_shown_for_three_seconds_and_counted():
    view = ViewState(['cube1', 'cube2'])
    view.feed(1.0, [('contact', ('cube1', 'cube2', 200.0, 210.0, 1))])
    view.feed(1.5, [('contact', ('cube1', 'cube2', 201.0, 211.0, 4))])     # the simulator counted two we missed
    shown = view.snapshot(2.0)['contacts']
    assert shown['count'] == 4 and [c[1:] for c in shown['recent']] == [['cube1', 'cube2', 200.0, 210.0],
                                                                         ['cube1', 'cube2', 201.0, 211.0]]
    assert view.snapshot(4.2)['contacts']['recent'] == [[2.7, 'cube1', 'cube2', 201.0, 211.0]]
    assert view.snapshot(4.6)['contacts'] == {'count': 4, 'recent': []}


def test_the_navigator_and_the_arena_as_the_page_gets_them():
    view = ViewState(['cube1'])
    view.feed(0.0, [('navigator_parameters', ({'mat_rect': [0, 0, 300, 300], 'border': [], 'walls': [1, 2, 3, 4, 5],
                                               'planner': 'orca', 'mode': 'BOIDS', 'max_speed': 'fast'},))])
    nav = view.snapshot(0.0)['navigator']
    assert (nav['mat_rect'], nav['walls'], nav['planner'], nav['mode']) == ([0.0, 0.0, 300.0, 300.0],
                                                                           [1.0, 2.0, 3.0, 4.0, 5.0], 'orca', 'BOIDS')
    assert 'coordinated' in nav['planners'] and 'BOIDS_AVOID' in nav['modes'] and nav['parameters_known']
    assert view.snapshot(0.0)['arena'] is None
    view.feed(1.0, [('arena_parameters', ((7, 10), (100.0, 50.0, 20.0))),
                    ('arena_path', ([(130.0, 420.0, 'N'), (130.0, 400.0, 'N'), (130.0, 400.0, 'E')],))])
    arena = view.snapshot(1.0)['arena']
    assert arena['waypoint'] == [7, 10] and arena['path'] == [[1, 1, 'N'], [1, 2, 'N'], [1, 2, 'E']]
    assert arena['cells'] == 'u' * 300 and arena['start'] == [1, 1] and arena['goal'] == [13, 18]


def test_a_snapshot_is_strict_json_and_a_copy_is_a_separate_view():
    view = ViewState(['cube1'])
    view.feed(0.0, [state(x=math.nan), result(goal=(math.nan, math.nan, 2))])
    text = json.dumps(view.snapshot(0.0), allow_nan=False)        # NaN and infinities become null
    assert '"x":null' in text.replace(' ', '')
    other = copy.deepcopy(view)
    other.feed(1.0, [state(x=50.0)])
    assert cube(view, 1.0)['x'] is None and cube(other, 1.0)['x'] == 50.0
    assert other.lock is not view.lock
