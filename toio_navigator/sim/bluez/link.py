"""One cube as one adapter of the virtual BlueZ sees it: its Device1 and GATT objects under that adapter, and the
connection when the cube is linked through that adapter, whose packets move at the link's connection events
(:class:`~toio_navigator.sim.bluez.radio.LinkAir`).

:class:`CubeRadio` is what every adapter shares about one cube: whether it is in range, which adapter (if any) it
is linked through, and every write that reached it.
"""
from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from dataclasses import dataclass

from toio_navigator.cube.protocol import PROPERTIES, Characteristic, Property
from toio_navigator.sim.bluez import objects
from toio_navigator.sim.bluez.objects import CHAR_HANDLES, SERVICE_HANDLE, bluez_error
from toio_navigator.sim.bluez.radio import INTERVAL_UNIT_MS, LinkAir, grant_interval, to_units
from toio_navigator.sim.virtual_cube import VirtualCube

_log = logging.getLogger(__name__)
#: the value of a 0x30 bound that means "no preference"
NO_PREFERENCE = 0xFFFF


@dataclass(frozen=True)
class Write:
    """A write that reached the cube: when (time.monotonic()), where, what, and its type."""
    time: float
    char: Characteristic
    data: bytes
    kind: str               # 'request' (with response) or 'command' (without)


class CubeRadio:
    """One cube's radio side, shared by the adapters: in range or not, linked through which adapter, its writes."""

    def __init__(self, index: int, cube: VirtualCube, name: str) -> None:
        self.index, self.cube, self.name = index, cube, name
        self.address = cube.address
        self.in_range = True
        self.link: CubeLink | None = None         # the adapter link that holds the cube
        self.writes: deque[Write] = deque(maxlen=20000)
        self.connects = 0

    @property
    def advertising(self) -> bool:
        return self.in_range and self.cube.powered and not self.cube.connected

    @property
    def connected(self) -> bool:
        return self.link is not None and self.link.connected

    @property
    def adapter(self) -> str:
        """The adapter the cube is linked through ('' if none)."""
        return self.link.adapter.name if self.connected else ''


