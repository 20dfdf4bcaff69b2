"""What the lifecycle tests share: `toio-nav bringup` started as a user starts it, a probe node that watches what
each driver last told its cube (the simulated BLE writes on ``<cube>/ble/tx``), the ground truth and the states,
and the processes of a bringup found through /proc.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from geometry_msgs.msg import PoseArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from conftest import navigator_setting, spin_until
from support.goal_probe import navigator_used_fresh_state
from toio_navigator.cube import protocol as p
from toio_navigator.launching import profiles
from toio_navigator.msg import BleFrame, CubeState, NavGoal, NavResult
from toio_navigator.nodes.qos import BLE_QOS

#: what must never appear in the output of a stopping bringup (each was seen before the lifecycle work)
BAD_LOG_TEXT = ('Traceback', '[FATAL]', 'context is invalid', 'exception was never retrieved',
                'Unable to convert call argument')
#: four cubes in the corners, each swapping with the opposite one through the centre
CORNERS = [(100.0, 100.0, 0.785), (400.0, 100.0, 2.356), (400.0, 400.0, -2.356), (100.0, 400.0, -0.785)]


def bad_lines(text: str) -> list[str]:
    """The lines of a log that show an unclean stop."""
    return [line for line in text.splitlines() if any(bad in line for bad in BAD_LOG_TEXT)]


def write_cubes(path: Path, poses) -> list[Path]:
    """The repo's navigator.yaml plus a YAML with these simulated cubes (x, y, heading) and their start poses."""
    names = [f'cube{i + 1}' for i in range(len(poses))]
    flat = ', '.join(f'{float(v)!r}' for pose in poses for v in pose)
    path.write_text(f'/**:\n  ros__parameters:\n    cubes: [{", ".join(names)}]\n'
                    f'/**/cube_driver:\n  ros__parameters:\n    transport: sim\n    id_notify_interval_ms: 20\n'
                    f'mat_sim:\n  ros__parameters:\n    initial_poses: [{flat}]\n    ground_truth_rate_hz: 50.0\n')
    return [profiles.config_dir() / 'navigator.yaml', path]


