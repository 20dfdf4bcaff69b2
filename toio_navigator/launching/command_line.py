"""A ``toio-nav bringup`` command line, read and checked before anything starts: the parameter files, the cubes,
the nodes to start and the ``--ros-args`` overrides routed to the nodes that have them. Plain Python, no ROS.

Every file and every ``-p NAME:=VALUE`` is checked by the nodes' own rules
(:mod:`toio_navigator.settings.bringup_params`), so a typo stops the bringup with a message instead of a node.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

from toio_navigator.launching.profiles import BringupError, parse_roles, plan, profile_files, read_cubes
from toio_navigator.settings.bringup_params import (
    NODE_PARAMS,
    Instance,
    check_param_file,
    route_overrides,
    split_override,
)


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
    nodes = plan(args.profile, cubes, parse_roles(args.only, args.profile), getattr(args, 'web', False))
    routed = route_overrides(overrides, [Instance(spec.executable, ns) for spec, ns in nodes])
    return Prepared(files, cubes, nodes, extra, routed, taken)
