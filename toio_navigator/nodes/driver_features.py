"""The cube_driver's parity features: lights, sound, IMU, motion, magnet, button, battery, position-ID-missed,
diagnostics and TF (move_to_pose: :mod:`toio_navigator.nodes.driver_moves`). Topics relative to /<cube>:

  in   light (std_msgs/ColorRGBA, on until changed), light/pattern (toio_navigator/LightCommand),
       sound/effect (std_msgs/UInt8, 0..10), sound/melody (toio_navigator/Melody)
  out  imu (sensor_msgs/Imu), motion (toio_navigator/MotionState), magnet (toio_navigator/MagnetState),
       button (std_msgs/Bool, latched), battery (sensor_msgs/BatteryState), position_missed (std_msgs/Bool,
       latched), /diagnostics, /tf (publish_tf: off by default, the navigator broadcasts every cube's transform)

Lights are coalesced (at most one write per ``light_min_interval_s``, newest wins: a burst of N messages over T
seconds gives at most 1 + ceil(T / interval) writes); sounds are rate-limited (a sound sooner than
``sound_min_interval_s`` after the last one is dropped and counted). Features the cube's firmware lacks are
reported once and refused; everything else keeps working.
"""
from __future__ import annotations

import asyncio
import math
import threading
from typing import Callable, Protocol

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from sensor_msgs.msg import BatteryState, Imu
from std_msgs.msg import Bool, ColorRGBA, UInt8

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.coalesced_writer import CoalescedWriter, RateLimit, characteristic_writer
from toio_navigator.cube.motor_commands import MotorCommander
from toio_navigator.cube.transport import Transport
from toio_navigator.msg import LightCommand, MagnetState, Melody, MotionState
from toio_navigator.nodes import conversions
from toio_navigator.nodes.qos import LATCHED
from toio_navigator.nodes.tf_broadcast import TfBroadcaster
from toio_navigator.settings.driver import DriverConfig


class DriverHost(Protocol):
    """What the features use of their cube driver (the CubeDriverNode is one)."""
    cube: str
    config: DriverConfig                    # replaced on a run-time parameter change: read it when acting
    firmware: str                           # '' until the cube answered the version request
    unsupported: dict[str, str]             # feature -> why it is off (filled by supports)
    lock: threading.RLock                   # held by every notification handler
    loop: asyncio.AbstractEventLoop         # the transport's loop: writers write there
    motor: MotorCommander                   # the motor characteristic's writes (move_to_pose shares them)
    transport: Transport | None             # None until a BLE driver found its cube

    def supports(self, feature: firmware.Feature) -> bool: ...

    def send_wheels(self, left: int, right: int, duration_ms: int) -> None: ...

    def link_diagnostics(self) -> dict[str, str]: ...


