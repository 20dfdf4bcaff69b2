"""A two-role probe for the cross-process DDS test: `talk` publishes CubeState, `listen` checks what arrives.

Run as a script in its own process (python test/support/pubsub_probe.py talk|listen ...). `listen` exits 0 once it has
received COUNT messages whose fields are what `talk` sent, 1 on a wrong value, 2 on timeout.
"""
from __future__ import annotations

import sys
import time

import rclpy
from rclpy.node import Node

from toio_navigator.msg import CubeState


def expected(i: int) -> tuple[float, float, float]:
    return 100.0 + i, 200.0 - i, 0.01 * i


def talk(seconds: float) -> int:
    rclpy.init()
    node = Node('probe_talker')
    pub = node.create_publisher(CubeState, 'cube1/state', 10)
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        msg = CubeState(cube='cube1', battery=80, on_mat=True, link_state=CubeState.LINK_CONNECTED,
                        firmware_version='2.4.0', standard_id=i)
        msg.x, msg.y, msg.theta = expected(i)
        msg.header.frame_id = 'mat'
        pub.publish(msg)
        i += 1
        time.sleep(0.02)
    node.destroy_node()
    rclpy.shutdown()
    return 0


def listen(count: int, timeout: float) -> int:
    rclpy.init()
    node = Node('probe_listener')
    got: list[CubeState] = []
    node.create_subscription(CubeState, 'cube1/state', got.append, 10)
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.shutdown()
    if len(got) < count:
        print(f'timeout: {len(got)}/{count} messages', file=sys.stderr)
        return 2
    for msg in got:
        if (msg.x, msg.y, msg.theta) != expected(msg.standard_id) or msg.cube != 'cube1' \
                or msg.firmware_version != '2.4.0' or msg.link_state != CubeState.LINK_CONNECTED:
            print(f'wrong message: {msg}', file=sys.stderr)
            return 1
    print(f'ok {len(got)}')
    return 0


if __name__ == '__main__':
    role = sys.argv[1]
    sys.exit(talk(float(sys.argv[2])) if role == 'talk' else listen(int(sys.argv[2]), float(sys.argv[3])))