def start_bringup(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    """`toio-nav bringup ARGS` with its output (its nodes' too) in ``log``."""
    with open(log, 'w') as out:
        return subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'bringup', *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def parent_of(pid: int) -> int | None:
    try:
        with open(f'/proc/{pid}/stat') as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> set[int]:
    """Every living process started (directly or not) by ``pid``."""
    parents = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            ppid = parent_of(int(entry))
            if ppid is not None:
                parents[int(entry)] = ppid
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def describe(pids: set[int]) -> str:
    """What each of ``pids`` is and where it waits (for the message of a test that finds it still running: its
    own stack dump may have gone into the pipe of a supervisor that is dead)."""
    out = []
    for pid in sorted(pids):
        try:
            with open(f'/proc/{pid}/cmdline') as f:
                command = f.read().replace('\0', ' ').strip()
            with open(f'/proc/{pid}/wchan') as f:
                wchan = f.read().strip() or '-'
            threads = len(os.listdir(f'/proc/{pid}/task'))
        except OSError:
            out.append(f'{pid}: gone')
            continue
        out.append(f'{pid}: {command} (waiting in {wchan}, {threads} threads)')
    return '; '.join(out)


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` runs; the ones still running after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if running(p)}


class Probe:
    """A node in this process on the test's domain: states, ground truth, goals, and each driver's last motor
    write to its simulated cube."""

    def __init__(self, names: list[str]) -> None:
        self.rclpy, self.NavGoal, self.CubeState = rclpy, NavGoal, CubeState
        self.names = names
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('lifecycle_probe', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.states: dict = {}
        self.motor: dict[str, tuple[int, int]] = {}      # the last motor write of each cube's driver
        self.moved: set[str] = set()                     # cubes that were sent a non-zero speed
        self.frames = 0                                  # BLE frames taken (any cube, any kind)
        self.truth = None
        self.goal_pubs = {}
        self.results: dict = {}                          # the navigator's last NavResult of each cube
        self.stale_timeout_s = navigator_setting('stale_timeout_s')   # the shipped config's, as the bringups run
        # when mat_sim published each ground truth and the navigator ticked (their own stamps, wall clock): how
        # long a busy host kept each of them from running
        self.truth_stamps: list[float] = []
        self.tick_stamps: list[float] = []
        for c in names:
            self.node.create_subscription(CubeState, f'{c}/state', lambda m, c=c: self.states.__setitem__(c, m),
                                          qos_profile_sensor_data)
            self.node.create_subscription(NavResult, f'{c}/nav_result', lambda m, c=c: self._on_result(c, m), 10)
            self.node.create_subscription(BleFrame, f'{c}/ble/tx', lambda m, c=c: self._on_tx(c, m), BLE_QOS)
            self.goal_pubs[c] = self.node.create_publisher(NavGoal, f'{c}/goal', 10)
        self.node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, qos_profile_sensor_data)

    def _on_tx(self, cube: str, frame) -> None:
        self.frames += 1
        if frame.uuid != p.Characteristic.MOTOR_CONTROL.value or frame.op != frame.WRITE:
            return
        command = p.decode_command(p.Characteristic.MOTOR_CONTROL, bytes(frame.data))
        # 0x01 / 0x02 carry wheel speeds; any other motor command (a target) makes the cube move
        speeds = (getattr(command, 'left', 1), getattr(command, 'right', 1))
        self.motor[cube] = speeds
        if speeds != (0, 0):
            self.moved.add(cube)

    def _on_truth(self, msg) -> None:
        self.truth_stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        if len(msg.poses) == len(self.names):
            self.truth = [(p.position.x, p.position.y) for p in msg.poses]

    def _on_result(self, cube: str, msg) -> None:
        self.results[cube] = msg
        self.tick_stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)

    def spin_until(self, condition, timeout: float, what: str, log: Path | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}' + (f'; log {log}' if log else '')
            self.executor.spin_once(timeout_sec=0.02)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def last_writes(self, timeout: float = 30.0) -> dict[str, tuple[int, int]]:
        """Each driver's last motor write, once the frames DDS already holds are taken. A probe that did not spin
        while the bringup stopped has hundreds queued, more than a short spin takes on a busy machine (a fixed
        0.2 s once left two cubes' stops untaken). Spins until every cube shows a stop and a few rounds over all
        the probe's subscriptions bring no further frame, or until ``timeout`` (the caller then sees which did not)."""
        rounds = 3 * len(list(self.node.subscriptions))
        deadline, quiet = time.monotonic() + timeout, 0
        while quiet < rounds and time.monotonic() < deadline:
            before = self.frames
            self.executor.spin_once(timeout_sec=0.02)
            stopped = all(self.motor.get(c) == (0, 0) for c in self.names)
            quiet = quiet + 1 if stopped and self.frames == before else 0
        return dict(self.motor)

    def ready(self) -> bool:
        """Every cube connected and on the mat, the navigator listening for goals."""
        return all(c in self.states and self.states[c].on_mat and
                   self.states[c].link_state == self.CubeState.LINK_CONNECTED for c in self.names) \
            and all(p.get_subscription_count() > 0 for p in self.goal_pubs.values())

    def navigator_saw_live(self, cube: str) -> bool:
        """The navigator's last tick had a fresh state of ``cube`` over a connected link: the navigator counts it
        as live, so it will say when the cube goes stale (it says nothing of a cube it never saw live)."""
        return navigator_used_fresh_state(self.results.get(cube), self.stale_timeout_s)

    def swap(self, timeout: float = 30.0) -> None:
        """Send every cube to the mirror of its position through the mat centre, until the navigator's results
        carry each goal. A goal sent once can be lost: the probe's writer matching the navigator's reader (what
        ``ready`` sees) does not mean that reader has matched the writer yet, and on a busy machine it may not
        have. So a cube whose goal the navigator has not shown is sent it again every second."""
        goals = {c: self.NavGoal(goal_id=100 + i, cube=c, x=500.0 - self.states[c].x, y=500.0 - self.states[c].y,
                                 direction=self.NavGoal.TOWARDS) for i, c in enumerate(self.names)}

        def unseen() -> list[str]:
            return [c for c, goal in goals.items()
                    if c not in self.results or self.results[c].goal_id != goal.goal_id]

        deadline = time.monotonic() + timeout
        while unseen():
            assert time.monotonic() < deadline, f'the navigator never showed the goals of {unseen()}'
            for c in unseen():
                self.goal_pubs[c].publish(goals[c])
            spin_until(self.executor, lambda: not unseen(), 1.0)

    def largest_move(self, seconds: float) -> float:
        """How far (metres) the cube that moved most went in ``seconds`` of ground truth."""
        self.truth = None
        self.spin_until(lambda: self.truth is not None, 10.0, 'the ground truth')
        before = list(self.truth)
        self.spin_for(seconds)
        return max(math.hypot(a[0] - b[0], a[1] - b[1]) for a, b in zip(before, self.truth))

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
