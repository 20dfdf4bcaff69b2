"""`toio-nav bringup` without launch_ros: the node table, the cube list from the YAML, clear errors."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from toio_navigator.launching import profiles
from toio_navigator.nodes import bringup


def run(argv):
    parser = argparse.ArgumentParser()
    bringup.add_arguments(parser)
    return bringup.run(parser.parse_args(argv))


def test_sim_profile_starts_sim_drivers_and_navigator_for_every_cube_of_the_yaml(capsys):
    files = profiles.profile_files('sim')
    assert [f.name for f in files] == ['navigator.yaml', 'sim.yaml']
    cubes = profiles.read_cubes(files)
    assert cubes == [f'cube{i}' for i in range(1, 9)]
    nodes = profiles.plan('sim', cubes)
    assert [(s.executable, ns) for s, ns in nodes] == \
        [('mat_sim', '')] + [('cube_driver', f'/cube{i}') for i in range(1, 9)] + [('navigator', '')]
    assert run(['--dry-run', '--ros-args', '-p', 'mode:=BOIDS']) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if not line.startswith('#')]
    assert len(lines) == 10
    # -p is not passed on (a node's own YAML section would beat it): it goes into a parameter file applied last,
    # in a section for the node that has the parameter
    assert all(line.split('--params-file')[-1].strip().split()[0].endswith('overrides.yaml') for line in lines)
    assert not any('-p mode' in line for line in lines)
    assert [line[2:] for line in out if line.startswith('# ')][1:] == ['/navigator:', '  ros__parameters:',
                                                                      '    mode: "BOIDS"']
    assert '-r __ns:=/cube3' in lines[3]


def test_real_profile_has_no_simulator():
    nodes = profiles.plan('real', profiles.read_cubes(profiles.profile_files('real')))
    assert {s.executable for s, _ns in nodes} == {'cube_driver', 'navigator'}


def test_every_node_executable_has_a_ros2_run_shim_and_a_main():
    repo = Path(__file__).resolve().parents[2]
    for spec in profiles.NODES:
        shim = (repo / 'scripts' / spec.executable).read_text()
        assert spec.module in shim


@pytest.mark.parametrize('text, message', [
    ('navigator: {ros__parameters: {rate_hz: 5.0}}', 'no `cubes` list'),
    ('/**: {ros__parameters: {cubes: []}}', 'non-empty list'),
    ('/**: {ros__parameters: {cubes: [a, 3]}}', 'non-empty list'),
    ('[1, 2', 'not valid YAML'),
    ('- a\n- b', 'mapping'),
])
def test_bad_parameter_files_are_refused_with_the_reason(tmp_path, capsys, text, message):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    assert run(['--params-file', str(path), '--dry-run']) == 2
    assert message in capsys.readouterr().err


def test_missing_parameter_file_is_named(tmp_path, capsys):
    assert run(['--params-file', str(tmp_path / 'nope.yaml')]) == 2
    assert 'does not exist' in capsys.readouterr().err
