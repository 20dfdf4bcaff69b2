"""What a launch file of launch/ starts, decided from its launch arguments before anything starts. Plain Python, no
ROS: :mod:`toio_navigator.nodes.launch_description` turns the plan into launch_ros actions.

The arguments are the table :data:`LAUNCH_ARGUMENTS` (``ros2 launch ... --show-args`` lists it); the nodes, their
order and parameter files come from :mod:`toio_navigator.launching.profiles`, as for ``toio-nav bringup``, and
every parameter file is checked by the nodes' own rules first, so a bad value stops the launch with the file,
section, parameter and rule before any node runs (:class:`LaunchError`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from toio_navigator.launching.profiles import (
    PROFILES,
    ROLES,
    BringupError,
    config_dir,
    parse_roles,
    plan,
    profile_files,
    read_cubes,
    rviz_file,
)
from toio_navigator.settings.bringup_params import NODE_PARAMS, ParamsError, check_param_file


@dataclass(frozen=True)
class LaunchArgument:
    """One argument of the launch files (``name:=value``)."""
    name: str
    default: str
    description: str
    profiles: tuple[str, ...] = PROFILES


LAUNCH_ARGUMENTS: tuple[LaunchArgument, ...] = (
    LaunchArgument('params_file', '', 'extra parameter YAML, applied last (checked by the nodes\' rules first)'),
    LaunchArgument('rviz', 'false', "true: also start rviz2 with the profile's configuration (needs rviz2)"),
    LaunchArgument('web', 'false', 'true: also start the web console (docs/web_console.md)'),
    LaunchArgument('only', '', f'start only these roles, comma-separated ({", ".join(ROLES)}); '
                               '"" = every node of the profile'),
    LaunchArgument('layout', '', 'arena layout JSON (toio-arena-layout/1) that mat_sim senses; "" = the shipped '
                                 'sample arena, toio_navigator/data/arenas/01_sample_arena_1.json', ('arena',)),
)
#: the arena an arena launch senses when given no layout (the one `toio-nav demo --arena` is shown with)
SAMPLE_LAYOUT = Path(__file__).resolve().parents[1] / 'data' / 'arenas' / '01_sample_arena_1.json'

_TRUE, _FALSE = ('true', '1', 'yes', 'on'), ('false', '0', 'no', 'off', '')


class LaunchError(BringupError):
    """A launch that cannot start: the message names the argument or file and what is wrong."""


def launch_arguments(profile: str) -> list[LaunchArgument]:
    return [a for a in LAUNCH_ARGUMENTS if profile in a.profiles]


@dataclass(frozen=True)
class NodeLaunch:
    """One node process of a launch."""
    executable: str
    namespace: str                     # '' = root
    parameters: tuple                  # parameter file paths (str) and dicts, in order
    role: str

    @property
    def name(self) -> str:
        """The full node name, e.g. '/cube2/cube_driver'."""
        return f'{self.namespace}/{self.executable}' if self.namespace else f'/{self.executable}'


@dataclass(frozen=True)
class LaunchPlan:
    nodes: list[NodeLaunch]
    rviz_config: Path | None           # start rviz2 with this file (None: no rviz2)
    warnings: list[str] = field(default_factory=list)


def make_plan(profile: str, values: Mapping[str, str], configurations: Mapping[str, str] = {}) -> LaunchPlan:
    """The plan of launch file ``profile`` for argument ``values`` (every argument of :func:`launch_arguments`);
    ``configurations``: every launch configuration set (a node parameter given as a launch argument is refused
    with a hint). LaunchError with the reason."""
    declared = {a.name for a in launch_arguments(profile)}
    _refuse_parameters_as_arguments(profile, declared, configurations)
    files = profile_files(profile)
    extra = values.get('params_file', '')
    if extra:
        path = Path(extra).expanduser().resolve()
        if not path.is_file():
            raise LaunchError(f'params_file:={extra}: no such file ({path})')
        files.append(path)
    warnings = []
    for path in files:
        try:
            found, _keys = check_param_file(path)
        except ParamsError as exc:
            raise LaunchError(f'params_file: {exc}' if path == files[-1] and extra else str(exc)) from None
        warnings += found
    try:
        cubes = read_cubes(files)
        only = parse_roles(values.get('only', ''), profile, option='only:=')
    except BringupError as exc:
        raise LaunchError(str(exc)) from None
    layout = _layout(values.get('layout', '')) if profile == 'arena' else ''
    web = _flag('web', values.get('web', 'false'))
    nodes = []
    for spec, ns in plan(profile, cubes, only, web):
        params: list = [str(p) for p in files]
        if layout and spec.executable == 'mat_sim':
            params.append({'arena_layout': layout})
        nodes.append(NodeLaunch(spec.executable, ns, tuple(params), spec.role))
    rviz = config_dir() / rviz_file(profile) if _flag('rviz', values.get('rviz', 'false')) else None
    return LaunchPlan(nodes, rviz, warnings)


def _flag(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in _TRUE + _FALSE:
        raise LaunchError(f'{name}:={text}: expected true or false')
    return value in _TRUE


def _layout(text: str) -> str:
    if not text:
        return str(SAMPLE_LAYOUT)
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise LaunchError(f'layout:={text}: no such file ({path})')
    return str(path)


def _refuse_parameters_as_arguments(profile: str, declared: set[str], configurations: Mapping[str, str]) -> None:
    """``cubes:=...`` or ``rate_hz:=10`` looks like a launch argument but is a node parameter, which ``ros2 launch``
    would ignore without a word: refused, saying where it goes."""
    parameters = set(itertools.chain.from_iterable(p.names() for p in NODE_PARAMS.values()))
    given = sorted(name for name in configurations if name in parameters and name not in declared)
    if given:
        names = ', '.join(f'{n}:={configurations[n]}' for n in given)
        raise LaunchError(f'{names}: a node parameter, not an argument of the {profile} launch file (its arguments: '
                          f'{", ".join(sorted(declared))}; see --show-args). Set node parameters in a YAML file '
                          'given as params_file:=FILE')
