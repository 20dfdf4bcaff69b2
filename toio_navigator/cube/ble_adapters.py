"""Which Bluetooth adapter a BLE driver connects through, and one connection attempt per adapter at a time across
all drivers of this machine. Plain Python (dbus-fast imported when used), no ROS.

BlueZ takes one LE connection attempt per adapter at a time and answers a second one, from any program, with
``org.bluez.Error.InProgress``; independent retries then collide again. So every attempt of a driver first takes
the adapter's attempt lock: an exclusive ``flock`` on a file named after the BlueZ (its system bus) and the
adapter, next to the cube claims (:mod:`toio_navigator.cube.ble_claims`), waited for with short jittered polls.
The kernel drops it when its holder ends, even by SIGKILL.

An adapter holds only so many links (often 5 or 7). BlueZ does not say how many; an adapter that refused a link
while it held N is taken to hold N from then on (a learned limit, in a file beside the lock, so every driver of
the machine knows it). A driver given several adapters (``ble_adapter``: a list, or ``"*"`` for every adapter
BlueZ offers) takes the one with a free slot and the fewest links; when all are full it says so in one line.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable, Sequence

from toio_navigator.cube import ble_claims
from toio_navigator.cube.transport import RadioUnavailable, TransportError

_log = logging.getLogger(__name__)

#: ``ble_adapter`` for every adapter BlueZ offers
ANY_ADAPTER = '*'
#: what to run where there is no Bluetooth (said by every message about a missing bus or BlueZ)
FAKE_BLUEZ_HINT = ('for virtual cubes run `toio-nav fake-bluez` and start the drivers with the '
                   'DBUS_SYSTEM_BUS_ADDRESS it prints')
_ADAPTER_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,31}$')
#: BlueZ error texts after which an adapter counts as full at its present number of links
_FULL_ERRORS = ('concurrent-connection-limit', 'connection limit', 'limited resources')


def parse_adapters(value: str | Sequence[str]) -> tuple[str, ...]:
    """``ble_adapter`` -> the adapter names a driver may use: () for BlueZ's default, ('*',) for any, or the names
    of a list or a comma-separated string ('hci0,hci1'). ValueError naming a bad entry."""
    items = [value] if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f'adapter names must be strings, got {item!r}')
        names += [n.strip() for n in item.split(',') if n.strip()]
    if ANY_ADAPTER in names:
        if len(names) > 1:
            raise ValueError(f'"{ANY_ADAPTER}" means every adapter: give it alone, got {names}')
        return (ANY_ADAPTER,)
    for name in names:
        if not _ADAPTER_NAME.match(name):
            raise ValueError(f'{name!r} is not an adapter name (e.g. "hci0")')
    if len(set(names)) != len(names):
        raise ValueError(f'an adapter is named twice in {names}')
    return tuple(names)


@dataclass(frozen=True)
class AdapterState:
    """One adapter as BlueZ reports it now, and what the drivers of this machine learned about it."""
    name: str
    links: int                 # LE links connected through it (any device, not only cubes)
    powered: bool = True
    limit: int | None = None   # it refused a link while holding this many (None: never refused one)
    address: str = ''

    @property
    def full(self) -> bool:
        return not self.powered or (self.limit is not None and self.links >= self.limit)

    def text(self) -> str:
        if not self.powered:
            return f'{self.name} off'
        return f'{self.name} {self.links}/{self.limit} links' if self.limit else f'{self.name} {self.links} links'


def candidates(states: Sequence[AdapterState], wanted: tuple[str, ...]) -> list[AdapterState]:
    """The adapters a driver may use: the named ones BlueZ has, every one for '*', BlueZ's default (hci0, else
    the first by name) for ()."""
    if wanted == (ANY_ADAPTER,):
        return list(states)
    if not wanted:
        named = {s.name: s for s in states}
        default = named.get('hci0') or (min(states, key=lambda s: s.name) if states else None)
        return [default] if default is not None else []
    return [s for s in states if s.name in wanted]


def choose(states: Sequence[AdapterState], wanted: tuple[str, ...],
           busy: Callable[[str], bool] = lambda _name: False) -> AdapterState:
    """The adapter for the next attempt: a free slot, not ``busy`` with another attempt if one is not, the fewest
    links, ties drawn at random (drivers that start together spread over the adapters instead of queueing for
    the first). TransportError in one line when none of the driver's adapters is there or has a free slot."""
    mine = candidates(states, wanted)
    if not mine:
        have = ', '.join(s.name for s in states) or 'none'
        raise TransportError(f'BlueZ has no adapter {" or ".join(wanted) or "at all"} (it has: {have}): set '
                             f'ble_adapter to one of them, or "{ANY_ADAPTER}" for any')
    free = [s for s in mine if not s.full]
    if not free:
        raise TransportError(full_line(mine))
    return min(free, key=lambda s: (busy(s.name), s.links, random.random()))


