"""Scanning for toio cubes with bleak: early exit once every wanted cube was seen, passing over cubes BlueZ reports
connected, one scan at a time per loop and adapter, and the repair of a device bleak lost (see
:mod:`toio_navigator.cube.ble_transport`'s docstring). bleak is imported lazily; scanners are injected through
factories, so the logic runs in tests without an adapter.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from toio_navigator.cube.protocol import SERVICE_UUID
from toio_navigator.cube.transport import TransportError

_log = logging.getLogger(__name__)

#: a cube advertising this name is in a bad state and must be power-cycled (toio support article 15855)
BAD_STATE_NAME = '31j'

@dataclass(frozen=True)
class FoundCube:
    address: str
    name: str
    rssi: int | None
    device: Any          # the bleak BLEDevice, to connect without scanning again


def name_matches(advertised: str, cube_id: str) -> bool:
    """A configured cube id ('a1B') matches 'toio-a1B', 'toio Core Cube-a1B' and 'toio-a1B (toio Core Cube)'."""
    return bool(cube_id) and cube_id in advertised


class Scanner(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


# (detection_callback(device, advertisement_data), service_uuids) -> scanner
ScannerFactory = Callable[[Callable[[Any, Any], None], list[str]], Scanner]


def bleak_scanner_factory(adapter: str | None = None) -> ScannerFactory:
    def make(callback: Callable[[Any, Any], None], service_uuids: list[str]) -> Scanner:
        from bleak import BleakScanner  # noqa: PLC0415 lazy: the simulator and its tests run without bleak
        kwargs: dict[str, Any] = {'bluez': {'adapter': adapter}} if adapter else {}
        return BleakScanner(detection_callback=callback, service_uuids=service_uuids, **kwargs)
    make.bleak = True       # bleak's own scanner: a scan that misses a cube may ask BlueZ to forget it
    return make


async def scan(*, names: Iterable[str] = (), addresses: Iterable[str] = (), count: int | None = None,
               timeout_s: float = 5.0, scanner_factory: ScannerFactory | None = None,
               adapter: str | None = None, accept: Callable[[FoundCube], bool] | None = None,
               heard: dict[str, tuple[str, bool]] | None = None) -> list[FoundCube]:
    """Find cubes advertising the toio service.

    Stops as soon as every wanted name id / address was seen, or ``count`` cubes were found; otherwise after
    ``timeout_s``. With no names, addresses or count, collects every cube seen within the timeout. A cube that
    BlueZ reports connected (to anyone) is not a candidate: a connected cube does not advertise, BlueZ only
    announces its device again. ``accept(cube)`` may turn down a wanted cube (e.g. one another driver holds); it
    is asked once per cube, in the order they are seen, until the scan is complete. ``heard``, if given, gets
    every toio cube BlueZ announced during the scan, wanted or not: address -> (its name, whether BlueZ reports it
    connected), what a driver that found nothing can tell its user.
    Raises TransportError if the scanner cannot start (no adapter, Bluetooth off).
    """
    if timeout_s <= 0:
        raise ValueError(f'timeout_s must be > 0, got {timeout_s}')
    search = _Search([n for n in names if n], {a.upper() for a in addresses if a}, count, accept, heard)
    on_detect, done, found = search.on_detect, search.done, search.found
    wanted_names, wanted_addresses, open_for = search.names, search.addresses, search.open_for

    async with _scan_lock(adapter):
        scanner = (scanner_factory or bleak_scanner_factory(adapter))(on_detect, [SERVICE_UUID])
        try:
            await asyncio.wait_for(scanner.start(), timeout_s)
        except Exception as exc:
            raise TransportError(f'cannot start a BLE scan: {exc}') from exc
        try:
            await asyncio.wait_for(done.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            try:
                await asyncio.wait_for(scanner.stop(), timeout_s)
            except Exception as exc:
                _log.debug('stopping the scan failed: %s', exc)
    looked_for = bool(wanted_names or wanted_addresses) or count is not None
    bleaks_own = scanner_factory is None or getattr(scanner_factory, 'bleak', False)
    if looked_for and not done.is_set() and bleaks_own and sys.platform.startswith('linux'):
        # bleak's own scanner missed a wanted cube: it may be one bleak lost (module docstring); a scan that only
        # lists what advertises wanted nothing in particular and leaves BlueZ alone
        await forget_unheard(open_for, adapter, timeout_s)
    return list(found.values())


class _Search:
    """What one scan looks for, what it found, and what it makes of each advert (see :func:`scan`)."""

    def __init__(self, names: list[str], addresses: set[str], count: int | None,
                 accept: Callable[[FoundCube], bool] | None, heard: dict[str, tuple[str, bool]] | None) -> None:
        self.names, self.addresses, self.count, self.accept, self.heard = names, addresses, count, accept, heard
        self.found: dict[str, FoundCube] = {}
        self.turned_down: set[str] = set()
        self.done = asyncio.Event()

    def wanted(self, address: str, name: str) -> bool:
        if not self.names and not self.addresses:
            return True
        return address.upper() in self.addresses or any(name_matches(name, n) for n in self.names)

    def complete(self) -> bool:
        if self.count is not None and len(self.found) >= self.count:
            return True
        if not self.names and not self.addresses:
            return False
        seen_names = all(any(name_matches(c.name, n) for c in self.found.values()) for n in self.names)
        return seen_names and self.addresses <= {a.upper() for a in self.found}

    def open_for(self, address: str, name: str) -> bool:
        """A cube this scan would still take: wanted, not found yet, not turned down."""
        return self.wanted(address, name) and address not in self.found and address not in self.turned_down

    def on_detect(self, device: Any, advertisement: Any) -> None:
        uuids = [u.lower() for u in (getattr(advertisement, 'service_uuids', None) or [])]
        if self.done.is_set() or SERVICE_UUID not in uuids:
            return
        name = getattr(advertisement, 'local_name', None) or getattr(device, 'name', None) or ''
        address = str(getattr(device, 'address', ''))
        connected = bluez_connected(advertisement)
        if self.heard is not None:
            self.heard[address] = (name, connected)
        if connected:
            return
        if BAD_STATE_NAME in name:
            _log.warning('cube %s advertises %r: it is in a bad state, power-cycle it', address, name)
            return
        if self.open_for(address, name):
            cube = FoundCube(address, name, getattr(advertisement, 'rssi', None), device)
            if self.accept is not None and not self.accept(cube):
                self.turned_down.add(address)
                return
            self.found[address] = cube
            if self.complete():
                self.done.set()


async def forget_unheard(wanted: Callable[[str, str], bool], adapter: str | None, timeout_s: float) -> list[str]:
    """Remove from BlueZ the toio cubes it knows, not connected and not paired, that ``wanted(address, name)``,
    so that their next advert adds them again (module docstring). Returns the addresses removed; nothing when the
    system bus or BlueZ cannot be reached."""
    # dbus-fast is imported here, not at the top: the simulator and the tests of this module run without it
    from dbus_fast import BusType, Message, MessageType  # noqa: PLC0415 (see above)
    from dbus_fast.aio import MessageBus  # noqa: PLC0415 (see above)
    removed: list[str] = []
    try:
        bus = await asyncio.wait_for(MessageBus(bus_type=BusType.SYSTEM).connect(), timeout_s)
    except Exception as exc:
        _log.debug('not looking for lost cubes: no system bus (%s)', exc)
        return removed
    try:
        reply = await asyncio.wait_for(bus.call(Message(
            destination='org.bluez', path='/', interface='org.freedesktop.DBus.ObjectManager',
            member='GetManagedObjects')), timeout_s)
        if reply.message_type is not MessageType.METHOD_RETURN:
            return removed
        for path, interfaces in reply.body[0].items():
            device = {k: v.value for k, v in interfaces.get('org.bluez.Device1', {}).items()}
            uuids = [u.lower() for u in device.get('UUIDs', [])]
            address, name = str(device.get('Address', '')), str(device.get('Name', device.get('Alias', '')))
            owner = str(device.get('Adapter', ''))
            if not device or SERVICE_UUID not in uuids or device.get('Connected') or device.get('Paired') \
                    or (adapter and not owner.endswith('/' + adapter)) or not wanted(address, name):
                continue
            answer = await asyncio.wait_for(bus.call(Message(
                destination='org.bluez', path=owner, interface='org.bluez.Adapter1', member='RemoveDevice',
                signature='o', body=[path])), timeout_s)
            if answer.message_type is MessageType.METHOD_RETURN:
                _log.info('cube %s (%s) was known to BlueZ but not heard: removed it, its next advert counts',
                          name, address)
                removed.append(address)
    except Exception as exc:
        _log.debug('looking for lost cubes failed: %s', exc)
    finally:
        bus.disconnect()
    return removed


def bluez_connected(advertisement: Any) -> bool:
    """True if BlueZ reports the advertised device connected (bleak's BlueZ backend hands over the device's D-Bus
    properties as ``platform_data`` = (object path, properties); other backends: False)."""
    platform = getattr(advertisement, 'platform_data', None)
    if isinstance(platform, tuple) and len(platform) == 2 and isinstance(platform[1], dict):
        return bool(platform[1].get('Connected', False))
    return False


_scan_locks: 'weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]]' = \
    weakref.WeakKeyDictionary()


def _scan_lock(adapter: str | None) -> asyncio.Lock:
    """One scan at a time per loop and adapter: BlueZ gives each D-Bus client (bleak: one per loop) one discovery
    on each adapter."""
    locks = _scan_locks.setdefault(asyncio.get_running_loop(), {})
    lock = locks.get(adapter or '')
    if lock is None:
        lock = locks[adapter or ''] = asyncio.Lock()
    return lock

