"""Start the nodes of a bringup from the same YAML files as the launch files, without launch_ros.

What starts is the table of :mod:`toio_navigator.launching.profiles` (the launch files in launch/ read it too, so
the two cannot drift): the simulator (sim only), one cube_driver per cube in namespace ``/<cube>``, and the
navigator. The cube list is the ``cubes`` parameter of the ``/**`` section of the YAML.

On a lab network each machine starts only its own part: ``--only`` (launch argument ``only``) takes roles,
e.g. ``--only sim,drivers`` on the machine with the BLE adapter (or the simulator) and ``--only navigator`` on
another; every machine reads the same YAML, so all agree on the cube list.

Two ways to run (``toio-nav bringup`` / ``ros2 run toio_navigator bringup``):
  * ``--processes`` (default): one child process per node, like ``ros2 launch``
    (:mod:`toio_navigator.launching.supervisor`); with ``--driver-processes per-adapter`` (the default of the real
    profile) the cube drivers of each Bluetooth adapter share one process
    (:mod:`toio_navigator.launching.driver_groups`). A node that refuses to start (exit 2: a bad parameter) stops
    the bringup with that node's message and exit 2; a node that dies later is reported and the others keep
    running (a dead driver is what the navigator must cope with). SIGINT, SIGTERM and SIGHUP stop every node,
    the simulator last; if the bringup itself dies (even by SIGKILL) its nodes stop too.
  * ``--single``: every node in this process on one executor (the navigator's), stopped the same way
    (:mod:`toio_navigator.nodes.bringup_single`, the only part that imports rclpy).

Parameters: every file is checked by the nodes' own rules before anything starts; ``--ros-args -p NAME:=VALUE``
goes to the nodes that have NAME and beats the YAML (:mod:`toio_navigator.launching.command_line`).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from toio_navigator.launching.command_line import prepare
from toio_navigator.launching.driver_groups import DRIVER_PROCESSES, bluez_states, plan_groups
from toio_navigator.launching.profiles import PROFILES, ROLES, BringupError
from toio_navigator.launching.supervisor import child_command, run_processes
from toio_navigator.settings.bringup_params import Instance, ParamsError, node_values, overrides_yaml
from toio_navigator.settings.spec import SettingError

# ------------------------------------------------------------------------------------------------ CLI

OVERRIDE_HELP = """\
everything after it goes to the nodes as ROS arguments. -p NAME:=VALUE goes to every node of the bringup that
has a parameter NAME (mode, planner, rate_hz, ...: the navigator; transport, motor_duration_ms, ...: each
cube_driver; initial_poses, real_time_factor, ...: mat_sim; cubes: all of them) and beats every YAML file;
-p NODE:NAME:=VALUE goes to one node (navigator:rate_hz:=10, cube_driver:max_motor:=80 for every driver,
cube2/cube_driver:max_motor:=80 for one). Each value is checked by the node's own rule before anything starts;
a name no node has is refused. --params-file FILE adds a YAML file; other ROS arguments go to every node."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--profile', choices=PROFILES, default='sim',
                        help='sim: mat_sim + simulated drivers + navigator; real: BLE drivers + navigator; '
                             'arena: sim + the arena_explorer (config/arena.yaml)')
    parser.add_argument('--params-file', action='append', type=Path, default=None, metavar='YAML',
                        help='parameter file (repeatable, later ones override); default: the profile\'s files '
                             'in config/ (navigator.yaml + sim.yaml or real.yaml)')
    how = parser.add_mutually_exclusive_group()
    # both flags write `single`; argparse takes a dest's default from the first action added, and store_false
    # defaults to True, so without this line no flag meant --single
    parser.set_defaults(single=False)
    how.add_argument('--processes', dest='single', action='store_false', help='one process per node (default)')
    how.add_argument('--single', dest='single', action='store_true', help='all nodes in this process')
    parser.add_argument('--driver-processes', choices=DRIVER_PROCESSES, default=None,
                        help='with --processes: one process per cube driver (the default of the sim and arena '
                             'profiles), the drivers of each Bluetooth adapter in one process (the default of '
                             'the real profile; docs/ble_protocol.md says why), or every driver in one process')
    parser.add_argument('--only', default='', metavar='ROLES',
                        help=f'start only these roles, comma-separated ({", ".join(ROLES)}): one host\'s share '
                             'on a lab network, e.g. --only sim,drivers beside the cubes, --only navigator elsewhere')
    parser.add_argument('--web', action='store_true',
                        help='also start the web console (the page\'s address is in its log line; '
                             '-p port:=N, -p lab_network:=true; docs/web_console.md)')
    parser.add_argument('--duration', type=float, default=None, help='stop after this many seconds')
    parser.add_argument('--dry-run', action='store_true', help='print the commands and exit')
    parser.add_argument('--ros-args', dest='ros_args', nargs=argparse.REMAINDER, default=[], help=OVERRIDE_HELP)


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and not (args.duration > 0 and math.isfinite(args.duration)):
        print('bringup: --duration must be > 0 (a finite number of seconds)', file=sys.stderr)
        return 2
    try:
        ready = prepare(args)
    except (BringupError, ParamsError, SettingError) as exc:
        print(f'bringup: {exc}', file=sys.stderr)
        return 2
    files, nodes = ready.files, ready.nodes
    driver_processes = args.driver_processes or ('per-adapter' if args.profile == 'real' else 'per-cube')
    if driver_processes == 'per-adapter' and not args.single:
        nodes = _group_drivers(ready)
    elif driver_processes == 'one' and not args.single:
        nodes, _pins = plan_groups(ready.nodes, ready.files, ready.routed, None)
    with tempfile.TemporaryDirectory(prefix='toio_nav_bringup_') as tmp:
        if ready.routed:
            overrides = Path(tmp) / 'overrides.yaml'
            overrides.write_text(overrides_yaml(ready.routed, ready.taken))
            files = files + [overrides]
        if args.dry_run:
            for spec, ns in nodes:
                print(' '.join(child_command(spec, ns, files, ready.extra)))
            if ready.routed:
                print('\n'.join(f'# {line}' for line in overrides.read_text().splitlines()))
            return 0
        how = 'one process' if args.single else 'one process per node' if len(nodes) == len(ready.nodes) else \
            f'the drivers in {sum(spec.role == "drivers" for spec, _ns in nodes)} process(es)'
        print(f'bringup ({args.profile}, {how}): {len(ready.nodes)} nodes for cubes {", ".join(ready.cubes)}',
              flush=True)
        for instance, values in ready.routed.items():
            print(f'  -p for {instance.fqn}: ' + ', '.join(f'{k}={v!r}' for k, v in values.items()), flush=True)
        if args.single:
            # the one mode that runs nodes in this process: the others start without importing rclpy
            from toio_navigator.nodes.bringup_single import run_single  # noqa: PLC0415 --single only, see above
            return run_single(nodes, files, ready.extra, args.duration)
        return run_processes(nodes, files, ready.extra, args.duration)


def _group_drivers(ready) -> list:
    """The drivers of each adapter in one process (launching/driver_groups.py); the pins join the overrides."""
    states, why = (None, '')
    if any(_transport(ready, ns) == 'ble' for spec, ns in ready.nodes if spec.executable == 'cube_driver'):
        states, why = bluez_states()
        if states is None:
            print(f'bringup: drivers in one process, not per adapter: {why}', file=sys.stderr)
    nodes, pins = plan_groups(ready.nodes, ready.files, ready.routed, states)
    for instance, values in pins.items():
        ready.routed.setdefault(instance, {}).update(values)
    return nodes


def _transport(ready, namespace: str) -> str:
    instance = Instance('cube_driver', namespace)
    return str({**node_values(ready.files, instance), **ready.routed.get(instance, {})}.get('transport', 'sim'))


def main(args: list[str] | None = None) -> int:
    """`ros2 run toio_navigator bringup [options]`: ROS arguments after --ros-args go to the nodes."""
    argv = list(sys.argv[1:] if args is None else args)
    parser = argparse.ArgumentParser(prog='bringup', description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except KeyboardInterrupt:       # Ctrl-C while reading the files, before the stop handlers are in place
        return 130


if __name__ == '__main__':
    sys.exit(main())
