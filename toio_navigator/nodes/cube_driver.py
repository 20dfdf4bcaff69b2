"""The cube_driver node: one per cube, in namespace /<cube>; the same code for a real (BLE) and a simulated cube.

Topics (relative to the namespace):
  out  state (toio_navigator/CubeState, mat units), pose (geometry_msgs/PoseStamped, metres, frame ``mat``),
       odom (nav_msgs/Odometry, parameter publish_odom), link_state (toio_navigator/LinkStatus, latched)
  in   motor_cmd (toio_navigator/MotorCommand), cmd_vel (geometry_msgs/Twist)
plus the parity features of :mod:`toio_navigator.nodes.driver_features` (lights, sound, IMU, battery, ...).

Every motor write is a 0x02 command with a duration (the command's own, or ``motor_duration_ms``), so a cube
whose driver, navigator or link dies stops by itself. Motor writes closer than ``min_motor_interval_ms`` are
coalesced (the newest wins), because the cube ignores writes less than ~45 ms apart.

Threads: the transport (bleak, or the simulated link) runs on one asyncio loop per process in a daemon thread;
ROS callbacks run on the executor. Notifications are decoded and published from whichever thread delivers them
(the simulated link delivers on the executor thread: one hop less on the pose -> motor-command path), under a
lock. Outgoing writes are handed to the loop.
"""
from __future__ import annotations

import asyncio
import math
import sys
import threading
import time
from typing import Callable

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from toio_navigator.cube import ble_transport, firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.coalesced_writer import CoalescedWriter
from toio_navigator.cube.transport import LinkState, Transport, TransportError
from toio_navigator.msg import CubeState, LinkStatus, MotorCommand
from toio_navigator.nodes import conversions
from toio_navigator.nodes.driver_features import DriverFeatures
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import LATCHED
from toio_navigator.nodes.ros_sim_link import RosSimLink
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.driver import PARAMS, DriverConfig
from toio_navigator.settings.spec import SettingError

NOTIFYING = (p.Characteristic.ID_INFORMATION, p.Characteristic.MOTOR_CONTROL, p.Characteristic.SENSOR_INFORMATION,
             p.Characteristic.BUTTON_INFORMATION, p.Characteristic.BATTERY_INFORMATION, p.Characteristic.CONFIGURATION)

_CUBE_LINK = {LinkState.DISCONNECTED: CubeState.LINK_DISCONNECTED, LinkState.CONNECTING: CubeState.LINK_CONNECTING,
              LinkState.CONNECTED: CubeState.LINK_CONNECTED, LinkState.RECONNECTING: CubeState.LINK_RECONNECTING,
              LinkState.FAILED: CubeState.LINK_DISCONNECTED}
_STATUS_LINK = {LinkState.DISCONNECTED: LinkStatus.DISCONNECTED, LinkState.CONNECTING: LinkStatus.CONNECTING,
                LinkState.CONNECTED: LinkStatus.CONNECTED, LinkState.RECONNECTING: LinkStatus.RECONNECTING,
                LinkState.FAILED: LinkStatus.FAILED}

ASSUMED_VERSION = firmware.ASSUMED_VERSION
#: the last motor write of a driver that stops: both wheels 0 for the shortest duration (10 ms)
STOP_NOW = p.MotorControlTimed(0, 0, 1).encode()


# ------------------------------------------------------------------------------------------------ asyncio loop

