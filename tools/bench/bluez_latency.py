"""Position in -> motor command out at the cube: the bleak/D-Bus path (virtual BlueZ) beside the simulated link.

One virtual cube; the unchanged cube_driver in a child process; in this process an echo node answers every
<cube>/state with a MotorCommand at once, so the round trip measures the link and the driver, not a planner:

  cube firmware --position notification--> link --> driver --state--> echo --motor_cmd--> driver --> link --> cube

Latency = time from the cube's position notification to the next motor write arriving at the same cube, both
stamped in this process (the firmware runs here), so one clock measures both ends. Two links in the same run:

* sim (baseline): mat_sim's simulated BLE link (BleFrame topics over DDS), transport "sim";
* ble: real bleak in the driver, D-Bus through a private dbus-daemon, the virtual BlueZ, transport "ble".

Positions are sent every 200 ms (so rounds do not overlap) and motor writes are not coalesced. Prints medians,
p90 and the ratio ble / sim. The ble link carries the virtual BlueZ's air (a 30 ms connection interval: a
notification and a write each wait for the link's next event) without its random faults; the sim link has none.
Usage: python tools/bench/bluez_latency.py [--rounds 40]
"""
from __future__ import annotations

import argparse
import bisect
import math
import os
import subprocess
import sys
import threading
import time

import rclpy
from pose_to_motor_latency import report  # the same median / p90 line (tools/bench is on sys.path when run)
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from toio_navigator.cube.protocol import Characteristic
from toio_navigator.msg import CubeState, MotorCommand
from toio_navigator.nodes.mat_sim import MatSimNode
from toio_navigator.sim.bluez.bus import find_dbus_daemon
from toio_navigator.sim.bluez.host import BluezHost
from toio_navigator.sim.bluez.radio import RadioParams

ROUND_S = 0.2
DRIVER = {'id_notify_interval_ms': 200, 'id_notify_condition': 'always', 'min_motor_interval_ms': 0,
          'imu': 'off', 'wheel_speed_notify': False, 'diagnostics_period_s': 0.0, 'publish_tf': False}
POSE = (250.0, 250.0, 0.0)


class Stamps:
    """Wraps one virtual cube's notify and write: when position notifications leave and motor writes arrive."""

    def __init__(self, cube) -> None:
        self.sent: list[float] = []
        self.received: list[float] = []
        notify, write = cube.notify, cube.write

        def stamped_notify(char, data):
            if char is Characteristic.ID_INFORMATION and data[:1] == b'\x01':
                self.sent.append(time.perf_counter())
            notify(char, data)

        def stamped_write(char, data):
            if Characteristic(char) is Characteristic.MOTOR_CONTROL:
                self.received.append(time.perf_counter())
            write(char, data)
        cube.notify, cube.write = stamped_notify, stamped_write

    def latencies_ms(self, after: float) -> list[float]:
        """For every notification after ``after``: the first motor write that followed it (before the next)."""
        out = []
        sent = [t for t in self.sent if t >= after]
        for k, t in enumerate(sent):
            j = bisect.bisect_left(self.received, t)
            end = sent[k + 1] if k + 1 < len(sent) else math.inf
            if j < len(self.received) and self.received[j] < end:
                out.append((self.received[j] - t) * 1000)
        return out


def driver_command(transport: str, **extra) -> list[str]:
    args = []
    for name, value in {**DRIVER, 'transport': transport, **extra}.items():
        text = ('true' if value else 'false') if isinstance(value, bool) else \
            f'"{value}"' if isinstance(value, str) else repr(value)
        args += ['-p', f'{name}:={text}']
    return [sys.executable, '-m', 'toio_navigator.nodes.cube_driver', '--ros-args', '-r', '__ns:=/cube1', *args]


def measure(transport: str, rounds: int) -> list[float]:
    context = rclpy.Context()
    rclpy.init(context=context)
    echo = Node('latency_echo', context=context)
    answer = echo.create_publisher(MotorCommand, '/cube1/motor_cmd', 10)
    states = []

    def on_state(msg: CubeState) -> None:
        answer.publish(MotorCommand(left=0, right=0, duration_ms=100))
        states.append(msg)
    echo.create_subscription(CubeState, '/cube1/state', on_state, 10)
    nodes, host, env = [echo], None, dict(os.environ)
    if transport == 'sim':
        sim = MatSimNode(context=context, parameter_overrides=[
            Parameter('cubes', value=['cube1']), Parameter('initial_poses', value=list(POSE))])
        nodes.append(sim)
        stamps = Stamps(sim.firmware[0])
        command = driver_command('sim')
    else:
        host = BluezHost([POSE], radio=RadioParams().calm())
        stamps = Stamps(host.firmware[0])
        host.start()
        env = host.environment(env)
        command = driver_command('ble', ble_name=host.bluez.links[0].name.split('-')[1])
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    for node in nodes:
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    driver = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(states) < 10:                      # connected, configured, answering
            if time.monotonic() > deadline or driver.poll() is not None:
                raise SystemExit(f'{transport}: the driver did not report within 60 s: {driver.stderr.read()[-2000:]}')
            time.sleep(0.05)
        start = time.perf_counter() + 2 * ROUND_S
        time.sleep(2 * ROUND_S + rounds * ROUND_S + 0.5)
        return stamps.latencies_ms(start)[:rounds]
    finally:
        driver.terminate()
        try:
            driver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait(timeout=5)
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        if host is not None:
            host.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=40)
    args = parser.parse_args()
    if args.rounds < 1:
        print('--rounds must be >= 1', file=sys.stderr)
        return 2
    if find_dbus_daemon() is None:
        print('bluez_latency: dbus-daemon is not installed; nothing to measure', file=sys.stderr)
        return 2
    os.environ.setdefault('ROS_DOMAIN_ID', str(200 + os.getpid() % 30))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    sim = measure('sim', args.rounds)
    ble = measure('ble', args.rounds)
    print(f'position notification -> motor write at the cube, echo in between; sim link: mat_sim over DDS, '
          f'ble link: bleak + D-Bus + virtual BlueZ; {args.rounds} rounds '
          f'(ROS_DOMAIN_ID {os.environ["ROS_DOMAIN_ID"]})')
    base = report('sim link', sim, args.rounds)
    real = report('ble link', ble, args.rounds)
    print(f'ratio ble / sim: {real / base:.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
