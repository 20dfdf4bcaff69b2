"""The web console in a real browser beside the arena bringup (mat_sim with one virtual cube and the IR sensors of a
layout, its cube_driver, the navigator, the arena_explorer, the web console; real DDS): exploration started from the
page ends with the page showing the layout's MDF strings (every cell explored, each obstacle where the layout has
it) and the optimal fastest path; a waypoint the explorer refuses shows its reason. Screenshot: out/web/arena_*.png.
"""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from support.browser import MISSING

if MISSING:
    pytest.skip(MISSING, allow_module_level=True)
rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from conftest import next_domain_id, ros_env  # noqa: E402
from support.browser import Browser, shot, wait_for  # noqa: E402
from support.goal_probe import start_nodes  # noqa: E402
from toio_navigator.arena import mdf  # noqa: E402
from toio_navigator.arena.fastest_path import fastest_path  # noqa: E402
from toio_navigator.arena.geometry import HEADING_LETTERS, Pose  # noqa: E402
from toio_navigator.arena.layout import parse_layout  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402
from toio_navigator.nodes.arena_demo import path_cost, run_yaml  # noqa: E402

#: an open arena with a short wall in the middle: every cell can be seen in one hug (58 moves)
WALL = [(7, 9), (7, 10), (7, 11), (7, 12)]


def layout_rows() -> list[str]:
    rows = [['.'] * 15 for _ in range(20)]
    for x, y in WALL:
        rows[19 - y][x] = '#'
    return [''.join(r) for r in rows]


@pytest.fixture(scope='module')
def arena(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('web_arena')
    layout_path = tmp / 'wall.json'
    layout_path.write_text(json.dumps({'format': 'toio-arena-layout/1', 'name': 'wall',
                                       'grid_rows_top_first': layout_rows()}))
    address = tmp / 'address.txt'
    run = run_yaml(tmp / 'run.yaml', layout_path, 1.0, None)
    run.write_text(run.read_text() + f'web_console:\n  ros__parameters:\n    port: 0\n    address_file: "{address}"\n')
    env = ros_env(next_domain_id())
    probe = start_nodes(tmp, env, profiles.plan('arena', ['cube1'], web=True), profiles.profile_files('arena') + [run],
                        'web_arena_probe')
    browser = None
    try:
        probe.spin_until(address.exists, 60.0, 'the web console\'s address')
        browser = Browser()
        page = browser.page(address.read_text().strip())
        yield parse_layout(json.loads(layout_path.read_text())), page, probe
        assert not browser.errors, f'the page raised: {browser.errors}'
    finally:
        if browser is not None:
            browser.close()
        probe.close()


def last_reply(page, before: int) -> dict:
    """The page's next reply after ``before`` replies (the command, ok, text)."""
    return wait_for(page, f'window.toioConsole.replies.length > {before} && window.toioConsole.replies.at(-1)', 10.0,
                    'the answer')


def test_exploration_started_from_the_page_ends_with_the_layouts_mdf_and_the_fastest_path(arena):
    layout, page, probe = arena
    wait_for(page, 'window.toioConsole.view && window.toioConsole.view.arena && '
                   'window.toioConsole.view.cubes[0].health === "ok"', 60.0, 'the arena panel and the cube')
    page.click('#explore')
    # (the explorer refuses until the driver's move_to_pose and the navigator are up: the page asks again)
    answer, deadline = last_reply(page, 0), time.monotonic() + 60.0
    while not answer['ok']:
        assert 'not available' in answer['text'] or 'nobody subscribes' in answer['text'], answer['text']
        assert time.monotonic() < deadline, f'the explorer still refuses after 60 s: {answer["text"]}'
        probe.spin_for(1.0)
        asked = len(page.evaluate('window.toioConsole.replies'))
        page.click('#explore')
        answer = last_reply(page, asked)
    wait_for(page, 'window.toioConsole.view.arena.status === "EXPLORING"', 10.0, 'EXPLORING')
    wait_for(page, '["DONE", "ERROR", "TERMINATED"].includes(window.toioConsole.view.arena.status)', 180.0,
             'the end of the exploration')
    wait_for(page, 'document.querySelector("#fp-path")', 10.0, 'the fastest path')
    shot(page, 'arena_explored')
    assert page.evaluate('window.toioConsole.view.arena.status') == 'DONE', page.inner_text('#arena-text')
    part1, part2 = mdf.encode(np.ones_like(layout.obstacles, dtype=bool), layout.obstacles)
    assert (page.inner_text('#mdf1'), page.inner_text('#mdf2')) == (part1, part2)
    drawn = page.eval_on_selector_all('#arena-cells rect', 'rs => rs.map(r => [+r.dataset.x, +r.dataset.y, '
                                                           'r.dataset.state])')
    assert sorted((x, y) for x, y, s in drawn if s == 'o') == sorted(WALL)
    assert all(s == 'f' for x, y, s in drawn if (x, y) not in WALL)
    # the path the page draws: from the start to the goal at the optimal cost of the layout
    cells = page.evaluate('window.toioConsole.view.arena.path')
    assert cells[0][:2] == [1, 1] and cells[-1][:2] == [13, 18]
    optimum = fastest_path(layout.obstacles, layout.start, layout.goal, None, 2.0)
    poses = [Pose(x, y, HEADING_LETTERS.index(h)) for x, y, h in cells]
    assert path_cost(poses, 2.0) == optimum.cost_value == 31
    assert int(page.get_attribute('#fp-path', 'data-cells')) == len(cells)


def test_a_waypoint_the_explorer_refuses_shows_its_reason(arena):
    _layout, page, _probe = arena
    before = len(page.evaluate('window.toioConsole.replies'))
    page.fill('#wp-x', '7')
    page.fill('#wp-y', '10')
    page.click('#wp-set')                                 # its footprint covers the explored wall
    reply = last_reply(page, before)
    assert not reply['ok'] and 'obstacle' in reply['text'], reply
    assert 'obstacle' in page.inner_text('#note')
    shot(page, 'arena_waypoint_refused')
