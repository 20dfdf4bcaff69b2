"""One adapter of the virtual BlueZ (``/org/bluez/hci0``): its discovery sessions, the devices it heard, its
connection slots and its one LE connection attempt at a time.

* Discovery is a session per D-Bus client and adapter (``SetDiscoveryFilter``, ``StartDiscovery``,
  ``StopDiscovery``); a client that starts a second one on the same adapter gets ``org.bluez.Error.InProgress``.
  While any session runs, an advertising cube that passes a session's filter is announced every
  ``advertise_period_s`` -- in the share of its adverts that the adapter's links leave it air to hear
  (:class:`~toio_navigator.sim.bluez.radio.AdapterAir`). A device not heard for ``temporary_timeout_s`` and not
  connected is removed again.
* ``Device1.Connect``: the adapter makes one attempt at a time; a second ``Connect`` on the same adapter while one
  runs, from any client, fails at once with ``org.bluez.Error.InProgress`` (BlueZ's answer with one LE Create
  Connection per adapter). An attempt takes ``setup_s`` divided by the air share left for hearing the cube's
  advert. A full adapter (every slot linked) fails the attempt with ``le-connection-concurrent-connection-limit``
  and the device disappears from that adapter for ``full_hide_s``. A seeded share of attempts
  (``failed_attempts``) fails as interference makes them fail: ``Connected`` goes true and false again and the
  answer is ``le-connection-abort-by-local`` (bleak then tries again by itself).
"""
from __future__ import annotations

import asyncio
import itertools
import time

from dbus_fast import Variant

from toio_navigator.cube.protocol import SERVICE_UUID
from toio_navigator.sim.bluez import objects
from toio_navigator.sim.bluez.link import CubeLink, CubeRadio
from toio_navigator.sim.bluez.objects import bluez_error
from toio_navigator.sim.bluez.radio import AdapterAir, AdapterSpec, RadioParams

_FILTER_KEYS = {'UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern'}
#: BlueZ's error text for an LE connection that came up and was torn down at once (interference, a busy controller)
ABORT_BY_LOCAL = 'le-connection-abort-by-local'
#: BlueZ's error text for a controller that has no room for another link (HCI "Connection Limit Exceeded")
CONNECTION_LIMIT = 'le-connection-concurrent-connection-limit'


