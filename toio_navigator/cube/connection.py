"""The driver's side of the link to one cube, without ROS: connect with backoff, learn the cube's firmware,
configure the cube for it, and say what the link is.

The link counts as connected only once the firmware version is known (answered, or assumed after three
unanswered requests), so a command that needs a firmware feature is never judged before that. After the first
connection the transport reconnects by itself (re-subscribing and re-sending settings); each time the link comes
back the version is asked again and the cube configured again.

Threads: everything here runs on the driver's asyncio loop, except :meth:`CubeConnection.start`,
:meth:`~CubeConnection.version_answered` and :meth:`~CubeConnection.supports` (any thread). The
:class:`ConnectionEvents` are called on the loop, and notifications on whichever thread the transport delivers
them (the simulated link: the ROS executor's).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable, Protocol

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.transport import BackoffPolicy, LinkState, RadioUnavailable, Transport, TransportError

#: the characteristics whose notifications the driver subscribes to
NOTIFYING = (p.Characteristic.ID_INFORMATION, p.Characteristic.MOTOR_CONTROL, p.Characteristic.SENSOR_INFORMATION,
             p.Characteristic.BUTTON_INFORMATION, p.Characteristic.BATTERY_INFORMATION, p.Characteristic.CONFIGURATION)
#: read once after every connect: they notify only on change
READ_AFTER_CONNECT = (p.Characteristic.BATTERY_INFORMATION, p.Characteristic.BUTTON_INFORMATION,
                      p.Characteristic.SENSOR_INFORMATION)
VERSION_ATTEMPTS = 3


class LinkSettings(Protocol):
    """What a :class:`CubeConnection` needs of its driver's settings (the driver's DriverConfig has it)."""
    cube: str
    transport: str
    backoff: BackoffPolicy
    version_timeout_s: float

    def configuration_writes(self, version: firmware.Version,
                             supports: Callable[[firmware.Feature], bool]) -> list[bytes]:
        """The configuration writes for a cube of ``version``."""


@dataclass(frozen=True)
class FoundLink:
    """A transport to the driver's cube (not yet connected), the signal strength it was found with (None: not
    scanned for) and how to give the cube up when the driver ends (e.g. a claim on it)."""
    transport: Transport
    rssi: int | None = None
    release: Callable[[], None] = lambda: None


#: () -> the link to the driver's cube
TransportMaker = Callable[[], Awaitable[FoundLink]]


class ConnectionEvents(Protocol):
    """What a :class:`CubeConnection` tells its driver."""

    def link_changed(self, state_too: bool) -> None:
        """The reported link, its detail or the firmware changed; ``state_too``: the link itself changed (not
        only what is known about it)."""

    def notification(self, char: p.Characteristic, data: bytes) -> None:
        """A notification (or the answer to a read) from the cube."""

    def log(self, level: int, text: str) -> None:
        """Something to tell the user (a ``logging`` level)."""


class CubeConnection:
    """One cube's link for its driver. ``transport``: a ready transport (tests, the simulated link); otherwise
    ``make_transport`` is awaited for one, with the reconnect backoff between failed tries."""

    def __init__(self, config: LinkSettings, events: ConnectionEvents, loop: asyncio.AbstractEventLoop,
                 transport: Transport | None = None, make_transport: TransportMaker | None = None) -> None:
        if transport is None and make_transport is None:
            raise ValueError('a CubeConnection needs a transport or a way to make one')
        self.config, self.events, self.loop = config, events, loop
        self.cube = config.cube
        self.transport = transport
        self._make_transport = make_transport
        self._release: Callable[[], None] = lambda: None
        self.link = LinkState.DISCONNECTED     # the transport's
        self.retrying = False                  # the first connection failed and is being tried again
        self.version_known = False             # the firmware version is known since the link last came up
        self.detail = ''
        self.firmware = ''                     # '' until the cube answered (or was assumed to be ASSUMED_VERSION)
        self._assumed = False                  # the version was assumed after the cube did not answer in time
        self.unsupported: dict[str, str] = {}  # feature -> why it is off (reported once)
        self.rssi: int | None = None           # of the advertisement the cube was found by (a BLE scan)
        self.interval_ms: float | None = None  # the link's connection interval, as the cube reports it (>= 2.4.0)
        self._version_event: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False

    # ------------------------------------------------------------------------------------------------ state
    @property
    def reported(self) -> LinkState:
        """The link as the driver reports it: CONNECTED only once the firmware version is known."""
        if self.link is LinkState.CONNECTED:
            return LinkState.CONNECTED if self.version_known else LinkState.CONNECTING
        if self.link is LinkState.DISCONNECTED and self.retrying:
            return LinkState.RECONNECTING
        return self.link

    @property
    def reconnects(self) -> int:
        return getattr(self.transport, 'reconnect_count', 0)

    def supports(self, feature: firmware.Feature) -> bool:
        """True if the cube's firmware has ``feature``; otherwise say so once (warning) and return False."""
        if feature.available(p.parse_version(self.firmware or firmware.ASSUMED_VERSION)):
            return True
        if feature.name not in self.unsupported:
            why = f'needs firmware >= {feature.since_text}, cube has {self.firmware or "unknown"}'
            self.unsupported[feature.name] = why
            self.events.log(logging.WARNING, f'{self.cube}: {feature.name} disabled: {why}')
        return False

    def diagnostics(self) -> dict[str, str]:
        """The link's side of the driver's diagnostics, with its quality: aborts (the link dropped by itself),
        write latencies since the last call, the adapter and the connection interval (BLE)."""
        t = self.transport
        out = {'link_state': self.reported.value, 'link_detail': self.detail, 'transport': self.config.transport,
               'rssi_dbm': '' if self.rssi is None else str(self.rssi), 'firmware_version': self.firmware,
               'reconnects': str(self.reconnects), 'link_aborts': str(getattr(t, 'links_lost', 0))}
        if t is not None:
            out.update(t.write_times.report())
        if self.config.transport == 'ble':
            out['ble_adapter'] = getattr(t, 'adapter', '') or ''
            out['connection_interval_ms'] = '' if self.interval_ms is None else f'{self.interval_ms:g}'
        return out

    def interval_reported(self, interval_1250us: int) -> None:
        """The cube's answer to 0x32 (or, from v2.5.0, its own report of a changed interval)."""
        self.interval_ms = interval_1250us * 1.25

    # ------------------------------------------------------------------------------------------------ life
    def start(self) -> None:
        """Begin connecting (from any thread)."""
        self.loop.call_soon_threadsafe(self._spawn, self._run())

    async def shutdown(self, stop_cube: Callable[[], Awaitable[bool]]) -> bool:
        """On the loop: stop the cube (``stop_cube()``: True if the stop was written), end connecting and
        configuring for good, disconnect and give the cube up. False if a cube that was connected may not have
        got the stop. The stop goes first: nothing that is still under way can hold it up."""
        self._stopping = True
        was_connected = self.transport is not None and self.transport.is_connected
        stopped = await stop_cube()
        await self._end_tasks()
        t = self.transport          # (a search for the cube may have found it meanwhile)
        if t is None:
            return True
        try:
            await t.disconnect()
        finally:
            self._release()
        return stopped or not was_connected

    async def _end_tasks(self) -> None:
        """Cancel the connecting and configuring, again until each has ended. One cancel is not always enough:
        Python 3.11's ``asyncio.wait_for`` drops a cancel that comes just as what it waits for is done (a
        version answer), and the task goes on to wait for reads nobody answers once the driver is stopping."""
        running = {task for task in self._tasks if task is not asyncio.current_task()}
        while running:
            for task in running:
                task.cancel()
            done, running = await asyncio.wait(running, timeout=0.05)
            for task in done:
                if not task.cancelled():
                    task.exception()    # retrieved: an ended task's error is no news on the way out

    def _spawn(self, coroutine) -> None:
        if self._stopping:
            coroutine.close()
            return
        task = self.loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self) -> None:
        """Connect with backoff; afterwards the transport reconnects by itself."""
        self._version_event = asyncio.Event()
        delays = self.config.backoff.delays()
        subscribed = False
        while True:
            try:
                if self.transport is None:
                    found = await self._make_transport()
                    self.transport, self.rssi, self._release = found.transport, found.rssi, found.release
                if not subscribed:
                    self.transport.add_link_state_callback(self.on_transport_state)
                    for char in NOTIFYING:
                        await self.transport.start_notify(char, self.events.notification)
                    subscribed = True
                await self.transport.connect()
                self.retrying = False
                return
            except TransportError as exc:
                self._connect_failed(exc)
                delay = next(delays, None)
                if delay is None:
                    self.retrying = False
                    self.on_transport_state(LinkState.FAILED)
                    return
                self.retrying = True
                self.events.link_changed(state_too=False)
                await asyncio.sleep(delay)

    def _connect_failed(self, exc: TransportError) -> None:
        """Say why the connection failed: once while the same reason repeats (a full adapter, no BlueZ), so the
        log shows one clear line instead of the same line at every retry."""
        detail = f'connect failed: {exc}'
        if detail != self.detail:
            self.events.log(logging.ERROR if isinstance(exc, RadioUnavailable) else logging.WARNING,
                            f'{self.cube}: {detail}')
        self.detail = detail

    def on_transport_state(self, state: LinkState) -> None:
        """Transport callback (loop thread)."""
        self.link = state
        self.version_known = False
        self._assumed = False
        if self._stopping:
            return
        if state is LinkState.CONNECTED:
            self.detail = 'connected'
            self._spawn(self._configure())
        elif state is LinkState.RECONNECTING:
            self.detail = 'link lost, reconnecting with backoff'
        elif state is LinkState.FAILED:
            self.detail = self.detail or 'gave up reconnecting'
            self.events.log(logging.ERROR, f'{self.cube}: link failed: {self.detail}')
        self.events.link_changed(state_too=True)

    # ------------------------------------------------------------------------------------------------ handshake
    async def _configure(self) -> None:
        """Ask the version, configure notifications for it, read what only notifies on change."""
        t = self.transport
        try:
            version = await self._query_version()
            for data in self.config.configuration_writes(p.parse_version(version), self.supports):
                await t.write(p.Characteristic.CONFIGURATION, data)
            if self.config.transport == 'ble' and firmware.CONNECTION_INTERVAL.available(p.parse_version(version)):
                # the interval the central gave this link, for the diagnostics (a simulated link has none)
                await t.write(p.Characteristic.CONFIGURATION, p.ConfigWrite.request_connection_interval(True).encode())
            for char in READ_AFTER_CONNECT:
                try:
                    self.events.notification(char, await t.read(char))
                except TransportError as exc:
                    self.events.log(logging.INFO, f'{self.cube}: initial read of {char.name} failed: {exc}')
        except TransportError as exc:
            self.events.log(logging.WARNING, f'{self.cube}: configuring the cube failed: {exc}')
            return
        self.events.log(logging.INFO, f'{self.cube}: connected, firmware {self.firmware}')
        self.events.link_changed(state_too=False)

    async def _query_version(self) -> str:
        event = self._version_event
        for _attempt in range(VERSION_ATTEMPTS):
            event.clear()
            await self.transport.write(p.Characteristic.CONFIGURATION,
                                       p.ConfigWrite.request_protocol_version().encode())
            try:
                await asyncio.wait_for(event.wait(), self.config.version_timeout_s)
                return self.firmware
            except asyncio.TimeoutError:
                continue
        self.events.log(logging.WARNING, f'{self.cube}: no answer to the protocol-version request; assuming '
                                         f'{firmware.ASSUMED_VERSION}')
        self._assumed = True
        self._firmware_known(firmware.ASSUMED_VERSION)
        return firmware.ASSUMED_VERSION

    def version_answered(self, version: str) -> None:
        """The cube's answer to the version request (any thread). An answer that comes after the version was
        assumed (a busy host, a slow link) configures the cube again for what it really has: configured for the
        assumed 2.0.0, a standing cube would pause its position notifications and look stale for good."""
        late = self._assumed and version != self.firmware
        self._assumed = False
        self._firmware_known(version)
        if self._version_event is not None:
            self.loop.call_soon_threadsafe(self._version_event.set)
        if late:
            self.loop.call_soon_threadsafe(self._spawn, self._reconfigure(version))

    async def _reconfigure(self, version: str) -> None:
        try:
            for data in self.config.configuration_writes(p.parse_version(version), self.supports):
                await self.transport.write(p.Characteristic.CONFIGURATION, data)
        except TransportError as exc:
            self.events.log(logging.WARNING, f'{self.cube}: configuring the cube for firmware {version} failed: {exc}')
            return
        self.events.log(logging.INFO, f'{self.cube}: the cube answered late (firmware {version}): configured for it')

    def _firmware_known(self, version: str) -> None:
        self.firmware = version
        self.version_known = self.link is LinkState.CONNECTED
        self.events.link_changed(state_too=False)
