"""``toio-nav fake-bluez``: virtual toio cubes as Bluetooth LE devices of a virtual BlueZ, on a private bus.

Starts a ``dbus-daemon`` of its own, a simulated world stepping in real time (the same World and cube firmware as
mat_sim) and the virtual BlueZ serving its cubes through its adapters (``--adapters hci0:7,hci1:5``: names
and connection slots) with the model's air (the options of :func:`add_radio_arguments`). Any program started
with the printed ``DBUS_SYSTEM_BUS_ADDRESS`` -- the real-cube bringup, a bleak script -- finds the cubes as if
they were in range of a Bluetooth adapter. With ``-- COMMAND ...`` it runs that command in such an environment
and stops when the command ends (its exit code is ours). ``--params-out`` writes a driver parameter file naming
each cube.
"""
from __future__ import annotations

import argparse
import math
import signal
import subprocess
import sys
from pathlib import Path

from toio_navigator.cube.protocol import parse_version
from toio_navigator.lifecycle import StopRequest
from toio_navigator.sim.bluez.bus import BusError, find_dbus_daemon
from toio_navigator.sim.bluez.host import BluezHost
from toio_navigator.sim.bluez.radio import RadioParams, adapters_text, parse_adapters
from toio_navigator.sim.mats import MATS
from toio_navigator.sim.world import grid_poses

MAX_CUBES = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--cubes', type=int, default=None, metavar='N',
                        help='number of cubes (default 2, or as many as --initial-poses gives)')
    parser.add_argument('--initial-poses', type=float, nargs='+', default=None, metavar='V',
                        help='x y heading (mat units, rad clockwise) per cube; default: a grid at the mat centre')
    parser.add_argument('--mat', default='collection', help=f'mat name: {", ".join(sorted(MATS))}')
    parser.add_argument('--firmware', default='2.4.0', help='BLE protocol version of the cubes (2.0.0..2.5.0); '
                                                            'it also sets the advertised name style')
    parser.add_argument('--bus-dir', type=Path, default=None,
                        help='directory for the bus socket (default: a fresh temporary one); the same directory '
                             'gives the same address after a restart')
    parser.add_argument('--params-out', type=Path, default=None, metavar='YAML',
                        help='write the driver parameters for these cubes (cube list, ble_name per driver)')
    parser.add_argument('--status-period', type=float, default=0.0, metavar='S',
                        help='print the cubes\' poses and links every S seconds (0 = never)')
    add_radio_arguments(parser)
    parser.add_argument('command', nargs=argparse.REMAINDER,
                        help='after "--": a command to run with DBUS_SYSTEM_BUS_ADDRESS set; we stop when it ends')


def add_radio_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the air model (docs/virtual_bluez.md); every default is the model's."""
    d = RadioParams()
    air = parser.add_argument_group('the radio (defaults: the model\'s, see docs/virtual_bluez.md)')
    air.add_argument('--adapters', default=adapters_text(d.adapters), metavar='NAME:SLOTS,...',
                     help=f'adapters and their connection slots, e.g. hci0:7,hci1:7,hci2:5 (default '
                          f'{adapters_text(d.adapters)})')
    air.add_argument('--interval-ms', type=float, default=d.initial_interval_ms,
                     help='connection interval a link starts with, ms')
    air.add_argument('--min-interval-ms', type=float, default=d.min_interval_ms,
                     help='shortest interval an adapter grants a cube that asks for one (config 0x30), ms')
    air.add_argument('--event-air-ms', type=float, default=d.event_air_ms,
                     help='air one connection event takes, ms')
    air.add_argument('--packets-per-event', type=int, default=d.packets_per_event,
                     help='packets a connection event carries each way')
    air.add_argument('--setup-s', type=float, default=d.setup_s, help='time of one connection attempt, s')
    air.add_argument('--full-hide-s', type=float, default=d.full_hide_s,
                     help='a device a full adapter refused is gone from it this long, s')
    air.add_argument('--aborts-per-min', type=float, default=d.aborts_per_link_min,
                     help='spontaneous link aborts per link and minute')
    air.add_argument('--failed-attempts', type=float, default=d.failed_attempts,
                     help='share of connection attempts that fail by themselves (0..1)')
    air.add_argument('--calm', action='store_true', help='no random faults (--aborts-per-min 0 --failed-attempts 0)')
    air.add_argument('--seed', type=int, default=d.seed, help='seed of the random faults')


def radio_params(args: argparse.Namespace) -> RadioParams:
    """The air the options describe; ValueError naming a bad one."""
    radio = RadioParams(
        adapters=parse_adapters(args.adapters), initial_interval_ms=args.interval_ms,
        min_interval_ms=args.min_interval_ms, event_air_ms=args.event_air_ms,
        packets_per_event=args.packets_per_event, setup_s=args.setup_s, full_hide_s=args.full_hide_s,
        aborts_per_link_min=args.aborts_per_min, failed_attempts=args.failed_attempts, seed=args.seed)
    return radio.calm() if args.calm else radio


