"""The launch files describe the same nodes as the bringup table, from the same YAML. Runs only where launch_ros
exists (ROS machines); pip-only machines skip it with the reason."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

launch_ros = pytest.importorskip('launch_ros', reason='launch_ros is not installed (pip-only machine); '
                                                     'the same nodes are tested through toio-nav bringup')
from launch import LaunchContext  # noqa: E402
from launch.actions import OpaqueFunction  # noqa: E402

from toio_navigator.launching.profiles import plan, profile_files, read_cubes  # noqa: E402

LAUNCH = Path(__file__).resolve().parents[2] / 'launch'


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


@pytest.mark.parametrize('name, profile', [('sim_bringup.launch.py', 'sim'), ('real_bringup.launch.py', 'real')])
def test_launch_file_starts_the_bringup_nodes(name, profile):
    description = load(name)
    context = LaunchContext()
    for action in description.entities:
        action.visit(context)        # declares the arguments (defaults)
    nodes = []
    for action in description.entities:
        if isinstance(action, OpaqueFunction):
            nodes += [a for a in action.execute(context) or [] if hasattr(a, 'node_executable')]
    expected = plan(profile, read_cubes(profile_files(profile)))
    assert len(nodes) == len(expected)
    assert [n.node_executable for n in nodes] == [spec.executable for spec, _ns in expected]
