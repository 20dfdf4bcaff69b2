"""The air of the virtual BlueZ: adapters with connection slots, connection intervals, connection events that carry a
bounded number of packets, the air the links leave for scanning, and seeded link aborts and failed attempts.

Plain Python (asyncio only for its timers): :mod:`toio_navigator.sim.bluez.service` asks this module when a
packet may move. docs/virtual_bluez.md states the model and where each default comes from.

* Each link has a connection interval: it starts at ``initial_interval_ms`` (Linux asks for 30-50 ms and the
  controller takes the low end); a cube's request (configuration 0x30, at least v2.4.0) is honoured within the
  adapter's limits: the current interval is kept if the request allows it, otherwise the nearest bound of the
  request is granted, clamped to ``min_interval_ms``..``max_interval_ms``.
* A connection event takes ``event_air_ms`` of the adapter's air. The adapter's load is the sum over its links of
  event_air / interval; above 1 the controller cannot serve every event and each link's events come ``load``
  times further apart. Scanning gets what is left, ``1 - load``: a device is heard in that share of its adverts,
  not at all when the links use all of the air.
* Packets move only at connection events, at most ``packets_per_event`` each way. A write request or a read is
  carried at one event and answered at the next (one ATT request in flight per link); a write command needs no
  answer. The cube holds at most ``queue_packets`` notifications for the coming events and drops newer ones.
  The air keeps time on its own: events that came while a busy host ran the loop late carry their packets when
  it runs, so a loaded host delays packets, it does not thin the air.
* Random faults are drawn from :class:`random.Random` seeded by ``seed`` and what they happen to (adapter, cube,
  attempt number), so a run with the same seed sees the same faults in the same order.
"""
from __future__ import annotations

import asyncio
import math
import random
import re
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable

#: connection slots an adapter gets when ``--adapters`` names it without a count (a Broadcom controller's 7)
DEFAULT_SLOTS = 7
#: 1.25 ms: the unit of BLE connection intervals
INTERVAL_UNIT_MS = 1.25
_ADAPTER_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,31}$')


@dataclass(frozen=True)
class AdapterSpec:
    """One virtual adapter: its name (``hci0``) and how many LE links it holds at once."""
    name: str
    slots: int = DEFAULT_SLOTS


def parse_adapters(text: str) -> tuple[AdapterSpec, ...]:
    """``'hci0:7,hci1:7,hci2:5'`` -> the adapters; a name without ``:N`` holds :data:`DEFAULT_SLOTS`. ValueError
    naming the first bad entry."""
    specs = []
    for entry in (e.strip() for e in text.split(',')):
        name, _, slots = entry.partition(':')
        if not _ADAPTER_NAME.match(name):
            raise ValueError(f'--adapters: {entry!r} is not NAME or NAME:SLOTS (e.g. hci0:7)')
        count = DEFAULT_SLOTS
        if slots:
            if not slots.isdigit() or not 1 <= int(slots) <= 64:
                raise ValueError(f'--adapters: the slots of {name} must be 1..64, got {slots!r}')
            count = int(slots)
        if name in (s.name for s in specs):
            raise ValueError(f'--adapters: {name} is named twice')
        specs.append(AdapterSpec(name, count))
    return tuple(specs)


def adapters_text(specs: tuple[AdapterSpec, ...]) -> str:
    return ','.join(f'{s.name}:{s.slots}' for s in specs)


