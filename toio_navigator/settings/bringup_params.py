"""The parameters of a bringup without ROS: which node a ``-p`` override goes to, and parameter files checked by
the nodes' own rules before any node starts.

ROS gives a plain ``--ros-args -p NAME:=VALUE`` to every node, and a node's own section of a parameter file beats
it; so the bringup does not pass ``-p`` on. It sends each override to the nodes that have the parameter (``-p
NODE:NAME:=VALUE`` to one node: ``navigator``, ``cube_driver`` for every driver, ``cube2/cube_driver`` for one),
checks the value by that node's rule and writes the overrides into one parameter file, applied after every other,
in a section for each node that comes after every section of the other files (:func:`overrides_yaml`).

Values are read as ROS reads them (YAML; ``1e-2`` is a number, as rcl reads it, although YAML 1.1 makes a string
of it). Plain Python, no ROS.
"""
from __future__ import annotations

import difflib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from toio_navigator.input_files import InputError, load_yaml, read_text
from toio_navigator.settings import arena_explorer, driver, mat_sim, navigator, virtual_ir, web_console
from toio_navigator.settings.spec import ParamSet, SettingError

#: every node of the package by executable name, with its parameters
NODE_PARAMS: dict[str, ParamSet] = {
    'mat_sim': mat_sim.PARAMS, 'cube_driver': driver.PARAMS, 'navigator': navigator.PARAMS,
    'arena_explorer': arena_explorer.PARAMS, 'virtual_ir': virtual_ir.PARAMS, 'web_console': web_console.PARAMS,
}
#: parameters every rclpy node has (not in our specs; ROS checks them)
ROS_PARAMS = ('use_sim_time', 'start_type_description_service')


class ParamsError(ValueError):
    """A parameter override or a parameter file that cannot be used; the message names what and why."""


@dataclass(frozen=True)
class Instance:
    """One node of a bringup: its executable (= node name) and namespace ('' = root)."""
    executable: str
    namespace: str = ''

    @property
    def fqn(self) -> str:
        """The full node name, e.g. '/cube2/cube_driver', '/navigator'."""
        return f'{self.namespace.rstrip("/")}/{self.executable}'


# ------------------------------------------------------------------------------------------------ -p overrides

def split_override(text: str) -> tuple[str, str, object]:
    """``[NODE:]NAME:=VALUE`` -> (node or '', name, value read as ROS reads it)."""
    if ':=' not in text:
        raise ParamsError(f'-p {text}: expected NAME:=VALUE or NODE:NAME:=VALUE')
    left, raw = text.split(':=', 1)
    node, _, name = left.rpartition(':')
    if not name:
        raise ParamsError(f'-p {text}: no parameter name before :=')
    try:
        value = load_yaml(raw, f'-p {text}') if raw.strip() else None
    except InputError as exc:
        raise ParamsError(str(exc)) from None
    return node.strip('/'), name, value


def _targets(node: str, instances: list[Instance]) -> list[Instance]:
    """The instances ``node`` names: an executable (every instance of it) or one instance ('cube2/cube_driver')."""
    if '/' in node:
        return [i for i in instances if i.fqn.strip('/') == node]
    return [i for i in instances if i.executable == node]


def route_overrides(overrides: list[str], instances: list[Instance]) -> dict[Instance, dict[str, object]]:
    """Each ``-p`` override (text after ``-p``) -> the instances it goes to, checked by their rules; later
    overrides of the same parameter win. ParamsError naming the override for an unknown node or parameter
    (with the closest known name) or a value that breaks the parameter's rule."""
    routed: dict[Instance, dict[str, object]] = {}
    for text in overrides:
        node, name, value = split_override(text)
        candidates = _targets(node, instances) if node else list(instances)
        if node and not candidates:
            names = sorted({i.executable for i in instances} | {i.fqn.strip('/') for i in instances})
            raise ParamsError(f'-p {text}: this bringup has no node {node!r} (nodes: {", ".join(names)})')
        targets = [i for i in candidates if name in ROS_PARAMS or name in NODE_PARAMS[i.executable]]
        if not targets:
            where = f'node {node}' if node else 'node of this bringup'
            known = sorted({p for i in candidates for p in NODE_PARAMS[i.executable].names()})
            close = difflib.get_close_matches(name, known, n=1)
            raise ParamsError(f'-p {text}: no {where} has a parameter {name!r}'
                              + (f' (did you mean {close[0]!r}?)' if close else ''))
        for instance in targets:
            spec = NODE_PARAMS[instance.executable].get(name)
            if spec is not None:
                try:
                    spec.check(value)
                except SettingError as exc:
                    raise ParamsError(f'-p {text}: {instance.fqn}: {exc}') from None
            routed.setdefault(instance, {})[name] = value
    return routed


