"""Host selection for a lab network: `toio-nav bringup --only ROLES` and the launch argument `only:=ROLES` start
just one machine's share of the nodes, from the same YAML (no ROS started here)."""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from toio_navigator.nodes import bringup

CUBES = [f'cube{i}' for i in range(1, 9)]


def run(argv):
    parser = argparse.ArgumentParser()
    bringup.add_arguments(parser)
    return bringup.run(parser.parse_args(argv))


def started(capsys, argv) -> list[str]:
    """The node each command line of a dry run starts: `<namespace>/<module>`."""
    assert run(argv + ['--dry-run']) == 0
    out = []
    for line in capsys.readouterr().out.splitlines():
        words = line.split()
        ns = next((w.split(':=')[1] for w in words if w.startswith('__ns:=')), '')
        out.append(f'{ns}/{words[2].rsplit(".", 1)[1]}')
    return out


def test_only_starts_the_nodes_of_the_named_roles(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv('DBUS_SYSTEM_BUS_ADDRESS', f'unix:path={tmp_path}/none')     # no BlueZ to plan with
    assert started(capsys, ['--only', 'sim,drivers']) == ['/mat_sim'] + [f'/{c}/cube_driver' for c in CUBES]
    assert started(capsys, ['--only', 'navigator']) == ['/navigator']
    assert started(capsys, ['--profile', 'real', '--only', 'drivers', '--driver-processes', 'per-cube']) == \
        ['/cube1/cube_driver', '/cube2/cube_driver']
    # the real profile's default: the drivers of each adapter in one process (here, no BlueZ: all in one)
    assert started(capsys, ['--profile', 'real', '--only', 'drivers']) == ['/cube_driver_group']
    assert started(capsys, ['--only', 'sim,drivers', '--driver-processes', 'one']) == ['/mat_sim', '/cube_driver_group']
    # every host of a lab together starts exactly what one machine would
    together = started(capsys, ['--only', 'sim,drivers']) + started(capsys, ['--only', 'navigator'])
    assert sorted(together) == sorted(started(capsys, []))


@pytest.mark.parametrize('argv, message', [
    (['--only', 'sim,lasers'], 'unknown role lasers (roles: sim, drivers, navigator, explorer, web)'),
    (['--profile', 'real', '--only', 'sim'], 'profile real has no sim node'),
    (['--only', 'explorer'], 'profile sim has no explorer node'),
])
def test_a_role_that_cannot_be_started_is_refused_with_the_reason(capsys, argv, message):
    assert run(argv + ['--dry-run']) == 2
    assert message in capsys.readouterr().err


def launched(arguments: dict) -> list[str]:
    """The executables sim_bringup.launch.py starts with ``arguments`` (launch argument values)."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (pip-only machine); the same selection '
                                             'is tested through toio-nav bringup --only / --web')
    # optional: launch_ros (and launch with it) only exists on ROS machines, the other tests here run without it
    from launch import LaunchContext  # noqa: PLC0415 optional, see above
    from launch.actions import OpaqueFunction  # noqa: PLC0415 optional, see above

    path = Path(__file__).resolve().parents[2] / 'launch' / 'sim_bringup.launch.py'
    spec = importlib.util.spec_from_file_location('sim_bringup', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    context = LaunchContext()
    for action in description.entities:
        action.visit(context)        # declares the arguments (defaults)
    context.launch_configurations.update(arguments)
    nodes = []
    for action in description.entities:
        if isinstance(action, OpaqueFunction):
            nodes += [a for a in action.execute(context) or [] if hasattr(a, 'node_executable')]
    return [n.node_executable for n in nodes]


def test_the_launch_argument_only_selects_the_same_nodes():
    assert launched({'only': 'navigator'}) == ['navigator']


def test_the_launch_argument_web_adds_the_web_console():
    assert launched({'only': 'navigator', 'web': 'true'}) == ['navigator', 'web_console']
    assert 'web_console' not in launched({})


def test_the_web_console_starts_only_when_asked_for(capsys):
    everything = started(capsys, [])
    assert '/web_console' not in everything
    assert started(capsys, ['--web']) == everything + ['/web_console']
    assert started(capsys, ['--only', 'web']) == ['/web_console']                   # a laptop beside the lab
    assert started(capsys, ['--only', 'navigator', '--web']) == ['/navigator', '/web_console']
    assert started(capsys, ['--profile', 'arena', '--web'])[-2:] == ['/arena_explorer', '/web_console']
