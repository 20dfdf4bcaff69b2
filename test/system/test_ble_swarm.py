"""The real-cube bringup (config/real.yaml: four BLE cube_drivers and the navigator, one process each:
``--driver-processes per-cube``) on a machine with no Bluetooth: every driver talks real bleak to the virtual
BlueZ, four cubes on one adapter.

The cubes swap places through the centre of the mat (contacts measured by the simulated world), then, on the way
back, BlueZ crashes: every driver must report its link down within a second, the cubes must stop by the duration
of their last command (their links are still up), and the drivers must reconnect when BlueZ returns and carry
the swarm on (commands reach every cube again and every cube heads home).
"""
from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from conftest import REPO, next_domain_id, ros_env  # noqa: E402
from support.bluez_rig import CALM, DRIVER_PARAMS, Probe, needs_dbus_daemon, ros_value, stop  # noqa: E402
from support.lifecycle_probe import bad_lines  # noqa: E402
from toio_navigator.cube.protocol import Characteristic  # noqa: E402
from toio_navigator.demo_cli import swap_goals  # noqa: E402
from toio_navigator.nodes.cube_driver import LATCHED  # noqa: E402
from toio_navigator.nodes.mat_sim import ContactTracker  # noqa: E402
from toio_navigator.sim.bluez.cli import driver_parameters  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402
from toio_navigator.srv import GoalStatus, SetGoal  # noqa: E402

pytestmark = [needs_dbus_daemon, pytest.mark.ros]

CUBES = ['cube1', 'cube2', 'cube3', 'cube4']
STARTS = np.array([(150.0, 70.0, math.pi / 2), (350.0, 70.0, math.pi / 2),
                   (150.0, 430.0, -math.pi / 2), (350.0, 430.0, -math.pi / 2)])
MAT_RECT = (45.0, 45.0, 455.0, 455.0)           # config/navigator.yaml
TOLERANCE = 20.0                                # the navigator's default reached radius (config/navigator.yaml)
LINK_KEPT_S = 1.5                               # after the crash, the cubes keep their links this long


