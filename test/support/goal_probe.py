"""Test helpers for the goal, TF and rviz tests: a probe node in the test process beside nodes in child processes.

:class:`Probe` is an rclpy context, node and executor of its own; its waits fail early (naming the logs) when a
child process dies. :func:`start_navigator` runs only the navigator (the test publishes the cube states it
reads, so goals, TF and results follow from exactly known poses); :func:`start_bringup` a profile's nodes.
"""
from __future__ import annotations

import time
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from toio_navigator.launching import profiles
from toio_navigator.launching.supervisor import Children
from toio_navigator.msg import CubeState


def navigator_used_fresh_state(result, stale_s: float) -> bool:
    """A NavResult (or None) says its tick used a state of its cube over a connected link no older than
    ``stale_s``: the navigator counts the cube as live. A goal for a cube it has not yet seen live (discovery on a
    busy machine can take seconds) counts as stale from the start."""
    if result is None or result.state_link_state != CubeState.LINK_CONNECTED or result.state_stamp.sec == 0:
        return False
    age = (result.header.stamp.sec - result.state_stamp.sec) + \
        (result.header.stamp.nanosec - result.state_stamp.nanosec) * 1e-9
    return age <= stale_s


class Probe:
    """A node in this process on DDS domain ``domain`` (rclpy must be importable), watching ``children``."""

    def __init__(self, name: str, children: Children, log_dir: Path, domain: int) -> None:
        self.children, self.log_dir = children, log_dir
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_until(self, condition, timeout: float, what: str) -> None:
        """Spin until ``condition()``; a dead child or the deadline fails the test, saying what was awaited
        (``what``: text, or a function giving it at that moment)."""
        deadline = time.monotonic() + timeout
        while not condition():
            dead = self.children.check()
            assert not dead, f'{dead} died while waiting for {_text(what)}; logs in {self.log_dir}'
            assert time.monotonic() < deadline, f'timed out waiting for {_text(what)}; logs in {self.log_dir}'
            self.executor.spin_once(timeout_sec=0.02)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def wait_future(self, future, what: str, timeout: float = 30.0):
        self.spin_until(future.done, timeout, what)
        return future.result()

    def close(self) -> None:
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self.children.stop()

    def log(self, name: str) -> str:
        """The output of child ``name`` so far (e.g. 'navigator', 'cube1_cube_driver')."""
        path = self.log_dir / f'{name}.log'
        return path.read_text() if path.is_file() else ''


def write_params(path: Path, text: str) -> list[Path]:
    """config/navigator.yaml plus ``text`` (YAML) written to ``path``: a bringup's parameter files."""
    path.write_text(text)
    return [profiles.config_dir() / 'navigator.yaml', path]


def start_navigator(tmp_path: Path, env: dict, cubes: list[str], extra_yaml: str = '') -> Probe:
    """Only the navigator, for ``cubes`` (plus ``extra_yaml`` in its ``navigator:`` section), and a probe."""
    files = write_params(tmp_path / 'navigator_only.yaml',
                         f'/**:\n  ros__parameters:\n    cubes: [{", ".join(cubes)}]\n'
                         f'navigator:\n  ros__parameters:\n    tick_on_fresh_states: false\n{extra_yaml}')
    nodes = [(spec, ns) for spec, ns in profiles.plan('sim', cubes) if spec.executable == 'navigator']
    return start_nodes(tmp_path, env, nodes, files, 'navigator_probe')


def start_bringup(tmp_path: Path, env: dict, profile: str, cubes: list[str], yaml_text: str) -> Probe:
    """A profile's nodes for ``cubes`` with config/navigator.yaml, the profile's YAML and ``yaml_text``."""
    files = profiles.profile_files(profile) + write_params(tmp_path / 'test.yaml', yaml_text)[1:]
    return start_nodes(tmp_path, env, profiles.plan(profile, cubes), files, f'{profile}_probe')


def start_nodes(tmp_path: Path, env: dict, nodes, files, name: str) -> Probe:
    """``nodes`` ((NodeSpec, namespace) pairs) with parameter ``files``, logs in tmp_path/logs, and a probe."""
    children = Children()
    log_dir = tmp_path / 'logs'
    children.start(nodes, files, env=env, log_dir=log_dir)
    try:
        return Probe(name, children, log_dir, int(env['ROS_DOMAIN_ID']))
    except BaseException:
        children.stop()
        raise


def cube_state(cube: str, x: float, y: float, theta: float, stamp, on_mat: bool = True):
    """A CubeState of a connected cube at mat (x, y, theta), stamped ``stamp`` (builtin_interfaces/Time)."""
    msg = CubeState(cube=cube, x=float(x), y=float(y), theta=float(theta), on_mat=on_mat,
                    link_state=CubeState.LINK_CONNECTED)
    msg.header.stamp = stamp
    msg.header.frame_id = 'mat'
    return msg


def _text(what) -> str:
    return what() if callable(what) else what
