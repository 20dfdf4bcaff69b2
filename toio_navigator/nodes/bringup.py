"""Start the nodes of a bringup from the same YAML files as the launch files, without launch_ros.

:data:`NODES` is the one list of what a bringup runs (the launch files in launch/ read it too, so the two cannot
drift): the simulator (sim only), one cube_driver per cube in namespace ``/<cube>``, and the navigator. The cube
list is the ``cubes`` parameter of the ``/**`` section of the YAML, the same value the navigator and mat_sim read.

On a lab network each machine starts only its own part: ``--only`` (launch argument ``only``) takes roles,
e.g. ``--only sim,drivers`` on the machine with the BLE adapter (or the simulator) and ``--only navigator`` on
another; every machine reads the same YAML, so all agree on the cube list.

Two ways to run (``toio-nav bringup`` / ``ros2 run toio_navigator bringup``):
  * ``--processes`` (default): one child process per node, like ``ros2 launch``
    (:mod:`toio_navigator.nodes.supervisor`). A node that refuses to start (exit 2: a bad parameter) stops the
    bringup with that node's message and exit 2; a node that dies later is reported and the others keep
    running (a dead driver is what the navigator must cope with). SIGINT, SIGTERM and SIGHUP stop every node,
    the simulator last; if the bringup itself dies (even by SIGKILL) its nodes stop too.
  * ``--single``: every node in this process on one executor (the navigator's), stopped the same way.

Parameters: every file is checked by the nodes' own rules before anything starts; ``--ros-args -p NAME:=VALUE``
goes to the nodes that have NAME and beats the YAML (:mod:`toio_navigator.settings.bringup_params`).
"""
from __future__ import annotations

import argparse
import importlib
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from toio_navigator.lifecycle import REFUSED, StopRequest
from toio_navigator.nodes.supervisor import Children, child_command, exit_text, ros_args
from toio_navigator.settings.bringup_params import (
    NODE_PARAMS,
    Instance,
    ParamsError,
    check_param_file,
    overrides_yaml,
    route_overrides,
    split_override,
)
from toio_navigator.settings.spec import SettingError

PACKAGE = 'toio_navigator'
PROFILES = ('sim', 'real', 'arena')


@dataclass(frozen=True)
class NodeSpec:
    """One node of a bringup."""
    executable: str        # `ros2 run toio_navigator <executable>` (scripts/<executable>)
    module: str            # python module with main(args) and the node class
    node_class: str        # class name, constructed with (namespace=..., context=...) in --single mode
    per_cube: bool         # one instance per cube, in namespace /<cube>
    profiles: tuple[str, ...]
    role: str              # what `--only` / `only:=` selects it by (one host's share of a lab network)


NODES: tuple[NodeSpec, ...] = (
    NodeSpec('mat_sim', 'toio_navigator.nodes.mat_sim', 'MatSimNode', False, ('sim', 'arena'), 'sim'),
    NodeSpec('cube_driver', 'toio_navigator.nodes.cube_driver', 'CubeDriverNode', True, ('sim', 'real', 'arena'),
             'drivers'),
    NodeSpec('navigator', 'toio_navigator.nodes.navigator', 'NavigatorNode', False, ('sim', 'real', 'arena'),
             'navigator'),
    NodeSpec('arena_explorer', 'toio_navigator.nodes.arena_explorer', 'ArenaExplorerNode', False, ('arena',),
             'explorer'),
)
ROLES = tuple(spec.role for spec in NODES)

#: parameter files of each profile, applied in order (later files override earlier ones)
PROFILE_FILES = {'sim': ('navigator.yaml', 'sim.yaml'), 'real': ('navigator.yaml', 'real.yaml'),
                 'arena': ('navigator.yaml', 'arena.yaml')}


def rviz_file(profile: str) -> str:
    """The profile's rviz2 configuration in config/ (written by ``toio-nav rviz-config``, nodes/rviz_config.py)."""
    return 'toio_navigator.rviz' if profile == 'sim' else f'toio_navigator_{profile}.rviz'


class BringupError(ValueError):
    """The bringup cannot start: a missing or malformed YAML, no cube list."""


def config_dir() -> Path:
    """config/ of the source checkout this module runs from (editable / pip-only installs, tests), else the
    installed share/toio_navigator/config (colcon installs), so an edited YAML is never shadowed by a stale copy."""
    src = Path(__file__).resolve().parents[2] / 'config'
    if (src / 'navigator.yaml').is_file():
        return src
    try:
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory(PACKAGE)) / 'config'
    except Exception as exc:  # neither: say where we looked
        raise BringupError(f'no config/ next to the sources ({src}) and no installed {PACKAGE} share: {exc}') \
            from None


def profile_files(profile: str) -> list[Path]:
    if profile not in PROFILES:
        raise BringupError(f'unknown profile {profile!r} (expected one of {", ".join(PROFILES)})')
    return [config_dir() / name for name in PROFILE_FILES[profile]]


