"""The asyncio loop that every cube driver of a process shares, running on a daemon thread of its own.

bleak wants one loop per process (it shares one D-Bus connection per loop, and BlueZ gives each connection one
discovery); the drivers' writers, the transports' reconnects and the firmware handshakes all run on it. Plain
asyncio, no ROS.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Coroutine, TypeVar

T = TypeVar('T')

_loop_lock = threading.Lock()
_shared_loop: asyncio.AbstractEventLoop | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process-wide loop of all drivers, started on first use (and again if someone closed it)."""
    global _shared_loop
    with _loop_lock:
        if _shared_loop is None or _shared_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name='cube_driver_asyncio', daemon=True).start()
            _shared_loop = loop
        return _shared_loop


def run_bounded(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[object, object, T], timeout_s: float) -> T:
    """Run ``coroutine`` on ``loop`` from another thread and return its result. After ``timeout_s`` it is
    cancelled, and this waits (up to ``timeout_s`` more) until it has really ended -- so nothing it does runs on
    after the caller moves on (e.g. destroys what it uses) -- then raises TimeoutError."""
    ended = threading.Event()

    async def tracked() -> T:
        try:
            return await coroutine
        finally:
            ended.set()
    future = asyncio.run_coroutine_threadsafe(tracked(), loop)
    try:
        return future.result(timeout_s)
    except TimeoutError:
        future.cancel()
        ended.wait(timeout_s)
        raise
