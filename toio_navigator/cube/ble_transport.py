"""The bleak transport: scan for cubes and talk to one over Bluetooth LE.

bleak is imported lazily, and the client and scanner are injected through factories, so the logic here
(routing, reconnect with backoff, re-sent settings, early-exit scanning) runs in tests without an adapter.
What can only be verified with a real cube and adapter: the bleak calls themselves (connect, GATT writes,
notifications, disconnect callbacks) -- see the README.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from toio_navigator.cube.protocol import SERVICE_UUID, Characteristic
from toio_navigator.cube.transport import BackoffPolicy, Transport, TransportError

_log = logging.getLogger(__name__)

#: a cube advertising this name is in a bad state and must be power-cycled (toio support article 15855)
BAD_STATE_NAME = '31j'


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
        from bleak import BleakClient  # lazy: importing bleak must not be needed for the simulator
        kwargs: dict[str, Any] = {'timeout': timeout_s}
        if adapter:
            kwargs['bluez'] = {'adapter': adapter}
        return BleakClient(target, disconnected_callback=on_disconnect, **kwargs)
    return make


class BleTransport(Transport):
    """A cube over bleak. ``target`` is an address (MAC, or a CoreBluetooth UUID on macOS) or a bleak BLEDevice."""

    def __init__(self, target: Any, *, client_factory: ClientFactory | None = None, adapter: str | None = None,
                 backoff: BackoffPolicy | None = None, auto_reconnect: bool = True, io_timeout_s: float = 5.0) -> None:
        super().__init__(backoff=backoff, auto_reconnect=auto_reconnect, io_timeout_s=io_timeout_s)
        self.target = target
        self._factory = client_factory or bleak_client_factory(adapter, self.backoff.connect_timeout_s)
        self._client: BleClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def address(self) -> str:
        return str(getattr(self.target, 'address', self.target))

    def _on_disconnected(self, client: Any) -> None:
        # bleak also calls this after our own disconnect(); only an unexpected drop of the current client counts
        if client is not self._client:
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
        client = self._factory(self.target, self._on_disconnected)
        self._client = client
        try:
            # bleak >= 1.0 returns None from connect(): success is "no exception"
            await client.connect()
        except BaseException:
            self._client = None
            raise

    async def _close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.disconnect()

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


# ------------------------------------------------------------------------------------------------------- scanning

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
        from bleak import BleakScanner
        kwargs: dict[str, Any] = {'bluez': {'adapter': adapter}} if adapter else {}
        return BleakScanner(detection_callback=callback, service_uuids=service_uuids, **kwargs)
    return make


async def scan(*, names: Iterable[str] = (), addresses: Iterable[str] = (), count: int | None = None,
               timeout_s: float = 5.0, scanner_factory: ScannerFactory | None = None,
               adapter: str | None = None) -> list[FoundCube]:
    """Find cubes advertising the toio service.

    Stops as soon as every wanted name id / address was seen, or ``count`` cubes were found; otherwise after
    ``timeout_s``. With no names, addresses or count, collects every cube seen within the timeout.
    Raises TransportError if the scanner cannot start (no adapter, Bluetooth off).
    """
    if timeout_s <= 0:
        raise ValueError(f'timeout_s must be > 0, got {timeout_s}')
    wanted_names = [n for n in names if n]
    wanted_addresses = {a.upper() for a in addresses if a}
    found: dict[str, FoundCube] = {}
    done = asyncio.Event()

    def wanted(address: str, name: str) -> bool:
        if not wanted_names and not wanted_addresses:
            return True
        return address.upper() in wanted_addresses or any(name_matches(name, n) for n in wanted_names)

    def complete() -> bool:
        if count is not None and len(found) >= count:
            return True
        if not wanted_names and not wanted_addresses:
            return False
        seen_names = all(any(name_matches(c.name, n) for c in found.values()) for n in wanted_names)
        seen_addresses = wanted_addresses <= {a.upper() for a in found}
        return seen_names and seen_addresses

    def on_detect(device: Any, advertisement: Any) -> None:
        uuids = [u.lower() for u in (getattr(advertisement, 'service_uuids', None) or [])]
        if SERVICE_UUID not in uuids:
            return
        name = getattr(advertisement, 'local_name', None) or getattr(device, 'name', None) or ''
        address = str(getattr(device, 'address', ''))
        if BAD_STATE_NAME in name:
            _log.warning('cube %s advertises %r: it is in a bad state, power-cycle it', address, name)
            return
        if wanted(address, name) and address not in found:
            found[address] = FoundCube(address, name, getattr(advertisement, 'rssi', None), device)
            if complete():
                done.set()

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
    return list(found.values())

