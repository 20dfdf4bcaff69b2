"""What a page may send the web console: well-formed commands pass, anything else is refused with a reason the page
shows (nothing is sent to ROS for it)."""
from __future__ import annotations

import json

import pytest

from toio_navigator.web.commands import LIVE_OPS, REPLAY_OPS, Command, CommandError, parse

CUBES = ['cube1', 'cube2']


def test_well_formed_commands():
    assert parse('{"op": "goal", "cube": "cube2", "x": 250, "y": 120.5, "id": 3}', CUBES) == \
        Command('goal', 3, 'cube2', 250.0, 120.5)
    assert parse('{"op": "stop_all"}', CUBES) == Command('stop_all')
    assert parse('{"op": "set_parameter", "name": "planner", "value": "orca"}', CUBES).value == 'orca'
    assert parse('{"op": "explorer", "action": "terminate"}', CUBES).name == 'terminate'
    assert parse('{"op": "waypoint", "x": -1, "y": -1}', CUBES) == Command('waypoint', x=-1, y=-1)
    assert parse('{"op": "seek", "t": 2.5}', CUBES, REPLAY_OPS).value == 2.5


@pytest.mark.parametrize('message, reason', [
    ('{"op": "goal", "cube": "cube9", "x": 1, "y": 2}', 'unknown cube "cube9" (cubes: cube1, cube2)'),
    ('{"op": "goal", "cube": "cube1", "x": "250", "y": 2}', 'x must be a finite number, got "250"'),
    ('{"op": "goal", "cube": "cube1", "x": NaN, "y": 2}', 'x must be a finite number, got NaN'),
    ('{"op": "goal", "cube": "cube1", "x": true, "y": 2}', 'x must be a finite number, got true'),
    ('{"op": "set_parameter", "name": "rate_hz", "value": "5"}', 'the page may set only planner, mode'),
    ('{"op": "set_parameter", "name": "mode", "value": 3}', 'mode must be a string, got 3'),
    ('{"op": "explorer", "action": "explode"}', 'unknown explorer action "explode"'),
    ('{"op": "waypoint", "x": 1.5, "y": 2}', 'x must be an integer, got 1.5'),
    ('{"op": "seek", "t": 1}', 'unknown op "seek" (ops here: goal, stop, stop_all'),
    ('{"op": "goal", "id": "a"}', 'id must be an integer'),
    ('[1, 2]', 'a command must be a JSON object'),
    ('{"op": ', 'not JSON'),
    (json.dumps({'op': 'stop_all', 'pad': 'x' * 5000}), 'message too long'),
])
def test_malformed_commands_are_refused_with_the_reason(message, reason):
    with pytest.raises(CommandError) as err:
        parse(message, CUBES, LIVE_OPS)
    assert reason in str(err.value)


def test_a_replay_takes_no_live_command():
    with pytest.raises(CommandError, match='unknown op "goal"'):
        parse('{"op": "goal", "cube": "cube1", "x": 1, "y": 2}', CUBES, REPLAY_OPS)
