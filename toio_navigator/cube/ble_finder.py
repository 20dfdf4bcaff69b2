"""Which cube a BLE driver connects to, and through which adapter: the cube at ``address``, the one whose advertised
name holds the id ``name``, or with ``name: "*"`` any cube that is free; through one of the driver's adapters
with a free slot (:mod:`toio_navigator.cube.ble_adapters`). Plain Python (bleak only through
:mod:`toio_navigator.cube.ble_transport`), no ROS.

One cube per driver: a cube BlueZ reports connected is never a candidate, and a driver claims its cube on this
machine (:mod:`toio_navigator.cube.ble_claims`) before it connects, for as long as it runs. A driver whose cube
another driver holds says who and tries again with its reconnect backoff; a "*" driver passes over held cubes.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from toio_navigator.cube import ble_claims, ble_transport
from toio_navigator.cube.ble_adapters import AdapterChoice
from toio_navigator.cube.connection import FoundLink
from toio_navigator.cube.transport import BackoffPolicy, RadioUnavailable, TransportError

#: ``name`` for "any cube no other driver holds"
ANY_CUBE = '*'


@dataclass(frozen=True)
class BleTarget:
    """What a BLE driver looks for and how: the cube (``address``, else ``name``: a 3-character id or "*"), its
    adapters (:func:`~toio_navigator.cube.ble_adapters.parse_adapters`: () BlueZ's default, ('*',) any, or
    names), the scan timeout, the reconnect policy and the timeout of one write or read."""
    name: str = ''
    address: str = ''
    adapters: tuple[str, ...] = ()
    scan_timeout_s: float = 10.0
    backoff: BackoffPolicy = BackoffPolicy()
    io_timeout_s: float = 5.0


def _choice(target: BleTarget, holder: str) -> AdapterChoice | None:
    """The adapter choice of a driver on Linux (BlueZ); elsewhere bleak's platform picks the adapter."""
    if not sys.platform.startswith('linux'):
        return None
    # waiting for the adapter's attempt lock may take a turn of every other driver's attempt on it
    return AdapterChoice(target.adapters, holder, lock_timeout_s=max(30.0, 3 * target.backoff.connect_timeout_s))


async def open_ble_transport(target: BleTarget, holder: str) -> FoundLink:
    """The link to the cube ``target`` names, claimed for ``holder`` (e.g. '/cube1/cube_driver'). TransportError if
    no such cube advertises within ``scan_timeout_s``, another driver on this machine holds it, or every adapter
    of the driver is full; :class:`~toio_navigator.cube.ble_adapters.RadioUnavailable` if there is no BlueZ."""
    choice = _choice(target, holder)
    adapter = None
    if choice is not None:
        adapter = (await choice.choose()).name
    elif target.adapters and target.adapters[0] != '*':
        adapter = target.adapters[0]
    rssi = None
    if target.address:
        device, held = target.address, _claim(target.address, holder)
    elif target.name == ANY_CUBE:
        device, rssi, held = await _any_cube(target, adapter, holder)
    else:
        heard: dict[str, tuple[str, bool]] = {}
        found = await ble_transport.scan(names=[target.name], count=1, timeout_s=target.scan_timeout_s,
                                         adapter=adapter, heard=heard)
        if not found:
            raise TransportError(f'no toio cube advertising with {target.name!r} in its name within '
                                 f'{target.scan_timeout_s} s{_where(adapter)} ({_heard(heard)})')
        device, rssi = found[0].device, found[0].rssi
        held = _claim(found[0].address, holder, found[0].name)
    transport = ble_transport.BleTransport(device, adapter=adapter, backoff=target.backoff,
                                           io_timeout_s=target.io_timeout_s, adapters=choice)
    return FoundLink(transport, rssi, held.release)


async def _any_cube(target: BleTarget, adapter: str | None, holder: str):
    claims: list[ble_claims.CubeClaim] = []

    def free(cube: ble_transport.FoundCube) -> bool:
        got = ble_claims.claim(cube.address, holder)
        if got is not None:
            claims.append(got)
        return got is not None
    try:
        found = await ble_transport.scan(count=1, timeout_s=target.scan_timeout_s, adapter=adapter, accept=free)
    except BaseException:       # failed or cancelled (the driver stops): give up what was claimed
        for got in claims:
            got.release()
        raise
    if not found:
        raise TransportError(f'no free toio cube advertising within {target.scan_timeout_s} s{_where(adapter)} (a '
                             'cube another driver holds, or that is connected, does not count)')
    return found[0].device, found[0].rssi, claims[0]


def _where(adapter: str | None) -> str:
    return f' on {adapter}' if adapter else ''


def _heard(heard: dict[str, tuple[str, bool]]) -> str:
    """What a scan that found nothing heard, for its error message."""
    if not heard:
        return 'heard no toio cube at all'
    return 'heard ' + ', '.join(f'{name or "?"} ({address}{", connected" if connected else ""})'
                                for address, (name, connected) in sorted(heard.items()))


def _claim(address: str, holder: str, name: str = '') -> ble_claims.CubeClaim:
    held = ble_claims.claim(address, holder)
    if held is None:
        who = ble_claims.holder_of(address) or 'another driver'
        cube = f'{name} ({address})' if name else address
        raise TransportError(f'cube {cube} is held by {who} on this machine: one cube per driver')
    return held


__all__ = ['ANY_CUBE', 'BleTarget', 'RadioUnavailable', 'open_ble_transport']
