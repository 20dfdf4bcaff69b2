"""Which cube a BLE driver connects to: the one at ``ble_address``, or the one a scan finds by ``ble_name``.
Plain Python (bleak only through :mod:`toio_navigator.cube.ble_transport`), no ROS.
"""
from __future__ import annotations

from toio_navigator.cube import ble_transport
from toio_navigator.cube.transport import Transport, TransportError
from toio_navigator.settings.driver import DriverConfig


async def open_ble_transport(cfg: DriverConfig) -> tuple[Transport, int | None]:
    """A transport to the driver's cube (not yet connected) and the signal strength it was found with (None
    when it was not scanned for). TransportError if no such cube advertises within ``ble_scan_timeout_s``."""
    target: object = cfg.ble_address
    rssi = None
    if not target:
        found = await ble_transport.scan(names=[cfg.ble_name] if cfg.ble_name else [], count=1,
                                         timeout_s=cfg.ble_scan_timeout_s, adapter=cfg.ble_adapter or None)
        if not found:
            wanted = f'with {cfg.ble_name!r} in its name' if cfg.ble_name else 'at all'
            raise TransportError(f'no toio cube advertising {wanted} within {cfg.ble_scan_timeout_s} s')
        target, rssi = found[0].device, found[0].rssi
    return ble_transport.BleTransport(target, adapter=cfg.ble_adapter or None, backoff=cfg.backoff,
                                      io_timeout_s=cfg.io_timeout_s), rssi
