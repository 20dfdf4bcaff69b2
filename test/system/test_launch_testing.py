"""launch_testing, ROS 2's own integration-test framework, runs test/system/sim_bringup_launch.test.py with its own
runner (``launch_test``), as a lab runs launch tests: the launch file starts, the active tests pass beside it, and
after the shutdown every node's exit is checked. Here so that ``make test`` and ``colcon test`` (this suite, via
ament_add_pytest_test) run it. Needs the ROS 2 tools (skips, naming what is missing, where there are none)."""
from __future__ import annotations

from support.ros2_cli import require_ros2_tools

require_ros2_tools()

from conftest import REPO  # noqa: E402
from support.ros2_cli import Ros2  # noqa: E402

TEST_FILE = REPO / 'test' / 'system' / 'sim_bringup_launch.test.py'


def test_launch_test_runs_the_sim_bringup_launch_tests_and_they_pass(tmp_path):
    ros2 = Ros2(tmp_path)
    try:
        done = ros2.run(f'launch_test {TEST_FILE}', timeout=240.0, attempts=1)
    finally:
        ros2.close()
    assert done.returncode == 0, done.out
    # one active test beside the launch, one post-shutdown test, each reported by unittest
    assert done.out.count('Ran 1 test in') == 2 and done.out.count('\nOK') == 2, done.out
    assert 'test_every_cube_connects_reports_its_pose_and_follows_a_goal' in done.out, done.out
