"""Shared parts of the virtual-BlueZ tests (test_bluez_*.py): the skip rule, a probe node, driver processes.

The virtual BlueZ (and the simulated world behind it) runs in the test process on a thread of its own
(:class:`toio_navigator.sim.bluez.host.BluezHost`); the nodes under test are separate processes that find it
through DBUS_SYSTEM_BUS_ADDRESS and talk to it with real bleak.
"""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from conftest import spin_until
from toio_navigator.sim.bluez.bus import find_dbus_daemon
from toio_navigator.sim.bluez.radio import RadioParams

needs_dbus_daemon = pytest.mark.skipif(
    find_dbus_daemon() is None, reason='dbus-daemon is not installed: no private D-Bus for the virtual BlueZ')

#: the model's air (one 7-slot adapter, connection events) without its random aborts and failed attempts: for
#: the tests of everything but those faults
CALM = RadioParams().calm()

#: driver parameters of every BLE driver in these tests: short reconnect delays, 50 Hz positions
DRIVER_PARAMS = {'transport': 'ble', 'connect_timeout_s': 4.0, 'reconnect_initial_s': 0.2, 'reconnect_max_s': 1.0,
                 'id_notify_interval_ms': 20, 'diagnostics_period_s': 0.0, 'publish_tf': False}


def ros_value(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return f'"{value}"'          # quoted: YAML would read '5E:00:...' or '1e5' as numbers
    return repr(value)


def start_driver(cube: str, env: dict, **params) -> subprocess.Popen:
    """The unchanged cube_driver node in /<cube>, transport ble, as its own process."""
    args = []
    for name, value in {**DRIVER_PARAMS, **params}.items():
        args += ['-p', f'{name}:={ros_value(value)}']
    return subprocess.Popen([sys.executable, '-m', 'toio_navigator.nodes.cube_driver', '--ros-args',
                             '-r', f'__ns:=/{cube}', *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> str:
    """SIGINT (a driver disconnects its cube cleanly), then kill; the process's stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _out, err = proc.communicate()
    return err or ''


class Probe:
    """A node of the test on its own context: collects messages, publishes, spins until a condition holds."""

    def __init__(self, domain_id: int, name: str = 'bluez_probe') -> None:
        # rclpy only here: test_virtual_bluez.py uses this module without ROS
        import rclpy  # noqa: PLC0415
        from rclpy.executors import SingleThreadedExecutor  # noqa: PLC0415
        from rclpy.node import Node  # noqa: PLC0415

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def collect(self, msg_type, topic: str, qos=10) -> list:
        received: list = []
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def publisher(self, msg_type, topic: str, qos=10):
        return self.node.create_publisher(msg_type, topic, qos)

    def spin_until(self, predicate, timeout: float) -> bool:
        return spin_until(self.executor, predicate, timeout)

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def close(self) -> None:
        import rclpy  # noqa: PLC0415 (see __init__)

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