class DriverFeatures:
    """Everything of the driver beyond pose and wheels, on ROS node ``node`` for the driver ``host``. Handlers
    run under the host's lock."""

    def __init__(self, node: Node, host: DriverHost) -> None:
        self.node, self.host = node, host
        cfg = host.config
        self._frame = cfg.base_frame
        self.light = CoalescedWriter(host.loop, self._writer(p.Characteristic.LIGHT_CONTROL), cfg.light_min_interval_s)
        self.sound = CoalescedWriter(host.loop, self._writer(p.Characteristic.SOUND_CONTROL), 0.0)
        self.sound_gate = RateLimit(cfg.sound_min_interval_s)
        self.commands_rejected = 0
        # sensors
        self._pub_imu = node.create_publisher(Imu, 'imu', 10)
        self._pub_motion = node.create_publisher(MotionState, 'motion', 10)
        self._pub_magnet = node.create_publisher(MagnetState, 'magnet', 10)
        self._pub_button = node.create_publisher(Bool, 'button', LATCHED)
        self._pub_battery = node.create_publisher(BatteryState, 'battery', 10)
        self._pub_missed = node.create_publisher(Bool, 'position_missed', LATCHED)
        self._button: bool | None = None
        self._missed: bool | None = None
        # commands
        node.create_subscription(ColorRGBA, 'light', self._on_light, 10)
        node.create_subscription(LightCommand, 'light/pattern', self._on_light_pattern, 10)
        node.create_subscription(UInt8, 'sound/effect', self._on_sound_effect, 10)
        node.create_subscription(Melody, 'sound/melody', self._on_melody, 10)
        # diagnostics and TF
        self._pub_diag = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        if cfg.diagnostics_period_s > 0:
            node.create_timer(cfg.diagnostics_period_s, self.publish_diagnostics)
        self._tf = TfBroadcaster(node, cfg.frame_id) if cfg.publish_tf else None

    def _writer(self, char: p.Characteristic) -> Callable[[bytes], object]:
        return characteristic_writer(lambda: self.host.transport, char)

    def handlers(self) -> dict[type, Callable]:
        return {p.PostureQuaternion: self._on_posture, p.PostureEuler: self._on_posture,
                p.PostureEulerFloat: self._on_posture, p.MagneticSensor: self._on_magnet}

    def apply(self, cfg: DriverConfig) -> None:
        """Run-time parameter changes that the features hold."""
        self.light.min_interval_s = cfg.light_min_interval_s
        self.sound_gate.min_interval_s = cfg.sound_min_interval_s

    # ------------------------------------------------------------------------------------ hooks from the node
    def on_mat_changed(self, on_mat: bool) -> None:
        if self._missed is not (not on_mat):
            self._missed = not on_mat
            self._pub_missed.publish(Bool(data=self._missed))

    def on_pose(self, pose: tuple[float, float, float], stamp) -> None:
        if self._tf is not None:
            self._tf.publish([(self._frame, *pose, stamp.sec * 1_000_000_000 + stamp.nanosec)])

    def on_motion(self, note: p.MotionSensor) -> None:
        m = MotionState(flat=note.horizontal, collision=note.collision, double_tap=bool(note.double_tap),
                        posture=note.posture or 0, shake=note.shake or 0)
        m.header.stamp = self.node.get_clock().now().to_msg()
        m.header.frame_id = self._frame
        self._pub_motion.publish(m)

    def on_button(self, pressed: bool) -> None:
        if self._button is not pressed:
            self._button = pressed
            self._pub_button.publish(Bool(data=pressed))

    def on_battery(self, percent: int) -> None:
        b = BatteryState(percentage=percent / 100.0, present=True, voltage=math.nan, temperature=math.nan,
                         current=math.nan, charge=math.nan, capacity=math.nan, design_capacity=math.nan,
                         power_supply_technology=BatteryState.POWER_SUPPLY_TECHNOLOGY_LION,
                         power_supply_status=BatteryState.POWER_SUPPLY_STATUS_UNKNOWN)
        b.header.stamp = self.node.get_clock().now().to_msg()
        b.header.frame_id = self._frame
        self._pub_battery.publish(b)

    # ------------------------------------------------------------------------------------ sensors
    def _on_posture(self, note) -> None:
        if isinstance(note, p.PostureQuaternion):
            q = conversions.imu_quaternion_from_cube(note.w, note.x, note.y, note.z)
        else:
            q = conversions.euler_deg_to_ros_quaternion(note.roll, note.pitch, note.yaw)
        imu = Imu()
        imu.header.stamp = self.node.get_clock().now().to_msg()
        imu.header.frame_id = self._frame
        imu.orientation.x, imu.orientation.y, imu.orientation.z, imu.orientation.w = q
        imu.angular_velocity_covariance[0] = -1.0      # REP 145: the cube reports no rates ...
        imu.linear_acceleration_covariance[0] = -1.0   # ... and no accelerations
        self._pub_imu.publish(imu)

    def _on_magnet(self, note: p.MagneticSensor) -> None:
        m = MagnetState(state=note.state, strength=note.strength or 0)
        m.x, m.y, m.z = conversions.body_vector_from_cube(note.x or 0, note.y or 0, note.z or 0)
        m.header.stamp = self.node.get_clock().now().to_msg()
        m.header.frame_id = self._frame
        self._pub_magnet.publish(m)

    # ------------------------------------------------------------------------------------ lights and sound
    def count_rejected(self) -> None:
        """A command refused (malformed, or the firmware cannot): diagnostics count them."""
        self.commands_rejected += 1

    def _reject(self, what: str, why: str) -> None:
        self.count_rejected()
        self.node.get_logger().warning(f'{self.host.cube}: {what} ignored: {why}', throttle_duration_sec=2.0)

    def _on_light(self, colour: ColorRGBA) -> None:
        try:
            data = p.LightOn(*conversions.colour_to_rgb(colour.r, colour.g, colour.b)).encode()
        except (ValueError, p.ProtocolError) as exc:
            return self._reject('light', str(exc))
        self.light.submit(data)

    def _on_light_pattern(self, cmd: LightCommand) -> None:
        try:
            data = self.encode_light_command(cmd)
        except (ValueError, p.ProtocolError) as exc:
            return self._reject('light pattern', str(exc))
        if data is not None:
            self.light.submit(data)

    def encode_light_command(self, cmd: LightCommand) -> bytes | None:
        """The light write for a LightCommand; ValueError for a malformed one, None if the firmware cannot."""
        if cmd.mode == LightCommand.OFF:
            return p.LightsOff().encode()
        colours = [conversions.colour_to_rgb(c.r, c.g, c.b) for c in cmd.colors]
        durations = list(cmd.durations_ms)
        if cmd.mode not in (LightCommand.ON, LightCommand.SEQUENCE, LightCommand.SMOOTH_BLINK):
            raise ValueError(f'unknown mode {cmd.mode}')
        if not colours:
            raise ValueError('needs at least one colour')
        if cmd.mode == LightCommand.ON:
            duration = durations[0] if durations else 0
            return p.LightOn(*colours[0], 0 if duration == 0 else conversions.duration_10ms(duration)).encode()
        if len(durations) != len(colours):
            raise ValueError(f'{len(colours)} colours but {len(durations)} durations')
        if cmd.mode == LightCommand.SEQUENCE:
            steps = tuple((conversions.duration_10ms(d), *c) for d, c in zip(durations, colours))
            return p.LightSequence(steps, cmd.repeat).encode()
        if not self.host.supports(firmware.SMOOTH_BLINK):
            raise ValueError(f'smooth blink {self.host.unsupported[firmware.SMOOTH_BLINK.name]}')
        return p.LightSmoothBlink(*colours[0], period_10ms=conversions.duration_10ms(durations[0], 100, 2550),
                                  count=cmd.repeat).encode()

    def _on_sound_effect(self, effect: UInt8) -> None:
        if effect.data > 10:
            return self._reject('sound effect', f'id must be 0..10, got {effect.data}')
        if self.sound_gate.allow():
            self.sound.submit(p.SoundEffect(effect.data, 255).encode())

    def _on_melody(self, melody: Melody) -> None:
        try:
            data = self.encode_melody(melody)
        except (ValueError, p.ProtocolError) as exc:
            return self._reject('melody', str(exc))
        if self.sound_gate.allow():
            self.sound.submit(data)

    def encode_melody(self, melody: Melody) -> bytes:
        notes, durations = list(melody.notes), list(melody.durations_ms)
        if not notes:
            return p.SoundStop().encode()
        if len(notes) != len(durations):
            raise ValueError(f'{len(notes)} notes but {len(durations)} durations')
        version = self.host.firmware
        limit = 58 if version and not firmware.LONG_MELODY.available(p.parse_version(version)) else 59
        if len(notes) > limit:
            raise ValueError(f'at most {limit} notes on firmware {self.host.firmware or "unknown"}, got {len(notes)}')
        return p.SoundMidi(tuple((conversions.duration_10ms(d), n, melody.volume) for n, d in zip(notes, durations)),
                           melody.repeat).encode()

    # ------------------------------------------------------------------------------------ diagnostics
    def _hardware_id(self) -> str:
        """The cube's BLE address once known (also for a driver that took any cube), else what it looks for."""
        host, cfg = self.host, self.host.config
        if cfg.transport == 'sim':
            return f'sim:{host.cube}'
        return getattr(host.transport, 'address', '') or cfg.ble_address or cfg.ble_name

    def publish_diagnostics(self) -> None:
        host = self.host
        values = host.link_diagnostics()
        values.update({
            'light_writes': str(self.light.writes), 'light_coalesced': str(self.light.coalesced),
            'sound_writes': str(self.sound.writes), 'sound_dropped': str(self.sound_gate.dropped),
            'commands_rejected': str(self.commands_rejected),
            'unsupported': '; '.join(f'{k} ({v})' for k, v in host.unsupported.items()),
        })
        link = values['link_state']
        level = {'connected': DiagnosticStatus.OK, 'reconnecting': DiagnosticStatus.WARN,
                 'connecting': DiagnosticStatus.WARN}.get(link, DiagnosticStatus.ERROR)
        status = DiagnosticStatus(level=level, name=f'{host.cube}: cube_driver', message=f'link {link}',
                                  hardware_id=self._hardware_id(),
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.node.get_clock().now().to_msg()
        self._pub_diag.publish(array)
