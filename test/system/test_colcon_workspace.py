"""The README's lab-machine workflow with the real colcon, as a lab user types it: the repository under src/ of a
fresh workspace, `colcon build --symlink-install`, `source install/setup.bash`, then from that shell `ros2 launch
toio_navigator sim_bringup.launch.py` (its nodes run from the workspace's install and stop on Ctrl-C, none left)
and `colcon test --packages-select toio_navigator` of one layer of the suite (test/launching), read back with
`colcon test-result --verbose`.

Where the ROS 2 packages come from the venv's wheels (no /opt/ros/jazzy), the build needs what docs/build.md
names: the CMake fixups for the wheels' include paths, and, for time only, the type supports compiled in unity
units as `make install` compiles them. MAKEFLAGS=-jN keeps colcon from adding `-lN`, which on a shared, busy host
runs make one job at a time, and drops the jobserver of a `make test` around the suite. Needs the ROS 2 tools and
colcon (skips, naming what is missing, where there are none).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.ros2_cli import missing_tools, require_ros2_tools

require_ros2_tools()
if shutil.which('colcon') is None or shutil.which('cmake') is None:
    if os.environ.get('TOIO_NAV_ROS_TOOLS') == 'required':
        pytest.fail('make installed the ROS 2 tools, but colcon or cmake cannot be found', pytrace=False)
    pytest.skip(f'needs colcon and cmake ({missing_tools() or "not on PATH"})', allow_module_level=True)

from conftest import REPO  # noqa: E402
from support.lifecycle_probe import bad_lines, describe, wait_gone  # noqa: E402
from support.ros2_cli import Result, Ros2  # noqa: E402

BUILD = 'colcon build --symlink-install'
#: what a pip-only machine adds (docs/build.md, "colcon on a pip-only machine"); {ws}: the workspace
PIP_ONLY_CMAKE_ARGS = (' --cmake-args -DCMAKE_PROJECT_INCLUDE={ws}/src/toio_navigator/tools/ros/pip_ros_fixups.cmake'
                       ' -DTOIO_UNITY_MSGS=ON')
LAUNCH = 'ros2 launch toio_navigator sim_bringup.launch.py'
NODES = {'/mat_sim', '/navigator'} | {f'/cube{i}/cube_driver' for i in range(1, 9)}
#: the part of the suite `colcon test` runs here (one ctest test per folder of test/): test/launching, whose
#: test_launch_files.py needs launch_ros
COLCON_TEST = 'colcon test --packages-select toio_navigator --ctest-args -R test_launching'


def ros_from_wheels() -> bool:
    """Whether ament_cmake is the venv's (a pip-only machine), not a sourced ROS 2 install's."""
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix and (Path(prefix) / 'share/ament_index/resource_index/packages/ament_cmake').is_file():
            return Path(prefix).resolve() == Path(sys.prefix).resolve()
    return True


def sourced_env(ws: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a bash that ran `source install/setup.bash` in ``ws``."""
    out = subprocess.run(['bash', '-c', 'source install/setup.bash >/dev/null && env -0'], cwd=ws, env=env,
                         capture_output=True, check=True, timeout=60).stdout.decode()
    return dict(item.split('=', 1) for item in out.split('\0') if '=' in item)


