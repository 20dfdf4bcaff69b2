"""``toio-nav ble-check``: the radio as the BLE drivers will find it, before a bringup.

It asks BlueZ on the system bus (the machine's, or a virtual one: run it under ``toio-nav fake-bluez -- ...`` or
with the ``DBUS_SYSTEM_BUS_ADDRESS`` that prints) for its adapters and their links, scans on every adapter at
once for the toio cubes in range (name, id, address, RSSI per adapter, the firmware its name implies, or with
``--ask-firmware`` the one each free cube reports), and with ``--params-file`` shows how that parameter file's
cubes would spread over the adapters and whether each driver's cube was heard. Exit 0; 1 when there is no
BlueZ to ask (the line says why); 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from toio_navigator.cube import ble_claims
from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_adapters import AdapterChoice, adapter_states, bluez_objects, parse_adapters, spread
from toio_navigator.cube.ble_scan import scan
from toio_navigator.cube.transport import BackoffPolicy, RadioUnavailable, TransportError
from toio_navigator.launching.profiles import BringupError, read_cubes
from toio_navigator.settings.bringup_params import Instance, node_values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--scan-s', type=float, default=3.0, help='scan this long on every adapter (default 3)')
    parser.add_argument('--params-file', action='append', type=Path, default=None, metavar='YAML',
                        help='a bringup parameter file (repeatable): how its cubes would spread over the adapters')
    parser.add_argument('--slots', type=int, default=7,
                        help='links an adapter is taken to hold when none was learned from a refusal (default 7)')
    parser.add_argument('--ask-firmware', action='store_true',
                        help='connect to each free cube in turn and ask its protocol version (a few seconds each)')


def run(args: argparse.Namespace) -> int:
    if not 0 < args.scan_s <= 60 or not 1 <= args.slots <= 64:
        print('ble-check: --scan-s must be in (0, 60] and --slots in 1..64', file=sys.stderr)
        return 2
    try:
        cubes = read_cubes(args.params_file) if args.params_file else []
    except BringupError as exc:
        print(f'ble-check: {exc}', file=sys.stderr)
        return 2
    try:
        return asyncio.run(_check(args, cubes))
    except RadioUnavailable as exc:
        print(f'ble-check: {exc}', file=sys.stderr)
        return 1


async def _check(args: argparse.Namespace, cubes: list[str]) -> int:
    objects = await bluez_objects()
    states = adapter_states(objects)
    print(f'BlueZ on {ble_claims.system_bus()}: {len(states)} adapter(s)')
    print(f'  {"adapter":<8} {"address":<18} {"powered":<8} {"links":<6} limit')
    for s in states:
        print(f'  {s.name:<8} {s.address:<18} {"yes" if s.powered else "no":<8} {s.links:<6} '
              f'{s.limit if s.limit else f"not learned (taken as {args.slots})"}')
        for name, address in _linked(objects, s.name):
            print(f'      linked: {name or "?"} ({address})')
    heard = await _scan_all([s.name for s in states if s.powered], args.scan_s)
    for s in states:                    # a linked cube does not advertise: BlueZ's objects say it is there
        for name, address in _linked(objects, s.name):
            if name.startswith('toio'):
                heard.setdefault(address, {'name': name, 'rssi': {}, 'connected': True, 'device': {}})
    versions = await _ask_firmware(heard) if args.ask_firmware else {}
    _print_heard(heard, versions, args.scan_s)
    if cubes:
        _print_spread(args.params_file, cubes, states, heard, args.slots)
    return 0


def _linked(objects: dict, adapter: str) -> list[tuple[str, str]]:
    out = []
    for path, interfaces in sorted(objects.items()):
        device = {k: v.value for k, v in interfaces.get('org.bluez.Device1', {}).items()}
        if device.get('Connected') and str(device.get('Adapter', '')).endswith('/' + adapter):
            out.append((str(device.get('Name', device.get('Alias', ''))), str(device.get('Address', ''))))
    return out


async def _scan_all(adapters: list[str], seconds: float) -> dict[str, dict]:
    """address -> {'name', 'rssi': {adapter: dBm}, 'connected', 'device': {adapter: BLEDevice}} for every toio
    cube any adapter heard."""
    heard: dict[str, dict] = {}

    async def one(adapter: str) -> None:
        names: dict[str, tuple[str, bool]] = {}
        try:
            found = await scan(timeout_s=seconds, adapter=adapter, heard=names)
        except TransportError as exc:
            print(f'  {adapter}: cannot scan: {exc}')
            return
        for address, (name, connected) in names.items():
            entry = heard.setdefault(address, {'name': name, 'rssi': {}, 'connected': False, 'device': {}})
            entry['connected'] |= connected
        for cube in found:
            heard[cube.address]['rssi'][adapter] = cube.rssi
            heard[cube.address]['device'][adapter] = cube.device
    await asyncio.gather(*(one(a) for a in adapters))
    return heard


def firmware_of_name(name: str) -> str:
    """The protocol version a cube's advertised name implies ('toio-XXX' from 2.4.0 on)."""
    if name.startswith('toio-'):
        return '>= 2.4.0 (by its name)'
    if name.startswith('toio Core Cube-'):
        return '2.3.x (by its name)'
    return '<= 2.2.x (by its name)'


