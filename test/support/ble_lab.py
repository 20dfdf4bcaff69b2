"""A lab of BLE cubes without a radio: the virtual BlueZ with several adapters (in this process, on a thread of
its own) and the real-cube bringup (``toio-nav bringup --profile real``) as a child process, talking real bleak
over real D-Bus; a probe node that follows every driver's link and polls the navigator's goal status.

Used by test/system/test_ble_lab.py and test_ble_adapters.py (the acceptance of a lab of many cubes).
"""
from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray

from conftest import REPO, next_domain_id, ros_env
from support.bluez_rig import DRIVER_PARAMS, Probe, ros_value, stop
from toio_navigator.demo_cli import swap_goals
from toio_navigator.msg import LinkStatus, NavGoal
from toio_navigator.nodes.mat_sim import ContactTracker
from toio_navigator.nodes.qos import LATCHED
from toio_navigator.nodes.service_call import ANSWER_WAIT_S, call_until_answered
from toio_navigator.sim.bluez.cli import driver_parameters
from toio_navigator.sim.bluez.host import BluezHost
from toio_navigator.sim.bluez.radio import RadioParams
from toio_navigator.srv import GoalStatus, SetGoal

MAT_RECT = (45.0, 45.0, 455.0, 455.0)           # config/navigator.yaml
#: what every driver of a lab runs with: positions only (every driver process gets every cube's signals), and its
#: link quality on /diagnostics every 2 s
LAB_DRIVER = {**DRIVER_PARAMS, 'imu': 'off', 'wheel_speed_notify': False, 'diagnostics_period_s': 2.0}


def circle(n: int, radius: float = 150.0) -> np.ndarray:
    """``n`` cubes on a circle around the mat centre, each facing the centre (the trial's circle swap)."""
    angles = 2 * math.pi * np.arange(n) / n
    return np.column_stack([250.0 + radius * np.cos(angles), 250.0 + radius * np.sin(angles),
                            (angles + math.pi + math.pi) % (2 * math.pi) - math.pi])


class Lab:
    """``poses`` cubes behind ``radio``'s adapters, the real bringup started with ``bringup_args``."""

    def __init__(self, tmp: Path, poses: np.ndarray, radio: RadioParams, bringup_args: tuple[str, ...] = (),
                 navigator: dict | None = None, driver: dict | None = None) -> None:
        self.host = BluezHost(poses, radio=radio)
        self.contacts = ContactTracker(self.host.world)
        self.host.start()
        self.cubes = [f'cube{k + 1}' for k in range(len(poses))]
        ids = [link.name.split('-')[1] for link in self.host.bluez.links]
        self.params = tmp / 'lab.yaml'
        extra = ''.join(f'    {name}: {ros_value(value)}\n' for name, value in {**LAB_DRIVER, **(driver or {})}.items())
        text = driver_parameters(ids, len(radio.adapters))
        text = text.replace('    transport: ble\n', '    transport: ble\n' + extra)
        # the coordinated planner swaps a crowd without a contact; a shorter time to improve its plan (10 s by
        # default) lets the cubes set off sooner
        navigator = {'planner': 'coordinated', 'plan_time_s': 3.0, **(navigator or {})}
        self.params.write_text(text + '\nnavigator:\n  ros__parameters:\n' +
                               ''.join(f'    {k}: {ros_value(v)}\n' for k, v in navigator.items()))
        self.env = self.host.environment(ros_env(next_domain_id()))
        self.probe = Probe(int(self.env['ROS_DOMAIN_ID']))
        self.links = {c: self.probe.collect(LinkStatus, f'/{c}/link_state', LATCHED) for c in self.cubes}
        self.diagnostics: dict[str, dict[str, str]] = {}        # cube -> its driver's last values
        self.probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 50)
        self.first_connected: dict[str, float] = {}
        self.set_goal = self.probe.node.create_client(SetGoal, 'navigator/set_goal')
        self.goal_status = self.probe.node.create_client(GoalStatus, 'navigator/goal_status')
        config = REPO / 'config'
        self.started = time.monotonic()
        self.bringup = subprocess.Popen(
            [sys.executable, '-m', 'toio_navigator.nodes.bringup', '--profile', 'real',
             '--params-file', str(config / 'navigator.yaml'), '--params-file', str(config / 'real.yaml'),
             '--params-file', str(self.params), *bringup_args],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def _on_diagnostics(self, array: DiagnosticArray) -> None:
        for status in array.status:
            cube = status.name.split(':', 1)[0]
            if cube in self.links:
                self.diagnostics[cube] = {kv.key: kv.value for kv in status.values}

    # ------------------------------------------------------------------------------------ links
    def connected(self, cube: str) -> bool:
        last = self.links[cube][-1] if self.links[cube] else None
        return last is not None and last.state == LinkStatus.CONNECTED and bool(last.firmware_version)

    def _note_connected(self) -> None:
        now = time.monotonic() - self.started
        for c in self.cubes:
            if c not in self.first_connected and self.connected(c):
                self.first_connected[c] = now

    def all_connected_once(self) -> bool:
        """True once every cube's driver has reported its cube connected (each time noted, from the start)."""
        self._note_connected()
        return len(self.first_connected) == len(self.cubes)

    def all_connected(self) -> bool:
        self._note_connected()
        return all(self.connected(c) for c in self.cubes)

    def adapters(self) -> list[str]:
        """The adapter each cube is linked through now ('' if none)."""
        return self.host.call(lambda: [r.adapter for r in self.host.bluez.links])

    # ------------------------------------------------------------------------------------ goals
    def _call(self, client, request, what: str):
        """The answer of a service call, asked again when an answer is lost (as the demos do: nodes/service_call)."""
        def spin(condition, _what):
            assert self.probe.spin_until(condition, ANSWER_WAIT_S + 1), f'no answer of {what}'
        return call_until_answered(client, request, spin, what, 20.0)

    def status(self, cube: str):
        return self._call(self.goal_status, GoalStatus.Request(cube=cube), f'the goal status of {cube}')

    def send_goals(self, goals: np.ndarray, first_id: int) -> None:
        assert self.probe.spin_until(self.set_goal.service_is_ready, 30)
        for k, cube in enumerate(self.cubes):
            answer = self._call(self.set_goal, SetGoal.Request(goal=NavGoal(
                goal_id=first_id + k, cube=cube, x=float(goals[k, 0]), y=float(goals[k, 1]))), f'set_goal {cube}')
            assert answer.accepted, answer

    def swap(self, first_id: int, timeout: float) -> list[str]:
        """Every cube to the other side of the mat; the cubes that did not arrive within ``timeout``."""
        goals = swap_goals(self.host.poses()[:, :2], MAT_RECT)
        self.send_goals(goals, first_id)
        deadline = time.monotonic() + timeout
        pending = dict(enumerate(self.cubes))
        while pending and time.monotonic() < deadline:
            for k, cube in list(pending.items()):
                status = self.status(cube)
                if status.goal_id == first_id + k and status.reached:
                    del pending[k]
            if pending:
                self.probe.spin_for(0.5)
        return sorted(pending.values())

    def contact_count(self) -> int:
        return self.host.call(lambda: self.contacts.count)

    def close(self) -> str:
        err = stop(self.bringup, timeout=30)
        self.probe.close()
        self.host.stop()
        return err
