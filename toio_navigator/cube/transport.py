"""The link to one cube: an async byte pipe with the same behaviour for a real (bleak) and a simulated cube.

A :class:`Transport` connects, writes bytes to a characteristic, reads, and delivers notifications. The part
that is the same for every backend lives here:

* write routing: ``response=None`` picks the write type the characteristic supports (motor: without response,
  everything else: with response); an explicit type the characteristic does not support is an error -- the
  same error on both backends, so a driver that works on the simulator does not fail on a cube;
* the reconnect policy: when the link drops without :meth:`Transport.disconnect`, the transport reconnects with
  exponential backoff, re-subscribes every notification and re-sends every setting written to the
  configuration characteristic (the cube forgets them on disconnect);
* link-state callbacks and timeouts on every operation, so nothing waits forever on a dead link.

Backends implement the ``_open/_close/_write/_read/_subscribe`` primitives and call :meth:`Transport._link_lost`
when their link drops by itself.
"""
from __future__ import annotations

import abc
import asyncio
import contextlib
import enum
import logging
import random
import time
from dataclasses import dataclass
from typing import AsyncContextManager, Callable, Iterator

from toio_navigator.cube.protocol import (
    PROPERTIES,
    SETTING_COMMANDS,
    Characteristic,
    CharLike,
    Property,
    ProtocolError,
    characteristic,
)

_log = logging.getLogger(__name__)

NotifyCallback = Callable[[Characteristic, bytes], None]


class TransportError(ConnectionError):
    """The link cannot do what was asked (not connected, timed out, unsupported write, backend failure)."""


class RadioUnavailable(TransportError):
    """No radio to make a link with (no system bus, no BlueZ on it, no adapter): the message says which, and what
    to do; nothing a retry soon would change."""


class LinkState(enum.Enum):
    DISCONNECTED = 'disconnected'
    CONNECTING = 'connecting'
    CONNECTED = 'connected'
    RECONNECTING = 'reconnecting'
    FAILED = 'failed'          # reconnecting gave up after BackoffPolicy.max_attempts


LinkStateCallback = Callable[[LinkState], None]


@dataclass(frozen=True)
class BackoffPolicy:
    """Delays between reconnect attempts: initial, initial*factor, ... capped at max_delay_s."""
    initial_s: float = 0.5
    factor: float = 2.0
    max_delay_s: float = 8.0
    max_attempts: int | None = None   # None: keep trying until disconnect() is called
    connect_timeout_s: float = 10.0
    jitter: float = 0.0               # each delay is drawn within +- this share of it

    def __post_init__(self) -> None:
        if self.initial_s < 0 or self.factor < 1 or self.max_delay_s < self.initial_s or self.connect_timeout_s <= 0:
            raise ValueError(f'invalid backoff policy {self!r}: need 0 <= initial <= max, factor >= 1, timeout > 0')
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f'max_attempts must be >= 1 or None, got {self.max_attempts}')
        if not 0 <= self.jitter < 1:
            raise ValueError(f'jitter must be within [0, 1), got {self.jitter}')

    def delays(self) -> Iterator[float]:
        """The delays before each retry. With jitter, drawn independently per process (drivers that failed
        together, e.g. on one busy adapter, do not retry together)."""
        delay, attempt = self.initial_s, 0
        while self.max_attempts is None or attempt < self.max_attempts:
            yield delay * random.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else delay
            attempt += 1
            delay = min(delay * self.factor, self.max_delay_s)


class WriteTimes:
    """How long writes took until the link accepted them (a write with response: until the cube answered), per
    kind, since the last :meth:`report`."""

    def __init__(self) -> None:
        self._spans: dict[bool, list[float]] = {True: [], False: []}

    def add(self, seconds: float, response: bool) -> None:
        spans = self._spans[response]
        if len(spans) < 10000:
            spans.append(seconds)

    def report(self) -> dict[str, str]:
        """'write_latency_ms' (with response: the cube's answer is back), 'command_latency_ms' (without: handed to
        the radio), each 'mean/max' over the writes since the last report ('' if there were none)."""
        out = {}
        for response, key in ((True, 'write_latency_ms'), (False, 'command_latency_ms')):
            spans = self._spans[response]
            out[key] = f'{1000 * sum(spans) / len(spans):.1f}/{1000 * max(spans):.1f}' if spans else ''
            self._spans[response] = []
        return out


def resolve_write(char: CharLike, response: bool | None) -> tuple[Characteristic, bool]:
    """The characteristic and the write type to use; TransportError if the characteristic cannot be written so."""
    try:
        resolved = characteristic(char)
    except ProtocolError as exc:
        raise TransportError(str(exc)) from None
    props = PROPERTIES[resolved]
    if response is None:
        response = not (props & Property.WRITE_WITHOUT_RESPONSE)
    needed = Property.WRITE if response else Property.WRITE_WITHOUT_RESPONSE
    if not props & needed:
        kind = 'with' if response else 'without'
        raise TransportError(f'{resolved.name} does not support write {kind} response')
    return resolved, response