async def _ask_firmware(heard: dict[str, dict]) -> dict[str, str]:
    """Each free cube's protocol version, asked over a link of its own (one cube at a time; a cube another
    program holds is left alone)."""
    # the transport is imported here: the listing needs no bleak client
    from toio_navigator.cube.ble_transport import BleTransport  # noqa: PLC0415 (see above)
    versions: dict[str, str] = {}
    for address, entry in sorted(heard.items()):
        if entry['connected'] or not entry['device']:
            continue
        held = ble_claims.claim(address, '/ble_check')
        if held is None:
            versions[address] = f'held by {ble_claims.holder_of(address) or "a driver"}'
            continue
        adapter = max(entry['rssi'], key=lambda a: entry['rssi'][a] or -127)
        answer: list[str] = []
        link = BleTransport(entry['device'][adapter], adapter=adapter, auto_reconnect=False,
                            backoff=BackoffPolicy(connect_timeout_s=10.0),
                            adapters=AdapterChoice((adapter,), '/ble_check'))

        def on_config(_char, data: bytes) -> None:
            note = p.decode(p.Characteristic.CONFIGURATION, data)
            if isinstance(note, p.ProtocolVersion):
                answer.append(note.version)
        try:
            await link.start_notify(p.Characteristic.CONFIGURATION, on_config)
            await link.connect()
            await link.write(p.Characteristic.CONFIGURATION, p.ConfigWrite.request_protocol_version().encode())
            for _ in range(20):
                if answer:
                    break
                await asyncio.sleep(0.05)
            versions[address] = answer[0] if answer else 'no answer (2.0.0?)'
        except (TransportError, p.ProtocolError) as exc:
            versions[address] = f'not asked: {exc}'
        finally:
            await link.disconnect()
            held.release()
    return versions


def _print_heard(heard: dict[str, dict], versions: dict[str, str], seconds: float) -> None:
    print(f'toio cubes heard in {seconds:g} s or linked: {len(heard)}')
    if not heard:
        return
    print(f'  {"name":<20} {"id":<4} {"address":<18} {"rssi by adapter":<26} firmware')
    for address, entry in sorted(heard.items(), key=lambda item: item[1]['name']):
        name = entry['name']
        cube_id = name.rsplit('-', 1)[1] if '-' in name else '?'
        rssi = ', '.join(f'{a} {v}' for a, v in sorted(entry['rssi'].items())) or \
            ('linked (not advertising)' if entry['connected'] else '-')
        firmware = versions.get(address) or firmware_of_name(name)
        print(f'  {name:<20} {cube_id:<4} {address:<18} {rssi:<26} {firmware}')


def _print_spread(files: list[Path], cubes: list[str], states, heard: dict[str, dict], slots: int) -> None:
    drivers, looks = [], {}
    for cube in cubes:
        values = node_values(files, Instance('cube_driver', f'/{cube}'))
        try:
            adapters = parse_adapters(values.get('ble_adapter', ''))
        except ValueError as exc:
            adapters = ()
            print(f'  {cube}: ble_adapter: {exc}')
        wanted = str(values.get('ble_address') or values.get('ble_name') or '')
        looks[cube] = (wanted, adapters)
        drivers.append((cube, adapters))
    placed = spread(drivers, states, slots)
    print(f'how the {len(cubes)} cubes of {", ".join(str(f) for f in files)} would spread over the adapters:')
    print(f'  {"cube":<10} {"looks for":<18} {"adapters":<16} {"connects through":<18} heard')
    for cube in cubes:
        wanted, adapters = looks[cube]
        print(f'  {cube:<10} {wanted or "(none)":<18} {",".join(adapters) or "default":<16} '
              f'{placed[cube] or "no room":<18} {_heard_as(wanted, heard)}')


def _heard_as(wanted: str, heard: dict[str, dict]) -> str:
    if wanted in ('', '*'):
        free = sum(not e['connected'] for e in heard.values())
        return f'any of {free} free cube(s)' if wanted else '-'
    for address, entry in heard.items():
        if wanted.upper() == address.upper() or (len(wanted) == 3 and wanted in entry['name']):
            return f'{entry["name"]} (linked)' if entry['connected'] else entry['name']
    return 'NOT heard'
