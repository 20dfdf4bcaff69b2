"""`toio-nav demo`: the README's main command.

Foundation stage: the simulated swarm demo is not built yet. Until it is, this honestly runs what exists:
a cube-state publisher and a subscriber in two ROS 2 processes over real DDS, with our own message type.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--count', type=int, default=20, help='messages to exchange (default 20)')


def _talk(count: int) -> None:
    import rclpy
    from rclpy.node import Node

    from toio_navigator.msg import CubeState

    rclpy.init()
    node = Node('demo_talker')
    pub = node.create_publisher(CubeState, 'cube1/state', 10)
    deadline = time.monotonic() + 30.0
    i = 0
    while rclpy.ok() and time.monotonic() < deadline and i < count * 50:
        try:
            pub.publish(CubeState(cube='cube1', x=250.0 + i, y=250.0, on_mat=True, battery=100,
                                  link_state=CubeState.LINK_CONNECTED))
        except Exception:  # SIGTERM from the demo shuts the context down between ok() and publish()
            break
        i += 1
        time.sleep(0.05)
    if rclpy.ok():
        rclpy.shutdown()


def run(args: argparse.Namespace) -> int:
    if args.count < 1:
        print('toio-nav demo: --count must be at least 1', file=sys.stderr)
        return 2
    import rclpy
    from rclpy.node import Node

    from toio_navigator.msg import CubeState

    print('toio-nav demo (foundation stage): the simulated swarm demo is not built yet; this shows the ROS 2 '
          'stack working: a CubeState publisher process and this subscriber, over real DDS.')
    talker = subprocess.Popen([sys.executable, '-c', f'from toio_navigator.demo_cli import _talk; _talk({args.count})'])
    try:
        rclpy.init()
        node = Node('demo_listener')
        got: list[CubeState] = []
        node.create_subscription(CubeState, 'cube1/state', got.append, 10)
        deadline = time.monotonic() + 30.0
        while len(got) < args.count and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        rclpy.shutdown()
    finally:
        talker.terminate()
        talker.wait(timeout=10)
    if len(got) < args.count:
        print(f'received only {len(got)}/{args.count} CubeState messages in 30 s', file=sys.stderr)
        return 1
    print(f'received {len(got)} CubeState messages from another process; last x = {got[-1].x:.0f} mat units')
    return 0
