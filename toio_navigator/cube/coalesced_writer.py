"""Writes to one characteristic at a pace the cube accepts: the newest write wins while an older one waits
(:class:`CoalescedWriter`), or what comes too soon is dropped (:class:`RateLimit`).

Plain asyncio (no ROS): the cube driver uses one writer for the motor, one for the light and one for the sound
characteristic.
"""
from __future__ import annotations

import asyncio
import math
import time
from typing import Awaitable, Callable

from toio_navigator.cube.protocol import Characteristic, ProtocolError
from toio_navigator.cube.transport import Transport, TransportError


def characteristic_writer(transport: Callable[[], Transport | None],
                          char: Characteristic) -> Callable[[bytes], Awaitable[None]]:
    """The write function of a writer for ``char`` on whatever transport ``transport()`` gives at that moment
    (a driver's transport may not exist yet, or be down)."""
    async def write(data: bytes) -> None:
        link = transport()
        if link is None or not link.is_connected:
            raise TransportError('not connected')
        await link.write(char, data)
    return write


class CoalescedWriter:
    """Writes to one characteristic at most once per ``min_interval_s``; a newer write replaces a waiting one.

    ``submit`` may be called from any thread; the writing happens on ``loop``. Counters feed the diagnostics.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, write: Callable[[bytes], Awaitable[None]],
                 min_interval_s: float) -> None:
        self._loop, self._write, self.min_interval_s = loop, write, min_interval_s
        self._pending: bytes | None = None
        self._task: asyncio.Task | None = None
        self._last = -math.inf
        self.writes = self.coalesced = self.failed = 0
        self.delayed = 0        # writes held back to keep min_interval_s
        self.expired = 0        # writes whose function said there was nothing left to write
        self.last_error = ''
        self._finished = False

    def submit(self, data: bytes | Callable[[], bytes | None]) -> None:
        """Queue ``data``, or a function giving the bytes at the moment of writing (None: nothing to write any
        more, e.g. a command that expired while it waited)."""
        self._loop.call_soon_threadsafe(self._put, data)

    async def finish(self, data: bytes) -> bool:
        """On the loop: make ``data`` the last write (it replaces a waiting one and keeps ``min_interval_s``
        after the previous write, or the cube would ignore it), wait until it is written and ignore every later
        submit. True if it was written. The driver's stop on the way out."""
        self._put(data)
        self._finished = True
        failed = self.failed
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})
        return self._pending is None and self.failed == failed

    def _put(self, data: bytes | Callable[[], bytes | None]) -> None:
        if self._finished:
            return
        if self._pending is not None:
            self.coalesced += 1
        self._pending = data
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending is not None:
            wait = self._last + self.min_interval_s - self._loop.time()
            if wait > 0:
                self.delayed += 1
                await asyncio.sleep(wait)
            data, self._pending = self._pending, None
            try:
                if callable(data):
                    data = data()
                    if data is None:
                        self.expired += 1
                        continue
                await self._write(data)
                self.writes += 1
            except (TransportError, ProtocolError) as exc:
                self.failed += 1
                self.last_error = str(exc)
            self._last = self._loop.time()


class RateLimit:
    """Lets one event through per ``min_interval_s`` and counts the ones it drops (sounds: a sound cut short by
    the next one is worse than a sound left out)."""

    def __init__(self, min_interval_s: float) -> None:
        self.min_interval_s = min_interval_s
        self._last = -math.inf
        self.dropped = 0

    def allow(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.min_interval_s:
            self.dropped += 1
            return False
        self._last = now
        return True
