"""`toio-nav bringup` and its parameters: `--ros-args -p NAME:=VALUE` reaches the node that has NAME and beats the
YAML (also `-p NODE:NAME:=VALUE`), checked by the node's own rule; parameter files are checked before any node
starts; a node that refuses to start stops the whole bringup with its message."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toio_navigator.launching import profiles
from toio_navigator.nodes import bringup
from toio_navigator.settings.bringup_params import (
    Instance,
    ParamsError,
    check_param_file,
    overrides_yaml,
    route_overrides,
)

SIM = [Instance('mat_sim')] + [Instance('cube_driver', f'/cube{i}') for i in (1, 2)] + [Instance('navigator')]


def run(argv):
    parser = argparse.ArgumentParser()
    bringup.add_arguments(parser)
    return bringup.run(parser.parse_args(argv))


# ------------------------------------------------------------------------------------------------ -p, no ROS

def test_each_override_goes_to_the_nodes_that_have_the_parameter():
    routed = route_overrides(['mode:=BOIDS_AVOID', 'planner:=orca', 'motor_duration_ms:=300',
                              'cube2/cube_driver:max_motor:=80', 'navigator:rate_hz:=1e1', 'cubes:=[cube1, cube2]',
                              'use_sim_time:=true'], SIM)
    by_name = {i.fqn: v for i, v in routed.items()}
    assert by_name['/navigator'] == {'mode': 'BOIDS_AVOID', 'planner': 'orca', 'rate_hz': 10.0,
                                     'cubes': ['cube1', 'cube2'], 'use_sim_time': True}
    assert by_name['/cube1/cube_driver'] == {'motor_duration_ms': 300, 'use_sim_time': True}
    assert by_name['/cube2/cube_driver'] == {'motor_duration_ms': 300, 'max_motor': 80, 'use_sim_time': True}
    assert by_name['/mat_sim'] == {'cubes': ['cube1', 'cube2'], 'use_sim_time': True}


@pytest.mark.parametrize('override, message', [
    ('mode:=NOPE', "-p mode:=NOPE: /navigator: parameter mode: must be one of: AVOID, BOIDS, BOIDS_AVOID, got 'NOPE'"),
    ('mdoe:=BOIDS', "no node of this bringup has a parameter 'mdoe' (did you mean 'mode'?)"),
    ('navigator:motor_duration_ms:=300', "no node navigator has a parameter 'motor_duration_ms'"),
    ('nav:rate_hz:=10', "this bringup has no node 'nav'"),
    ('rate_hz:=1e-2', 'parameter rate_hz: must be a finite number 0.1..1000, got 0.01'),
    ('rate_hz=10', 'expected NAME:=VALUE or NODE:NAME:=VALUE'),
    ('motor_duration_ms:=[1', '-p motor_duration_ms:=[1: invalid YAML'),
])
def test_an_override_that_cannot_apply_is_refused_with_the_reason(override, message):
    with pytest.raises(ParamsError) as err:
        route_overrides([override], SIM)
    assert message in str(err.value)


def test_bringup_refuses_a_bad_override_before_starting_anything(capsys):
    assert run(['--dry-run', '--ros-args', '-p', 'mode:=NOPE']) == 2
    assert "bringup: -p mode:=NOPE: /navigator: parameter mode: must be one of" in capsys.readouterr().err
    assert run(['--only', 'sim,drivers', '--dry-run', '--ros-args', '-p', 'mode:=BOIDS']) == 2
    assert "no node of this bringup has a parameter 'mode'" in capsys.readouterr().err


def test_the_overrides_file_gives_each_node_a_section_no_earlier_file_has():
    routed = {Instance('navigator'): {'mode': 'BOIDS', 'rate_hz': 10, 'mat_rect': [45.0, 45.0, 455.0, 455.0]},
              Instance('cube_driver', '/cube1'): {'ble_name': '1e-2'}}
    text = overrides_yaml(routed, taken={'/navigator', '/cube1/cube_driver', 'cube1/cube_driver',
                                         '/**/cube1/cube_driver'})
    assert 'navigator:\n  ros__parameters:\n    mode: "BOIDS"\n    rate_hz: 10\n' in text
    assert text.count('/navigator:') == 0
    # a string that YAML would read as a number stays a string
    assert '\n/**/**/cube1/cube_driver:\n  ros__parameters:\n    ble_name: "1e-2"\n' in text


def test_help_says_which_node_gets_an_override(capsys):
    parser = argparse.ArgumentParser()
    bringup.add_arguments(parser)
    parser.print_help()
    text = ' '.join(capsys.readouterr().out.split())
    assert 'goes to every node of the bringup that has a parameter NAME' in text
    assert 'mode, planner, rate_hz, ...: the navigator' in text and 'NODE:NAME:=VALUE goes to one node' in text


# ------------------------------------------------------------------------------------------------ parameter files

@pytest.mark.parametrize('text, message', [
    ('navigator: {ros__parameters: {mode: NOPE}}',
     "section 'navigator': navigator: parameter mode: must be one of: AVOID, BOIDS, BOIDS_AVOID, got 'NOPE'"),
    ('navigator: {ros__parameters: {mdoe: BOIDS}}', "node navigator has no parameter 'mdoe' (did you mean 'mode'?)"),
    ('/**/cube_driver: {ros__parameters: {motor_duration_ms: 99999}}',
     'cube_driver: parameter motor_duration_ms: must be an integer 10..2550, got 99999'),
    ('/**: {ros__parameters: {cubes: [cube1], nonsense: 1}}', "any node of this package has no parameter 'nonsense'"),
    ('navigator: {mode: BOIDS}', 'expected exactly `ros__parameters:`'),
    ('navigator: {ros__parameters: {rate_hz: 1e-2}}', 'parameter rate_hz: must be a finite number 0.1..1000, got 0.01'),
    ('navigator: [1, 2', 'invalid YAML'),
])
def test_a_parameter_file_is_checked_by_the_nodes_rules_naming_file_section_and_rule(tmp_path, text, message):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        check_param_file(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_the_shipped_files_pass_and_a_yaml_exponent_is_a_number(tmp_path):
    for profile in profiles.PROFILES:
        for path in profiles.profile_files(profile):
            assert check_param_file(path)[0] == []
    path = tmp_path / 'exp.yaml'
    path.write_text('navigator: {ros__parameters: {stale_timeout_s: 5e-1}}\nrviz2: {ros__parameters: {a: 1}}\n')
    warnings, sections = check_param_file(path)
    assert sections == {'navigator', 'rviz2'}
    assert warnings == [f"{path}: section 'rviz2' names no node of this package (mat_sim, cube_driver, navigator, "
                        'arena_explorer, virtual_ir, web_console); ignored']


def test_bringup_refuses_a_bad_parameter_file_before_starting_anything(tmp_path, capsys):
    """The issue's example: a navigator `mode` of NOPE used to leave the simulator and the drivers running."""
    path = tmp_path / 'nope.yaml'
    path.write_text('/**: {ros__parameters: {cubes: [cube1]}}\nnavigator: {ros__parameters: {mode: NOPE}}\n')
    assert run(['--params-file', str(path)]) == 2
    assert f"bringup: {path}: section 'navigator': navigator: parameter mode: must be one of" in \
        capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ live

