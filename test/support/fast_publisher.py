"""A publisher for recorder tests: CubeState messages on /fast/cube<k>/state as fast as rclpy publishes them,
``standard_id`` counting up per topic, until it is stopped (SIGINT/SIGTERM) or has sent COUNT messages. With
``quiet``, first one message on /fast/quiet/state, a topic that then stays silent (like a goal sent once).

Run in its own process: python test/support/fast_publisher.py TOPICS [COUNT [quiet]]
"""
from __future__ import annotations

import signal
import sys

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from toio_navigator.msg import CubeState


def main(topics: int, count: int, quiet: bool = False) -> int:
    stopped = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.append(True))
    rclpy.init()
    node = Node('fast_publisher')
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    if quiet:
        node.create_publisher(CubeState, '/fast/quiet/state', qos).publish(CubeState(cube='quiet'))
    pubs = [node.create_publisher(CubeState, f'/fast/cube{k}/state', qos) for k in range(topics)]
    msg = CubeState(cube='cube', battery=80, on_mat=True, x=100.0, y=200.0, theta=0.5)
    sent = 0
    while not stopped and sent < count:
        msg.standard_id = sent // topics
        pubs[sent % topics].publish(msg)
        sent += 1
    node.destroy_node()
    rclpy.try_shutdown()
    print(f'fast_publisher: sent {sent}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2**62,
                  len(sys.argv) > 3 and sys.argv[3] == 'quiet'))