def spread(drivers: Sequence[tuple[str, tuple[str, ...]]], states: Sequence[AdapterState],
           slots: int = 7) -> dict[str, str | None]:
    """Where the drivers would connect: each (cube, its adapters) takes, of its adapters, the one with a free slot
    and the fewest links (ties by name, so a plan is the same every time), the drivers with the fewest adapters
    to choose from first; an adapter holds its learned limit, else ``slots``. None: no adapter of that driver
    would have room."""
    links = {s.name: s.links for s in states}
    placed: dict[str, str | None] = {cube: None for cube, _wanted in drivers}
    for cube, wanted in sorted(drivers, key=lambda d: len(candidates(states, d[1]))):
        room = [s for s in candidates(states, wanted) if s.powered and links[s.name] < (s.limit or slots)]
        best = min(room, key=lambda s: (links[s.name], s.name)) if room else None
        placed[cube] = best.name if best else None
        if best:
            links[best.name] += 1
    return placed


def full_line(states: Sequence[AdapterState]) -> str:
    """'every adapter of this driver is full: hci0 7/7 links ...; what to do'."""
    listed = ', '.join(s.text() for s in states)
    return (f'every adapter of this driver is full ({listed}): add another adapter to ble_adapter (a list, e.g. '
            f'"hci0,hci1", or "{ANY_ADAPTER}" for any), or run fewer cubes here; retrying')


def is_full_error(text: str) -> bool:
    lowered = text.lower()
    return any(e in lowered for e in _FULL_ERRORS)


# ------------------------------------------------------------------------------------------------ learned limits

def _limit_path(adapter: str):
    return ble_claims.bluez_file(f'adapter-{adapter}.slots')


def learned_limit(adapter: str) -> int | None:
    try:
        value = int(_limit_path(adapter).read_text().strip())
    except (OSError, ValueError):
        return None
    return value if value > 0 else None


def learn_limit(adapter: str, links: int) -> None:
    """``adapter`` refused a link while holding ``links``: it holds that many from now on (for every driver)."""
    if links < 1:
        return
    path = _limit_path(adapter)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'{links}\n')
    except OSError as exc:
        _log.debug('cannot note the limit of %s: %s', adapter, exc)
    _log.info('adapter %s refused a link while holding %d: taken as full at %d links', adapter, links, links)


# ------------------------------------------------------------------------------------------------ BlueZ

async def bluez_adapters(timeout_s: float = 5.0) -> list[AdapterState]:
    """Every adapter BlueZ offers, with its links now and its learned limit. :class:`RadioUnavailable` naming
    what is missing: the system bus, BlueZ on it, or any adapter."""
    states = adapter_states(await bluez_objects(timeout_s))
    if not states:
        raise RadioUnavailable('BlueZ offers no Bluetooth adapter (none plugged in, or blocked: see rfkill list); '
                               + FAKE_BLUEZ_HINT)
    return states


async def bluez_objects(timeout_s: float = 5.0) -> dict:
    """BlueZ's objects (GetManagedObjects: path -> interface -> property -> Variant); :class:`RadioUnavailable`
    naming what is missing: the system bus or BlueZ on it."""
    # dbus-fast is imported here, not at the top: the simulator and the tests of the pure parts run without it
    from dbus_fast import BusType, Message, MessageType  # noqa: PLC0415 (see above)
    from dbus_fast.aio import MessageBus  # noqa: PLC0415 (see above)
    bus_address = ble_claims.system_bus()
    try:
        bus = await asyncio.wait_for(MessageBus(bus_type=BusType.SYSTEM).connect(), timeout_s)
    except asyncio.TimeoutError:
        raise RadioUnavailable(f'the D-Bus system bus ({bus_address}) did not answer within {timeout_s:g} s') \
            from None
    except Exception as exc:
        raise RadioUnavailable(f'no D-Bus system bus at {bus_address} ({exc}): this machine has no BlueZ to talk '
                               f'to; {FAKE_BLUEZ_HINT}') from None
    try:
        reply = await asyncio.wait_for(bus.call(Message(
            destination='org.bluez', path='/', interface='org.freedesktop.DBus.ObjectManager',
            member='GetManagedObjects')), timeout_s)
    except asyncio.TimeoutError:
        raise RadioUnavailable(f'BlueZ did not answer within {timeout_s:g} s') from None
    finally:
        bus.disconnect()
    if reply.message_type is MessageType.ERROR:
        raise RadioUnavailable(f'BlueZ (org.bluez) is not running on the system bus {bus_address} '
                               f'({reply.error_name}): install and start it (Debian/Ubuntu: apt install bluez; '
                               f'systemctl start bluetooth), or {FAKE_BLUEZ_HINT}')
    return reply.body[0]