def read_cubes(param_files: list[Path]) -> list[str]:
    """The ``cubes`` list from the ``/**`` section (the last file that sets it wins)."""
    import yaml

    cubes = None
    for path in param_files:
        if not Path(path).is_file():
            raise BringupError(f'parameter file {path} does not exist')
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except yaml.YAMLError as exc:
            raise BringupError(f'{path}: not valid YAML: {exc}') from None
        if not isinstance(data, dict):
            raise BringupError(f'{path}: expected a mapping of node names to ros__parameters')
        section = data.get('/**', {}) or {}
        params = section.get('ros__parameters', {}) if isinstance(section, dict) else {}
        if isinstance(params, dict) and 'cubes' in params:
            cubes = params['cubes']
    if cubes is None:
        raise BringupError('no `cubes` list in the /** section of ' + ', '.join(str(p) for p in param_files))
    if not isinstance(cubes, list) or not cubes or not all(isinstance(c, str) and c for c in cubes):
        raise BringupError(f'`cubes` must be a non-empty list of names, got {cubes!r}')
    return cubes


def parse_roles(text: str, profile: str) -> tuple[str, ...]:
    """The roles of ``--only`` / ``only:=`` ('sim,drivers'); () for '' (every node of the profile)."""
    roles = tuple(r.strip() for r in text.split(',') if r.strip())
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise BringupError(f'--only: unknown role {", ".join(unknown)} (roles: {", ".join(ROLES)})')
    absent = [r for r in roles if not any(s.role == r and profile in s.profiles for s in NODES)]
    if absent:
        raise BringupError(f'--only: profile {profile} has no {", ".join(absent)} node')
    return roles


def plan(profile: str, cubes: list[str], only: tuple[str, ...] = ()) -> list[tuple[NodeSpec, str]]:
    """(spec, namespace) of every node to start, in start order; with ``only``, just the nodes of those roles."""
    out = []
    for spec in NODES:
        if profile in spec.profiles and (not only or spec.role in only):
            out += [(spec, f'/{c}') for c in cubes] if spec.per_cube else [(spec, '')]
    return out