class Workspace:
    """~/ws of the README: the repository as src/toio_navigator, built with colcon."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / 'src').mkdir(parents=True)
        (root / 'src' / 'toio_navigator').symlink_to(REPO, target_is_directory=True)
        self.ros2 = Ros2(root)
        self.ros2.env['MAKEFLAGS'] = f'-j{os.cpu_count() or 2}'
        self.listed = self.ros2.run('colcon list').out
        self.build_command = BUILD + (PIP_ONLY_CMAKE_ARGS.format(ws=root) if ros_from_wheels() else '')
        self.built = self.run(self.build_command, 'colcon_build', timeout=600.0)
        self.install = root / 'install' / 'toio_navigator'

    def run(self, command: str, name: str, timeout: float) -> Result:
        """A command that starts many processes (make and the compilers, pytest), run to its end; stopped with its
        whole process group if it takes longer than ``timeout``."""
        started = self.ros2.start(command, name)
        try:
            started.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            started.ctrl_c()
            raise AssertionError(f'{command!r} did not end within {timeout:g} s:\n{started.text()}') from None
        return Result(started.proc.returncode, started.text())


@pytest.fixture(scope='module')
def ws(tmp_path_factory):
    workspace = Workspace(tmp_path_factory.mktemp('colcon') / 'ws')
    try:
        yield workspace
    finally:
        workspace.ros2.close()


def test_colcon_finds_the_one_package_under_src(ws):
    """The venv, the build folders and the vendored message packages (tools/ros/*, COLCON_IGNORE) inside the
    repository are not taken for packages of the workspace."""
    assert ws.listed.strip().splitlines() == ['toio_navigator\tsrc/toio_navigator\t(ros.ament_cmake)'], ws.listed


def test_colcon_build_symlink_install_builds_the_package(ws):
    assert ws.built.returncode == 0, f'{ws.build_command}:\n{ws.built.out}'
    assert 'Summary: 1 package finished' in ws.built.out, ws.built.out
    # --symlink-install: the launch files, the Python package and the node executables are the repository's own
    # files, so an edit takes effect without a rebuild
    site = next((ws.install / 'lib').glob('python3*/site-packages'))
    for installed, source in [('share/toio_navigator/launch/sim_bringup.launch.py', 'launch/sim_bringup.launch.py'),
                              (f'{site.relative_to(ws.install)}/toio_navigator/nodes/navigator.py',
                               'toio_navigator/nodes/navigator.py'),
                              ('lib/toio_navigator/navigator', 'scripts/navigator')]:
        assert (ws.install / installed).is_symlink(), installed
        assert (ws.install / installed).resolve() == (REPO / source).resolve(), installed


def test_ros2_launch_from_the_sourced_workspace_runs_its_nodes_and_ctrl_c_ends_them(ws):
    assert ws.built.returncode == 0, 'the workspace did not build'
    ros2 = ws.ros2
    ros2.env = sourced_env(ws.root, ros2.env)
    assert ros2.env['AMENT_PREFIX_PATH'].split(os.pathsep)[0] == str(ws.install), ros2.env['AMENT_PREFIX_PATH']
    assert ros2.run('ros2 pkg prefix toio_navigator').out.strip() == str(ws.install)
    launch = ros2.start(LAUNCH, 'sim_bringup')
    assert ros2.node_list(NODES) == NODES, launch.text()
    pose = ros2.run('ros2 topic echo --once /cube1/pose')
    assert pose.returncode == 0 and 'frame_id: mat' in pose.out, pose.out
    nodes = launch.nodes()
    navigator = [pid for pid in nodes if _cmdline(pid)[1:2] == [str(ws.install / 'lib/toio_navigator/navigator')]]
    assert len(navigator) == 1, describe(nodes)
    # its messages are the ones colcon just generated, not the venv's (a pip-only machine has both)
    loaded = set(re.findall(r'\S*toio_navigator_s__rosidl_typesupport_c\S*\.so', _maps(navigator[0])))
    assert loaded and all(path.startswith(str(ws.root)) for path in loaded), loaded
    assert launch.ctrl_c() == 0, launch.text()
    assert wait_gone(nodes, 5.0) == set(), f'left running after Ctrl-C: {describe(nodes)}'
    assert bad_lines(launch.text()) == [], launch.text()


def test_colcon_test_runs_part_of_the_suite_and_test_result_shows_it_passed(ws):
    assert ws.built.returncode == 0, 'the workspace did not build'
    ros2 = ws.ros2
    if 'COLCON_PREFIX_PATH' not in ros2.env:
        ros2.env = sourced_env(ws.root, ros2.env)
    tested = ws.run(COLCON_TEST, 'colcon_test', timeout=300.0)
    assert tested.returncode == 0 and 'Summary: 1 package finished' in tested.out, tested.out
    result = ros2.run('colcon test-result --verbose')
    assert result.returncode == 0, result.out
    summary = re.search(r'Summary: (\d+) tests, (\d+) errors, (\d+) failures, (\d+) skipped', result.out)
    collected = ros2.run(f'python -m pytest -q --collect-only {REPO}/test/launching').out
    ran = int(re.search(r'(\d+) tests? collected', collected)[1])
    # every pytest test of the layer, and ctest's own record of the one ctest test that ran them
    assert summary and summary.groups() == (str(ran + 1), '0', '0', '0'), (result.out, collected)
    results = ws.root / 'build/toio_navigator/test_results/toio_navigator'
    assert sorted(p.name for p in results.iterdir()) == ['test_launching.xunit.xml'], 'not one layer alone'
    xunit = (results / 'test_launching.xunit.xml').read_text()
    assert 'classname="toio_navigator.test.launching.test_launch_files"' in xunit, xunit


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f'/proc/{pid}/cmdline').read_bytes().decode(errors='replace').split('\0')
    except OSError:
        return []


def _maps(pid: int) -> str:
    try:
        return Path(f'/proc/{pid}/maps').read_text()
    except OSError:
        return ''
