"""The virtual radio's figures: achieved position rate per cube and command latency, 1-7 cubes on one adapter, at
the default connection interval (30 ms) and at the shortest (7.5 ms). Model figures: they follow from the air
model of the virtual BlueZ (docs/virtual_bluez.md), measured through real bleak and real D-Bus, not on a radio.

The links start at 30 ms (the kernel's default); for the second half every cube then asks for 7.5 ms (config
0x30), which the adapter grants (connecting at 7.5 ms would not get past three cubes: their events leave no air to
hear a fourth one's advert). Each cube notifies its position every physics step (config 0x18: every 10 ms, always;
the world steps every 20 ms, so at most 50 Hz), plus, as the driver configures a cube, its posture (20 Hz) and
wheel speeds (10 Hz on change). bleak in this process holds one link per cube on adapter hci0 (7 slots), so
every number is stamped by one clock:

* position rate: position notifications bleak received per second, per cube (mean, and the slowest cube);
* command latency: a motor write without response, from bleak's call to its arrival at the cube (the next
  connection event), median and 90th percentile over every cube;
* request latency: a write with response (a light), bleak's call until BlueZ's answer (two events), median.

Usage: python tools/bench/ble_air.py [--seconds 3] [--cubes 7]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import bleak

from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_scan import scan
from toio_navigator.sim.bluez.bus import find_dbus_daemon
from toio_navigator.sim.bluez.host import BluezHost
from toio_navigator.sim.bluez.radio import AdapterSpec, RadioParams

C = p.Characteristic
CONFIG = [p.ConfigWrite.id_notification(1, p.ID_ALWAYS), p.ConfigWrite.posture_notification(2, 5, 0),
          p.ConfigWrite.motor_speed_notification(True)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float('nan')


async def measure(host: BluezHost, n: int, seconds: float, request_ms: float | None) -> dict:
    ids = [link.name.split('-')[1] for link in host.bluez.links[:n]]
    found = await scan(names=ids, timeout_s=10.0, adapter='hci0')
    devices = {c.name.split('-')[1]: c.device for c in found}
    clients = [bleak.BleakClient(devices[i], timeout=20.0, bluez={'adapter': 'hci0'}) for i in ids]
    positions = [0] * n
    for client in clients:                  # one connection attempt at a time, as BlueZ takes them
        await client.connect()
    for k, client in enumerate(clients):
        def count(_c, data: bytearray, k=k) -> None:
            if data[:1] == b'\x01':
                positions[k] += 1
        await client.start_notify(C.ID_INFORMATION.value, count)
        await client.start_notify(C.SENSOR_INFORMATION.value, lambda _c, _d: None)
        await client.start_notify(C.MOTOR_CONTROL.value, lambda _c, _d: None)
        for write in CONFIG:
            await client.write_gatt_char(C.CONFIGURATION.value, write.encode(), response=True)
    if request_ms is not None:      # every cube asks for this interval (0x30) once all are linked
        units = round(request_ms / 1.25)
        for client in clients:
            await client.write_gatt_char(C.CONFIGURATION.value, p.ConfigWrite.connection_interval(units, units)
                                         .encode(), response=True)
    await asyncio.sleep(1.0)
    positions[:] = [0] * n
    sent: list[list[float]] = [[] for _ in range(n)]
    requests: list[float] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for k, client in enumerate(clients):
            sent[k].append(time.monotonic())
            await client.write_gatt_char(C.MOTOR_CONTROL.value, p.MotorControlTimed(0, 0, 10).encode(),
                                         response=False)
        t = time.monotonic()
        await clients[0].write_gatt_char(C.LIGHT_CONTROL.value, p.LightOn(1, 0, 0, 9).encode(), response=True)
        requests.append(time.monotonic() - t)
        await asyncio.sleep(0.1)
    elapsed = time.monotonic() - started
    rates = [c / elapsed for c in positions]
    await asyncio.sleep(0.3)
    latencies = []
    for k in range(n):
        arrived = [w.time for w in host.writes(k) if w.char is C.MOTOR_CONTROL and w.time >= started]
        latencies += [a - s for s, a in zip(sent[k], arrived)]
    load, interval = host.call(lambda: (host.bluez.adapters[0].air.load,
                                        host.bluez.adapters[0].devices[0].interval_ms))
    for client in clients:
        await client.disconnect()
    return {'rates': rates, 'latency': latencies, 'request': requests, 'load': load, 'interval': interval}


def run(request_ms: float | None, n: int, seconds: float) -> dict:
    radio = RadioParams(adapters=(AdapterSpec('hci0', 7),)).calm()
    host = BluezHost([(80.0 + 50.0 * k, 250.0, 0.0) for k in range(n)], radio=radio)
    host.start()
    try:
        with host.as_system_bus():
            return asyncio.run(measure(host, n, seconds, request_ms))
    finally:
        host.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=3.0, help='measuring time per row (default 3)')
    parser.add_argument('--cubes', type=int, default=7, help='up to this many cubes on the adapter (default 7)')
    args = parser.parse_args()
    if not 1 <= args.cubes <= 7 or not args.seconds > 0:
        print('--cubes must be 1..7 and --seconds > 0', file=sys.stderr)
        return 2
    if find_dbus_daemon() is None:
        print('ble_air: dbus-daemon is not installed; nothing to measure', file=sys.stderr)
        return 2
    print('model figures of the virtual radio (docs/virtual_bluez.md): one adapter, 2.5 ms of air and 3 packets '
          'each way per connection event; positions every 20 ms, posture every 50 ms, wheel speeds on change')
    print('| interval | cubes | air used | events every | position rate per cube (mean / slowest) | '
          'command latency median / p90 | request latency median |')
    print('|---|---|---|---|---|---|---|')
    for request in (None, 7.5):
        for n in range(1, args.cubes + 1):
            r = run(request, n, args.seconds)
            every = r['interval'] * max(1.0, r['load'])
            asked = '30 ms (default)' if request is None else f'{request:g} ms (asked, 0x30)'
            print(f'| {asked} | {n} | {r["load"]:.0%} | {every:.1f} ms | {statistics.mean(r["rates"]):.1f} / '
                  f'{min(r["rates"]):.1f} Hz | {1000 * statistics.median(r["latency"]):.1f} / '
                  f'{1000 * percentile(r["latency"], 0.9):.1f} ms | {1000 * statistics.median(r["request"]):.1f} ms |',
                  flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
