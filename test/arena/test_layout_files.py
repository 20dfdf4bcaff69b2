"""Layout files: the packaged samples load; malformed layouts fail with a message naming the problem."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toio_navigator.arena.geometry import Pose
from toio_navigator.arena.layout import LayoutError, grid_to_rows, load_layout, parse_layout

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'
EMPTY_ROWS = ['.' * 15] * 20


def base() -> dict:
    return {'format': 'toio-arena-layout/1', 'name': 't', 'grid_rows_top_first': list(EMPTY_ROWS)}


def with_cell(rows: list[str], x: int, y: int, ch: str = '#') -> list[str]:
    rows = list(rows)
    line = 19 - y
    rows[line] = rows[line][:x] + ch + rows[line][x + 1:]
    return rows


def test_sample_arena_1_loads_with_its_conventions():
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    assert layout.start == Pose(1, 1, 0) and layout.goal == (13, 18) and layout.waypoint == (7, 15)
    assert layout.obstacles.shape == (20, 15)
    # top row first in the file: line 2 is y=17, '#' at x=7; line 14 is y=5, '#' at x=1
    assert layout.obstacles[17, 7] and layout.obstacles[5, 1] and not layout.obstacles[0, 0]
    assert int(layout.obstacles.sum()) == 19
    raw = json.loads((ARENAS / '01_sample_arena_1.json').read_text())
    assert grid_to_rows(layout.obstacles) == [r.replace('#', '1').replace('.', '0')
                                              for r in raw['grid_rows_top_first']]


def test_defaults_when_start_goal_waypoint_are_absent():
    layout = parse_layout(base())
    assert layout.start == Pose(1, 1, 0) and layout.goal == (13, 18) and layout.waypoint is None


def mutate(**changes) -> dict:
    data = base()
    data.update(copy.deepcopy(changes))
    return data


@pytest.mark.parametrize('data, words', [
    (mutate(grid_rows_top_first=EMPTY_ROWS[:19]), 'has 19 rows, expected 20'),
    (mutate(grid_rows_top_first=EMPTY_ROWS[:19] + ['.' * 14]), r'row 19 \(y=0\) has 14 characters'),
    (mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 4, 10, 'x')), "bad character 'x'.*column 4"),
    (mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 2, 0)), 'blocked start'),
    (mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 12, 19)), 'blocked goal'),
    (mutate(start={'centre': [0, 5]}), 'start centre'),
    (mutate(start={'centre': [1, 1], 'heading': 'Q'}), 'heading'),
    (mutate(goal={'centre': [14, 19]}), 'goal centre'),
    (mutate(waypoint=[15, 3]), 'waypoint'),
    (mutate(waypoint='7,10'), 'waypoint'),
    (mutate(format='toio-arena-layout/2'), 'format'),
    (mutate(images=[{'x': 5, 'y': 5, 'face': 'N', 'id': 3}]), 'not an obstacle'),
    (mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 5, 5), images=[{'x': 5, 'y': 5, 'face': 'U', 'id': 3}]),
     'face'),
    (mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 5, 5), images=[{'x': 5, 'y': 5, 'face': 'N', 'id': 99}]),
     'id'),
    ([1, 2], 'JSON object'),
])
def test_malformed_layouts_name_the_problem(data, words):
    with pytest.raises(LayoutError, match=words):
        parse_layout(data)


def test_a_blocked_goal_can_be_allowed_for_path_planning():
    data = mutate(grid_rows_top_first=with_cell(EMPTY_ROWS, 12, 19))
    assert parse_layout(data, require_free_goal=False).obstacles[19, 12]
    with pytest.raises(LayoutError, match='goal centre'):
        parse_layout(mutate(goal={'centre': [14, 19]}), require_free_goal=False)


def test_missing_grid_and_unreadable_files(tmp_path):
    data = base()
    del data['grid_rows_top_first']
    with pytest.raises(LayoutError, match='grid_rows_top_first'):
        parse_layout(data)
    with pytest.raises(LayoutError, match='cannot read'):
        load_layout(tmp_path / 'missing.json')
    broken = tmp_path / 'broken.json'
    broken.write_text('{"format": ')
    with pytest.raises(LayoutError, match='not valid JSON'):
        load_layout(broken)