@dataclass(frozen=True)
class RadioParams:
    """Every number of the air model; the defaults and their sources are in docs/virtual_bluez.md."""
    adapters: tuple[AdapterSpec, ...] = (AdapterSpec('hci0', DEFAULT_SLOTS),)
    setup_s: float = 0.2                  # LE Create Connection -> connected, with all of the air free
    discovery_events: int = 14            # GATT discovery of the toio service: connection events until resolved
    initial_interval_ms: float = 30.0     # Linux's conn_min_interval (24 x 1.25 ms)
    min_interval_ms: float = 7.5          # the adapter's limits for a cube's request (the spec's range)
    max_interval_ms: float = 4000.0
    update_events: int = 6                # a granted interval applies this many events after the request
    event_air_ms: float = 2.5             # air one connection event takes: three links at 7.5 ms fill the air
    packets_per_event: int = 3            # each way (a 27-byte packet and its acknowledgement take ~0.7 ms)
    queue_packets: int = 16               # notifications a cube holds for its next connection events
    full_hide_s: float = 2.0              # a device a full adapter refused is gone from that adapter this long
    connect_fail_s: float = 1.0           # an attempt on a cube that does not advertise gives up after this
    aborts_per_link_min: float = 0.5      # spontaneous link aborts (le-connection-abort-by-local), per link-minute
    failed_attempts: float = 0.05         # share of connection attempts that fail by themselves
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.adapters:
            raise ValueError('the virtual BlueZ needs at least one adapter')
        names = [a.name for a in self.adapters]
        if len(set(names)) != len(names):
            raise ValueError(f'adapter names must be unique, got {names}')
        if any(a.slots < 1 for a in self.adapters):
            raise ValueError('every adapter needs at least one slot')
        positive = ('initial_interval_ms', 'min_interval_ms', 'max_interval_ms', 'event_air_ms')
        for name in positive:
            if not 0 < getattr(self, name) < math.inf:
                raise ValueError(f'{name} must be > 0, got {getattr(self, name)}')
        for name in ('setup_s', 'full_hide_s', 'connect_fail_s', 'aborts_per_link_min'):
            if not 0 <= getattr(self, name) < math.inf:
                raise ValueError(f'{name} must be >= 0, got {getattr(self, name)}')
        for name in ('discovery_events', 'update_events'):
            if getattr(self, name) < 0:
                raise ValueError(f'{name} must be >= 0, got {getattr(self, name)}')
        if self.packets_per_event < 1 or self.queue_packets < 1:
            raise ValueError('packets_per_event and queue_packets must be >= 1')
        if not self.min_interval_ms <= self.initial_interval_ms <= self.max_interval_ms:
            raise ValueError(f'need min_interval_ms <= initial_interval_ms <= max_interval_ms, got '
                             f'{self.min_interval_ms}, {self.initial_interval_ms}, {self.max_interval_ms}')
        if not 0 <= self.failed_attempts < 1:
            raise ValueError(f'failed_attempts must be within [0, 1), got {self.failed_attempts}')

    def calm(self) -> 'RadioParams':
        """The same air without random faults (no spontaneous aborts, no failed attempts)."""
        return replace(self, aborts_per_link_min=0.0, failed_attempts=0.0)


def grant_interval(current_ms: float, request_min_ms: float | None, request_max_ms: float | None,
                   params: RadioParams) -> float:
    """The interval a central grants for a cube's request (None: no preference on that side): the current one if
    the request allows it, else the nearest bound of the request, within the adapter's limits."""
    low = params.min_interval_ms if request_min_ms is None else request_min_ms
    high = params.max_interval_ms if request_max_ms is None else request_max_ms
    wanted = min(max(current_ms, low), high)
    return min(max(wanted, params.min_interval_ms), params.max_interval_ms)


def to_units(interval_ms: float) -> int:
    """An interval in the 1.25 ms units of the BLE spec (and of the toio config 0x30/0x32)."""
    return max(1, round(interval_ms / INTERVAL_UNIT_MS))


class Faults:
    """Seeded random faults: each draw depends only on the seed and what it is drawn for."""

    def __init__(self, params: RadioParams) -> None:
        self.params = params

    def _rng(self, *what: object) -> random.Random:
        return random.Random(':'.join(str(w) for w in (self.params.seed, *what)))

    def attempt_fails(self, adapter: str, attempt: int) -> bool:
        return self.params.failed_attempts > 0 and self._rng('attempt', adapter, attempt).random() < \
            self.params.failed_attempts

    def abort_after_s(self, adapter: str, address: str, connect: int) -> float:
        """How long the ``connect``-th link of this cube on this adapter lasts before it aborts (inf: never)."""
        rate = self.params.aborts_per_link_min / 60.0
        if rate <= 0:
            return math.inf
        return self._rng('abort', adapter, address, connect).expovariate(rate)


class AdapterAir:
    """The air of one adapter: its links' load, the share left for scanning, and what scanning heard."""

    def __init__(self, params: RadioParams) -> None:
        self.params = params
        self.links: set['LinkAir'] = set()
        self._credit: dict[str, float] = {}

    @property
    def load(self) -> float:
        """Air the links' connection events take (1 = all of it; more: the controller skips events)."""
        return sum(self.params.event_air_ms / link.interval_ms for link in self.links)

    @property
    def scan_share(self) -> float:
        return max(0.0, 1.0 - self.load)

    def heard(self, address: str) -> bool:
        """One advert of ``address`` while scanning: heard in the scanning share of the adverts (deterministic:
        the share accumulates per device, so a share of 0.4 hears two adverts in five)."""
        share = self.scan_share
        if share <= 0.0:
            return False
        credit = self._credit.get(address, 1.0) + share
        if credit >= 1.0:
            self._credit[address] = credit - 1.0
            return True
        self._credit[address] = credit
        return False


