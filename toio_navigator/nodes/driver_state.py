"""The cube_driver's state topics: what the cube's notifications say about it, relative to /<cube>:

  out  state (toio_navigator/CubeState, mat units), pose (geometry_msgs/PoseStamped, metres, frame ``mat``),
       odom (nav_msgs/Odometry, parameter publish_odom)

A state goes out with every admitted position (the pose gate: :mod:`toio_navigator.cube.pose_gate`) and whenever
something changes without a position (position missed, button, standard ID, link), stamped at that moment, so no
two different states share a stamp (a replay finds the state a tick used by it). One message object per topic,
updated in place: no message construction on the pose path.
"""
from __future__ import annotations

from typing import Callable

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node

from toio_navigator.cube import protocol as p
from toio_navigator.cube.notification_counts import NotificationCounts
from toio_navigator.cube.pose_gate import PoseGate, mat_pose
from toio_navigator.cube.transport import LinkState
from toio_navigator.msg import CubeState
from toio_navigator.nodes import conversions
from toio_navigator.nodes.driver_features import DriverFeatures, DriverHost

_CUBE_LINK = {LinkState.DISCONNECTED: CubeState.LINK_DISCONNECTED, LinkState.CONNECTING: CubeState.LINK_CONNECTING,
              LinkState.CONNECTED: CubeState.LINK_CONNECTED, LinkState.RECONNECTING: CubeState.LINK_RECONNECTING,
              LinkState.FAILED: CubeState.LINK_DISCONNECTED}


class DriverState:
    """The state topics on ROS node ``node`` for the driver ``host``; the handlers run under the host's lock and
    tell ``features`` what the sensor topics need."""

    def __init__(self, node: Node, host: DriverHost, features: DriverFeatures, counts: NotificationCounts) -> None:
        self.node, self.host, self.features, self.counts = node, host, features, counts
        cfg = host.config
        self.pose_gate = PoseGate()
        self.msg = CubeState(cube=cfg.cube, link_state=CubeState.LINK_DISCONNECTED)
        self.msg.header.frame_id = cfg.frame_id
        now = node.get_clock().now().to_msg()
        self._pose_msg = conversions.pose_stamped(0.0, 0.0, 0.0, now, cfg.frame_id)
        self._odom_msg = conversions.odometry(0.0, 0.0, 0.0, 0.0, 0.0, now, cfg.base_frame, cfg.frame_id)
        self._pub_state = node.create_publisher(CubeState, 'state', 10)
        self._pub_pose = node.create_publisher(PoseStamped, 'pose', 10)
        self._pub_odom = node.create_publisher(Odometry, 'odom', 10) if cfg.publish_odom else None

    def handlers(self) -> dict[type, Callable]:
        return {p.PositionId: self._on_position, p.PositionIdMissed: self._on_missed,
                p.StandardId: self._on_standard_id, p.StandardIdMissed: self._on_standard_missed,
                p.MotorSpeed: self._on_wheel_speed,
                p.MotionSensor: self._on_motion, p.ButtonState: self._on_button, p.BatteryLevel: self._on_battery}

    def set_link(self, link: LinkState, firmware: str) -> None:
        self.msg.link_state = _CUBE_LINK[link]
        self.msg.firmware_version = firmware

    def publish(self) -> None:
        """Publish the state as it is (something changed without a position), stamped now."""
        s = self.msg
        s.header.stamp = self.node.get_clock().now().to_msg()
        self._pub_state.publish(s)
        s.collision = s.double_tap = False

    def _on_position(self, note: p.PositionId) -> None:
        self.counts.positions += 1
        pose = mat_pose(note.x, note.y, note.angle)
        s = self.msg
        if not self.pose_gate.admit(pose, self.host.config.outlier_jump_units, s.on_mat):
            return
        stamp = self.node.get_clock().now().to_msg()
        s.header.stamp = stamp
        s.x, s.y, s.theta = pose
        if not s.on_mat:
            s.on_mat = True
            self.features.on_mat_changed(True)
        self._pub_state.publish(s)
        s.collision = s.double_tap = False
        pm = self._pose_msg
        pm.header.stamp = stamp
        conversions.fill_pose(pm.pose, *pose)
        self._pub_pose.publish(pm)
        if self._pub_odom is not None:
            sign = self.host.motor.sign         # wheel-speed notifications are unsigned: the last command's signs
            conversions.fill_odometry(self._odom_msg, *pose, sign[0] * s.speed_left, sign[1] * s.speed_right, stamp)
            self._pub_odom.publish(self._odom_msg)
        self.features.on_pose(pose, stamp)

    def _on_missed(self, _note: p.PositionIdMissed) -> None:
        if self.msg.on_mat:
            self.msg.on_mat = False
            self.features.on_mat_changed(False)
        self.publish()

    def _on_standard_id(self, note: p.StandardId) -> None:
        self.msg.standard_id = note.value
        self.publish()

    def _on_standard_missed(self, _note: p.StandardIdMissed) -> None:
        self.msg.standard_id = 0
        self.publish()

    def _on_wheel_speed(self, note: p.MotorSpeed) -> None:
        self.msg.speed_left, self.msg.speed_right = float(note.left), float(note.right)

    def _on_motion(self, note: p.MotionSensor) -> None:
        s = self.msg
        s.flat, s.collision = note.horizontal, s.collision or note.collision
        if note.double_tap is not None:
            s.double_tap = s.double_tap or note.double_tap
            s.posture = note.posture
        if note.shake is not None:
            s.shake = note.shake
        self.features.on_motion(note)

    def _on_button(self, note: p.ButtonState) -> None:
        changed = self.msg.button != note.pressed
        self.msg.button = note.pressed
        if changed:
            self.publish()
        self.features.on_button(note.pressed)

    def _on_battery(self, note: p.BatteryLevel) -> None:
        self.msg.battery = note.percent
        self.features.on_battery(note.percent)
