"""TF without tf2_ros: cube poses as tf2_msgs/TFMessage on /tf, static frames on /tf_static.

tf2_ros (the Python broadcaster) has no wheel, but what it sends is only a TFMessage on two topics with known QoS
(nodes/qos.py), and tf2_msgs is installed on every machine we build on (a ROS install's, or the one the Makefile
builds from the public definition). So this module publishes the same messages itself, on ROS machines and pip
machines alike, and tf2 listeners (rviz2, tf2_echo, nav2) cannot tell the difference.

One :class:`TfBroadcaster` per node: the navigator sends every cube in one message per tick; a cube_driver (only
when its ``publish_tf`` is on) sends its own cube on every pose.
"""
from __future__ import annotations

from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from tf2_msgs.msg import TFMessage

from toio_navigator.nodes import conversions
from toio_navigator.nodes.qos import TF_QOS, TF_STATIC_QOS


class TfBroadcaster:
    """Transforms ``parent`` -> child frames on /tf; optionally one static identity ``static_parent`` -> ``parent``
    on /tf_static (latched)."""

    def __init__(self, node: Node, parent: str, static_parent: str = '') -> None:
        self.node, self.parent = node, parent
        self._pub = node.create_publisher(TFMessage, '/tf', TF_QOS)
        self._transforms: dict[str, TransformStamped] = {}      # one message object per child, reused
        self._sent_ns: dict[str, int] = {}
        self._static_pub = None
        if static_parent:
            self._static_pub = node.create_publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
            t = TransformStamped()
            t.header.stamp = node.get_clock().now().to_msg()
            t.header.frame_id, t.child_frame_id = static_parent, parent
            t.transform.rotation.w = 1.0
            self._static_pub.publish(TFMessage(transforms=[t]))

    def publish(self, poses) -> int:
        """One TFMessage with the transform of every ``(child, x, y, theta, stamp_ns)`` (mat units, clockwise rad,
        the stamp of the pose) whose pose is newer than the one sent last: a listener drops a repeated stamp with
        a warning, so an unchanged cube is left out. Returns how many transforms went out."""
        out = []
        for child, x, y, theta, stamp_ns in poses:
            if stamp_ns <= self._sent_ns.get(child, 0):
                continue
            t = self._transforms.get(child)
            if t is None:
                t = self._transforms[child] = TransformStamped()
                t.header.frame_id, t.child_frame_id = self.parent, child
            t.header.stamp.sec, t.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
            conversions.fill_transform(t.transform, x, y, theta)
            self._sent_ns[child] = stamp_ns
            out.append(t)
        if out:
            self._pub.publish(TFMessage(transforms=out))
        return len(out)
