"""The web console's server over real HTTP and WebSocket (aiohttp's client on 127.0.0.1; no ROS): the page and its
assets, no file outside them, a hello then views at the rate asked for, each command answered, a malformed one
refused with its reason, and a port in use refused with a clear message."""
from __future__ import annotations

import asyncio
import json
import socket
import time

import aiohttp
import pytest

from toio_navigator.web.commands import LIVE_OPS
from toio_navigator.web.server import ConsoleServer, ServerError


async def answer(command):
    if command.op == 'goal' and command.x > 400:
        return False, f'{command.cube}: goal refused: off the mat'
    return True, f'{command.op} done'


@pytest.fixture
def server():
    views = []

    def view():
        views.append(time.monotonic())
        return {'type': 'view', 'n': len(views)}
    s = ConsoleServer(view, answer, {'kind': 'live', 'cubes': ['cube1']}, ['cube1'], LIVE_OPS, port=0, rate_hz=25.0)
    s.start()
    yield s
    s.stop()


async def _get(url: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as r:
        return r.status, r.headers.get('Content-Type', ''), await r.text()


def test_the_page_and_its_assets_and_nothing_else(server):
    base = server.url()
    status, kind, text = asyncio.run(_get(base))
    assert status == 200 and kind.startswith('text/html') and '<svg id="mat-view"' in text
    for asset in ('console.js', 'draw.js', 'console.css'):
        status, _kind, text = asyncio.run(_get(f'{base}static/{asset}'))
        assert status == 200 and len(text) > 500, asset
        assert 'http://' not in text.replace('http://www.w3.org/2000/svg', '')    # nothing from elsewhere
    assert asyncio.run(_get(f'{base}static/../server.py'))[0] in (403, 404)
    assert asyncio.run(_get(f'{base}nothing'))[0] == 404


async def _session(url: str, commands: list[str], seconds: float):
    got = []
    async with aiohttp.ClientSession() as session, session.ws_connect(url + 'ws') as ws:
        for c in commands:
            await ws.send_str(c)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                msg = await ws.receive(timeout=end - time.monotonic())
            except asyncio.TimeoutError:
                break
            got.append((time.monotonic(), json.loads(msg.data)))
    return got


def test_a_page_gets_a_hello_views_at_the_rate_and_an_answer_to_each_command(server):
    got = asyncio.run(_session(server.url(), [
        '{"op": "goal", "cube": "cube1", "x": 100, "y": 100, "id": 1}',
        '{"op": "goal", "cube": "cube1", "x": 500, "y": 100, "id": 2}',
        '{"op": "goal", "cube": "cube7", "x": 1, "y": 1, "id": 3}',
        'nonsense'], 2.0))
    kinds = [m['type'] for _t, m in got]
    assert kinds[0] == 'hello' and got[0][1]['cubes'] == ['cube1']
    replies = {m['id']: m for _t, m in got if m['type'] == 'reply'}
    assert replies[1] == {'type': 'reply', 'id': 1, 'ok': True, 'text': 'goal done'}
    assert replies[2]['ok'] is False and replies[2]['text'] == 'cube1: goal refused: off the mat'
    assert replies[3]['ok'] is False and replies[3]['text'].startswith('not sent: unknown cube "cube7"')
    assert replies[None]['text'].startswith('not sent: not JSON')
    views = [t for t, m in got if m['type'] == 'view']
    assert 40 <= len(views) <= 55                    # 25 a second for 2 s
    assert max(b - a for a, b in zip(views, views[1:])) < 0.25


def test_a_port_in_use_is_refused_with_the_reason():
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = ConsoleServer(dict, answer, {}, ['cube1'], LIVE_OPS, port=port)
        with pytest.raises(ServerError, match=f'cannot serve on 127.0.0.1:{port}: it is in use'):
            s.start()