Apply = Callable[[], None]


class LinkAir:
    """The connection events of one link. Packets wait in two queues and move at the link's events (on the asyncio
    loop that runs the service); nothing is scheduled while both queues are empty.

    ``to_cube(apply, answered)``: a packet from the central; ``apply()`` runs at the event that carries it (the
    write reaches the cube then); with ``answered`` (a write request, a read) it is an ATT request: ``answered()``
    runs at the next event, and the following request waits until then. ``to_central(apply)``: a notification;
    False if the cube's queue is full (dropped)."""

    def __init__(self, air: AdapterAir) -> None:
        self.air, self.params = air, air.params
        self.interval_ms = air.params.initial_interval_ms
        self._loop = asyncio.get_running_loop()
        self._up: deque[Apply] = deque()          # cube -> central (answers first, then notifications)
        self._answers: deque[Apply] = deque()
        self._down: deque[tuple[Apply, Apply | None]] = deque()
        self._request_in_flight = False
        self._next_event = self._loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self.open = True
        self.dropped = 0                          # notifications the full queue turned away
        air.links.add(self)

    @property
    def effective_interval_s(self) -> float:
        """Time between two events of this link with the adapter's load (one event per interval at most)."""
        return self.interval_ms / 1000.0 * max(1.0, self.air.load)

    def close(self) -> None:
        """The link is gone: its air is free, waiting packets are lost."""
        self.open = False
        self.air.links.discard(self)
        self._up.clear()
        self._answers.clear()
        self._down.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def set_interval(self, interval_ms: float) -> None:
        self.interval_ms = interval_ms

    # ------------------------------------------------------------------------------------ queues
    def to_cube(self, apply: Apply, answered: Apply | None = None) -> None:
        if self.open:
            self._down.append((apply, answered))
            self._schedule()

    def to_central(self, apply: Apply) -> bool:
        if not self.open:
            return False
        if len(self._up) >= self.params.queue_packets:
            self.dropped += 1
            return False
        self._up.append(apply)
        self._schedule()
        return True

    def after_events(self, count: int, apply: Apply) -> None:
        """Run ``apply`` ``count`` connection events from now (GATT discovery, an interval update)."""
        def run() -> None:
            if self.open:
                apply()
        if self.open:
            when = self._event_time(self._loop.time()) + max(0, count - 1) * self.effective_interval_s
            self._loop.call_at(when, run)

    # ------------------------------------------------------------------------------------ events
    def _event_time(self, now: float) -> float:
        """The first connection event at or after ``now``."""
        step = self.effective_interval_s
        if self._next_event < now:
            self._next_event += math.ceil((now - self._next_event) / step - 1e-9) * step
        return self._next_event

    def _schedule(self) -> None:
        if self._timer is None and self.open:
            self._timer = self._loop.call_at(self._event_time(self._loop.time()), self._event)

    def _event(self) -> None:
        self._timer = None
        if not self.open:
            return
        now, step = self._loop.time(), self.effective_interval_s
        # due at _next_event; the events a late loop missed carry their packets now (module docstring)
        due = min(self._next_event, now)
        events = 1 + int((now - due) / step + 1e-9)
        self._next_event = due + events * step
        budget = self.params.packets_per_event * events
        while self._answers and budget:          # the answers of the last event's request
            budget -= 1
            self._answers.popleft()()
            self._request_in_flight = False
        while self._up and budget and self.open:
            budget -= 1
            self._up.popleft()()
        self._carry_down(events)
        if self._up or self._answers or self._down:
            self._schedule()

    def _carry_down(self, events: int) -> None:
        budget = self.params.packets_per_event * events
        kept: deque[tuple[Apply, Apply | None]] = deque()
        while self._down and budget and self.open:
            apply, answered = self._down.popleft()
            if answered is not None and self._request_in_flight:
                kept.append((apply, answered))    # ATT: one request at a time; commands go past it
                continue
            budget -= 1
            apply()
            if answered is not None:
                self._request_in_flight = True
                self._answers.append(answered)
        kept.extend(self._down)
        self._down = kept