class CubeLink:
    """BlueZ's view of one cube on one adapter: Device1, GATT objects, the connection and its notify sessions."""

    def __init__(self, adapter, radio: CubeRadio) -> None:
        """``adapter``: the :class:`~toio_navigator.sim.bluez.adapter.VirtualAdapter` this view belongs to."""
        self.adapter, self.radio, self.cube, self.name = adapter, radio, radio.cube, radio.name
        self.bluez = adapter.bluez
        self.address = radio.address
        self.adapter_path = adapter.path
        self.path = f'{adapter.path}/dev_{self.address.replace(":", "_")}'
        self.service_path = f'{self.path}/service{SERVICE_HANDLE:04x}'
        self.connected = False
        self.resolved = False
        self.rssi = -50
        self.mtu = 23
        self.last_seen = -math.inf
        self.device: objects.Device | None = None
        self.chars: dict[Characteristic, objects.GattCharacteristic] = {}
        self.air: LinkAir | None = None
        self._gatt: list[tuple[str, object]] = []
        self._notify: dict[Characteristic, set[str]] = {}
        self._waiting: set[asyncio.Future] = set()
        self._abort: asyncio.TimerHandle | None = None

    @property
    def interval_ms(self) -> float:
        return self.air.interval_ms if self.air is not None else 0.0

    # ------------------------------------------------------------------------------------ Device1
    async def connect(self) -> None:
        if not self.connected:
            await self.adapter.connect(self)

    def establish(self) -> None:
        """The attempt succeeded: the cube is linked through this adapter; GATT discovery runs over the air."""
        self.cube.connect(on_link_lost=self._on_link_lost)
        self.radio.link = self
        self.radio.connects += 1
        self.connected = True
        self.air = LinkAir(self.adapter.air)
        self.cube.on_interval_request = self._interval_requested
        self.cube.interval_changed(to_units(self.air.interval_ms))
        self.device.emit_properties_changed({'Connected': True})
        self._export_gatt()
        self.air.after_events(self.adapter.params.discovery_events, self._resolve)
        lasts = self.bluez.faults.abort_after_s(self.adapter.name, self.address, self.radio.connects)
        if math.isfinite(lasts):
            self._abort = asyncio.get_running_loop().call_later(lasts, self._aborted)

    def _resolve(self) -> None:
        if self.connected and self.bluez.running:
            self.resolved = True
            self.device.emit_properties_changed({'ServicesResolved': True})

    def _aborted(self) -> None:
        """A spontaneous abort (interference, a controller hiccup): both sides lose the link."""
        self._abort = None
        if self.connected:
            self.adapter.aborts += 1
            _log.info('%s: link on %s aborted (le-connection-abort-by-local)', self.name, self.adapter.name)
            self.cube.drop_link()

    def _interval_requested(self, low: int, high: int) -> None:
        """A cube's 0x30 request reaches the central over the air; the granted interval applies some events
        later (the connection update's instant)."""
        air = self.air
        if air is None:
            return
        wanted = grant_interval(air.interval_ms, None if low == NO_PREFERENCE else low * INTERVAL_UNIT_MS,
                                None if high == NO_PREFERENCE else high * INTERVAL_UNIT_MS, self.adapter.params)

        def apply() -> None:
            if self.air is air and self.connected:
                air.set_interval(wanted)
                self.cube.interval_changed(to_units(wanted))
        air.after_events(self.adapter.params.update_events, apply)

    async def disconnect(self) -> None:
        if self.connected:
            self.cube.disconnect()
            self._drop(announce=True)

    def _on_link_lost(self) -> None:
        """The firmware lost the radio link (out of range, powered off, supervision timeout, an abort)."""
        if self.connected:
            self._drop(announce=self.bluez.running)

    def _drop(self, announce: bool) -> None:
        """BlueZ's side of a disconnect: services gone, Connected false, GATT objects removed, the air free."""
        if self._abort is not None:
            self._abort.cancel()
            self._abort = None
        if self.air is not None:
            self.air.close()
            self.air = None
        self.cube.on_interval_request = None
        if self.radio.link is self:
            self.radio.link = None
        self.connected = self.resolved = False
        self._notify.clear()
        for future in self._waiting:
            if not future.done():
                future.set_exception(bluez_error('Failed', 'Not connected'))
        self._waiting.clear()
        if announce and self.device is not None:
            self.device.emit_properties_changed({'ServicesResolved': False, 'Connected': False})
        self._unexport_gatt(announce)
        self.last_seen = time.monotonic()      # BlueZ counts a device's temporary time from its disconnect

    # ------------------------------------------------------------------------------------ GATT over the air
    def _require_connected(self) -> LinkAir:
        if not self.connected or self.air is None:
            raise bluez_error('Failed', 'Not connected')
        return self.air

    async def _request(self, apply) -> object:
        """An ATT request: ``apply()`` at the event that carries it, its result answered at the next one."""
        air = self._require_connected()
        future = asyncio.get_running_loop().create_future()
        self._waiting.add(future)
        result: list = []

        def carry() -> None:
            try:
                result.append(apply())
            except ConnectionError as exc:      # the cube lost the link in between
                result.append(exc)

        def answer() -> None:
            if not future.done():
                value = result[0] if result else None
                if isinstance(value, ConnectionError):
                    future.set_exception(bluez_error('Failed', 'Not connected'))
                else:
                    future.set_result(value)
        air.to_cube(carry, answer)
        try:
            return await future
        finally:
            self._waiting.discard(future)

    async def read(self, char: Characteristic) -> bytes:
        self._require_connected()
        if not PROPERTIES[char] & Property.READ:
            raise bluez_error('NotPermitted', 'Read not permitted')
        return await self._request(lambda: self.cube.read(char))

    async def write(self, char: Characteristic, data: bytes, kind: str | None) -> None:
        """BlueZ's choice of write: type 'request' -> write request, 'command' -> write command (only where the
        characteristic allows it), no type -> a request where allowed, else a command. A command returns at once
        and reaches the cube at the next connection event; a request returns when the cube's answer is back."""
        air = self._require_connected()
        props = PROPERTIES[char]
        if kind is None:
            kind = 'request' if props & Property.WRITE else 'command'
        if kind == 'request':
            if not props & Property.WRITE:
                raise bluez_error('NotPermitted', 'Write not permitted')   # the cube's ATT error
        elif kind == 'command':
            if not props & Property.WRITE_WITHOUT_RESPONSE:
                raise bluez_error('NotSupported', 'Operation is not supported')
        else:
            raise bluez_error('InvalidArguments', f'unknown write type {kind!r}')

        def arrive() -> None:
            if self.connected:
                self.radio.writes.append(Write(time.monotonic(), char, data, kind))
                self.cube.write(char, data)     # malformed bytes are dropped by the firmware, as a real cube does
        if kind == 'command':
            air.to_cube(arrive)
        else:
            await self._request(arrive)

    def notify_sessions(self, char: Characteristic) -> set[str]:
        return self._notify.get(char, set())

    async def start_notify(self, char: Characteristic) -> None:
        self._require_connected()
        if not PROPERTIES[char] & Property.NOTIFY:
            raise bluez_error('NotSupported', 'Operation is not supported')
        sender = self.bluez.caller          # read before the first await: the next call changes it
        sessions = self._notify.setdefault(char, set())
        if sender in sessions:
            raise bluez_error('InProgress', 'Operation already in progress')
        sessions.add(sender)
        if len(sessions) > 1:
            return
        gatt = self.chars[char]             # the first listener: BlueZ writes the CCCD, the cube starts notifying
        await self._request(lambda: self.cube.subscribe(char, lambda data: self._notified(gatt, data)))
        if self.connected:
            gatt.emit_properties_changed({'Notifying': True})

    def stop_notify(self, char: Characteristic) -> None:
        self._require_connected()
        sessions = self._notify.get(char, set())
        if self.bluez.caller not in sessions:
            raise bluez_error('Failed', 'No notify session started')
        self._end_notify(char, self.bluez.caller)

    def _end_notify(self, char: Characteristic, sender: str) -> None:
        sessions = self._notify.get(char, set())
        sessions.discard(sender)
        if not sessions:
            self.cube.unsubscribe(char)
            if self.connected and char in self.chars:
                self.chars[char].emit_properties_changed({'Notifying': False})

    def client_left(self, sender: str) -> None:
        for char in [c for c, s in self._notify.items() if sender in s]:
            self._end_notify(char, sender)

    def _notified(self, gatt: objects.GattCharacteristic, data: bytes) -> None:
        """A notification leaves the cube: it waits for the link's next connection event."""
        if self.air is not None:
            self.air.to_central(lambda: self._emit(gatt, data))

    def _emit(self, gatt: objects.GattCharacteristic, data: bytes) -> None:
        if self.bluez.running and self.connected:
            try:
                gatt.notified(data)
            except Exception as exc:    # runs on the service's loop: a dying bus must not stop the world
                _log.debug('notification of %s not sent: %s', self.name, exc)

    # ------------------------------------------------------------------------------------ export
    def _export_gatt(self) -> None:
        bus = self.bluez.bus
        self._gatt = [(self.service_path, objects.GattService(self))]
        self.chars = {}
        for char, handle in CHAR_HANDLES.items():
            path = f'{self.service_path}/char{handle:04x}'
            gatt = objects.GattCharacteristic(self, char)
            self.chars[char] = gatt
            self._gatt.append((path, gatt))
            if PROPERTIES[char] & Property.NOTIFY:
                self._gatt.append((f'{path}/desc{handle + 2:04x}', objects.GattDescriptor(self, char, path)))
        for path, interface in self._gatt:
            bus.export(path, interface)
            self.bluez.exported.add(path)

    def _unexport_gatt(self, announce: bool) -> None:
        for path, _interface in reversed(self._gatt):
            if announce:
                self.bluez.bus.unexport(path)
            self.bluez.exported.discard(path)
        self._gatt, self.chars = [], {}

    def export_device(self) -> None:
        self.device = objects.Device(self)
        self.bluez.bus.export(self.path, self.device)
        self.bluez.exported.add(self.path)

    def remove_device(self, announce: bool = True) -> None:
        if self.device is not None:
            if announce:
                self.bluez.bus.unexport(self.path)
            self.bluez.exported.discard(self.path)
            self.device = None

    def forget(self) -> None:
        """A dead BlueZ's state is gone; nothing is announced (nobody is there to announce it)."""
        if self.connected:
            self._drop(announce=False)
        self.device = None
