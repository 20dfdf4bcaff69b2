"""What a bringup runs: the node table, the profiles and their parameter files, the cube list, the roles of a lab
network's hosts, and the start order. Plain Python, no ROS.

:data:`NODES` is the one list of what a bringup runs (``toio-nav bringup``, the launch files in launch/ and the
demos read it, so they cannot drift): the simulator (sim only), one cube_driver per cube in namespace
``/<cube>``, the navigator and, in the arena profile, the arena_explorer; the web console only when asked for
(``--web``, ``web:=true``, or its role ``web`` in ``--only``). The cube list is the ``cubes`` parameter of the
``/**`` section of the YAML, the same value the navigator and mat_sim read.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

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
    optional: bool = False  # started only when asked for (web=True, or its role in `only`)


NODES: tuple[NodeSpec, ...] = (
    NodeSpec('mat_sim', 'toio_navigator.nodes.mat_sim', 'MatSimNode', False, ('sim', 'arena'), 'sim'),
    NodeSpec('cube_driver', 'toio_navigator.nodes.cube_driver', 'CubeDriverNode', True, ('sim', 'real', 'arena'),
             'drivers'),
    NodeSpec('navigator', 'toio_navigator.nodes.navigator', 'NavigatorNode', False, ('sim', 'real', 'arena'),
             'navigator'),
    NodeSpec('arena_explorer', 'toio_navigator.nodes.arena_explorer', 'ArenaExplorerNode', False, ('arena',),
             'explorer'),
    NodeSpec('web_console', 'toio_navigator.nodes.web_console', 'WebConsoleNode', False, ('sim', 'real', 'arena'),
             'web', optional=True),
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
        # optional: only a ROS install has an ament index (a source checkout or pip install of the core has none)
        from ament_index_python.packages import get_package_share_directory  # noqa: PLC0415 optional, see above
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


def parse_roles(text: str, profile: str, option: str = '--only') -> tuple[str, ...]:
    """The roles of ``--only`` / ``only:=`` ('sim,drivers'); () for '' (every node of the profile). ``option``
    names the option in the error (``only:=`` for a launch file)."""
    roles = tuple(r.strip() for r in text.split(',') if r.strip())
    unknown = [r for r in roles if r not in ROLES]
    where = f'{option}{text}' if option.endswith('=') else option
    if unknown:
        raise BringupError(f'{where}: unknown role {", ".join(unknown)} (roles: {", ".join(ROLES)})')
    absent = [r for r in roles if not any(s.role == r and profile in s.profiles for s in NODES)]
    if absent:
        raise BringupError(f'{where}: profile {profile} has no {", ".join(absent)} node')
    return roles


def plan(profile: str, cubes: list[str], only: tuple[str, ...] = (), web: bool = False) -> list[tuple[NodeSpec, str]]:
    """(spec, namespace) of every node to start, in start order; with ``only``, just the nodes of those roles. An
    optional node (the web console) starts with ``web`` or when ``only`` names its role."""
    out = []
    for spec in NODES:
        wanted = spec.role in only or (not only and not spec.optional) or (spec.optional and web)
        if profile in spec.profiles and wanted:
            out += [(spec, f'/{c}') for c in cubes] if spec.per_cube else [(spec, '')]
    return out