def bringup_output(args, env, timeout=90):
    done = subprocess.run([sys.executable, '-m', 'toio_navigator.cli', 'bringup', *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def bringup_until(args, env, text: str, log: Path, timeout: float = 90.0):
    """Run a bringup until ``text`` is in its output (a busy machine may take seconds to start a node), then stop
    it as Ctrl-C does; (exit code, output)."""
    with open(log, 'w') as out:
        proc = subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'bringup', *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    while text not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode, log.read_text()


@pytest.mark.parametrize('how', ['--processes', '--single'])
def test_an_override_beats_every_section_of_the_yaml_at_the_node(tmp_path, child_env, how):
    # the node's section under each name ROS accepts for it: the override must still win
    path = tmp_path / 'nav.yaml'
    path.write_text('/**: {ros__parameters: {cubes: [cube1]}}\n'
                    + ''.join(f'{key}: {{ros__parameters: {{mode: AVOID, planner: hlavoid, rate_hz: 20.0}}}}\n'
                              for key in ('/**/navigator', 'navigator', '/navigator')))
    started = "navigator: 1 cubes ['cube1'], mode BOIDS_AVOID, planner orca, 10 Hz"
    code, out = bringup_until([how, '--only', 'navigator', '--params-file', str(path), '--ros-args', '-p',
                               'mode:=BOIDS_AVOID', '-p', 'planner:=orca', '-p', 'navigator:rate_hz:=10'],
                              child_env, started, tmp_path / 'bringup.log')
    assert code == 0 and started in out, out


def test_a_node_that_refuses_to_start_stops_the_bringup_with_its_message(tmp_path, child_env):
    # three numbers for two cubes: a rule across two parameters that only mat_sim itself checks
    path = tmp_path / 'poses.yaml'
    path.write_text('/**: {ros__parameters: {cubes: [cube1, cube2]}}\n'
                    '/**/cube_driver: {ros__parameters: {transport: sim}}\n'
                    'mat_sim: {ros__parameters: {initial_poses: [100.0, 100.0, 0.0]}}\n')
    proc = subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'bringup', '--params-file',
                             str(profiles.config_dir() / 'navigator.yaml'), '--params-file', str(path)],
                            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    assert proc.returncode == 2, out + err
    lines = err.strip().splitlines()
    assert lines[-2] == ('bringup: mat_sim refused to start: mat_sim: parameter initial_poses: needs 3 numbers '
                         '(x, y, heading) per cube: 6 for 2 cubes, got 3')
    assert lines[-1] == 'bringup: stopped the other nodes'
