"""The virtual BlueZ: ``org.bluez`` on a D-Bus bus, one adapter whose devices are the virtual cubes of a World.

It implements what bleak's BlueZ backend uses, with BlueZ's rules where a client could notice them:

* discovery is a session per D-Bus client (``SetDiscoveryFilter``, ``StartDiscovery``, ``StopDiscovery``); a
  client that starts a second one gets ``org.bluez.Error.InProgress``; a session ends when its client leaves the
  bus. While any session runs, every advertising cube that passes a session's filter (UUIDs, RSSI, Transport,
  Pattern) is announced: a new ``Device1`` (InterfacesAdded) or an RSSI change (PropertiesChanged), every
  ``advertise_period_s``. A device not seen for ``temporary_timeout_s`` and not connected is removed again.
* a cube advertises while it is powered, in range and not connected (a connected cube does not advertise).
* ``Device1.Connect`` connects the cube's firmware, sets ``Connected``, exports the GATT objects (the toio
  service, its eight characteristics with their flags and handles, a CCCD for each notifying one) and sets
  ``ServicesResolved`` ``resolve_delay_s`` later. ``Disconnect``, a lost radio link (:meth:`vanish`) or the
  cube powering off undo it. A client leaving the bus does *not* disconnect its devices (BlueZ does not either).
* ``ReadValue``/``WriteValue`` (type ``request`` or ``command``, checked against the flags), ``StartNotify``/
  ``StopNotify`` per client (the cube sends notifications while at least one client listens; each arrives as a
  ``PropertiesChanged`` of ``Value``). Every write is logged with its type in :attr:`CubeLink.writes`.
* :meth:`kill` drops the service off the bus with no goodbye (a crashed bluetoothd); the cubes notice the lost
  link only after ``link_timeout_s`` (the LE supervision timeout) and keep running their last command until then.
  :meth:`start` again is a restarted bluetoothd: it knows no devices until a discovery finds them.

Method calls arrive on the asyncio loop that runs the bus; the firmware is driven from the same loop (see
:mod:`toio_navigator.sim.bluez.host`), so no locks are needed.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.constants import NameFlag, RequestNameReply

from toio_navigator.cube.protocol import PROPERTIES, SERVICE_UUID, Characteristic, Property, parse_version
from toio_navigator.sim.bluez import objects
from toio_navigator.sim.bluez.objects import CHAR_HANDLES, SERVICE_HANDLE, bluez_error
from toio_navigator.sim.virtual_cube import VirtualCube, VirtualCubes

_log = logging.getLogger(__name__)

BLUEZ_NAME = 'org.bluez'
#: Linux's default LE supervision timeout (42 x 10 ms): how long a cube keeps a link whose central went silent
LE_SUPERVISION_TIMEOUT_S = 0.42
_FILTER_KEYS = {'UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern'}
_NAME_OWNER_RULE = ("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                    "member='NameOwnerChanged'")


def advertised_name(cube_name: str, version: str) -> str:
    """The local name a cube of this firmware advertises: 'toio-XXX' (>= 2.4.0), 'toio Core Cube-XXX' (2.3.x),
    plain 'toio Core Cube' (older), from a simulated cube named 'toio-XXX'."""
    cube_id = cube_name.split('-', 1)[1] if cube_name.startswith('toio-') else cube_name
    have = parse_version(version)
    if have >= (2, 4, 0):
        return f'toio-{cube_id}'
    if have >= (2, 3, 0):
        return f'toio Core Cube-{cube_id}'
    return 'toio Core Cube'


@dataclass(frozen=True)
class Write:
    """A write that reached the cube: when (time.monotonic()), where, what, and its type."""
    time: float
    char: Characteristic
    data: bytes
    kind: str               # 'request' (with response) or 'command' (without)


class CubeLink:
    """BlueZ's view of one virtual cube: its Device1 and GATT objects, the connection and the notify sessions."""

    def __init__(self, bluez: 'VirtualBluez', cube: VirtualCube, name: str) -> None:
        self.bluez, self.cube, self.name = bluez, cube, name
        self.address = cube.address
        self.adapter_path = bluez.adapter_path
        self.path = f'{bluez.adapter_path}/dev_{self.address.replace(":", "_")}'
        self.service_path = f'{self.path}/service{SERVICE_HANDLE:04x}'
        self.in_range = True
        self.connected = False
        self.resolved = False
        self.rssi = -50
        self.mtu = 23
        self.last_seen = -float('inf')
        self.device: objects.Device | None = None
        self.chars: dict[Characteristic, objects.GattCharacteristic] = {}
        self._gatt: list[tuple[str, object]] = []
        self._notify: dict[Characteristic, set[str]] = {}
        self._resolving: asyncio.TimerHandle | None = None
        self.writes: deque[Write] = deque(maxlen=20000)
        self.connects = 0

    @property
    def advertising(self) -> bool:
        return self.in_range and self.cube.powered and not self.cube.connected

    # ------------------------------------------------------------------------------------ Device1
    async def connect(self) -> None:
        if self.connected:
            return
        if not self.advertising:
            # the controller listens for the cube's advert for a while, then gives up
            await asyncio.sleep(self.bluez.connect_fail_s)
            raise bluez_error('Failed', f'{self.name}: no answer (not advertising)')
        try:
            self.cube.connect(on_link_lost=self._on_link_lost)
        except ConnectionRefusedError as exc:
            raise bluez_error('Failed', str(exc)) from None
        self.connects += 1
        self.connected = True
        self.device.emit_properties_changed({'Connected': True})
        self._export_gatt()
        self._resolving = asyncio.get_running_loop().call_later(self.bluez.resolve_delay_s, self._resolve)

    def _resolve(self) -> None:
        self._resolving = None
        if self.connected and self.bluez.running:
            self.resolved = True
            self.device.emit_properties_changed({'ServicesResolved': True})

    async def disconnect(self) -> None:
        if self.connected:
            self.cube.disconnect()
            self._drop(announce=True)

    def _on_link_lost(self) -> None:
        """The firmware lost the radio link (out of range, powered off, supervision timeout)."""
        if self.connected:
            self._drop(announce=self.bluez.running)

    def _drop(self, announce: bool) -> None:
        """BlueZ's side of a disconnect: services gone, Connected false, GATT objects removed."""
        if self._resolving is not None:
            self._resolving.cancel()
            self._resolving = None
        self.connected = self.resolved = False
        self._notify.clear()
        if announce and self.device is not None:
            self.device.emit_properties_changed({'ServicesResolved': False, 'Connected': False})
        self._unexport_gatt(announce)
        self.last_seen = time.monotonic()      # BlueZ counts a device's temporary time from its disconnect

    # ------------------------------------------------------------------------------------ GATT
    def _require_connected(self) -> None:
        if not self.connected:
            raise bluez_error('Failed', 'Not connected')

    def read(self, char: Characteristic) -> bytes:
        self._require_connected()
        if not PROPERTIES[char] & Property.READ:
            raise bluez_error('NotPermitted', 'Read not permitted')
        return self.cube.read(char)

    def write(self, char: Characteristic, data: bytes, kind: str | None) -> None:
        """BlueZ's choice of write: type 'request' -> write request, 'command' -> write command (only where the
        characteristic allows it), no type -> a request where allowed, else a command."""
        self._require_connected()
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
        self.writes.append(Write(time.monotonic(), char, data, kind))
        self.cube.write(char, data)     # malformed bytes are dropped by the firmware, as a real cube does

    def notify_sessions(self, char: Characteristic) -> set[str]:
        return self._notify.get(char, set())

    def start_notify(self, char: Characteristic) -> None:
        self._require_connected()
        if not PROPERTIES[char] & Property.NOTIFY:
            raise bluez_error('NotSupported', 'Operation is not supported')
        sender = self.bluez.caller
        sessions = self._notify.setdefault(char, set())
        if sender in sessions:
            raise bluez_error('InProgress', 'Operation already in progress')
        sessions.add(sender)
        if len(sessions) == 1:          # the first listener: BlueZ writes the CCCD, the cube starts notifying
            gatt = self.chars[char]
            self.cube.subscribe(char, lambda data: self._notified(gatt, data))
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
        if self.bluez.running and self.connected:
            try:
                gatt.notified(data)
            except Exception as exc:    # runs inside the world's step: a dying bus must not stop the world
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
        self._drop(announce=False)
        self.device = None