def _poses(args: argparse.Namespace) -> list[list[float]]:
    """The cubes' start poses from the arguments; ValueError naming the problem."""
    version = parse_version(args.firmware)
    if not (2, 0, 0) <= version <= (2, 5, 0):
        raise ValueError(f'--firmware must be 2.0.0..2.5.0, got {args.firmware}')
    if args.mat not in MATS:
        raise ValueError(f'unknown mat {args.mat!r}; known: {", ".join(sorted(MATS))}')
    if args.initial_poses is not None:
        values = args.initial_poses
        if len(values) % 3 or not values:
            raise ValueError(f'--initial-poses needs x y heading per cube, got {len(values)} numbers')
        if not all(math.isfinite(v) for v in values):
            raise ValueError('--initial-poses must be finite numbers')
        poses = [values[k:k + 3] for k in range(0, len(values), 3)]
        if args.cubes is not None and args.cubes != len(poses):
            raise ValueError(f'--cubes {args.cubes} but --initial-poses gives {len(poses)} cubes')
        return poses
    n = 2 if args.cubes is None else args.cubes
    if not 1 <= n <= MAX_CUBES:
        raise ValueError(f'--cubes must be 1..{MAX_CUBES}, got {n}')
    return grid_poses(n, args.mat).tolist()


def driver_parameters(cube_ids: list[str], adapters: int = 1) -> str:
    """A parameter YAML for the real bringup: cubes cube1..cubeN, each driver finding its cube by id (and with
    several ``adapters``, taking any adapter with a free slot)."""
    names = [f'cube{k + 1}' for k in range(len(cube_ids))]
    lines = ['# written by toio-nav fake-bluez: one BLE driver per virtual cube', '/**:', '  ros__parameters:',
             f'    cubes: [{", ".join(names)}]', '', '/**/cube_driver:', '  ros__parameters:', '    transport: ble']
    if adapters > 1:
        lines.append('    ble_adapter: "*"')
    for name, cube_id in zip(names, cube_ids):
        lines += ['', f'/{name}/cube_driver:', '  ros__parameters:', f'    ble_name: "{cube_id}"']
    return '\n'.join(lines) + '\n'


def _status(host: BluezHost) -> str:
    def snapshot():
        return [(link.name, link.connected, host.world.x[i], host.world.y[i], math.degrees(host.world.theta[i]))
                for i, link in enumerate(host.bluez.links)]
    parts = [f'{name} {"linked" if linked else "free  "} ({x:5.1f}, {y:5.1f}) {theta:5.1f} deg'
             for name, linked, x, y, theta in host.call(snapshot)]
    return 'fake-bluez: ' + ' | '.join(parts)


def _adapters_status(host: BluezHost) -> str:
    """One line about the adapters (its own prefix: the cube line keeps its form for the scripts that read it)."""
    return 'fake-bluez adapters: ' + ', '.join(host.call(lambda: [a.describe() for a in host.bluez.adapters]))


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == '--':
        command = command[1:]
    try:
        poses = _poses(args)
        if not args.status_period >= 0:
            raise ValueError(f'--status-period must be >= 0, got {args.status_period}')
        if find_dbus_daemon() is None:
            raise ValueError('dbus-daemon is not installed (Debian/Ubuntu: apt-get install dbus-daemon)')
        radio = radio_params(args)
        host = BluezHost(poses, mat=args.mat, firmware_version=args.firmware, bus_dir=args.bus_dir, radio=radio)
    except ValueError as exc:            # also a bad firmware version (ProtocolError is a ValueError)
        print(f'fake-bluez: {exc}', file=sys.stderr)
        return 2
    try:
        host.start()
    except (BusError, OSError, RuntimeError) as exc:
        print(f'fake-bluez: cannot start: {exc}', file=sys.stderr)
        return 1
    stop = StopRequest().install()       # SIGINT, SIGTERM, SIGHUP: stop the virtual cubes in order
    try:
        ids = [link.cube.name.split('-', 1)[1] for link in host.bluez.links]
        print(f'fake-bluez: {len(poses)} virtual toio cubes (firmware {args.firmware}) on mat {args.mat}, '
              f'adapters {adapters_text(radio.adapters)} (name:slots); the world runs in real time')
        faults = 'no random faults' if not (radio.aborts_per_link_min or radio.failed_attempts) else \
            f'{radio.aborts_per_link_min:g} aborts per link-minute, {radio.failed_attempts:.0%} of attempts fail ' \
            f'(seed {radio.seed})'
        print(f'fake-bluez: links start at {radio.initial_interval_ms:g} ms, {radio.event_air_ms:g} ms of air and '
              f'{radio.packets_per_event} packets each way per connection event; {faults}')
        for k, (link, (x, y, heading)) in enumerate(zip(host.bluez.links, poses)):
            print(f'  cube{k + 1}: {link.name:<20} {link.address}  at ({x:.0f}, {y:.0f}), heading '
                  f'{math.degrees(heading):.0f} deg')
        if args.params_out is not None:
            try:
                args.params_out.parent.mkdir(parents=True, exist_ok=True)
                args.params_out.write_text(driver_parameters(ids, len(radio.adapters)))
            except OSError as exc:
                print(f'fake-bluez: cannot write {args.params_out}: {exc}', file=sys.stderr)
                return 2
            print(f'fake-bluez: driver parameters in {args.params_out}')
        print(f'export DBUS_SYSTEM_BUS_ADDRESS={host.address}', flush=True)
        if command:
            return _run_command(command, host, stop, args.status_period)
        while not stop.wait(args.status_period or None):
            print(_status(host), flush=True)
            print(_adapters_status(host), flush=True)
        return 0
    finally:
        stop.restore()
        host.stop()


def _run_command(command: list[str], host: BluezHost, stop: StopRequest, status_period: float) -> int:
    try:
        child = subprocess.Popen(command, env=host.environment())
    except OSError as exc:
        print(f'fake-bluez: cannot run {command[0]!r}: {exc}', file=sys.stderr)
        return 2
    try:
        while child.poll() is None and not stop.wait(status_period or 0.2):
            if status_period:
                print(_status(host), flush=True)
                print(_adapters_status(host), flush=True)
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=5)
    return child.returncode
