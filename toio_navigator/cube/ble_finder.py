"""Which cube a BLE driver connects to: the one at ``ble_address``, the one whose advertised name holds the id
``ble_name``, or with ``ble_name: "*"`` any cube that is free. Plain Python (bleak only through
:mod:`toio_navigator.cube.ble_transport`), no ROS.

One cube per driver: a cube BlueZ reports connected is never a candidate, and a driver claims its cube on this
machine (:mod:`toio_navigator.cube.ble_claims`) before it connects, for as long as it runs. A driver whose cube
another driver holds says who and tries again with its reconnect backoff; a "*" driver passes over held cubes.
"""
from __future__ import annotations

from toio_navigator.cube import ble_claims, ble_transport
from toio_navigator.cube.connection import FoundLink
from toio_navigator.cube.transport import TransportError
from toio_navigator.settings.driver import ANY_CUBE, DriverConfig


async def open_ble_transport(cfg: DriverConfig, holder: str) -> FoundLink:
    """The link to the cube ``cfg`` names, claimed for ``holder`` (e.g. '/cube1/cube_driver'). TransportError if
    no such cube advertises within ``ble_scan_timeout_s``, or another driver on this machine holds it."""
    adapter = cfg.ble_adapter or None
    rssi = None
    if cfg.ble_address:
        target, held = cfg.ble_address, _claim(cfg.ble_address, adapter, holder)
    elif cfg.ble_name == ANY_CUBE:
        claims: list[ble_claims.CubeClaim] = []

        def free(cube: ble_transport.FoundCube) -> bool:
            got = ble_claims.claim(cube.address, adapter, holder)
            if got is not None:
                claims.append(got)
            return got is not None
        try:
            found = await ble_transport.scan(count=1, timeout_s=cfg.ble_scan_timeout_s, adapter=adapter, accept=free)
        except BaseException:       # failed or cancelled (the driver stops): give up what was claimed
            for got in claims:
                got.release()
            raise
        if not found:
            raise TransportError(f'no free toio cube advertising within {cfg.ble_scan_timeout_s} s (a cube '
                                 'another driver holds, or that is connected, does not count)')
        target, rssi, held = found[0].device, found[0].rssi, claims[0]
    else:
        heard: dict[str, tuple[str, bool]] = {}
        found = await ble_transport.scan(names=[cfg.ble_name], count=1, timeout_s=cfg.ble_scan_timeout_s,
                                         adapter=adapter, heard=heard)
        if not found:
            raise TransportError(f'no toio cube advertising with {cfg.ble_name!r} in its name within '
                                 f'{cfg.ble_scan_timeout_s} s ({_heard(heard)})')
        target, rssi = found[0].device, found[0].rssi
        held = _claim(found[0].address, adapter, holder, found[0].name)
    transport = ble_transport.BleTransport(target, adapter=adapter, backoff=cfg.backoff, io_timeout_s=cfg.io_timeout_s)
    return FoundLink(transport, rssi, held.release)


def _heard(heard: dict[str, tuple[str, bool]]) -> str:
    """What a scan that found nothing heard, for its error message."""
    if not heard:
        return 'heard no toio cube at all'
    return 'heard ' + ', '.join(f'{name or "?"} ({address}{", connected" if connected else ""})'
                                for address, (name, connected) in sorted(heard.items()))


def _claim(address: str, adapter: str | None, holder: str, name: str = '') -> ble_claims.CubeClaim:
    held = ble_claims.claim(address, adapter, holder)
    if held is None:
        who = ble_claims.holder_of(address, adapter) or 'another driver'
        cube = f'{name} ({address})' if name else address
        raise TransportError(f'cube {cube} is held by {who} on this machine: one cube per driver')
    return held
