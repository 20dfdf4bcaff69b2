"""``toio-nav web BAG`` in a real browser: the recorded run in the console's page (the live page's drawing code) with
a time slider; a seek shows the cubes where the bag's states have them at that time, and play runs to the end.
Screenshot: out/web/replay.png.
"""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.browser import MISSING

if MISSING:
    pytest.skip(MISSING, allow_module_level=True)

from support.browser import Browser, drawn_cubes, shot, wait_for  # noqa: E402
from toio_navigator.bags.recording import open_reader  # noqa: E402

BAG = Path(__file__).resolve().parents[1] / 'data' / 'bags' / 'swap3_mcap'
MM_PER_UNIT = 0.560 / 411 * 1000


def states_until(t: float) -> dict[str, tuple[float, float]]:
    """Each cube's last /<cube>/state at bag time ``t`` (s since the start), read here with rosbags."""
    reader = open_reader(BAG)
    last = {}
    try:
        conns = [c for c in reader.connections if c.topic.endswith('/state')]
        for conn, ns, raw in reader.messages(connections=conns):
            if (ns - reader.start_time) / 1e9 > t:
                break
            msg = reader.deserialize(raw, conn.msgtype)
            last[conn.topic.split('/')[1]] = (msg.x, msg.y)
    finally:
        reader.close()
    return last


@pytest.fixture(scope='module')
def replay(tmp_path_factory):
    address = tmp_path_factory.mktemp('web_replay') / 'address.txt'
    proc = subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'web', str(BAG), '--port', '0', '--paused',
                             '--address-file', str(address)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    browser = None
    try:
        first = proc.stdout.readline()
        assert 'the page: http://127.0.0.1:' in first and '3 cubes' in first, first + proc.stdout.read()
        browser = Browser()
        yield browser.page(address.read_text().strip())
        assert not browser.errors, f'the page raised: {browser.errors}'
    finally:
        if browser is not None:
            browser.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_a_seek_on_the_slider_shows_the_cubes_where_the_bag_has_them(replay):
    page = replay
    duration = wait_for(page, 'window.toioConsole.hello && window.toioConsole.view && '
                              'window.toioConsole.hello.duration', 20.0, 'the replay')
    assert page.is_visible('#slider') and not page.is_visible('#stop-all')      # a replay sends no commands
    box = page.locator('#slider').bounding_box()
    page.mouse.click(box['x'] + 0.6 * box['width'], box['y'] + box['height'] / 2)
    t = wait_for(page, 'window.toioConsole.view.t > 0 && !window.toioConsole.view.playing && '
                       'window.toioConsole.view.t', 10.0, 'the seek')
    assert 0.4 * duration < t < 0.8 * duration
    page.wait_for_timeout(300)                                    # a view drawn after the seek
    expected = states_until(t)
    drawn = drawn_cubes(page)
    assert sorted(drawn) == sorted(expected) == ['cube1', 'cube2', 'cube3']
    for cube, xy in expected.items():
        assert np.hypot(*(np.array(drawn[cube]) - xy)) * MM_PER_UNIT < 2.0, cube
    shot(page, 'replay')


def test_play_runs_to_the_end_of_the_bag(replay):
    page = replay
    page.click('#play')
    wait_for(page, 'window.toioConsole.view.playing', 5.0, 'playing')
    end = wait_for(page, '!window.toioConsole.view.playing && window.toioConsole.view.t', 20.0, 'the end')
    assert end == pytest.approx(page.evaluate('window.toioConsole.hello.duration'), abs=0.01)
    assert all(c['status'] == 'reached' for c in page.evaluate('window.toioConsole.view.cubes'))
