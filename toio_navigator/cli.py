"""The ``toio-nav`` command.

Each subcommand lives in its own module, which provides ``add_arguments(parser)`` and ``run(args) -> int``.
Modules are imported only when their subcommand runs, so ``toio-nav --help`` stays fast and a subcommand
whose dependencies are missing fails with a clear message instead of breaking the others.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from toio_navigator import __version__
from toio_navigator.lifecycle import die_with_parent

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    'demo': ('toio_navigator.demo_cli', 'run the simulated demo (swarm swap, or an arena exploration with --arena)'),
    'query': ('toio_navigator.reference.query_cli',
              'one navigator query: SCENARIO.json -> RESULT.json (conformance format)'),
    'explore': ('toio_navigator.sim.explore_cli', 'explore an arena layout with simulated IR sensors'),
    'fastest-path': ('toio_navigator.arena.path_cli', 'optimal fastest path on an arena layout'),
    'bench': ('toio_navigator.bench.cli', 'run swarm benchmark scenarios with a local planner'),
    'trial': ('toio_navigator.bench.trial.cli',
              'closed-loop scenario runs: navigator + simulated cubes under BLE timing (ideal, ble, loaded)'),
    'record': ('toio_navigator.bags.record_cli', 'record topics to a rosbag2 (mcap or sqlite3)'),
    'replay': ('toio_navigator.bags.replay_cli', 'replay a bag through a fresh navigator and compare outputs'),
    'web': ('toio_navigator.web.cli', 'a recorded bag in the web console\'s page, with a time slider'),
    'render': ('toio_navigator.bags.render_cli', 'draw a bag: mat, cubes, trajectories, waypoints, contacts'),
    'repair': ('toio_navigator.bags.repair_cli',
               'rebuild a bag whose recorder died before finalising it (like ros2 bag reindex)'),
    'bringup': ('toio_navigator.nodes.bringup', 'start the nodes of a YAML config without launch_ros'),
    'fake-bluez': ('toio_navigator.sim.bluez.cli',
                   'virtual cubes as BLE devices of a virtual BlueZ on a private D-Bus (no radio needed)'),
    'ble-check': ('toio_navigator.ble_check_cli',
                  'the radio before a bringup: adapters, their links, the cubes heard, how a parameter file spreads'),
    'rviz-config': ('toio_navigator.nodes.rviz_config', 'write the rviz2 config for the cubes of a bringup'),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='toio-nav',
        description='Swarm navigation, arena exploration and simulation for toio Core Cubes.')
    parser.add_argument('--version', action='version', version=f'toio-nav {__version__}')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    die_with_parent()       # a `toio-nav record` started by the demo stops (and finalises its bag) with it
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv)  # prints help / version / an "invalid choice" error and exits
        parser.print_help()
        return 2
    name, rest = argv[0], argv[1:]
    module_name, help_text = COMMANDS[name]
    try:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            print(f'toio-nav {name}: not available: {exc}', file=sys.stderr)
            return 2
        sub = argparse.ArgumentParser(prog=f'toio-nav {name}', description=help_text)
        module.add_arguments(sub)
        args = sub.parse_args(rest)
        return int(module.run(args) or 0)
    except KeyboardInterrupt:       # Ctrl-C before the subcommand took over the stop signals (e.g. while importing)
        return 130


if __name__ == '__main__':
    sys.exit(main())
