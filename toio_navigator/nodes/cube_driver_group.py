"""Several cube_driver nodes in one process: the drivers of one Bluetooth adapter, as ``toio-nav bringup`` starts
them with ``--driver-processes per-adapter`` (docs/ble_protocol.md says why and what it measured).

    python -m toio_navigator.nodes.cube_driver_group --cubes cube1,cube2 [--adapter hci0] --ros-args ...

Each node is the unchanged :class:`~toio_navigator.nodes.cube_driver.CubeDriverNode` in ``/<cube>``, with the
ROS arguments given (parameter files, overrides); ``--adapter`` pins every one of them to that adapter
(``ble_adapter``). They share one executor, one asyncio loop and one bleak D-Bus connection, so BlueZ's signals
reach this process once, not once per driver. Stopped like one node (SIGINT, SIGTERM, SIGHUP), each driver
stopping its cube; exit 2 if a driver refuses its parameters.
"""
from __future__ import annotations

import argparse
import sys

from toio_navigator.launching.profiles import NODES
from toio_navigator.lifecycle import REFUSED, die_with_parent
from toio_navigator.settings.spec import name_problem

DRIVER = next(spec for spec in NODES if spec.executable == 'cube_driver')


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """(our options, the ROS arguments after --ros-args)."""
    ours, ros = (argv[:argv.index('--ros-args')], argv[argv.index('--ros-args') + 1:]) if '--ros-args' in argv \
        else (argv, [])
    parser = argparse.ArgumentParser(prog='cube_driver_group', description=__doc__.splitlines()[0])
    parser.add_argument('--cubes', required=True, help='the cubes, comma-separated (cube1,cube2)')
    parser.add_argument('--adapter', default='', help='the adapter every driver of the group connects through')
    return parser.parse_args(ours), ros


def main(args: list[str] | None = None) -> int:
    die_with_parent()
    options, ros = parse(list(sys.argv[1:] if args is None else args))
    cubes = [c.strip() for c in options.cubes.split(',') if c.strip()]
    bad = [name_problem(c) for c in cubes if name_problem(c)]
    if not cubes or bad:
        print(f'cube_driver_group: --cubes: {bad[0] if bad else "names no cube"}', file=sys.stderr)
        return REFUSED
    if options.adapter:
        ros = ros + ['-p', f'ble_adapter:={options.adapter}']
    # rclpy is imported here, not at the top: --help and bad options answer without starting ROS
    from toio_navigator.nodes.bringup_single import run_single  # noqa: PLC0415 (see above)
    return run_single([(DRIVER, f'/{cube}') for cube in cubes], [], ros)


if __name__ == '__main__':
    sys.exit(main())