def launch_description(profile: str):
    """The launch_ros LaunchDescription of a profile (launch/*.launch.py call this; needs launch_ros).

    Arguments: ``params_file`` (extra YAML applied last), ``rviz`` (true: also start rviz2 with the profile's
    :func:`rviz_file`), ``only`` (roles of this host, e.g. ``sim,drivers``; '' = every node) and, for the
    ``arena`` profile, ``layout`` (the arena layout mat_sim senses)."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    from launch import LaunchDescription

    def nodes(context):
        files = [str(p) for p in profile_files(profile)]
        extra = LaunchConfiguration('params_file').perform(context)
        if extra:
            files.append(extra)
        layout = LaunchConfiguration('layout').perform(context) if profile == 'arena' else ''
        cubes = read_cubes([Path(f) for f in files])
        only = parse_roles(LaunchConfiguration('only').perform(context), profile)
        launched = []
        for spec, ns in plan(profile, cubes, only):
            params = list(files)
            if layout and spec.executable == 'mat_sim':
                params.append({'arena_layout': str(Path(layout).resolve())})
            launched.append(Node(package=PACKAGE, executable=spec.executable, name=spec.executable,
                                 namespace=ns or '', parameters=params, output='screen'))
        return launched

    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', str(config_dir() / rviz_file(profile))],
                condition=IfCondition(LaunchConfiguration('rviz')))
    arguments = [
        DeclareLaunchArgument('params_file', default_value='', description='extra parameter YAML, applied last'),
        DeclareLaunchArgument('rviz', default_value='false', description='also start rviz2'),
        DeclareLaunchArgument('only', default_value='',
                              description=f'start only these roles, comma-separated ({", ".join(ROLES)}); '
                                          '"" = every node of the profile'),
    ]
    if profile == 'arena':
        arguments.append(DeclareLaunchArgument('layout', default_value='',
                                               description='arena layout JSON (toio-arena-layout/1)'))
    return LaunchDescription(arguments + [OpaqueFunction(function=nodes), rviz])


# ------------------------------------------------------------------------------------------------ running

def run_processes(nodes, param_files, extra=None, duration: float | None = None) -> int:
    """One child per node until a stop signal or ``duration``; 2 if a node refuses to start (the others are
    stopped), 1 if every node stopped by itself."""
    stop = StopRequest().install()
    children = Children()
    try:
        children.start(nodes, param_files, extra)
        deadline = None if duration is None else time.monotonic() + duration
        while not stop and (deadline is None or time.monotonic() < deadline):
            dead = children.newly_dead()
            refused = children.refused(dead)
            if refused:
                children.stop()
                for line in refused:
                    print(f'bringup: {line}', file=sys.stderr)
                print('bringup: stopped the other nodes', file=sys.stderr)
                return REFUSED
            for name, code in dead:
                print(f'bringup: {name} stopped ({exit_text(code)}); the others keep running', file=sys.stderr)
            if children.all_dead():
                print('bringup: every node has stopped', file=sys.stderr)
                return 1
            stop.wait(0.2)
    finally:
        children.stop()
        stop.restore()
    if stop.signal is not None:
        print(f'bringup: {stop.name}: every node stopped', file=sys.stderr)
    return 0


def run_single(nodes, param_files, extra=None, duration: float | None = None) -> int:
    """Every node in this process on one executor (the navigator's: spin.make_executor); stopped like a node
    process (run_node): the executor first, then each node in reverse order (the simulator last), then ROS."""
    # ROS only here: --processes and --dry-run start without importing rclpy
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.executors import ExternalShutdownException

    from toio_navigator.nodes.spin import make_executor

    stop = StopRequest().install()
    context = rclpy.Context()
    created, executor = [], None
    try:
        rclpy.init(args=ros_args(param_files, '', extra), context=context)   # own context: no rclpy handlers
        for spec, ns in nodes:
            cls = getattr(importlib.import_module(spec.module), spec.node_class)
            kwargs = {'context': context}
            if ns:
                kwargs['namespace'] = ns
            try:
                created.append(cls(**kwargs))
            except (ValueError, ParameterException) as exc:
                print(f'bringup: {ns}/{spec.executable}: {exc}', file=sys.stderr)
                return REFUSED
            if stop:
                return 0
        executor = make_executor(context)
        for node in created:
            executor.add_node(node)
        deadline = None if duration is None else time.monotonic() + duration
        try:
            while not stop and context.ok() and (deadline is None or time.monotonic() < deadline):
                executor.spin_once(timeout_sec=0.1)
        except ExternalShutdownException:
            pass
    finally:
        if executor is not None:
            executor.shutdown()
        for node in reversed(created):
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        stop.restore()
    return 0


# ------------------------------------------------------------------------------------------------ CLI

OVERRIDE_HELP = """\
everything after it goes to the nodes as ROS arguments. -p NAME:=VALUE goes to every node of the bringup that
has a parameter NAME (mode, planner, rate_hz, ...: the navigator; transport, motor_duration_ms, ...: each
cube_driver; initial_poses, real_time_factor, ...: mat_sim; cubes: all of them) and beats every YAML file;
-p NODE:NAME:=VALUE goes to one node (navigator:rate_hz:=10, cube_driver:max_motor:=80 for every driver,
cube2/cube_driver:max_motor:=80 for one). Each value is checked by the node's own rule before anything starts;
a name no node has is refused. --params-file FILE adds a YAML file; other ROS arguments go to every node."""


def split_ros_args(tokens: list[str]) -> tuple[list[str], list[str], list[Path]]:
    """--ros-args tokens -> (arguments for every node, -p overrides, extra parameter files)."""
    extra, overrides, files = [], [], []
    it = iter(tokens)
    for token in it:
        if token in ('-p', '--param', '--params-file'):
            value = next(it, None)
            if value is None:
                raise BringupError(f'--ros-args {token}: needs a value after it')
            (files.append(Path(value).resolve()) if token == '--params-file' else overrides.append(value))
        elif token != '--ros-args':
            extra.append(token)
    return extra, overrides, files


class Prepared(NamedTuple):
    """A checked bringup command line: what to start and with which parameters."""
    files: list[Path]            # parameter files, in order
    cubes: list[str]
    nodes: list                  # (NodeSpec, namespace) to start
    extra: list[str]             # ROS arguments for every node
    routed: dict                 # Instance -> {parameter: value} of the -p overrides
    taken: set[str]              # section names of the files (the overrides' sections must be new)


def prepare(args: argparse.Namespace) -> Prepared:
    """Read and check a bringup command line: every file and override by the nodes' own rules;
    BringupError / ParamsError / SettingError with the reason."""
    files = [Path(p).resolve() for p in args.params_file] if args.params_file else profile_files(args.profile)
    extra, overrides, more_files = split_ros_args(list(args.ros_args or []))
    files += more_files
    cubes = read_cubes(files)
    plain_cubes = [o for o in overrides if split_override(o)[:2] == ('', 'cubes')]
    if plain_cubes:          # -p cubes:=[...] decides which drivers start, as the YAML's list does
        cubes = list(NODE_PARAMS['navigator']['cubes'].check(split_override(plain_cubes[-1])[2]))
    taken = set()
    for path in files:
        warnings, keys = check_param_file(path)
        taken |= keys
        for warning in warnings:
            print(f'bringup: {warning}', file=sys.stderr)
    nodes = plan(args.profile, cubes, parse_roles(args.only, args.profile))
    routed = route_overrides(overrides, [Instance(spec.executable, ns) for spec, ns in nodes])
    return Prepared(files, cubes, nodes, extra, routed, taken)


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
    parser.add_argument('--only', default='', metavar='ROLES',
                        help=f'start only these roles, comma-separated ({", ".join(ROLES)}): one host\'s share '
                             'on a lab network, e.g. --only sim,drivers beside the cubes, --only navigator elsewhere')
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
        print(f'bringup ({args.profile}, {"one process" if args.single else "one process per node"}): '
              f'{len(nodes)} nodes for cubes {", ".join(ready.cubes)}', flush=True)
        for instance, values in ready.routed.items():
            print(f'  -p for {instance.fqn}: ' + ', '.join(f'{k}={v!r}' for k, v in values.items()), flush=True)
        runner = run_single if args.single else run_processes
        return runner(nodes, files, ready.extra, args.duration)


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