def adapter_states(objects: dict) -> list[AdapterState]:
    """AdapterStates from a GetManagedObjects answer (path -> interface -> property -> Variant)."""
    links: dict[str, int] = {}
    adapters: dict[str, dict] = {}
    for path, interfaces in objects.items():
        if 'org.bluez.Adapter1' in interfaces:
            adapters[path] = {k: v.value for k, v in interfaces['org.bluez.Adapter1'].items()}
        device = interfaces.get('org.bluez.Device1')
        if device is not None and device.get('Connected') is not None and device['Connected'].value:
            owner = str(device['Adapter'].value) if 'Adapter' in device else path.rsplit('/', 1)[0]
            links[owner] = links.get(owner, 0) + 1
    out = []
    for path, props in sorted(adapters.items()):
        name = path.rsplit('/', 1)[-1]
        out.append(AdapterState(name, links.get(path, 0), bool(props.get('Powered', True)), learned_limit(name),
                                str(props.get('Address', ''))))
    return out


# ------------------------------------------------------------------------------------------------ attempts

def _attempt_path(adapter: str):
    return ble_claims.bluez_file(f'adapter-{adapter}.attempt')


def attempt_running(adapter: str) -> bool:
    """True if a driver of this machine is making a connection attempt on ``adapter`` right now."""
    held = ble_claims.lock_file(_attempt_path(adapter), 'a look', adapter)
    if held is None:
        return True
    held.release()
    return False


@contextlib.asynccontextmanager
async def attempt_lock(adapter: str, holder: str, timeout_s: float) -> AsyncIterator[None]:
    """Hold ``adapter``'s attempt lock (see the module docstring) for one connection attempt; TransportError if
    other drivers held it for ``timeout_s``. Polls every 20-60 ms (jittered, so waiting drivers do not move in
    step)."""
    path = _attempt_path(adapter)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        held = ble_claims.lock_file(path, holder, adapter)
        if held is not None:
            break
        if loop.time() >= deadline:
            raise TransportError(f'adapter {adapter} was busy with other drivers\' connection attempts for '
                                 f'{timeout_s:g} s')
        await asyncio.sleep(random.uniform(0.02, 0.06))
    try:
        yield
    finally:
        held.release()


@dataclass
class AdapterChoice:
    """A driver's adapters (``wanted``, see :func:`parse_adapters`) and how it picks one for each attempt.
    ``source()`` lists BlueZ's adapters (default: :func:`bluez_adapters`); ``holder`` names the driver in the
    attempt lock; waiting for the lock gives up after ``lock_timeout_s``."""
    wanted: tuple[str, ...]
    holder: str
    lock_timeout_s: float = 30.0
    source: Callable[[], Awaitable[list[AdapterState]]] | None = None

    async def states(self) -> list[AdapterState]:
        return await (self.source or bluez_adapters)()

    async def choose(self, prefer: str = '') -> AdapterState:
        """The adapter for the next attempt; ``prefer`` (where the cube was just found) if it has a free slot."""
        states = await self.states()
        kept = [s for s in candidates(states, self.wanted) if s.name == prefer and not s.full]
        return kept[0] if kept else choose(states, self.wanted, attempt_running)

    async def still_free(self, adapter: str) -> AdapterState:
        """``adapter`` now, under its attempt lock; TransportError if it filled while this driver waited (the
        next attempt takes another, or says that all are full)."""
        states = await self.states()
        now = next((s for s in states if s.name == adapter), None)
        if now is None:
            raise TransportError(f'adapter {adapter} is gone from BlueZ')
        if now.full:
            free = [s for s in candidates(states, self.wanted) if not s.full]
            raise TransportError(f'adapter {now.text()} filled while this driver waited for it' if free
                                 else full_line(candidates(states, self.wanted)))
        return now