class VirtualBluez:
    """``org.bluez`` for the cubes of ``firmware``. Run :meth:`start` on the asyncio loop that drives them."""

    def __init__(self, firmware: VirtualCubes, *, adapter: str = 'hci0', adapter_address: str = '00:00:5E:00:53:01',
                 resolve_delay_s: float = 0.05, advertise_period_s: float = 0.1, temporary_timeout_s: float = 30.0,
                 connect_fail_s: float = 1.0) -> None:
        for name, value in (('resolve_delay_s', resolve_delay_s), ('advertise_period_s', advertise_period_s),
                            ('temporary_timeout_s', temporary_timeout_s), ('connect_fail_s', connect_fail_s)):
            if not value >= 0:
                raise ValueError(f'{name} must be >= 0, got {value}')
        self.firmware = firmware
        self.adapter_path = f'/org/bluez/{adapter}'
        self.adapter_name = f'virtual {adapter}'
        self.adapter_address = adapter_address
        self.resolve_delay_s, self.advertise_period_s = resolve_delay_s, max(advertise_period_s, 0.01)
        self.temporary_timeout_s, self.connect_fail_s = temporary_timeout_s, connect_fail_s
        version = firmware.params.version
        self.links = [CubeLink(self, cube, advertised_name(cube.name, version)) for cube in firmware.cubes]
        self.bus: MessageBus | None = None
        self.running = False
        self.caller = ''                # the sender of the method call being handled (see _on_message)
        self.exported: set[str] = set()
        self._sessions: dict[str, dict] = {}     # discovering client -> its filter
        self._filters: dict[str, dict] = {}      # filters set by clients not (yet) discovering
        self._adapter: objects.Adapter | None = None
        self._radio: asyncio.Task | None = None
        self._link_timeouts: list[asyncio.TimerHandle] = []

    @property
    def discovering(self) -> bool:
        return bool(self._sessions)

    def link(self, name_or_address: str) -> CubeLink:
        """The link of the cube whose address is this or whose name contains this (a 3-character id)."""
        for link in self.links:
            if name_or_address and (name_or_address.upper() == link.address or name_or_address in link.name):
                return link
        raise KeyError(f'no virtual cube named like {name_or_address!r}')

    # ------------------------------------------------------------------------------------ life cycle
    async def start(self, bus_address: str) -> None:
        """Connect to the bus, export the adapter and take the name org.bluez. A restarted BlueZ knows no device
        and resets the controller: links a killed predecessor left to the cubes are dropped now."""
        if self.running:
            return
        for handle in self._link_timeouts:
            handle.cancel()
        self._link_timeouts.clear()
        for link in self.links:
            if link.cube.connected:
                link.cube.disconnect()
        bus = await MessageBus(bus_address=bus_address, bus_type=BusType.SYSTEM).connect()
        self.bus = bus
        # the message handler runs before dbus-fast dispatches a call: it tells the methods who is calling
        bus.add_message_handler(self._on_message)
        await bus.call(Message(destination='org.freedesktop.DBus', path='/org/freedesktop/DBus',
                               interface='org.freedesktop.DBus', member='AddMatch', signature='s',
                               body=[_NAME_OWNER_RULE]))
        self.running = True
        self._adapter = objects.Adapter(self)
        bus.export(self.adapter_path, self._adapter)
        self.exported.add(self.adapter_path)
        reply = await bus.request_name(BLUEZ_NAME, NameFlag.DO_NOT_QUEUE)
        if reply not in (RequestNameReply.PRIMARY_OWNER, RequestNameReply.ALREADY_OWNER):
            self.kill(0.0)
            raise RuntimeError(f'{BLUEZ_NAME} is already owned on {bus_address}: another BlueZ runs on that bus')
        loop = asyncio.get_running_loop()
        self._radio = loop.create_task(self._advertise())
        loop.create_task(self._watch_bus(bus))

    async def _watch_bus(self, bus: MessageBus) -> None:
        """A bus that dies under the service (the daemon was killed) leaves it as dead as a crash would."""
        try:
            await bus.wait_for_disconnect()
        except Exception as exc:
            _log.debug('the bus of the virtual BlueZ failed: %s', exc)
        if self.running and self.bus is bus:
            self.kill()

    async def stop(self) -> None:
        """A clean shutdown: every cube is disconnected (its link drops at once), the objects are removed and the
        name is released."""
        if not self.running:
            return
        for link in self.links:
            if link.connected:
                await link.disconnect()
            link.remove_device()
        self.bus.unexport(self.adapter_path)
        self.exported.discard(self.adapter_path)
        await self.bus.release_name(BLUEZ_NAME)
        self._close()

    def kill(self, link_timeout_s: float = LE_SUPERVISION_TIMEOUT_S) -> None:
        """Vanish from the bus without a word, like a crashed bluetoothd. The cubes keep their links (and their
        last commands) for ``link_timeout_s``, then notice the silence and disconnect."""
        if not self.running:
            return
        loop = asyncio.get_running_loop()
        for link in self.links:
            link.forget()
            if link.cube.connected:
                self._link_timeouts.append(loop.call_later(link_timeout_s, link.cube.drop_link))
        self._close()

    def _close(self) -> None:
        self.running = False
        if self._radio is not None:
            self._radio.cancel()
            self._radio = None
        self._sessions.clear()
        self._filters.clear()
        self.exported.clear()
        bus, self.bus = self.bus, None
        if bus is not None:
            bus.disconnect()

    # ------------------------------------------------------------------------------------ radio
    def vanish(self, index: int, remove: bool = True) -> None:
        """Cube ``index`` goes out of range: its link drops (the central sees Connected false), it is no longer
        heard, and with ``remove`` BlueZ forgets it at once (otherwise after ``temporary_timeout_s``)."""
        link = self.links[index]
        link.in_range = False
        if link.cube.connected:
            link.cube.drop_link()
        if remove and self.running:
            link.remove_device()

    def reappear(self, index: int) -> None:
        """Cube ``index`` is back in range: it advertises again while not connected."""
        self.links[index].in_range = True

    async def _advertise(self) -> None:
        count = 0
        while True:
            now = time.monotonic()
            try:
                for link in self.links:
                    if link.advertising and self._sessions and self._wanted(link):
                        self._announce(link, count)
                    elif link.device is not None and not link.connected \
                            and now - link.last_seen > self.temporary_timeout_s:
                        link.remove_device()       # a temporary device BlueZ has not heard from for a while
            except Exception as exc:           # a dying bus: _watch_bus ends this task
                _log.debug('advertising round failed: %s', exc)
            count += 1
            await asyncio.sleep(self.advertise_period_s)

    def _announce(self, link: CubeLink, count: int) -> None:
        link.last_seen = time.monotonic()
        link.rssi = -50 - count % 3         # a changing RSSI is what tells clients an advert arrived
        if link.device is None:
            link.export_device()            # InterfacesAdded: a new device
        else:
            link.device.emit_properties_changed({'RSSI': link.rssi})

    def _wanted(self, link: CubeLink) -> bool:
        for rules in self._sessions.values():
            uuids = [u.lower() for u in rules.get('UUIDs', [])]
            if uuids and SERVICE_UUID not in uuids:
                continue
            if rules.get('Transport', 'auto') == 'bredr' or link.rssi < rules.get('RSSI', -127):
                continue
            pattern = rules.get('Pattern', '')
            if pattern and not (link.address.startswith(pattern) or link.name.startswith(pattern)):
                continue
            return True
        return False

    # ------------------------------------------------------------------------------------ Adapter1
    def set_discovery_filter(self, properties: dict[str, Variant]) -> None:
        unknown = set(properties) - _FILTER_KEYS
        if unknown:
            raise bluez_error('InvalidArguments', f'Invalid arguments in method call: {", ".join(sorted(unknown))}')
        rules = {key: variant.value for key, variant in properties.items()}
        if self.caller in self._sessions:
            self._sessions[self.caller] = rules
        else:
            self._filters[self.caller] = rules

    def start_discovery(self) -> None:
        if self.caller in self._sessions:
            raise bluez_error('InProgress', 'Operation already in progress')
        first = not self._sessions
        self._sessions[self.caller] = self._filters.pop(self.caller, {})
        if first:
            self._adapter.emit_properties_changed({'Discovering': True})
        for link in self.links:             # the first adverts are heard right away
            if link.advertising and self._wanted(link):
                self._announce(link, 0)

    def stop_discovery(self) -> None:
        if self.caller not in self._sessions:
            raise bluez_error('Failed', 'No discovery started')
        self._end_discovery(self.caller)

    def _end_discovery(self, sender: str) -> None:
        if self._sessions.pop(sender, None) is not None and not self._sessions:
            self._adapter.emit_properties_changed({'Discovering': False})

    async def remove_device(self, path: str) -> None:
        for link in self.links:
            if link.path == path and link.device is not None:
                await link.disconnect()
                link.remove_device()
                return
        raise bluez_error('DoesNotExist', 'Does Not Exist')

    # ------------------------------------------------------------------------------------ bus messages
    def _on_message(self, msg: Message):
        if msg.message_type is MessageType.METHOD_CALL:
            self.caller = msg.sender or ''
            if msg.path and msg.path.startswith(self.adapter_path) and msg.path not in self.exported \
                    and not (msg.interface or '').startswith('org.freedesktop.DBus.'):
                # BlueZ's answer for a device (or attribute) it does not know (any more)
                return Message.new_error(msg, 'org.freedesktop.DBus.Error.UnknownObject',
                                         f'Method "{msg.member}" with signature "{msg.signature}" on interface '
                                         f'"{msg.interface}" doesn\'t exist')
        elif msg.message_type is MessageType.SIGNAL and msg.member == 'NameOwnerChanged' \
                and msg.sender == 'org.freedesktop.DBus':
            name, _old, new = msg.body
            if name.startswith(':') and not new:      # a client left the bus: its sessions end with it
                self._end_discovery(name)
                self._filters.pop(name, None)
                for link in self.links:
                    link.client_left(name)
        return None