class VirtualAdapter:
    """org.bluez.Adapter1 at ``/org/bluez/<name>`` and the devices it knows."""

    def __init__(self, bluez, index: int, spec: AdapterSpec, params: RadioParams, radios: list[CubeRadio]) -> None:
        """``bluez``: the :class:`~toio_navigator.sim.bluez.service.VirtualBluez` it belongs to."""
        self.bluez, self.index, self.spec, self.params = bluez, index, spec, params
        self.name, self.slots = spec.name, spec.slots
        self.path = f'/org/bluez/{spec.name}'
        self.address = f'00:00:5E:00:53:{index + 1:02X}'
        self.air = AdapterAir(params)
        self.devices = [CubeLink(self, radio) for radio in radios]
        self.attempting: CubeLink | None = None
        self.hidden_until: dict[str, float] = {}
        self.attempts = 0
        self.refused_full = 0
        self.aborts = 0
        self.interface: objects.Adapter | None = None
        self._attempt_numbers = itertools.count(1)
        self._sessions: dict[str, dict] = {}     # discovering client -> its filter
        self._filters: dict[str, dict] = {}      # filters set by clients not (yet) discovering

    @property
    def discovering(self) -> bool:
        return bool(self._sessions)

    @property
    def discovering_clients(self) -> list[str]:
        return sorted(self._sessions)

    @property
    def linked(self) -> list[CubeLink]:
        return [d for d in self.devices if d.connected]

    def export(self) -> None:
        self.interface = objects.Adapter(self)
        self.bluez.bus.export(self.path, self.interface)
        self.bluez.exported.add(self.path)

    def unexport(self) -> None:
        self.bluez.bus.unexport(self.path)
        self.bluez.exported.discard(self.path)

    def reset(self) -> None:
        """A dead or restarted BlueZ: no sessions, no attempt, no hidden devices."""
        self._sessions.clear()
        self._filters.clear()
        self.attempting = None
        self.hidden_until.clear()

    # ------------------------------------------------------------------------------------ connections
    async def connect(self, link: CubeLink) -> None:
        """One connection attempt of ``link``'s cube through this adapter (module docstring)."""
        if self.attempting is not None:
            raise bluez_error('InProgress', 'Operation already in progress')
        self.attempting = link
        self.attempts += 1
        try:
            await self._attempt(link, next(self._attempt_numbers))
        finally:
            if self.attempting is link:
                self.attempting = None

    async def _attempt(self, link: CubeLink, number: int) -> None:
        p = self.params
        if not link.radio.advertising:
            await asyncio.sleep(p.connect_fail_s)      # the controller listens for the cube's advert, then gives up
            raise bluez_error('Failed', f'{link.name}: no answer (not advertising)')
        if len(self.linked) >= self.slots:
            await asyncio.sleep(p.setup_s)
            self.refused_full += 1
            self.hidden_until[link.address] = time.monotonic() + p.full_hide_s
            link.remove_device()                        # the device disappears from the bus
            raise bluez_error('Failed', CONNECTION_LIMIT)
        share = self.air.scan_share
        if share <= 0.0:                                # the links leave no air to hear the cube's advert
            await asyncio.sleep(p.connect_fail_s)
            raise bluez_error('Failed', ABORT_BY_LOCAL)
        await asyncio.sleep(p.setup_s / share)
        if not self.bluez.running or link.device is None:
            raise bluez_error('Failed', 'Not connected')
        if not link.radio.advertising:                  # linked through another adapter meanwhile
            raise bluez_error('Failed', f'{link.name}: no answer (not advertising)')
        if self.bluez.faults.attempt_fails(self.name, number):
            # as BlueZ reports it: the link came up and went down again before the answer (bleak then retries)
            link.device.emit_properties_changed({'Connected': True})
            link.device.emit_properties_changed({'Connected': False})
            raise bluez_error('Failed', ABORT_BY_LOCAL)
        link.establish()

    # ------------------------------------------------------------------------------------ discovery
    def advertise_round(self, count: int, now: float) -> None:
        """One round of adverts: what this adapter's scans hear, and the temporary devices it forgets."""
        for link in self.devices:
            radio = link.radio
            if radio.advertising and self._sessions and self._wanted(link) and not self._hidden(link, now):
                if self.air.heard(link.address):
                    self._announce(link, count)
            elif link.device is not None and not link.connected \
                    and now - link.last_seen > self.bluez.temporary_timeout_s:
                link.remove_device()       # a temporary device BlueZ has not heard from for a while

    def _hidden(self, link: CubeLink, now: float) -> bool:
        until = self.hidden_until.get(link.address)
        if until is None:
            return False
        if now >= until:
            del self.hidden_until[link.address]
            return False
        return True

    def _announce(self, link: CubeLink, count: int) -> None:
        link.last_seen = time.monotonic()
        link.rssi = -50 - count % 3 - 4 * self.index    # a changing RSSI is what tells clients an advert arrived
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
        caller = self.bluez.caller
        if caller in self._sessions:
            self._sessions[caller] = rules
        else:
            self._filters[caller] = rules

    def start_discovery(self) -> None:
        caller = self.bluez.caller
        if caller in self._sessions:
            raise bluez_error('InProgress', 'Operation already in progress')
        first = not self._sessions
        self._sessions[caller] = self._filters.pop(caller, {})
        if first:
            self.interface.emit_properties_changed({'Discovering': True})
        now = time.monotonic()
        for link in self.devices:             # the first adverts are heard right away (if there is air)
            if link.radio.advertising and self._wanted(link) and not self._hidden(link, now) \
                    and self.air.heard(link.address):
                self._announce(link, 0)

    def stop_discovery(self) -> None:
        if self.bluez.caller not in self._sessions:
            raise bluez_error('Failed', 'No discovery started')
        self.end_discovery(self.bluez.caller)

    def end_discovery(self, sender: str) -> None:
        if self._sessions.pop(sender, None) is not None and not self._sessions and self.interface is not None:
            self.interface.emit_properties_changed({'Discovering': False})

    def client_left(self, sender: str) -> None:
        self.end_discovery(sender)
        self._filters.pop(sender, None)
        for link in self.devices:
            link.client_left(sender)

    async def remove_device(self, path: str) -> None:
        for link in self.devices:
            if link.path == path and link.device is not None:
                await link.disconnect()
                link.remove_device()
                return
        raise bluez_error('DoesNotExist', 'Does Not Exist')

    def describe(self) -> str:
        """'hci0 3/7 links, air 25%' (for status lines)."""
        return f'{self.name} {len(self.linked)}/{self.slots} links, air {self.air.load:.0%}'
