"""The launch files under the real ``ros2 launch``, as a lab user types it: every argument ``--show-args`` lists,
the first mistakes (a node parameter given as a launch argument, an unknown role, a file that is not there, a bad
value in a parameter file, rviz2 asked for where there is none) stopping the launch with the reason before any
node starts, a node that refuses its parameters ending the whole launch with its message, the arena explorer
started and driven with ``ros2 service call``, and ``ros2 run`` of one node. Needs the ROS 2 tools (skips, naming
what is missing, where there are none).
"""
from __future__ import annotations

import shutil

import pytest

from support.ros2_cli import require_ros2_tools

require_ros2_tools()

from support.lifecycle_probe import bad_lines, describe, wait_gone  # noqa: E402
from support.ros2_cli import Ros2, write_sim_cubes  # noqa: E402
from toio_navigator.launching.launch_plan import launch_arguments  # noqa: E402

LAUNCH_FILES = {'sim': 'sim_bringup.launch.py', 'real': 'real_bringup.launch.py', 'arena': 'arena_bringup.launch.py'}


@pytest.fixture(scope='module')
def ros2(tmp_path_factory):
    rig = Ros2(tmp_path_factory.mktemp('ros2_launch'))
    yield rig
    rig.close()


def test_show_args_lists_every_argument_with_its_default(ros2):
    profiles = sorted(LAUNCH_FILES)
    answers = ros2.run_all(*(f'ros2 launch toio_navigator {LAUNCH_FILES[p]} --show-args' for p in profiles))
    for profile, done in zip(profiles, answers):
        assert done.returncode == 0, done.out
        listed = [line.strip().strip("':") for line in done.out.splitlines() if line.startswith("    '")]
        assert listed == [a.name for a in launch_arguments(profile)], (profile, done.out)
        for argument in launch_arguments(profile):
            assert argument.description in done.out and f"(default: '{argument.default}')" in done.out


def mistakes(tmp_path):
    """What a user gets wrong first (every mistake's message: test/launching/test_launch_plan.py)."""
    bad_value = tmp_path / 'bad_rate.yaml'
    bad_value.write_text('navigator:\n  ros__parameters:\n    rate_hz: -5.0\n')
    cases = [
        ('sim_bringup.launch.py cubes:=bogus', 'cubes:=bogus: a node parameter, not an argument of the sim launch '
         'file (its arguments: only, params_file, rviz, web; see --show-args). Set node parameters in a YAML file '
         'given as params_file:=FILE'),
        ('sim_bringup.launch.py only:=sim,lasers', 'only:=sim,lasers: unknown role lasers (roles: sim, drivers, '
         'navigator, explorer, web)'),
        ('sim_bringup.launch.py params_file:=nowhere.yaml', 'params_file:=nowhere.yaml: no such file'),
        (f'sim_bringup.launch.py params_file:={bad_value}', f"params_file: {bad_value}: section 'navigator': "
         'navigator: parameter rate_hz: must be a finite number 0.1..1000, got -5.0'),
    ]
    if shutil.which('rviz2') is None:
        cases.append(('sim_bringup.launch.py rviz:=true', 'rviz:=true, but rviz2 is not installed (no package rviz2 '
                      'on AMENT_PREFIX_PATH'))
    return cases


def test_a_mistake_stops_the_launch_with_the_reason_before_any_node_starts(ros2, tmp_path):
    cases = mistakes(tmp_path)
    answers = ros2.run_all(*(f'ros2 launch toio_navigator {arguments}' for arguments, _ in cases))
    for (arguments, reason), done in zip(cases, answers):
        assert done.returncode == 1, (arguments, done.out)
        assert reason in done.out, (arguments, done.out)
        assert 'process started' not in done.out, (arguments, done.out)


def test_a_node_that_refuses_its_parameters_ends_the_launch_with_its_message(ros2, tmp_path):
    """goal_pose_tolerance below handle_tolerance passes every single-parameter rule; the navigator refuses the
    pair at start (exit 2). The other nodes are stopped and no process of the launch is left."""
    cubes = write_sim_cubes(tmp_path / 'one.yaml', [(250.0, 250.0, 0.0)])
    with open(cubes, 'a') as f:
        f.write('navigator:\n  ros__parameters:\n    goal_pose_tolerance: 0.5\n')
    launch = ros2.start(f'ros2 launch toio_navigator sim_bringup.launch.py params_file:={cubes}', 'refusal')
    reason = ('/navigator refused to start: navigator: parameter goal_pose_tolerance: must be 0 or >= '
              'handle_tolerance (8: the cube stops within that), got 0.5; stopping every node of this launch')
    launch.wait_for(lambda text: 'process started' in text, 120.0, 'the nodes to start')
    nodes = launch.nodes()
    assert launch.proc.wait(timeout=180) == 0, launch.text()     # a launch shut down by an event ends with 0
    assert reason in launch.text()
    left = wait_gone(nodes, 5.0)
    assert left == set(), f'left running after the launch ended: {describe(left)}'


def test_the_arena_launch_explores_when_asked_by_ros2_service_call_and_stops_on_ctrl_c(ros2):
    """The README's two lines as typed: without layout:= the arena launch senses the shipped sample arena."""
    launch = ros2.start('ros2 launch toio_navigator arena_bringup.launch.py', 'arena')
    expected = {'/mat_sim', '/cube1/cube_driver', '/navigator', '/arena_explorer'}
    assert expected <= ros2.node_list(expected), launch.text()
    launch.wait_for(lambda text: 'cube1: connected' in text, 120.0, 'the cube to connect')
    call = 'ros2 service call /arena_explorer/start_exploration std_srvs/srv/Trigger'
    done = ros2.run(call)
    # (an answer lost to a busy host is asked for again, and the second answer is "already exploring")
    assert done.returncode == 0 and ('success=True' in done.out or call in ros2.retried), done.out
    launch.wait_for(lambda text: 'exploration started' in text and 'from navigator/set_goal: TOWARDS' in text, 90.0,
                    'the explorer to drive the cube')
    nodes = launch.nodes()
    assert launch.ctrl_c() == 0, launch.text()
    assert wait_gone(nodes, 5.0) == set()
    assert bad_lines(launch.text()) == [], launch.text()


def test_ros2_run_starts_one_node_from_a_parameter_file(ros2):
    (ros2.cwd / 'my_params.yaml').write_text('navigator:\n  ros__parameters:\n    cubes: [cube1, cube2]\n'
                                             '    planner: orca\n')
    node = ros2.start('ros2 run toio_navigator navigator --ros-args --params-file my_params.yaml', 'ros2_run')
    node.wait_for(lambda text: "navigator: 2 cubes ['cube1', 'cube2'], mode AVOID, planner orca" in text, 120.0,
                  'the navigator to start')
    assert node.ctrl_c() == 0, node.text()
    assert bad_lines(node.text()) == [], node.text()