class Transport(abc.ABC):
    """One cube link. Subclasses provide the primitives; this class adds routing, reconnects and timeouts."""

    def __init__(self, *, backoff: BackoffPolicy | None = None, auto_reconnect: bool = True,
                 io_timeout_s: float = 5.0) -> None:
        if io_timeout_s <= 0:
            raise ValueError(f'io_timeout_s must be > 0, got {io_timeout_s}')
        self.backoff = backoff or BackoffPolicy()
        self.auto_reconnect = auto_reconnect
        self.io_timeout_s = io_timeout_s
        self._state = LinkState.DISCONNECTED
        self._state_callbacks: list[LinkStateCallback] = []
        self._subscriptions: dict[Characteristic, NotifyCallback] = {}
        # (characteristic, type byte) -> the last setting written; replayed after every (re)connect
        self._settings: dict[tuple[Characteristic, int], bytes] = {}
        self._reconnect_task: asyncio.Task | None = None
        self._user_closed = True
        self.reconnect_count = 0
        self.links_lost = 0                    # the link dropped by itself (not through disconnect())
        self.write_times = WriteTimes()

    # ---------------------------------------------------------------- backend primitives
    @abc.abstractmethod
    async def _open(self) -> None: ...

    @abc.abstractmethod
    async def _close(self) -> None: ...

    @abc.abstractmethod
    async def _write(self, char: Characteristic, data: bytes, response: bool) -> None: ...

    @abc.abstractmethod
    async def _read(self, char: Characteristic) -> bytes: ...

    @abc.abstractmethod
    async def _subscribe(self, char: Characteristic, deliver: Callable[[bytes], None]) -> None: ...

    @abc.abstractmethod
    async def _unsubscribe(self, char: Characteristic) -> None: ...

    # ---------------------------------------------------------------- state
    @property
    def link_state(self) -> LinkState:
        return self._state

    @property
    def is_connected(self) -> bool:
        return self._state is LinkState.CONNECTED

    def add_link_state_callback(self, callback: LinkStateCallback) -> None:
        self._state_callbacks.append(callback)

    def _set_state(self, state: LinkState) -> None:
        if state is self._state:
            return
        self._state = state
        for callback in list(self._state_callbacks):
            try:
                callback(state)
            except Exception:  # a broken listener must not break the link
                _log.exception('link-state callback failed')

    @property
    def remembered_settings(self) -> list[bytes]:
        """Configuration writes that will be re-sent after a reconnect, oldest first."""
        return list(self._settings.values())

    # ---------------------------------------------------------------- public API
    async def connect(self, timeout: float | None = None) -> None:
        """Connect, (re)subscribe and re-send settings. TransportError on failure or timeout."""
        if self.is_connected:
            return
        await self._cancel_reconnect()   # an explicit connect takes over from a running reconnect loop
        self._user_closed = False
        self._set_state(LinkState.CONNECTING)
        try:
            await self._establish(timeout or self.backoff.connect_timeout_s)
        except BaseException:
            self._set_state(LinkState.DISCONNECTED)
            raise

    async def disconnect(self) -> None:
        """Close the link on purpose: no reconnect follows."""
        self._user_closed = True
        await self._cancel_reconnect()
        if self._state is not LinkState.DISCONNECTED:
            try:
                await asyncio.wait_for(self._close(), self.io_timeout_s)
            except Exception as exc:  # closing a dead link may fail; it is closed either way
                _log.debug('close failed: %s', exc)
        self._set_state(LinkState.DISCONNECTED)

    async def write(self, char: CharLike, data: bytes, response: bool | None = None) -> None:
        """Write bytes; ``response=None`` uses the write type the characteristic supports.

        A setting written to the configuration characteristic is remembered (the newest per command type) and
        re-sent after every reconnect -- also when this write itself fails because the link is down.
        """
        resolved, response = resolve_write(char, response)
        data = bytes(data)
        if resolved is Characteristic.CONFIGURATION and data and data[0] in SETTING_COMMANDS:
            self._settings.pop((resolved, data[0]), None)   # keep order of last write
            self._settings[(resolved, data[0])] = data
        self._require_connected()
        started = time.monotonic()
        await self._guard(self._write(resolved, data, response), f'write to {resolved.name}')
        self.write_times.add(time.monotonic() - started, response)

    async def read(self, char: CharLike) -> bytes:
        resolved = self._resolve(char, Property.READ, 'read')
        self._require_connected()
        return await self._guard(self._read(resolved), f'read of {resolved.name}')

    async def start_notify(self, char: CharLike, callback: NotifyCallback) -> None:
        """Deliver every notification of ``char`` as callback(characteristic, bytes); kept across reconnects."""
        resolved = self._resolve(char, Property.NOTIFY, 'notify')
        self._subscriptions[resolved] = callback
        if self.is_connected:
            await self._guard(self._subscribe(resolved, self._deliverer(resolved)), f'subscribe to {resolved.name}')

    async def stop_notify(self, char: CharLike) -> None:
        resolved = self._resolve(char, Property.NOTIFY, 'notify')
        if self._subscriptions.pop(resolved, None) is not None and self.is_connected:
            await self._guard(self._unsubscribe(resolved), f'unsubscribe from {resolved.name}')

    async def wait_connected(self, timeout: float) -> bool:
        """True once connected (e.g. after a reconnect) with the subscriptions and settings restored (a reconnect
        marks the link connected before it re-sends them), False after ``timeout`` seconds or if reconnecting
        failed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.is_connected or (self._reconnect_task is not None
                                        and self._reconnect_task is not asyncio.current_task()):
            if self._state in (LinkState.FAILED, LinkState.DISCONNECTED) and self._reconnect_task is None:
                return False
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(min(0.01, max(0.0, deadline - loop.time())))
        return True

    # ---------------------------------------------------------------- internals
    async def _cancel_reconnect(self) -> None:
        task, self._reconnect_task = self._reconnect_task, None
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    def _resolve(self, char: CharLike, needed: Property, what: str) -> Characteristic:
        try:
            resolved = characteristic(char)
        except ProtocolError as exc:
            raise TransportError(str(exc)) from None
        if not PROPERTIES[resolved] & needed:
            raise TransportError(f'{resolved.name} does not support {what}')
        return resolved

    def _require_connected(self) -> None:
        if not self.is_connected:
            raise TransportError(f'not connected (link {self._state.value})')

    async def _guard(self, operation, what: str):
        try:
            return await asyncio.wait_for(operation, self.io_timeout_s)
        except asyncio.TimeoutError:
            raise TransportError(f'{what} timed out after {self.io_timeout_s} s') from None
        except (TransportError, asyncio.CancelledError):
            raise
        except Exception as exc:  # backend errors (BleakError, OSError, ...) become one error type
            raise TransportError(f'{what} failed: {exc}') from exc

    def _deliverer(self, char: Characteristic) -> Callable[[bytes], None]:
        def deliver(data: bytes) -> None:
            callback = self._subscriptions.get(char)
            if callback is not None:
                try:
                    callback(char, bytes(data))
                except Exception:  # a broken subscriber must not break the link (or the simulator stepping it)
                    _log.exception('notification callback for %s failed', char.name)
        return deliver

    def _attempt(self) -> AsyncContextManager:
        """What a connection attempt holds while it runs, taken before the attempt's timeout starts (a BLE
        adapter's one attempt at a time: :mod:`toio_navigator.cube.ble_adapters`); nothing by default."""
        return contextlib.nullcontext()

    async def _establish(self, timeout: float) -> None:
        async with self._attempt():
            try:
                await asyncio.wait_for(self._open(), timeout)
            except asyncio.TimeoutError:
                raise TransportError(f'connect timed out after {timeout} s') from None
            except TransportError:
                raise
            except Exception as exc:
                raise TransportError(f'connect failed: {exc}') from exc
        self._set_state(LinkState.CONNECTED)
        try:
            for char in list(self._subscriptions):
                await self._guard(self._subscribe(char, self._deliverer(char)), f'subscribe to {char.name}')
            for (char, _type), data in list(self._settings.items()):
                await self._guard(self._write(char, data, True), f're-sending setting {data.hex(" ")}')
        except BaseException:
            self._set_state(LinkState.DISCONNECTED)
            try:
                await asyncio.wait_for(self._close(), self.io_timeout_s)
            except Exception:
                pass
            raise

    async def _pause_before_retry(self, delay: float) -> None:
        """Wait ``delay`` seconds before the next reconnect attempt (a backend may end the wait early when it
        knows an attempt can succeed now)."""
        await asyncio.sleep(delay)

    def _link_lost(self) -> None:
        """Backends call this when the link drops by itself (not through disconnect())."""
        if self._user_closed or self._state in (LinkState.RECONNECTING, LinkState.DISCONNECTED):
            return
        self.links_lost += 1
        if not self.auto_reconnect:
            self._set_state(LinkState.DISCONNECTED)
            return
        self._set_state(LinkState.RECONNECTING)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called from a foreign thread (bleak callbacks may be) -- nothing to schedule on
            self._set_state(LinkState.FAILED)
            return
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = loop.create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        try:
            for delay in self.backoff.delays():
                await self._pause_before_retry(delay)
                if self._user_closed:
                    return
                try:
                    await self._establish(self.backoff.connect_timeout_s)
                except TransportError as exc:
                    _log.info('reconnect attempt failed: %s', exc)
                    self._set_state(LinkState.RECONNECTING)
                    continue
                self.reconnect_count += 1
                return
            self._set_state(LinkState.FAILED)
        finally:
            if self._reconnect_task is asyncio.current_task():
                self._reconnect_task = None
