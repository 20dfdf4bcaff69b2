"""The virtual BlueZ: ``org.bluez`` on a D-Bus bus, adapters whose devices are the virtual cubes of a World.

It implements what bleak's BlueZ backend uses, with BlueZ's rules where a client could notice them, and the air
of a real radio (:mod:`toio_navigator.sim.bluez.radio`):

* adapters ``/org/bluez/hci0``, ``hci1``, ... each with its connection slots, its discovery sessions and its one
  connection attempt at a time (:mod:`toio_navigator.sim.bluez.adapter`); every adapter hears every cube in
  range, and each has its own ``Device1`` object for a cube it heard;
* a cube advertises while it is powered, in range and not connected (a connected cube does not advertise), so a
  cube linked through one adapter is invisible to every scan;
* ``Device1.Connect`` links the cube's firmware through the device's adapter, sets ``Connected``, exports the GATT
  objects (the toio service, its eight characteristics with their flags and handles, a CCCD for each notifying
  one) and sets ``ServicesResolved`` once GATT discovery has taken its connection events. ``Disconnect``, a lost
  radio link (:meth:`VirtualBluez.vanish`), an abort or the cube powering off undo it. A client leaving the bus
  does *not* disconnect its devices (BlueZ does not either);
* ``ReadValue``/``WriteValue`` (type ``request`` or ``command``, checked against the flags), ``StartNotify``/
  ``StopNotify`` per client, all carried at the link's connection events (:mod:`toio_navigator.sim.bluez.link`);
  every write is logged with its type and arrival time in :attr:`CubeRadio.writes`;
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

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.constants import NameFlag, RequestNameReply

from toio_navigator.cube.protocol import parse_version
from toio_navigator.sim.bluez.adapter import VirtualAdapter
from toio_navigator.sim.bluez.link import CubeRadio, Write
from toio_navigator.sim.bluez.radio import Faults, RadioParams
from toio_navigator.sim.virtual_cube import VirtualCubes

__all__ = ['BLUEZ_NAME', 'LE_SUPERVISION_TIMEOUT_S', 'VirtualBluez', 'Write', 'advertised_name']

_log = logging.getLogger(__name__)

BLUEZ_NAME = 'org.bluez'
#: Linux's default LE supervision timeout (42 x 10 ms): how long a cube keeps a link whose central went silent
LE_SUPERVISION_TIMEOUT_S = 0.42
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


class _PatientSocket:
    """A bus socket whose full send buffer means "write later", not a dead bus: dbus-fast (5.2) takes the
    BlockingIOError of a non-blocking send as fatal, and a burst of notifications (16 cubes at one connection
    event) fills the buffer while dbus-daemon is busy."""

    def __init__(self, sock) -> None:
        self._sock = sock

    def send(self, data) -> int:
        try:
            return self._sock.send(data)
        except BlockingIOError:
            return 0            # nothing written: the writer waits until the socket is writable again

    def sendmsg(self, buffers, ancdata=()) -> int:
        try:
            return self._sock.sendmsg(buffers, ancdata)
        except BlockingIOError:
            return 0

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


def _patient(bus: MessageBus) -> None:
    # dbus-fast's writer keeps the socket in a private attribute; this is the one place that reaches it
    writer = getattr(bus, '_writer', None)
    if writer is not None and hasattr(writer, 'sock'):
        writer.sock = _PatientSocket(writer.sock)


class VirtualBluez:
    """``org.bluez`` for the cubes of ``firmware``. Run :meth:`start` on the asyncio loop that drives them.

    ``radio``: the adapters and the air (default: one adapter hci0 with 7 slots and the model's default faults).
    """

    def __init__(self, firmware: VirtualCubes, *, radio: RadioParams | None = None, advertise_period_s: float = 0.1,
                 temporary_timeout_s: float = 30.0) -> None:
        for name, value in (('advertise_period_s', advertise_period_s), ('temporary_timeout_s', temporary_timeout_s)):
            if not value >= 0:
                raise ValueError(f'{name} must be >= 0, got {value}')
        self.firmware = firmware
        self.radio = radio or RadioParams()
        self.faults = Faults(self.radio)
        self.advertise_period_s = max(advertise_period_s, 0.01)
        self.temporary_timeout_s = temporary_timeout_s
        version = firmware.params.version
        #: one per cube, in the world's order
        self.links = [CubeRadio(i, cube, advertised_name(cube.name, version)) for i, cube in enumerate(firmware.cubes)]
        self.adapters = [VirtualAdapter(self, k, spec, self.radio, self.links)
                         for k, spec in enumerate(self.radio.adapters)]
        self.bus: MessageBus | None = None
        self.running = False
        self.caller = ''                # the sender of the method call being handled (see _on_message)
        self.exported: set[str] = set()
        self._advertising: asyncio.Task | None = None
        self._link_timeouts: list[asyncio.TimerHandle] = []

    @property
    def adapter_path(self) -> str:
        """The first adapter's object path (the default adapter of a client that names none)."""
        return self.adapters[0].path

    def adapter(self, name: str) -> VirtualAdapter:
        for adapter in self.adapters:
            if adapter.name == name:
                return adapter
        raise KeyError(f'no virtual adapter {name!r}')

    def link(self, name_or_address: str) -> CubeRadio:
        """The cube whose address is this or whose name contains this (a 3-character id)."""
        for link in self.links:
            if name_or_address and (name_or_address.upper() == link.address or name_or_address in link.name):
                return link
        raise KeyError(f'no virtual cube named like {name_or_address!r}')

    # ------------------------------------------------------------------------------------ life cycle
    async def start(self, bus_address: str) -> None:
        """Connect to the bus, export the adapters and take the name org.bluez. A restarted BlueZ knows no device
        and resets the controllers: links a killed predecessor left to the cubes are dropped now."""
        if self.running:
            return
        for handle in self._link_timeouts:
            handle.cancel()
        self._link_timeouts.clear()
        for link in self.links:
            if link.cube.connected:
                link.cube.disconnect()
        bus = await MessageBus(bus_address=bus_address, bus_type=BusType.SYSTEM).connect()
        _patient(bus)
        self.bus = bus
        # the message handler runs before dbus-fast dispatches a call: it tells the methods who is calling
        bus.add_message_handler(self._on_message)
        await bus.call(Message(destination='org.freedesktop.DBus', path='/org/freedesktop/DBus',
                               interface='org.freedesktop.DBus', member='AddMatch', signature='s',
                               body=[_NAME_OWNER_RULE]))
        self.running = True
        for adapter in self.adapters:
            adapter.reset()
            adapter.export()
        reply = await bus.request_name(BLUEZ_NAME, NameFlag.DO_NOT_QUEUE)
        if reply not in (RequestNameReply.PRIMARY_OWNER, RequestNameReply.ALREADY_OWNER):
            self.kill(0.0)
            raise RuntimeError(f'{BLUEZ_NAME} is already owned on {bus_address}: another BlueZ runs on that bus')
        loop = asyncio.get_running_loop()
        self._advertising = loop.create_task(self._advertise())
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
        for adapter in self.adapters:
            for link in adapter.devices:
                if link.connected:
                    await link.disconnect()
                link.remove_device()
            adapter.unexport()
        await self.bus.release_name(BLUEZ_NAME)
        self._close()

    def kill(self, link_timeout_s: float = LE_SUPERVISION_TIMEOUT_S) -> None:
        """Vanish from the bus without a word, like a crashed bluetoothd. The cubes keep their links (and their
        last commands) for ``link_timeout_s``, then notice the silence and disconnect."""
        if not self.running:
            return
        loop = asyncio.get_running_loop()
        for adapter in self.adapters:
            for link in adapter.devices:
                link.forget()
        for radio in self.links:
            if radio.cube.connected:
                self._link_timeouts.append(loop.call_later(link_timeout_s, radio.cube.drop_link))
        self._close()

    def _close(self) -> None:
        self.running = False
        if self._advertising is not None:
            self._advertising.cancel()
            self._advertising = None
        for adapter in self.adapters:
            adapter.reset()
        self.exported.clear()
        bus, self.bus = self.bus, None
        if bus is not None:
            bus.disconnect()

    # ------------------------------------------------------------------------------------ radio
    def vanish(self, index: int, remove: bool = True) -> None:
        """Cube ``index`` goes out of range: its link drops (the central sees Connected false), it is no longer
        heard, and with ``remove`` BlueZ forgets it at once on every adapter (otherwise after
        ``temporary_timeout_s``)."""
        radio = self.links[index]
        radio.in_range = False
        if radio.cube.connected:
            radio.cube.drop_link()
        if remove and self.running:
            for adapter in self.adapters:
                adapter.devices[index].remove_device()

    def reappear(self, index: int) -> None:
        """Cube ``index`` is back in range: it advertises again while not connected."""
        self.links[index].in_range = True

    async def _advertise(self) -> None:
        count = 0
        while True:
            now = time.monotonic()
            try:
                for adapter in self.adapters:
                    adapter.advertise_round(count, now)
            except Exception as exc:           # a dying bus: _watch_bus ends this task
                _log.debug('advertising round failed: %s', exc)
            count += 1
            await asyncio.sleep(self.advertise_period_s)

    # ------------------------------------------------------------------------------------ bus messages
    def _on_message(self, msg: Message):
        if msg.message_type is MessageType.METHOD_CALL:
            self.caller = msg.sender or ''
            if msg.path and msg.path.startswith('/org/bluez/') and msg.path not in self.exported \
                    and not (msg.interface or '').startswith('org.freedesktop.DBus.'):
                # BlueZ's answer for an adapter, a device (or attribute) it does not know (any more)
                return Message.new_error(msg, 'org.freedesktop.DBus.Error.UnknownObject',
                                         f'Method "{msg.member}" with signature "{msg.signature}" on interface '
                                         f'"{msg.interface}" doesn\'t exist')
        elif msg.message_type is MessageType.SIGNAL and msg.member == 'NameOwnerChanged' \
                and msg.sender == 'org.freedesktop.DBus':
            name, _old, new = msg.body
            if name.startswith(':') and not new:      # a client left the bus: its sessions end with it
                for adapter in self.adapters:
                    adapter.client_left(name)
        return None