_loop_lock = threading.Lock()
_shared_loop: asyncio.AbstractEventLoop | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process-wide asyncio loop of all drivers (one loop per BLE adapter is what bleak wants)."""
    global _shared_loop
    with _loop_lock:
        if _shared_loop is None or _shared_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name='cube_driver_asyncio', daemon=True).start()
            _shared_loop = loop
        return _shared_loop


# ------------------------------------------------------------------------------------------------ the node

class CubeDriverNode(Node):
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
        self.lock = threading.RLock()      # notification handlers (transport threads) and ROS callbacks share state
        self.loop = shared_loop()
        self._closing = False
        self._link = LinkState.DISCONNECTED
        self._version_known = False   # the cube's firmware version is known since the link last came up
        self._link_detail = ''
        self.firmware = ''
        self._version_event: asyncio.Event | None = None
        self.unsupported: dict[str, str] = {}    # feature -> why (reported once)
        self.rssi: int | None = None              # of the advertisement the cube was found by (BLE scan)
        self._rates_at = (time.monotonic(), 0, 0)  # diagnostics: (when, positions, notifications) last time

        # pose bookkeeping
        self._pose: tuple[float, float, float] | None = None
        self._held_jump: tuple[float, float, float] | None = None
        self.outliers_held = 0
        self.commands_expired = 0       # stamped motor commands that arrived after their end
        self.bad_notifications = 0
        self.position_notifications = 0
        self.notifications = 0
        # signs of the last wheel command: wheel-speed notifications are unsigned
        self._last_sign = (1, 1)

        self._state = CubeState(cube=cfg.cube, link_state=CubeState.LINK_DISCONNECTED)
        self._state.header.frame_id = cfg.frame_id
        # one message object per topic, updated in place: no message construction on the pose path
        self._pose_msg = conversions.pose_stamped(0.0, 0.0, 0.0, self.get_clock().now().to_msg(), cfg.frame_id)
        self._odom_msg = conversions.odometry(0.0, 0.0, 0.0, 0.0, 0.0, self.get_clock().now().to_msg(),
                                              cfg.base_frame, cfg.frame_id)
        self._pub_state = self.create_publisher(CubeState, 'state', 10)
        self._pub_pose = self.create_publisher(PoseStamped, 'pose', 10)
        self._pub_odom = self.create_publisher(Odometry, 'odom', 10) if cfg.publish_odom else None
        self._pub_link = self.create_publisher(LinkStatus, 'link_state', LATCHED)
        self.create_subscription(MotorCommand, 'motor_cmd', self._on_motor_cmd, 10)
        self.create_subscription(Twist, 'cmd_vel', self._on_cmd_vel, 10)

        if transport is None and cfg.transport == 'sim':
            transport = RosSimLink(self, backoff=cfg.backoff, io_timeout_s=cfg.io_timeout_s)
        self.transport = transport
        self.motor = CoalescedWriter(self.loop, self._write_motor, cfg.min_motor_interval_s)
        self.features = DriverFeatures(self, host=self)
        self._handlers: dict[type, Callable] = {
            p.PositionId: self._on_position, p.PositionIdMissed: self._on_missed, p.StandardId: self._on_standard_id,
            p.StandardIdMissed: self._on_standard_missed, p.MotorSpeed: self._on_wheel_speed,
            p.MotionSensor: self._on_motion, p.ButtonState: self._on_button, p.BatteryLevel: self._on_battery,
            p.ProtocolVersion: self._on_version,
        }
        self._handlers.update(self.features.handlers())
        self.parameters.on_change(self._apply_parameters)
        self._publish_link_status()
        self._run_future = asyncio.run_coroutine_threadsafe(self._run(), self.loop)

    def _apply_parameters(self, values: dict, _changed: set[str]) -> None:
        """A run-time change (only motor, pose-gate, light, sound and move_to_pose parameters may change): the
        configuration is rebuilt by the start-up rules; everything reads ``self.config`` when it acts."""
        cfg = DriverConfig.from_values(values, self.get_namespace())
        self.config = cfg
        self.motor.min_interval_s = cfg.min_motor_interval_s
        self.features.light.min_interval_s = cfg.light_min_interval_s

    # -------------------------------------------------------------------------------------------- link
    async def _make_transport(self) -> Transport:
        cfg = self.config
        target: object = cfg.ble_address
        if not target:
            found = await ble_transport.scan(names=[cfg.ble_name] if cfg.ble_name else [], count=1,
                                             timeout_s=cfg.ble_scan_timeout_s, adapter=cfg.ble_adapter or None)
            if not found:
                wanted = f'with {cfg.ble_name!r} in its name' if cfg.ble_name else 'at all'
                raise TransportError(f'no toio cube advertising {wanted} within {cfg.ble_scan_timeout_s} s')
            target = found[0].device
            self.rssi = found[0].rssi
        return ble_transport.BleTransport(target, adapter=cfg.ble_adapter or None, backoff=cfg.backoff,
                                          io_timeout_s=cfg.io_timeout_s)

    async def _run(self) -> None:
        """Connect with backoff; afterwards the transport reconnects by itself."""
        self._version_event = asyncio.Event()
        delays = self.config.backoff.delays()
        subscribed = False
        while not self._closing:
            try:
                if self.transport is None:
                    self.transport = await self._make_transport()
                if not subscribed:
                    self.transport.add_link_state_callback(self._on_link_state)
                    for char in NOTIFYING:
                        await self.transport.start_notify(char, self._on_notify)
                    subscribed = True
                await self.transport.connect()
                return
            except TransportError as exc:
                self._link_detail = f'connect failed: {exc}'
                self.get_logger().warning(f'{self.cube}: {self._link_detail}')
                delay = next(delays, None)
                if delay is None:
                    self._on_link_state(LinkState.FAILED)
                    return
                self._publish_link_status(LinkStatus.RECONNECTING)
                await asyncio.sleep(delay)

    def _live(self) -> bool:
        """False once the node is closing or its context is shut down (rclpy's SIGINT handler does that before
        main() reaches destroy_node): the loop thread must not publish then, or the publish fails in a callback
        of the transport (a traceback on the way out)."""
        return not self._closing and self.context.ok()

    def _reported_link(self) -> LinkState:
        """The link as the topics report it: CONNECTED only once the cube's firmware version is known, so a
        command that needs a firmware feature is never judged (and refused) before that."""
        if self._link is LinkState.CONNECTED and not self._version_known:
            return LinkState.CONNECTING
        return self._link

    def _firmware_known(self, version: str) -> None:
        """The version answer (or the assumed version): from now on the link counts as connected."""
        with self.lock:
            self.firmware = version
            self._state.firmware_version = version
            self._version_known = self._link is LinkState.CONNECTED
            self._state.link_state = _CUBE_LINK[self._reported_link()]
        if self._live():
            self._publish_link_status()

    def _on_link_state(self, state: LinkState) -> None:
        """Transport callback (loop thread)."""
        self._link = state
        self._version_known = False
        if not self._live():
            return
        with self.lock:
            self._state.link_state = _CUBE_LINK[self._reported_link()]
        if state is LinkState.CONNECTED:
            self._link_detail = 'connected'
            self.loop.create_task(self._after_connect())
        elif state is LinkState.RECONNECTING:
            self._link_detail = 'link lost, reconnecting with backoff'
        elif state is LinkState.FAILED:
            self._link_detail = self._link_detail or 'gave up reconnecting'
            self.get_logger().error(f'{self.cube}: link failed: {self._link_detail}')
        self._publish_link_status()
        self._publish_state()

    async def _after_connect(self) -> None:
        """Ask the version, configure notifications for it, read what only notifies on change."""
        t = self.transport
        try:
            version = await self._query_version()
            for data in self.config.configuration_writes(p.parse_version(version), self.supports):
                await t.write(p.Characteristic.CONFIGURATION, data)
            for char in (p.Characteristic.BATTERY_INFORMATION, p.Characteristic.BUTTON_INFORMATION,
                         p.Characteristic.SENSOR_INFORMATION):
                try:
                    self._on_notify(char, await t.read(char))
                except TransportError as exc:
                    if not self._live():
                        return
                    self.get_logger().info(f'{self.cube}: initial read of {char.name} failed: {exc}')
        except TransportError as exc:
            if self._live():
                self.get_logger().warning(f'{self.cube}: configuring the cube failed: {exc}')
            return
        if self._live():
            self.get_logger().info(f'{self.cube}: connected, firmware {self.firmware}')
            self._publish_link_status()

    async def _query_version(self) -> str:
        event = self._version_event
        for _attempt in range(3):
            event.clear()
            await self.transport.write(p.Characteristic.CONFIGURATION,
                                       p.ConfigWrite.request_protocol_version().encode())
            try:
                await asyncio.wait_for(event.wait(), self.config.version_timeout_s)
                return self.firmware
            except asyncio.TimeoutError:
                continue
        self.get_logger().warning(f'{self.cube}: no answer to the protocol-version request; assuming {ASSUMED_VERSION}')
        self._firmware_known(ASSUMED_VERSION)
        return ASSUMED_VERSION

    def supports(self, feature: firmware.Feature) -> bool:
        """True if the cube's firmware has ``feature``; otherwise say so once (warning) and return False."""
        if feature.available(p.parse_version(self.firmware or ASSUMED_VERSION)):
            return True
        if feature.name not in self.unsupported:
            why = f'needs firmware >= {feature.since_text}, cube has {self.firmware or "unknown"}'
            self.unsupported[feature.name] = why
            self.get_logger().warning(f'{self.cube}: {feature.name} disabled: {why}')
        return False

    def link_diagnostics(self) -> dict[str, str]:
        """The link's and the motor writer's side of /diagnostics (rates since the last call)."""
        now = time.monotonic()
        then, positions, notifications = self._rates_at
        span = max(now - then, 1e-6)
        self._rates_at = (now, self.position_notifications, self.notifications)
        return {
            'link_state': self._reported_link().value, 'link_detail': self._link_detail, 'transport': self.config.transport,
            'rssi_dbm': '' if self.rssi is None else str(self.rssi), 'firmware_version': self.firmware,
            'reconnects': str(getattr(self.transport, 'reconnect_count', 0)),
            'position_rate_hz': f'{(self.position_notifications - positions) / span:.1f}',
            'notification_rate_hz': f'{(self.notifications - notifications) / span:.1f}',
            'bad_notifications': str(self.bad_notifications), 'pose_outliers_held': str(self.outliers_held),
            'motor_writes': str(self.motor.writes), 'motor_coalesced': str(self.motor.coalesced),
            'motor_delayed': str(self.motor.delayed), 'motor_failed': str(self.motor.failed),
            'motor_expired': str(self.commands_expired + self.motor.expired),
        }

    def _publish_link_status(self, state: int | None = None) -> None:
        msg = LinkStatus(cube=self.cube, state=_STATUS_LINK[self._reported_link()] if state is None else state,
                         reconnects=getattr(self.transport, 'reconnect_count', 0), firmware_version=self.firmware,
                         detail=self._link_detail)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.config.frame_id
        try:
            self._pub_link.publish(msg)
        except RuntimeError:        # InvalidHandle / RCLError: the node or its context went away meanwhile
            if self._live():
                raise

    # -------------------------------------------------------------------------------------------- commands
    async def _write_motor(self, data: bytes) -> None:
        if self.transport is None or not self.transport.is_connected:
            raise TransportError('not connected')
        await self.transport.write(p.Characteristic.MOTOR_CONTROL, data)

    def send_wheels(self, left: int, right: int, duration_ms: int, expires_at: float | None = None) -> None:
        """Queue a 0x02 motor write (already clipped speeds; duration 10..2550 ms). With ``expires_at`` (a
        time.monotonic() instant) the duration is what is left until then when the write goes out (the write may
        wait for the cube's minimum write interval), and nothing is written once it has passed."""
        self._last_sign = (-1 if left < 0 else 1, -1 if right < 0 else 1)
        if expires_at is None:
            self.motor.submit(p.MotorControlTimed(left, right, duration_ms // 10).encode())
            return

        def remaining_command() -> bytes | None:
            left_10ms = min(duration_ms, int((expires_at - time.monotonic()) * 1000.0)) // 10
            return p.MotorControlTimed(left, right, left_10ms).encode() if left_10ms >= 1 else None
        self.motor.submit(remaining_command)

    def _on_motor_cmd(self, msg: MotorCommand) -> None:
        cfg = self.config
        duration = msg.duration_ms or cfg.motor_duration_ms
        if duration > 2550:
            self.get_logger().warning(f'{self.cube}: motor_cmd duration {duration} ms > 2550 ms: clipped to 2550',
                                      throttle_duration_sec=5.0)
            duration = 2550
        duration = max(duration, 10)
        expires_at = None
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if stamp_ns > 0 and cfg.expire_by_stamp:
            # a command delayed on the way (a busy host, a network that held it back) runs only until the end
            # its sender meant, so a cube never drives on a stale decision for longer than duration_ms
            age_s = (self.get_clock().now().nanoseconds - stamp_ns) / 1e9
            if age_s * 1000.0 >= duration or age_s < -1.0:
                self.commands_expired += 1
                self.get_logger().warning(
                    f'{self.cube}: motor_cmd stamped {age_s * 1000.0:.0f} ms ago arrived after its {duration} ms: '
                    'dropped (a slow link, or clocks out of sync between hosts: run chrony/NTP, or set '
                    'expire_by_stamp false)', throttle_duration_sec=5.0)
                if age_s >= 0:
                    return
                age_s = 0.0        # a stamp from the future: the sender's clock is ahead; run from arrival
            expires_at = time.monotonic() + duration / 1000.0 - max(age_s, 0.0)
        self.send_wheels(conversions.clip_motor(msg.left, cfg.max_motor, cfg.dead_zone),
                         conversions.clip_motor(msg.right, cfg.max_motor, cfg.dead_zone), duration, expires_at)

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
        """Transport callback, from the executor thread (simulated link) or the loop thread (bleak)."""
        if self._closing or not self.context.ok():
            return                  # shutting down: nothing to publish to any more
        self.notifications += 1
        try:
            note = p.decode(char, data)
        except p.ProtocolError as exc:
            self.bad_notifications += 1
            self.get_logger().warning(f'{self.cube}: undecodable notification on {char.name}: {exc}',
                                      throttle_duration_sec=5.0)
            return
        handler = self._handlers.get(type(note))
        if handler is not None:
            with self.lock:
                handler(note)

    def _on_position(self, note: p.PositionId) -> None:
        self.position_notifications += 1
        theta = math.radians(note.angle % 360)
        if theta >= math.pi:
            theta -= 2.0 * math.pi
        pose = (float(note.x), float(note.y), theta)
        gate = self.config.outlier_jump_units
        if gate > 0 and self._pose is not None and self._state.on_mat:
            if math.hypot(pose[0] - self._pose[0], pose[1] - self._pose[1]) > gate:
                held, self._held_jump = self._held_jump, pose
                if held is None or math.hypot(pose[0] - held[0], pose[1] - held[1]) > gate:
                    self.outliers_held += 1     # a one-off glitch so far: wait for the next reading
                    return
        self._held_jump = None
        self._pose = pose
        s = self._state
        stamp = self.get_clock().now().to_msg()
        s.header.stamp = stamp
        s.x, s.y, s.theta = pose
        if not s.on_mat:
            s.on_mat = True
            self.features.on_mat_changed(True)
        self._pub_state.publish(s)
        s.collision = s.double_tap = False
        pm = self._pose_msg
        pm.header.stamp = stamp
        conversions.fill_pose(pm.pose, pose[0], pose[1], theta)
        self._pub_pose.publish(pm)
        if self._pub_odom is not None:
            conversions.fill_odometry(self._odom_msg, pose[0], pose[1], theta, self._last_sign[0] * s.speed_left,
                                      self._last_sign[1] * s.speed_right, stamp)
            self._pub_odom.publish(self._odom_msg)
        self.features.on_pose(pose, stamp)

    def _on_missed(self, _note: p.PositionIdMissed) -> None:
        if self._state.on_mat:
            self._state.on_mat = False
            self.features.on_mat_changed(False)
        self._publish_state()

    def _on_standard_id(self, note: p.StandardId) -> None:
        self._state.standard_id = note.value
        self._publish_state()

    def _on_standard_missed(self, _note: p.StandardIdMissed) -> None:
        self._state.standard_id = 0
        self._publish_state()

    def _on_wheel_speed(self, note: p.MotorSpeed) -> None:
        self._state.speed_left, self._state.speed_right = float(note.left), float(note.right)

    def _on_motion(self, note: p.MotionSensor) -> None:
        s = self._state
        s.flat, s.collision = note.horizontal, s.collision or note.collision
        if note.double_tap is not None:
            s.double_tap = s.double_tap or note.double_tap
            s.posture = note.posture
        if note.shake is not None:
            s.shake = note.shake
        self.features.on_motion(note)

    def _on_button(self, note: p.ButtonState) -> None:
        changed = self._state.button != note.pressed
        self._state.button = note.pressed
        if changed:
            self._publish_state()
        self.features.on_button(note.pressed)

    def _on_battery(self, note: p.BatteryLevel) -> None:
        self._state.battery = note.percent
        self.features.on_battery(note.percent)

    def _on_version(self, note: p.ProtocolVersion) -> None:
        self._firmware_known(note.version)
        if self._version_event is not None:
            self.loop.call_soon_threadsafe(self._version_event.set)

    def _publish_state(self) -> None:
        """Publish a state that changed without a new position (position missed, button, standard ID, link):
        stamped now, so no two different states share a stamp (a replay finds the state a tick used by it)."""
        with self.lock:
            s = self._state
            s.header.stamp = self.get_clock().now().to_msg()
            try:
                self._pub_state.publish(s)
            except RuntimeError:    # InvalidHandle / RCLError: the node or its context went away meanwhile
                if self._live():
                    raise
                return
            s.collision = s.double_tap = False

    # -------------------------------------------------------------------------------------------- shutdown
    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the cube and disconnect; safe to call twice. The stop (motor 0/0) is the motor writer's last write,
        paced like any other (a cube ignores a write too soon after the previous one); nothing written after it.
        Needs the ROS context still valid (the simulated link is DDS): run_node stops before shutting down."""
        if self._closing:
            return
        self._closing = True
        self._run_future.cancel()

        async def shutdown() -> bool:
            t = self.transport
            if t is None:
                return True
            was_connected = t.is_connected
            stopped = await self.motor.finish(STOP_NOW)
            await t.disconnect()
            return stopped or not was_connected
        try:
            if not asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout_s):
                self.get_logger().warning(f'{self.cube}: the stop did not reach the cube ({self.motor.last_error}); '
                                          'it stops when its last command runs out')
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