class Swarm:
    def __init__(self, tmp) -> None:
        self.host = BluezHost(STARTS, radio=CALM)
        self.contacts = ContactTracker(self.host.world)
        self.host.start()
        ids = [link.name.split('-')[1] for link in self.host.bluez.links]
        params = tmp / 'virtual_cubes.yaml'
        # bleak hands every driver process every cube's signals (as BlueZ broadcasts them): the swarm needs
        # positions only, so the IMU and wheel-speed notifications stay off
        params_of_drivers = {**DRIVER_PARAMS, 'imu': 'off', 'wheel_speed_notify': False}
        extra = ''.join(f'    {name}: {ros_value(value)}\n' for name, value in params_of_drivers.items())
        params.write_text(driver_parameters(ids).replace('    transport: ble\n', extra))
        env = self.host.environment(ros_env(next_domain_id()))
        self.probe = Probe(int(env['ROS_DOMAIN_ID']))
        # this process also runs the virtual BlueZ and its world: it polls the navigator's goal status rather
        # than take every NavResult and CubeState, which would compete with the simulation for the interpreter
        self.links = {c: self.probe.collect(msg.LinkStatus, f'/{c}/link_state', LATCHED) for c in CUBES}
        self.set_goal = self.probe.node.create_client(SetGoal, 'navigator/set_goal')
        self.goal_status = self.probe.node.create_client(GoalStatus, 'navigator/goal_status')
        config = REPO / 'config'
        self.bringup = subprocess.Popen(
            [sys.executable, '-m', 'toio_navigator.nodes.bringup', '--profile', 'real',
             '--params-file', str(config / 'navigator.yaml'), '--params-file', str(config / 'real.yaml'),
             '--params-file', str(params), '--driver-processes', 'per-cube'],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def all_connected(self) -> bool:
        return all(self.links[c] and self.links[c][-1].state == msg.LinkStatus.CONNECTED
                   and self.links[c][-1].firmware_version for c in CUBES)

    def status(self, cube: str):
        future = self.goal_status.call_async(GoalStatus.Request(cube=cube))
        assert self.probe.spin_until(future.done, 10), f'no goal status for {cube}'
        return future.result()

    def send_goals(self, goals: np.ndarray, first_id: int) -> None:
        assert self.probe.spin_until(self.set_goal.service_is_ready, 30)
        for k, cube in enumerate(CUBES):
            future = self.set_goal.call_async(SetGoal.Request(goal=msg.NavGoal(
                goal_id=first_id + k, cube=cube, x=float(goals[k, 0]), y=float(goals[k, 1]))))
            assert self.probe.spin_until(future.done, 10) and future.result().accepted, future.result()

    def reached(self, first_id: int, timeout: float) -> bool:
        """True once the navigator reports every cube's goal (first_id + k) reached; polled twice a second."""
        deadline = time.monotonic() + timeout
        pending = dict(enumerate(CUBES))
        while pending and time.monotonic() < deadline:
            for k, cube in list(pending.items()):
                status = self.status(cube)
                if status.goal_id == first_id + k and status.reached:
                    del pending[k]
            if pending:
                self.probe.spin_for(0.5)
        self.not_reached = sorted(pending.values())
        return not pending

    def close(self) -> str:
        err = stop(self.bringup, timeout=20)
        self.probe.close()
        self.host.stop()
        return err


@pytest.fixture(scope='module')
def swarm(tmp_path_factory):
    swarm = Swarm(tmp_path_factory.mktemp('bluez_swarm'))
    yield swarm
    err = swarm.close()
    assert not bad_lines(err), err[-3000:]


def test_four_cubes_on_one_adapter_swap_places_through_the_navigator_without_a_contact(swarm):
    assert swarm.probe.spin_until(swarm.all_connected, 60), {c: swarm.links[c][-1:] for c in CUBES}
    goals = swap_goals(STARTS[:, :2], MAT_RECT)
    swarm.send_goals(goals, 100)
    assert swarm.reached(100, 90), f'not reached: {swarm.not_reached}'
    assert swarm.host.call(lambda: swarm.contacts.count) == 0
    # once the cubes stand still, the poses the drivers report over BLE are the truth (the navigator's distance to
    # each goal, computed from them, is the true one), and the truth is at the goals
    assert swarm.probe.spin_until(lambda: swarm.host.call(lambda: not swarm.host.world.wheel_speed.any()), 10)
    true_distance = np.hypot(*(swarm.host.poses()[:, :2] - goals).T)

    def reported_is_true() -> bool:
        return all(abs(swarm.status(c).distance - true_distance[k]) < 2.0 for k, c in enumerate(CUBES))
    assert swarm.probe.spin_until(reported_is_true, 10), \
        ([swarm.status(c).distance for c in CUBES], true_distance)
    assert true_distance.max() <= 2 * TOLERANCE


def test_a_bluez_crash_mid_run_links_down_within_a_second_cubes_stop_by_their_commands_then_reconnect(swarm):
    assert swarm.probe.spin_until(swarm.all_connected, 30)
    reconnects = {c: swarm.links[c][-1].reconnects for c in CUBES}
    swarm.send_goals(STARTS[:, :2], 200)                  # back home
    assert swarm.probe.spin_until(lambda: swarm.host.call(lambda: np.abs(swarm.host.world.wheel_speed).max()) > 5, 10)

    crash = time.time()
    swarm.host.kill_bluez(LINK_KEPT_S)
    # the cubes run out their last commands (the navigator's 150 ms durations) while their links still stand
    assert swarm.probe.spin_until(lambda: swarm.host.call(lambda: not swarm.host.world.wheel_command.any()), 2.0)
    stopped = time.time() - crash
    assert stopped < 1.0 and swarm.host.call(lambda: all(c.connected for c in swarm.host.firmware.cubes))
    assert swarm.probe.spin_until(
        lambda: all(swarm.links[c][-1].state == msg.LinkStatus.RECONNECTING for c in CUBES), 10)
    reported = {c: _seconds(swarm.links[c][-1].header.stamp) - crash for c in CUBES}
    assert max(reported.values()) < 1.0, reported

    swarm.probe.spin_for(max(0.0, crash + LINK_KEPT_S + 0.5 - time.time()))
    restarted = time.monotonic()
    swarm.host.restart_bluez()
    assert swarm.probe.spin_until(
        lambda: swarm.all_connected() and all(swarm.links[c][-1].reconnects > reconnects[c] for c in CUBES), 30), \
        {c: swarm.links[c][-1] for c in CUBES}
    # the new links carry the swarm again: fresh commands reach every cube and every cube heads home
    assert swarm.probe.spin_until(lambda: all(
        any(w.char is Characteristic.MOTOR_CONTROL and w.time > restarted for w in swarm.host.writes(i))
        for i in range(len(CUBES))), 20)
    left = np.hypot(*(swarm.host.poses()[:, :2] - STARTS[:, :2]).T)
    assert swarm.probe.spin_until(lambda: np.all(
        np.hypot(*(swarm.host.poses()[:, :2] - STARTS[:, :2]).T) <= np.maximum(left - 20.0, TOLERANCE)), 30), \
        (left, swarm.host.poses())


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9