def overrides_yaml(routed: dict[Instance, dict[str, object]], taken: set[str] = frozenset()) -> str:
    """A parameter file of the routed overrides, one section per node (values as JSON, which YAML reads back as
    the same value: a string stays a string, 0.01 a number).

    ROS applies the sections of all parameter files in the order each section name first appeared, a later one
    winning: so each node's section gets a name (``/navigator``, ``navigator``, ``/**/navigator``,
    ``/**/**/navigator``, ...: all mean the same node here) that no file before it used (``taken``), which
    makes it the last one."""
    lines = ['# -p overrides of this bringup (generated; applied after every other parameter file)']
    for instance, values in routed.items():
        fqn = instance.fqn
        key = next(k for k in itertools.chain((fqn, fqn.lstrip('/')), ('/**' * n + fqn for n in itertools.count(1)))
                   if k not in taken)
        lines += [f'{key}:', '  ros__parameters:']
        lines += [f'    {name}: {json.dumps(value)}' for name, value in values.items()]
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------------------------------------ parameter files

def check_param_file(path: Path) -> tuple[list[str], set[str]]:
    """Check one parameter file by the rules of our nodes; (warnings: sections that name no node of this
    package, the section names). A section for one node (``navigator``, ``/**/cube_driver``,
    ``/cube1/cube_driver``) is checked by that node's rules; a wildcard section (``/**``) by the rules of every
    node that has the parameter (each host of a lab network reads the same file, so a parameter of a node
    started elsewhere is fine). ParamsError naming the file, the section, the parameter and the rule."""
    try:
        data = load_yaml(read_text(path, 'parameter file'), str(path))
    except InputError as exc:
        raise ParamsError(str(exc)) from None
    if data is None:
        return [], set()
    if not isinstance(data, dict):
        raise ParamsError(f'{path}: expected a mapping of node names to ros__parameters')
    warnings = []
    for key, section in data.items():
        where = f'{path}: section {key!r}'
        params = section.get('ros__parameters') if isinstance(section, dict) else None
        if not isinstance(params, dict) or set(section) != {'ros__parameters'}:
            raise ParamsError(f'{where}: expected exactly `ros__parameters:` with a mapping of parameters under it')
        node = str(key).rstrip('/').rsplit('/', 1)[-1]
        if node in ('*', '**'):
            kinds = set(NODE_PARAMS)
        elif node in NODE_PARAMS:
            kinds = {node}
        else:
            warnings.append(f'{where} names no node of this package ({", ".join(NODE_PARAMS)}); ignored')
            continue
        for name, value in _flatten(params):
            _check_value(where, name, value, kinds)
    return warnings, {str(key) for key in data}


def _flatten(params: dict, prefix: str = ''):
    """(dotted name, value) of a ros__parameters mapping (``avoid: {margin: 25}`` is ``avoid.margin``)."""
    for name, value in params.items():
        if isinstance(value, dict):
            yield from _flatten(value, f'{prefix}{name}.')
        else:
            yield f'{prefix}{name}', value


def _check_value(where: str, name: str, value, kinds: set[str]) -> None:
    if name in ROS_PARAMS or name.startswith('qos_overrides.'):
        return
    having = sorted(k for k in kinds if name in NODE_PARAMS[k])
    if not having:
        known = sorted({p for k in kinds for p in NODE_PARAMS[k].names()})
        close = difflib.get_close_matches(name, known, n=1)
        nodes = 'any node of this package' if len(kinds) > 1 else f'node {next(iter(kinds))}'
        raise ParamsError(f'{where}: {nodes} has no parameter {name!r}'
                          + (f' (did you mean {close[0]!r}?)' if close else ''))
    for kind in having:
        try:
            NODE_PARAMS[kind][name].check(value)
        except SettingError as exc:
            raise ParamsError(f'{where}: {kind}: {exc}') from None


def _section_pattern(key: str) -> re.Pattern:
    """A section name as rcl matches it against a node's full name: '/**' any namespaces, '*' one name."""
    parts = [t for t in str(key).strip().split('/') if t]
    regex = ''.join('(?:/[^/]+)*' if t == '**' else '/[^/]+' if t == '*' else '/' + re.escape(t) for t in parts)
    return re.compile(f'^{regex}$')


def node_values(param_files: list[Path], instance: Instance) -> dict[str, object]:
    """The parameters the files give one node (its sections and the wildcard ones that match it, later files and
    later sections winning), as YAML reads them; files that cannot be read count as empty (the bringup's own
    check reports them)."""
    values: dict[str, object] = {}
    for path in param_files:
        try:
            data = load_yaml(read_text(path, 'parameter file'), str(path)) or {}
        except InputError:
            continue
        if not isinstance(data, dict):
            continue
        for key, section in data.items():
            params = section.get('ros__parameters') if isinstance(section, dict) else None
            if isinstance(params, dict) and _section_pattern(key).match(instance.fqn):
                values.update(dict(_flatten(params)))
    return values
