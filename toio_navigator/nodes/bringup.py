"""Start the nodes of a bringup from the same YAML files as the launch files, without launch_ros.

:data:`NODES` is the one list of what a bringup runs (the launch files in launch/ read it too, so the two cannot
drift): the simulator (sim only), one cube_driver per cube in namespace ``/<cube>``, and the navigator. The cube
list is the ``cubes`` parameter of the ``/**`` section of the YAML, the same value the navigator and mat_sim read.

On a lab network each machine starts only its own part: ``--only`` (launch argument ``only``) takes roles,
e.g. ``--only sim,drivers`` on the machine with the BLE adapter (or the simulator) and ``--only navigator`` on
another; every machine reads the same YAML, so all agree on the cube list.

Two ways to run (``toio-nav bringup`` / ``ros2 run toio_navigator bringup``):
  * ``--processes`` (default): one child process per node, like ``ros2 launch``; a dying child is reported and
    the others keep running (a dead driver is what the navigator must cope with). Ctrl-C / SIGTERM stops all.
  * ``--single``: every node in this process on a MultiThreadedExecutor.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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


def ros_args(param_files: list[Path], namespace: str = '', extra: list[str] | None = None) -> list[str]:
    args = ['--ros-args']
    for path in param_files:
        args += ['--params-file', str(path)]
    if namespace:
        args += ['-r', f'__ns:={namespace}']
    return args + list(extra or [])


def launch_description(profile: str):
    """The launch_ros LaunchDescription of a profile (launch/*.launch.py call this; needs launch_ros).

    Arguments: ``params_file`` (extra YAML applied last), ``rviz`` (true: also start rviz2 with the profile's
    :func:`rviz_file`), ``only`` (roles of this host, e.g. ``sim,drivers``; '' = every node) and, for the
    ``arena`` profile, ``layout`` (the arena layout mat_sim senses)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

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

def child_command(spec: NodeSpec, namespace: str, param_files: list[Path], extra: list[str] | None = None) -> list[str]:
    return [sys.executable, '-m', spec.module] + ros_args(param_files, namespace, extra)


class Children:
    """Child processes of a --processes bringup."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.reported: set[int] = set()
        self.log_dir: Path | None = None

    def start(self, nodes, param_files, extra=None, env=None, log_dir: Path | None = None) -> None:
        """Start every node; with ``log_dir`` each child's output goes to <log_dir>/<ns>_<node>.log."""
        self.log_dir = log_dir
        for spec, ns in nodes:
            name = f'{ns}/{spec.executable}' if ns else spec.executable
            out = None
            if log_dir is not None:
                Path(log_dir).mkdir(parents=True, exist_ok=True)
                out = open(Path(log_dir) / (name.strip('/').replace('/', '_') + '.log'), 'w')
            try:
                proc = subprocess.Popen(child_command(spec, ns, param_files, extra), env=env, stdout=out,
                                        stderr=subprocess.STDOUT if out else None, start_new_session=True)
            finally:
                if out is not None:
                    out.close()            # the child holds its own copy of the descriptor
            self.procs.append((name, proc))

    def process(self, name: str) -> subprocess.Popen:
        """The child running node ``name`` (e.g. '/cube2/cube_driver')."""
        for n, proc in self.procs:
            if n == name:
                return proc
        raise KeyError(name)

    def check(self) -> list[str]:
        """Names of children that died since the last check (reported once)."""
        dead = []
        for name, proc in self.procs:
            if proc.poll() is not None and proc.pid not in self.reported:
                self.reported.add(proc.pid)
                dead.append(f'{name} (exit {proc.returncode})')
        return dead

    def stop(self, timeout: float = 5.0) -> None:
        for _name, proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout
        for _name, proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def run_processes(nodes, param_files, extra=None, duration: float | None = None) -> int:
    children = Children()
    stopping = []
    previous = signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    try:
        children.start(nodes, param_files, extra)
        deadline = None if duration is None else time.monotonic() + duration
        while not stopping and (deadline is None or time.monotonic() < deadline):
            for dead in children.check():
                print(f'bringup: {dead} stopped; the others keep running', file=sys.stderr)
            if all(p.poll() is not None for _n, p in children.procs):
                print('bringup: every node has stopped', file=sys.stderr)
                return 1
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        children.stop()
        signal.signal(signal.SIGTERM, previous)
    return 0


def run_single(nodes, param_files, extra=None, duration: float | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

    context = rclpy.Context()
    rclpy.init(args=ros_args(param_files, '', extra), context=context)
    created = []
    try:
        for spec, ns in nodes:
            cls = getattr(importlib.import_module(spec.module), spec.node_class)
            kwargs = {'context': context}
            if ns:
                kwargs['namespace'] = ns
            try:
                created.append(cls(**kwargs))
            except ValueError as exc:
                print(f'bringup: {ns}/{spec.executable}: {exc}', file=sys.stderr)
                return 2
        executor = MultiThreadedExecutor(context=context)
        for node in created:
            executor.add_node(node)
        deadline = None if duration is None else time.monotonic() + duration
        try:
            while context.ok() and (deadline is None or time.monotonic() < deadline):
                executor.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        executor.shutdown()
    finally:
        for node in created:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0


# ------------------------------------------------------------------------------------------------ CLI

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
    parser.add_argument('--ros-args', dest='ros_args', nargs=argparse.REMAINDER, default=[],
                        help='the rest goes to every node as ROS arguments (e.g. --ros-args -p mode:=BOIDS)')


def run(args: argparse.Namespace) -> int:
    try:
        files = [Path(p).resolve() for p in args.params_file] if args.params_file else profile_files(args.profile)
        cubes = read_cubes(files)
        only = parse_roles(args.only, args.profile)
    except BringupError as exc:
        print(f'bringup: {exc}', file=sys.stderr)
        return 2
    if args.duration is not None and not args.duration > 0:
        print('bringup: --duration must be > 0', file=sys.stderr)
        return 2
    extra = list(args.ros_args or [])
    nodes = plan(args.profile, cubes, only)
    if args.dry_run:
        for spec, ns in nodes:
            print(' '.join(child_command(spec, ns, files, extra)))
        return 0
    print(f'bringup ({args.profile}, {"one process" if args.single else "one process per node"}): '
          f'{len(nodes)} nodes for cubes {", ".join(cubes)}', flush=True)
    runner = run_single if args.single else run_processes
    return runner(nodes, files, extra, args.duration)


def main(args: list[str] | None = None) -> int:
    """`ros2 run toio_navigator bringup [options]`: ROS arguments after --ros-args go to every node."""
    argv = list(sys.argv[1:] if args is None else args)
    parser = argparse.ArgumentParser(prog='bringup', description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
