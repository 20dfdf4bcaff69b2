"""The real-cube launch file under ros2 launch, on a machine with no Bluetooth: `toio-nav fake-bluez` offers two
virtual cubes over a private D-Bus and writes my_cubes.yaml. First as the lab table of docs/lab.md types it: the
cubes' host runs `ros2 launch toio_navigator real_bringup.launch.py params_file:=my_cubes.yaml only:=drivers`
(real bleak, one BLE driver per cube), the navigator's host the same with `only:=navigator`, and the README's
`ros2 service call` drives cube1; Ctrl-C stops both. Then as the README types it, one machine: `ros2 launch
toio_navigator real_bringup.launch.py params_file:=my_cubes.yaml`, killed outright (SIGKILL) while cube2 drives:
no node is left 5 s later and both cubes stand still, each stopped by its driver on the way out.

Needs the ROS 2 tools and dbus-daemon (skips, naming what is missing, where there are none).
"""
from __future__ import annotations

import math
import re
import signal

from support.ros2_cli import require_ros2_tools

require_ros2_tools()

from support.bluez_rig import needs_dbus_daemon  # noqa: E402
from support.lifecycle_probe import describe, wait_gone  # noqa: E402
from support.ros2_cli import Ros2  # noqa: E402

pytestmark = needs_dbus_daemon

BRINGUP = 'ros2 launch toio_navigator real_bringup.launch.py params_file:=my_cubes.yaml'
DRIVERS_HOST = f'{BRINGUP} only:=drivers'
NAVIGATOR_HOST = f'{BRINGUP} only:=navigator'
SET_GOAL = ('ros2 service call /navigator/set_goal toio_navigator/srv/SetGoal '
            '"{goal: {cube: cube1, goal_id: 1, x: 250.0, y: 250.0}}"')
STATUS = re.compile(r'toio-(\w+) (\w+)\s+\(([-\d.]+), ([-\d.]+)\)')


def cube_status(line: str) -> list[tuple[str, str, float, float]]:
    """(id, link, x, y) of each cube in one of fake-bluez's status lines."""
    return [(name, link, float(x), float(y)) for name, link, x, y in STATUS.findall(line)]


def statuses(text: str) -> list[list[tuple[str, str, float, float]]]:
    return [cube_status(line) for line in text.splitlines() if line.startswith('fake-bluez: toio-')]


def connected(launch) -> None:
    launch.wait_for(lambda text: 'cube1: connected' in text and 'cube2: connected' in text, 180.0,
                    'both cubes connected over BLE')


def position(bluez, cube: int) -> tuple[float, float]:
    return statuses(bluez.text())[-1][cube][2:]


def test_the_real_cube_launches_drive_ble_cubes_and_a_killed_launch_stops_them(tmp_path):
    ros2 = Ros2(tmp_path)
    try:
        bluez = ros2.start('toio-nav fake-bluez --cubes 2 --params-out my_cubes.yaml --status-period 0.5',
                           'fake_bluez')
        exported = bluez.wait_for(lambda text: 'export DBUS_SYSTEM_BUS_ADDRESS=' in text, 120.0, 'the bus address')
        ros2.env['DBUS_SYSTEM_BUS_ADDRESS'] = re.search(r'export DBUS_SYSTEM_BUS_ADDRESS=(\S+)', exported).group(1)
        # the lab table: two hosts
        drivers, navigator = ros2.start(DRIVERS_HOST, 'drivers_host'), ros2.start(NAVIGATOR_HOST, 'navigator_host')
        connected(drivers)
        navigator.wait_for(lambda text: "navigator: 2 cubes ['cube1', 'cube2']" in text, 120.0, 'the navigator')
        start = position(bluez, 0)
        answer = ros2.run(SET_GOAL)
        assert "accepted=True, reason=''" in answer.out, answer.out
        bluez.wait_for(lambda text: math.dist(statuses(text)[-1][0][2:], start) > 5.0, 90.0, 'cube1 to drive')
        assert (drivers.ctrl_c(), navigator.ctrl_c()) == (0, 0), drivers.text() + navigator.text()
        # the README: one machine, killed while cube2 drives
        bringup = ros2.start(BRINGUP, 'bringup')
        connected(bringup)
        start = position(bluez, 1)
        answer = ros2.run(SET_GOAL.replace('cube1', 'cube2').replace('y: 250.0', 'y: 400.0'))
        assert "accepted=True, reason=''" in answer.out, answer.out
        bluez.wait_for(lambda text: math.dist(statuses(text)[-1][1][2:], start) > 5.0, 90.0, 'cube2 to drive')
        nodes = bringup.nodes()
        assert len(nodes) == 3
        bringup.proc.send_signal(signal.SIGKILL)
        left = wait_gone(nodes, 5.0)
        assert left == set(), f'left running 5 s after SIGKILL of its launch: {describe(left)}'
        # both drivers stopped their cubes and let them go: the cubes are free and stand still
        seen = len(statuses(bluez.text()))
        bluez.wait_for(lambda text: len(statuses(text)) >= seen + 3, 30.0, 'fake-bluez to report the cubes')
        last = statuses(bluez.text())[-2:]
        assert [link for _, link, _, _ in last[-1]] == ['free', 'free'], bluez.text()
        assert [c[2:] for c in last[0]] == [c[2:] for c in last[1]], f'a cube still moves: {last}'
    finally:
        ros2.close()
