"""The bleak transport: scan for cubes (:mod:`toio_navigator.cube.ble_scan`) and talk to one over Bluetooth LE.

bleak is imported lazily, and the client and scanner are injected through factories, so the logic here
(routing, reconnect with backoff, re-sent settings, early-exit scanning) runs in tests without an adapter; the
real bleak calls run in tests against the virtual BlueZ (``toio_navigator.sim.bluez``).

Five things BlueZ asks of its clients that bleak leaves to us:

* one discovery per D-Bus client and adapter: bleak shares one D-Bus connection per asyncio loop, so two scans
  at once in one process make BlueZ answer the second with "InProgress". :func:`scan` therefore runs one scan at
  a time per loop and adapter (several drivers in one process take turns).
* one LE connection attempt per adapter, from any program, and a limited number of links per adapter: with
  ``adapters`` (:class:`~toio_navigator.cube.ble_adapters.AdapterChoice`) every attempt picks an adapter with a
  free slot and holds that adapter's attempt lock, shared by every driver of the machine.
* BlueZ forgets a device some time after it disconnects (and a restarted BlueZ knows none): a device object
  from an old scan then no longer exists, and connecting to it fails for ever. After a failed attempt (or
  after BlueZ restarted) the next attempt therefore scans for the cube's address and connects to what it found.
* bleak notices a dead D-Bus, not a BlueZ that crashed or restarted while the bus lives on: its clients would
  keep reporting a link that is gone. :class:`BluezWatch` follows the owner of ``org.bluez`` on the system bus
  and tells every transport of the loop when BlueZ leaves (the link is lost) or comes back (retry now).
* bleak (3.1) can lose a device for good: when BlueZ adds it just as bleak's D-Bus connection starts, bleak
  handles its InterfacesAdded and then replaces its whole cache with the GetManagedObjects reply made before
  the device existed, and it drops every later advert of a device it does not know. A scan that misses a
  wanted cube therefore asks BlueZ to remove that cube's device if BlueZ has it, not connected and not paired
  (:func:`forget_unheard`): its next advert adds it again, and bleak hears that one.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import weakref
from typing import Any, Callable, Protocol

from toio_navigator.cube.ble_adapters import AdapterChoice, attempt_lock, is_full_error, learn_limit
from toio_navigator.cube.ble_scan import (  # noqa: F401 (the transport's public face: scan and what it finds)
    FoundCube,
    ScannerFactory,
    bleak_scanner_factory,
    scan,
)
from toio_navigator.cube.protocol import Characteristic
from toio_navigator.cube.transport import BackoffPolicy, Transport, TransportError

_log = logging.getLogger(__name__)


class BleClient(Protocol):
    """The part of bleak.BleakClient this transport uses."""
    async def connect(self) -> Any: ...
    async def disconnect(self) -> Any: ...
    async def write_gatt_char(self, char: str, data: bytes, response: bool) -> None: ...
    async def read_gatt_char(self, char: str) -> bytes | bytearray: ...
    async def start_notify(self, char: str, callback: Callable[[Any, bytearray], None]) -> None: ...
    async def stop_notify(self, char: str) -> None: ...


# (address_or_device, disconnected_callback(client)) -> client
ClientFactory = Callable[[Any, Callable[[Any], None]], BleClient]


def bleak_client_factory(adapter: str | None = None, timeout_s: float = 10.0) -> ClientFactory:
    def make(target: Any, on_disconnect: Callable[[Any], None]) -> BleClient:
        from bleak import BleakClient  # noqa: PLC0415 lazy: the simulator and its tests run without bleak
        kwargs: dict[str, Any] = {'timeout': timeout_s}
        if adapter:
            kwargs['bluez'] = {'adapter': adapter}
        return BleakClient(target, disconnected_callback=on_disconnect, **kwargs)
    return make


class BleTransport(Transport):
    """A cube over bleak. ``target`` is an address (MAC, or a CoreBluetooth UUID on macOS) or a bleak BLEDevice.

    Connects to the device it knows (the BLEDevice given, or the last one a scan found); a connect to an address,
    and the attempt after a failed one or after BlueZ restarted, first scans for the address (``scanner_factory``;
    by default bleak's, unless a client factory is injected without one: then the target goes to the client as
    it is). ``watch_bluez`` (default: on Linux with bleak's own client) follows BlueZ itself on the system bus,
    see :class:`BluezWatch`.
    """

    def __init__(self, target: Any, *, client_factory: ClientFactory | None = None, adapter: str | None = None,
                 backoff: BackoffPolicy | None = None, auto_reconnect: bool = True, io_timeout_s: float = 5.0,
                 scanner_factory: ScannerFactory | None = None, watch_bluez: bool | None = None,
                 adapters: AdapterChoice | None = None) -> None:
        super().__init__(backoff=backoff, auto_reconnect=auto_reconnect, io_timeout_s=io_timeout_s)
        self.target = target
        self._device = None if isinstance(target, str) else target     # the BLEDevice to connect to, if known
        self._default_bleak = client_factory is None
        self.adapter = adapter or ''           # the adapter of the present (or next) link; '' = BlueZ's default
        self._adapters = adapters if self._default_bleak else None
        self._factory = client_factory or bleak_client_factory(adapter, self.backoff.connect_timeout_s)
        self._scanner_factory = scanner_factory or (bleak_scanner_factory(adapter) if self._default_bleak else None)
        self._watch_bluez = self._default_bleak and sys.platform.startswith('linux') if watch_bluez is None \
            else watch_bluez
        self._watch: BluezWatch | None = None
        self._client: BleClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def address(self) -> str:
        return str(getattr(self.target, 'address', self.target))

    def _use_adapter(self, adapter: str) -> None:
        """The next attempt goes through ``adapter``: its own device object (found by a scan on it), its clients."""
        if adapter == self.adapter:
            return
        self.adapter = adapter
        self._device = None
        self._factory = bleak_client_factory(adapter, self.backoff.connect_timeout_s)
        self._scanner_factory = bleak_scanner_factory(adapter)

    def _attempt(self):
        return self._adapter_attempt() if self._adapters is not None else super()._attempt()

    @contextlib.asynccontextmanager
    async def _adapter_attempt(self):
        """Pick an adapter with a free slot, find the cube on it, then hold the adapter's attempt lock for the
        attempt (module docstring of ble_adapters); a refusal for want of slots teaches the adapter's limit."""
        choice = self._adapters
        self._use_adapter((await choice.choose(prefer=self.adapter if self._device is not None else '')).name)
        await self._connect_target()       # scanning needs no lock: only the connection attempt does
        async with attempt_lock(self.adapter, choice.holder, choice.lock_timeout_s):
            links = (await choice.still_free(self.adapter)).links
            try:
                yield
            except Exception as exc:
                if is_full_error(str(exc)):
                    learn_limit(self.adapter, links)
                raise

    def _on_disconnected(self, client: Any) -> None:
        # bleak also calls this after our own disconnect(), and while it retries an aborted attempt itself; only an
        # unexpected drop of the current client's link counts
        if client is not self._client or not self.is_connected:
            return
        self._client = None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop or self._loop is None:
            self._link_lost()
        else:  # some backends call back from their own thread
            self._loop.call_soon_threadsafe(self._link_lost)

    async def _open(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._watch_bluez:
            self._watch = await BluezWatch.of_loop()
            self._watch.add(self)
            if not self._watch.present:
                raise TransportError('BlueZ (org.bluez) is not running on the system bus')
        try:
            client = self._factory(await self._connect_target(), self._on_disconnected)
            self._client = client
            # bleak >= 1.0 returns None from connect(): success is "no exception"
            await client.connect()
        except BaseException:
            self._client = None
            if self._scanner_factory is not None:
                self._device = None     # BlueZ may have forgotten it: the next attempt scans
            raise

    async def _connect_target(self) -> Any:
        """What to hand to the client: the known device, else what a scan for the address finds."""
        if self._device is not None or self._scanner_factory is None:
            return self._device if self._device is not None else self.target
        timeout = self.backoff.connect_timeout_s / 2      # the other half is for the connection itself
        found = await scan(addresses=[self.address], count=1, timeout_s=timeout,
                           scanner_factory=self._scanner_factory, adapter=self.adapter or None)
        if not found:
            raise TransportError(f'cube {self.address} is not advertising (not seen within {timeout:g} s)')
        self._device = found[0].device
        return self._device

    async def _close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.disconnect()

    def bluez_left(self) -> None:
        """BluezWatch: BlueZ left the bus, and the link with it; a restarted BlueZ knows no devices."""
        if self._scanner_factory is not None:
            self._device = None
        client, self._client = self._client, None
        if client is None or not self.is_connected:
            return          # an attempt in progress fails by itself
        self._link_lost()
        # release the client's own D-Bus connection and watchers; its Disconnect call cannot succeed now
        asyncio.get_running_loop().create_task(self._discard(client))

    async def _discard(self, client: BleClient) -> None:
        try:
            await asyncio.wait_for(client.disconnect(), self.io_timeout_s)
        except Exception as exc:
            _log.debug('releasing a client of a vanished BlueZ: %s', exc)

    async def _pause_before_retry(self, delay: float) -> None:
        watch = self._watch
        if watch is None or watch.present:
            await asyncio.sleep(delay)
            return
        try:        # BlueZ is away: try again as soon as it is back
            await asyncio.wait_for(watch.back.wait(), delay)
        except asyncio.TimeoutError:
            pass

    def _connected_client(self) -> BleClient:
        if self._client is None:
            raise TransportError('no BLE client (link lost)')
        return self._client

    async def _write(self, char: Characteristic, data: bytes, response: bool) -> None:
        await self._connected_client().write_gatt_char(char.uuid, data, response=response)

    async def _read(self, char: Characteristic) -> bytes:
        return bytes(await self._connected_client().read_gatt_char(char.uuid))

    async def _subscribe(self, char: Characteristic, deliver: Callable[[bytes], None]) -> None:
        await self._connected_client().start_notify(char.uuid, lambda _sender, data: deliver(bytes(data)))

    async def _unsubscribe(self, char: Characteristic) -> None:
        await self._connected_client().stop_notify(char.uuid)


class BluezWatch:
    """Follows the owner of ``org.bluez`` on the system bus for the BleTransports of one asyncio loop.

    ``present`` is False while no process owns the name (BlueZ crashed, is restarting, or the bus itself is
    gone); ``back`` is set while it is present. When BlueZ leaves, every connected transport of the loop loses
    its link at once (instead of when it next writes). Needs dbus-fast (a bleak dependency on Linux); if the
    system bus cannot be reached, BlueZ is taken to be present and nothing is watched.
    """

    _of_loop: 'weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BluezWatch]' = weakref.WeakKeyDictionary()
    RETRY_S = 0.5       # how often to look for the system bus again after it went away

    def __init__(self) -> None:
        self.present = True
        self.back = asyncio.Event()
        self.back.set()
        self._transports: 'weakref.WeakSet[BleTransport]' = weakref.WeakSet()
        self._task: asyncio.Task | None = None
        self._ready = asyncio.Event()

    @classmethod
    async def of_loop(cls) -> 'BluezWatch':
        loop = asyncio.get_running_loop()
        watch = cls._of_loop.get(loop)
        if watch is None:
            watch = cls._of_loop[loop] = cls()
            watch._task = loop.create_task(watch._run())
        await watch._ready.wait()
        return watch

    def add(self, transport: BleTransport) -> None:
        self._transports.add(transport)

    def _set_present(self, present: bool) -> None:
        if present == self.present:
            return
        self.present = present
        if present:
            _log.info('BlueZ is back on the system bus')
            self.back.set()
            return
        _log.warning('BlueZ (org.bluez) left the system bus: every BLE link is lost')
        self.back.clear()
        for transport in list(self._transports):
            transport.bluez_left()

    async def _run(self) -> None:
        # dbus-fast is imported here, not at the top: the simulator and the tests of this module run without it
        from dbus_fast import BusType, Message, MessageType  # noqa: PLC0415 (see above)
        from dbus_fast.aio import MessageBus  # noqa: PLC0415 (see above)

        def on_message(msg: Message) -> None:
            if msg.message_type is MessageType.SIGNAL and msg.member == 'NameOwnerChanged' \
                    and msg.body and msg.body[0] == 'org.bluez':
                self._set_present(bool(msg.body[2]))

        while True:
            try:
                bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
            except Exception as exc:
                if not self._ready.is_set():
                    _log.debug('not watching BlueZ: no system bus (%s)', exc)
                    self._ready.set()
                    return
                await asyncio.sleep(self.RETRY_S)
                continue
            try:
                bus.add_message_handler(on_message)
                await bus.call(Message(
                    destination='org.freedesktop.DBus', path='/org/freedesktop/DBus', interface='org.freedesktop.DBus',
                    member='AddMatch', signature='s',
                    body=["type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.bluez'"]))
                reply = await bus.call(Message(
                    destination='org.freedesktop.DBus', path='/org/freedesktop/DBus', interface='org.freedesktop.DBus',
                    member='NameHasOwner', signature='s', body=['org.bluez']))
                self._set_present(bool(reply.body and reply.body[0]))
                self._ready.set()
                await bus.wait_for_disconnect()
            except Exception as exc:
                _log.debug('the watch on BlueZ lost the system bus: %s', exc)
            finally:
                bus.disconnect()
            self._set_present(False)        # no bus, no BlueZ (bleak sees the dead bus too)
            self._ready.set()
            await asyncio.sleep(self.RETRY_S)
