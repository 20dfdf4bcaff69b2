"""The cube_driver node: one per cube, in namespace /<cube>; the same code for a real (BLE) and a simulated cube.

Topics (relative to the namespace):
  out  state (toio_navigator/CubeState, mat units), pose (geometry_msgs/PoseStamped, metres, frame ``mat``),
       odom (nav_msgs/Odometry, parameter publish_odom), link_state (toio_navigator/LinkStatus, latched)
  in   motor_cmd (toio_navigator/MotorCommand), cmd_vel (geometry_msgs/Twist)
The state topics are published by :mod:`toio_navigator.nodes.driver_state`; the parity features by
:mod:`toio_navigator.nodes.driver_features` and :mod:`toio_navigator.nodes.driver_moves` (lights, sound, IMU,
battery, move_to_pose, ...).

The node translates; the cube's side lives in the core: the link, its firmware handshake and reconnects
(:class:`~toio_navigator.cube.connection.CubeConnection`), which cube a BLE driver takes
(:mod:`toio_navigator.cube.ble_finder`), the timing of motor commands (:mod:`toio_navigator.cube.motor_commands`).

Threads: the transport (bleak, or the simulated link) runs on one asyncio loop per process in a daemon thread;
ROS callbacks run on the executor. Notifications are decoded and published from whichever thread delivers them
(the simulated link delivers on the executor thread: one hop less on the pose -> motor-command path), under the
node's lock; outgoing writes are handed to the loop. Stopping (:meth:`CubeDriverNode.close`) first closes that
gate under the same lock, so no callback of the transport publishes or logs once the node is on its way out,
then ends the connection's work on the loop, stops the cube and disconnects, and only then are the node and the
ROS context destroyed.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Awaitable, Callable

from geometry_msgs.msg import Twist
from rclpy.exceptions import ParameterException

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_finder import open_ble_transport
from toio_navigator.cube.connection import CubeConnection, FoundLink
from toio_navigator.cube.loop_thread import run_bounded, shared_loop
from toio_navigator.cube.motor_commands import MotorCommander, command_timing
from toio_navigator.cube.notification_counts import NotificationCounts
from toio_navigator.cube.transport import LinkState, Transport
from toio_navigator.msg import LinkStatus, MotorCommand
from toio_navigator.nodes import conversions
from toio_navigator.nodes.driver_features import DriverFeatures
from toio_navigator.nodes.driver_moves import DriverMoves
from toio_navigator.nodes.driver_state import DriverState
from toio_navigator.nodes.late_commands import LateCommands
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import LATCHED
from toio_navigator.nodes.ros_sim_link import RosSimLink
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.driver import PARAMS, DriverConfig
from toio_navigator.settings.spec import SettingError

__all__ = ['CubeDriverNode', 'LATCHED', 'main', 'shared_loop']

_STATUS_LINK = {LinkState.DISCONNECTED: LinkStatus.DISCONNECTED, LinkState.CONNECTING: LinkStatus.CONNECTING,
                LinkState.CONNECTED: LinkStatus.CONNECTED, LinkState.RECONNECTING: LinkStatus.RECONNECTING,
                LinkState.FAILED: LinkStatus.FAILED}


class CubeDriverNode(LeanNode):
    """One cube's driver. Parameters: :data:`toio_navigator.settings.driver.PARAMS`.

    Raises :class:`~toio_navigator.settings.spec.SettingError` (a ValueError naming the parameter) if a
    parameter is invalid.
    ``transport`` injects a ready Transport (tests); otherwise it is built from the ``transport`` parameter.
    """

    def __init__(self, node_name: str = 'cube_driver', *, transport: Transport | None = None, **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        self.config = cfg = DriverConfig.from_values(self.parameters.values, self.get_namespace())
        self.cube = cfg.cube
        self.lock = threading.RLock()      # transport callbacks and ROS callbacks share the state; see close()
        self.loop = shared_loop()
        self._closing = False
        self.counts = NotificationCounts()
        self._pub_link = self.create_publisher(LinkStatus, 'link_state', LATCHED)
        self.late_commands = LateCommands(self)
        self._late_said = -float('inf')
        self.create_subscription(MotorCommand, 'motor_cmd', self._on_motor_cmd, 10)
        self.create_subscription(Twist, 'cmd_vel', self._on_cmd_vel, 10)

        if transport is None and cfg.transport == 'sim':
            transport = RosSimLink(self, backoff=cfg.backoff, io_timeout_s=cfg.io_timeout_s)
        self.connection = CubeConnection(cfg, self, self.loop, transport, make_transport=self._find_cube)
        self.motor = MotorCommander(self.loop, lambda: self.connection.transport, cfg.min_motor_interval_s)
        self.features = DriverFeatures(self, host=self)
        self.moves = DriverMoves(self, host=self, rejected=self.features.count_rejected)
        self.state_topics = DriverState(self, self, self.features, self.counts)
        self._handlers: dict[type, Callable] = {
            p.ProtocolVersion: lambda note: self.connection.version_answered(note.version),
            p.CurrentConnectionInterval: lambda note: self.connection.interval_reported(note.interval_1250us),
            **self.state_topics.handlers(), **self.features.handlers(), **self.moves.handlers()}
        self.parameters.on_change(self._apply_parameters)
        self._publish_link_status()
        self.connection.start()

    def _find_cube(self) -> Awaitable[FoundLink]:
        """A BLE driver's cube, claimed for this node (see toio_navigator.cube.ble_finder)."""
        return open_ble_transport(self.config.ble_target(), self.get_fully_qualified_name())

    def _apply_parameters(self, values: dict, _changed: set[str]) -> None:
        """A run-time change (only motor, pose-gate, light, sound and move_to_pose parameters may change): the
        configuration is rebuilt by the start-up rules; everything reads ``self.config`` when it acts."""
        cfg = DriverConfig.from_values(values, self.get_namespace())
        self.config = cfg
        self.motor.writer.min_interval_s = cfg.min_motor_interval_s
        self.features.apply(cfg)

    # -------------------------------------------------------------------------------------------- the cube's side
    # (what the features read of the link: see driver_features.DriverHost)
    @property
    def transport(self) -> Transport | None:
        return self.connection.transport

    @property
    def firmware(self) -> str:
        return self.connection.firmware

    @property
    def unsupported(self) -> dict[str, str]:
        return self.connection.unsupported

    @property
    def rssi(self) -> int | None:
        return self.connection.rssi

    @property
    def notifications(self) -> int:
        return self.counts.notifications

    @property
    def position_notifications(self) -> int:
        return self.counts.positions

    @property
    def bad_notifications(self) -> int:
        return self.counts.bad

    @property
    def outliers_held(self) -> int:
        return self.state_topics.pose_gate.held

    def supports(self, feature: firmware.Feature) -> bool:
        return self.connection.supports(feature)

    def send_wheels(self, left: int, right: int, duration_ms: int) -> None:
        self.motor.send_wheels(left, right, duration_ms)

    def link_diagnostics(self) -> dict[str, str]:
        """The link's, the notifications' and the motor's side of /diagnostics (rates since the last call)."""
        return {**self.connection.diagnostics(), **self.counts.diagnostics(),
                'pose_outliers_held': str(self.outliers_held), **self.motor.diagnostics()}

    # -------------------------------------------------------------------------------------------- connection events
    # called from the transport's thread (or the executor's); nothing reaches ROS once the node is closing
    def _live(self) -> bool:
        return not self._closing and self.context.ok()

    def link_changed(self, state_too: bool) -> None:
        with self.lock:
            if not self._live():
                return
            self.state_topics.set_link(self.connection.reported, self.connection.firmware)
            self._publish_link_status()
            if state_too:
                self.state_topics.publish()

    def log(self, level: int, text: str) -> None:
        with self.lock:
            if not self._live():
                return
            # one call per severity: rclpy ties a severity to the line that logs
            if level >= logging.ERROR:
                self.get_logger().error(text)
            elif level >= logging.WARNING:
                self.get_logger().warning(text)
            else:
                self.get_logger().info(text)

    def notification(self, char: p.Characteristic, data: bytes) -> None:
        self._on_notify(char, data)

    def _on_link_state(self, state: LinkState) -> None:
        """The transport's link-state callback, as the connection takes it."""
        self.connection.on_transport_state(state)

    def _publish_link_status(self) -> None:
        c = self.connection
        msg = LinkStatus(cube=self.cube, state=_STATUS_LINK[c.reported], reconnects=c.reconnects,
                         firmware_version=c.firmware, detail=c.detail)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.config.frame_id
        self._pub_link.publish(msg)

    # -------------------------------------------------------------------------------------------- commands
    def _on_motor_cmd(self, msg: MotorCommand) -> None:
        cfg = self.config
        age_s = None
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if stamp_ns > 0 and cfg.expire_by_stamp:
            age_s = (self.get_clock().now().nanoseconds - stamp_ns) / 1e9
        timing = command_timing(msg.duration_ms, cfg.motor_duration_ms, age_s)
        if age_s is not None:
            self.late_commands.arrived(age_s)
        if timing.clipped:
            self.get_logger().warning(f'{self.cube}: motor_cmd duration {timing.asked_ms} ms > 2550 ms: clipped to '
                                      '2550', throttle_duration_sec=5.0)
        if timing.late and self._late_said + 5.0 <= time.monotonic():      # at most one every 5 s
            self._late_said = time.monotonic()
            what = (f'stamped {-timing.age_s * 1000.0:.0f} ms in the future' if timing.age_s < 0 else
                    f'stamped {timing.age_s * 1000.0:.0f} ms ago arrived after its {timing.duration_ms} ms: dropped')
            self.get_logger().warning(f'{self.cube}: motor_cmd {what} ({self.late_commands.reason(timing.age_s)})')
        self.motor.command(conversions.clip_motor(msg.left, cfg.max_motor, cfg.dead_zone),
                           conversions.clip_motor(msg.right, cfg.max_motor, cfg.dead_zone), timing)

    def _on_cmd_vel(self, msg: Twist) -> None:
        cfg = self.config
        try:
            left, right = conversions.twist_to_wheels(msg, cfg.max_motor, cfg.dead_zone)
        except ValueError as exc:
            self.get_logger().warning(f'{self.cube}: cmd_vel ignored: {exc}', throttle_duration_sec=5.0)
            return
        self.send_wheels(left, right, cfg.motor_duration_ms)

    # -------------------------------------------------------------------------------------------- notifications
    def _on_notify(self, char: p.Characteristic, data: bytes) -> None:
        """Every notification, from the executor thread (simulated link) or the loop thread (bleak)."""
        with self.lock:
            if not self._live():
                return                  # shutting down: nothing to publish to any more
            self.counts.notifications += 1
            try:
                note = p.decode(char, data)
            except p.ProtocolError as exc:
                self.counts.bad += 1
                self.get_logger().warning(f'{self.cube}: undecodable notification on {char.name}: {exc}',
                                          throttle_duration_sec=5.0)
                return
            handler = self._handlers.get(type(note))
            if handler is not None:
                handler(note)

    # -------------------------------------------------------------------------------------------- shutdown
    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the cube and disconnect; safe to call twice. The stop (motor 0/0) is the motor writer's last write,
        paced like any other (a cube ignores a write too soon after the previous one); nothing written after it.
        Needs the ROS context still valid (the simulated link is DDS): run_node stops before shutting down."""
        with self.lock:
            if self._closing:
                return
            self._closing = True    # under the lock: a callback of the transport in progress has finished

        try:
            if not run_bounded(self.loop, self.connection.shutdown(self.motor.finish), timeout_s):
                why = self.motor.writer.last_error
                self.get_logger().warning(f'{self.cube}: the stop did not reach the cube ({why}); it stops when its '
                                          'last command runs out')
        except Exception as exc:  # the process is going away; say why the cube may not have been stopped
            self.get_logger().warning(f'{self.cube}: clean disconnect failed: {exc!r}')

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator cube_driver --ros-args -r __ns:=/cube1 -p transport:=sim``. Exit 2 on bad params."""
    return run_node('cube_driver', CubeDriverNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
