"""The web console's HTTP + WebSocket server (aiohttp), ROS-free: it serves the page (package data in
toio_navigator/data/web/), sends every connected page a view ``rate_hz`` times a second and hands each command a
page sends to the caller's handler, replying with its answer.

It runs its own asyncio loop in a thread of its own (:meth:`ConsoleServer.start`, :meth:`ConsoleServer.stop`), so a
ROS node keeps its executor in the main thread. A page that cannot keep up skips views instead of queueing them.

WebSocket messages (JSON): server -> page ``{"type": "hello", ...}`` once, then ``{"type": "view", ...}``
(:meth:`toio_navigator.web.view.ViewState.snapshot`) and ``{"type": "reply", "id": N, "ok": bool, "text": "..."}``
for each command; page -> server the commands of :mod:`toio_navigator.web.commands`.
"""
from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Awaitable, Callable

from aiohttp import WSMsgType, web

from toio_navigator.web.commands import Command, CommandError, parse

PAGE_DIR = Path(__file__).resolve().parents[1] / 'data' / 'web'
#: a command whose answer takes longer than this is answered "no answer"
ANSWER_TIMEOUT_S = 15.0


class ServerError(RuntimeError):
    """The server cannot start (the port is taken, the address cannot be bound)."""


def write_address(path: Path, url: str) -> None:
    """``url`` into ``path`` at once (a reader never sees half of it)."""
    part = path.with_name(path.name + '.part')
    part.write_text(url + '\n')
    os.replace(part, path)


def lab_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback, as its host name resolves them (may be empty)."""
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        return []
    return sorted({i[4][0] for i in infos if not i[4][0].startswith('127.')})


class ConsoleServer:
    """Serves the page on ``host``:``port`` (0 = any free port). ``view()`` gives the current view (called in the
    server's thread), ``handle(command)`` carries out a command and returns (ok, text); ``hello`` is what a page
    is told first (cubes, live or replay)."""

    def __init__(self, view: Callable[[], dict], handle: Callable[[Command], Awaitable[tuple[bool, str]]],
                 hello: dict, cubes, ops, host: str = '127.0.0.1', port: int = 0, rate_hz: float = 25.0) -> None:
        self.view, self.handle, self.hello = view, handle, dict(hello, type='hello')
        self.cubes, self.ops = list(cubes), tuple(ops)
        self.host, self.port, self.period = host, port, 1.0 / rate_hz
        self.loop = asyncio.new_event_loop()
        self.clients: set[web.WebSocketResponse] = set()
        self._busy: set[web.WebSocketResponse] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name='web console', daemon=True)
        self.sent = 0                   # views sent (all pages)

    # ------------------------------------------------------------------------------------------- life
    def start(self, timeout: float = 10.0) -> int:
        """Bind and serve; returns the port. ServerError with the reason when the address cannot be bound."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServerError(f'the server did not start within {timeout:g} s')
        if self._error is not None:
            self._thread.join(timeout=2.0)
            raise self._error
        return self.port

    def stop(self) -> None:
        if self._stopping is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout=5.0)

    def url(self, host: str | None = None) -> str:
        return f'http://{host or ("127.0.0.1" if self.host in ("0.0.0.0", "") else self.host)}:{self.port}/'

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_get('/', self._index)
        app.router.add_get('/ws', self._websocket)
        app.router.add_static('/static/', PAGE_DIR, show_index=False)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
            await site.start()
        except OSError as exc:
            why = 'it is in use (another console?)' if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
            self._error = ServerError(f'cannot serve on {self.host}:{self.port}: {why}; choose another port '
                                      '(0 = any free port)')
            self._ready.set()
            return
        self.port = int(runner.addresses[0][1])
        self._ready.set()
        sender = asyncio.ensure_future(self._broadcast())
        await self._stopping.wait()
        sender.cancel()
        for ws in list(self.clients):
            await ws.close()
        await runner.cleanup()

    # ------------------------------------------------------------------------------------------- HTTP
    async def _index(self, _request) -> web.FileResponse:
        return web.FileResponse(PAGE_DIR / 'index.html', headers={'Cache-Control': 'no-store'})

    async def _websocket(self, request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=10.0, max_msg_size=1 << 16)
        await ws.prepare(request)
        await ws.send_str(json.dumps(self.hello))
        self.clients.add(ws)
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    asyncio.ensure_future(self._command(ws, msg.data))
        finally:
            self.clients.discard(ws)
        return ws

    async def _command(self, ws, text: str) -> None:
        ident = None
        try:
            command = parse(text, self.cubes, self.ops)
            ident = command.id
            ok, answer = await asyncio.wait_for(self.handle(command), ANSWER_TIMEOUT_S)
        except CommandError as exc:
            ident, ok, answer = exc.id, False, f'not sent: {exc}'
        except asyncio.TimeoutError:
            ok, answer = False, f'no answer within {ANSWER_TIMEOUT_S:g} s'
        if not ws.closed:
            await ws.send_str(json.dumps({'type': 'reply', 'id': ident, 'ok': ok, 'text': answer}))

    # ------------------------------------------------------------------------------------------- views
    async def _broadcast(self) -> None:
        next_t = time.monotonic()
        while True:
            next_t += self.period
            await asyncio.sleep(max(0.0, next_t - time.monotonic()))
            next_t = max(next_t, time.monotonic() - self.period)       # after a stall: no burst of views
            ready = [ws for ws in self.clients if ws not in self._busy and not ws.closed]
            if not ready:
                continue
            text = json.dumps(self.view(), separators=(',', ':'))
            for ws in ready:
                self._busy.add(ws)
                asyncio.ensure_future(self._send(ws, text))

    async def _send(self, ws, text: str) -> None:
        try:
            await ws.send_str(text)
            self.sent += 1
        except (ConnectionError, RuntimeError):
            pass                        # the page went away; its handler removes it
        finally:
            self._busy.discard(ws)
