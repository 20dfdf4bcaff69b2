"""Firmware of the simulated cubes: the real GATT characteristics in, the real notifications out.

:class:`VirtualCubes` runs the firmware of every cube of a :class:`~toio_navigator.sim.world.World` (it attaches
itself to the world's step). Each :class:`VirtualCube` is one cube's GATT face: ``connect``, ``write``,
``read``, ``subscribe`` with exactly the bytes of docs/ble_protocol.md. Behaviour modelled:

* writes are parsed with the shared codec; malformed, out-of-range or too-new (for the simulated protocol
  version) writes are dropped silently, as a real cube does;
* motor writes closer than ``min_command_interval`` to the last accepted one are ignored, accepted ones take
  effect ``command_delay`` later (durations count from then); 0x02 stops after its duration. Both are measured
  on the time each write *arrives* (``arrival_clock``), not on the physics clock: the world moves in 20 ms
  steps, and a 45 ms rule compared on step times would drop writes 50 ms apart whenever they land 40 ms apart;
* 0x03/0x04 (target moves) and 0x05 (acceleration moves) run on board: :mod:`toio_navigator.sim.onboard_motion`;
* ID notifications follow config 0x18 (minimum interval; always / on change >= 2 units or 3 deg / balanced:
  pause after 300 ms without change) and 0x19 (missed only after the ID was lost that long);
* motion (on change, collision momentary), button (on change), battery (every 5 s, 10 % steps), wheel speed
  (after 0x1C, every 100 ms on change, magnitudes), posture angle (after 0x1D), config responses;
* every setting returns to its default on disconnect, and a disconnected cube stops.

Position-ID bookkeeping is vectorised over cubes; only cubes that actually send something cost Python time.
"""
from __future__ import annotations

import heapq
import itertools
import math
import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as pr
from toio_navigator.cube.protocol import Characteristic as C
from toio_navigator.sim.onboard_motion import MotionParams, OnboardMotion, wrap_deg
from toio_navigator.sim.world import World

Deliver = Callable[[bytes], None]

_CONFIG_RESPONSE_OF = {v: k for k, v in pr.CONFIG_RESPONSES.items()}
_NAME_LETTERS = 'abcdefhijkmnprtABCDEFGHJKLMNPQRT'   # the spec's letters minus the excluded ones


@dataclass(frozen=True)
class FirmwareParams:
    """Firmware constants (defaults of docs/ble_protocol.md)."""
    version: str = '2.4.0'
    default_id_interval_10ms: int = 1
    default_id_condition: int = pr.ID_BALANCED
    default_missed_10ms: int = 7
    balanced_pause_s: float = 0.3
    speed_period_s: float = 0.1
    battery_period_s: float = 5.0
    actual_interval_1250us: int = 12           # what 0x32 answers (15 ms)
    motion: MotionParams = MotionParams()      # the on-board controllers (0x03/0x04/0x05)

    def __post_init__(self) -> None:
        pr.parse_version(self.version)


def cube_name(index: int) -> str:
    """A deterministic 'toio-XXX' name (letter, digit, letter) for simulated cube ``index``."""
    n = len(_NAME_LETTERS)
    return f'toio-{_NAME_LETTERS[index % n]}{(index // n) % 10}{_NAME_LETTERS[(index // (10 * n)) % n]}'


@dataclass
class _Settings:
    """What the cube forgets on disconnect."""
    motion_threshold: tuple[int, int, int] = (45, 7, 5)   # horizontal deg, collision level, double tap
    magnet: tuple[int, int, int] = (0, 0, 0)
    posture: tuple[int, int, int] = (1, 0, 0)             # kind, interval x10 ms (0 = off), condition
    serialized: tuple[int, int] = (0, 0)
    requested_interval: tuple[int, int] = (8, 80)
    last_config: bytes = b''
    last_motor: bytes = b''
    posture_sent_at: float = -math.inf
    magnet_sent_at: float = -math.inf
    last_posture: bytes = b''


class VirtualCube:
    """The GATT face of one simulated cube."""

    def __init__(self, firmware: 'VirtualCubes', index: int, name: str) -> None:
        self.firmware, self.index, self.name = firmware, index, name
        self.address = f'5E:00:00:00:{index // 256:02X}:{index % 256:02X}'
        self.connected = False
        self.powered = True
        self.refuse_connections = 0        # tests: fail this many connection attempts
        self.light: tuple[int, int, int] = (0, 0, 0)
        self.last_sound: pr.Command | None = None
        self.dropped_writes = 0            # malformed, too new, or rate-limited writes that were ignored
        self._subscriptions: dict[C, Deliver] = {}
        self._on_link_lost: Callable[[], None] | None = None
        self.settings = _Settings()
        self.interval_1250us = firmware.params.actual_interval_1250us     # the link's, as 0x32 answers it
        self.on_interval_request: Callable[[int, int], None] | None = None   # the central hears a 0x30 request

    # ------------------------------------------------------------------------- link
    def connect(self, on_link_lost: Callable[[], None] | None = None) -> None:
        """Accept a central. ConnectionRefusedError if powered off, already connected, or told to refuse."""
        if not self.powered:
            raise ConnectionRefusedError(f'{self.name} is powered off')
        if self.connected:
            raise ConnectionRefusedError(f'{self.name} is connected to another central and does not advertise')
        if self.refuse_connections > 0:
            self.refuse_connections -= 1
            raise ConnectionRefusedError(f'{self.name} did not answer')
        self.connected = True
        self._on_link_lost = on_link_lost
        self.firmware._on_connect(self.index)

    def disconnect(self) -> None:
        """The central hangs up: settings reset, motors stop, subscriptions end."""
        if not self.connected:
            return
        self.connected = False
        self._subscriptions.clear()
        self._on_link_lost = None
        self.settings = _Settings()
        self.firmware._on_disconnect(self.index)

    def interval_changed(self, interval_1250us: int) -> None:
        """The central changed the link's connection interval; from v2.5.0 the cube says so unasked (0xB2)."""
        if interval_1250us != self.interval_1250us:
            self.interval_1250us = interval_1250us
            if self.connected and self.firmware.version >= (2, 5, 0):
                self.firmware._config_reply(self.index, pr.CurrentConnectionInterval(interval_1250us).encode())

    def drop_link(self) -> None:
        """Simulate a lost radio link (out of range, interference): like disconnect, and the central is told."""
        callback = self._on_link_lost
        self.disconnect()
        if callback is not None:
            callback()

    def power_off(self) -> None:
        self.powered = False
        self.drop_link()
        self.firmware.world.driving_enabled[self.index] = False

    # ------------------------------------------------------------------------- GATT
    def subscribe(self, char: pr.CharLike, deliver: Deliver) -> None:
        self._require_connected()
        self._subscriptions[pr.characteristic(char)] = deliver

    def unsubscribe(self, char: pr.CharLike) -> None:
        self._subscriptions.pop(pr.characteristic(char), None)

    def write(self, char: pr.CharLike, data: bytes) -> None:
        """A write from the central. Invalid bytes are dropped without an answer, like on a real cube."""
        self._require_connected()
        self.firmware._handle_write(self.index, pr.characteristic(char), bytes(data))

    def read(self, char: pr.CharLike) -> bytes:
        self._require_connected()
        return self.firmware._read(self.index, pr.characteristic(char))

    def notify(self, char: C, data: bytes) -> None:
        if self.connected:
            deliver = self._subscriptions.get(char)
            if deliver is not None:
                deliver(data)

    def _require_connected(self) -> None:
        if not self.connected:
            raise ConnectionError(f'{self.name} is not connected')


class VirtualCubes:
    """The firmware of every cube of a world (vectorised where it runs every step)."""

    def __init__(self, world: World, params: FirmwareParams | None = None, names: list[str] | None = None,
                 arrival_clock: Callable[[], float] | None = None) -> None:
        """``arrival_clock()``: the simulated time (s, on the world's clock) at which a write arrives now. A host
        that steps the world in fixed steps from a wall clock (mat_sim) passes one that includes the time since
        the last step; without it a write arrives at ``world.time`` (right for code that writes between steps)."""
        self.world = world
        self.arrival_clock = arrival_clock or (lambda: world.time)
        self.params = params or FirmwareParams()
        self.version = pr.parse_version(self.params.version)
        n = world.n
        if names is not None and len(names) != n:
            raise ValueError(f'{len(names)} names for {n} cubes')
        self.cubes = [VirtualCube(self, i, names[i] if names else cube_name(i)) for i in range(n)]
        world.driving_enabled[:] = False          # a cube nobody is connected to does not drive
        self.connected = np.zeros(n, dtype=bool)
        self._pending: list[tuple[float, int, int, pr.Command]] = []
        self._seq = itertools.count()
        self._last_motor_accept = np.full(n, -math.inf)
        self.motion = OnboardMotion(world, self.params.motion, self._motor_reply)
        self._power_off_at: dict[int, float] = {}
        # ID notification state
        self.id_interval = np.zeros(n)
        self.id_condition = np.zeros(n, dtype=np.int64)
        self.missed_delay = np.zeros(n)
        self._id_sent_at = np.full(n, -math.inf)
        self._id_sent = np.zeros((n, 3), dtype=np.int64)
        self._id_on_mat_sent = np.zeros(n, dtype=bool)   # the last ID message was a position (not "missed")
        self._off_mat_since = np.full(n, math.nan)
        self._off_tracked = False
        self._prev_reading = np.full((n, 3), -1, dtype=np.int64)
        self._changed_at = np.full(n, -math.inf)
        self._last_id_message = [b'\x03'] * n
        # other notifications
        self.speed_notify = np.zeros(n, dtype=bool)
        self._speed_sent = np.full((n, 2), -1, dtype=np.int64)
        self._next_speed_check = 0.0
        self._battery_due = np.full(n, math.inf)
        self._button_sent = np.zeros(n, dtype=bool)
        self._motion_sent = np.zeros((n, 2), dtype=np.int64)   # horizontal, posture
        self._collision_reported = np.zeros(n, dtype=bool)
        self._posture_seen = world.posture.copy()
        self._button_seen = world.button.copy()
        self._posture_cubes: set[int] = set()
        self._magnet_cubes: set[int] = set()
        self._heading_at_power_on = world.theta.copy()
        for i in range(n):
            self._reset_settings(i)
        world.attach(self)

    def __getitem__(self, index: int) -> VirtualCube:
        return self.cubes[index]

    def __len__(self) -> int:
        return len(self.cubes)

    def by_name(self, name_or_id: str) -> VirtualCube:
        """The cube whose name contains ``name_or_id`` (as a scanner matches the 3-character id)."""
        for cube in self.cubes:
            if name_or_id and name_or_id in cube.name:
                return cube
        raise KeyError(f'no simulated cube named like {name_or_id!r}')

    # ------------------------------------------------------------------------- connection bookkeeping
    def _reset_settings(self, i: int) -> None:
        p = self.params
        self.id_interval[i] = p.default_id_interval_10ms * 0.01
        self.id_condition[i] = p.default_id_condition
        self.missed_delay[i] = p.default_missed_10ms * 0.01
        self.speed_notify[i] = False
        self.world.collision_level[i] = 7
        self._posture_cubes.discard(i)
        self._magnet_cubes.discard(i)

    def _on_connect(self, i: int) -> None:
        w = self.world
        self.connected[i] = True
        w.driving_enabled[i] = True
        self._id_sent_at[i] = -math.inf
        self._id_on_mat_sent[i] = False
        self._changed_at[i] = w.time
        self._battery_due[i] = w.time + self.params.battery_period_s
        self._button_sent[i] = w.button[i]
        self._motion_sent[i] = (1 if w.posture[i] == 1 else 0, w.posture[i])
        self._speed_sent[i] = -1

    def _on_disconnect(self, i: int) -> None:
        self.connected[i] = False
        self._reset_settings(i)
        self.world.stop(i)
        self.world.driving_enabled[i] = False
        self.motion.forget(i)
        self._pending = [entry for entry in self._pending if entry[2] != i]
        heapq.heapify(self._pending)
        self._battery_due[i] = math.inf

    # ------------------------------------------------------------------------- writes
    def _handle_write(self, i: int, char: C, data: bytes) -> None:
        cube = self.cubes[i]
        try:
            command = pr.decode_command(char, data)
        except pr.ProtocolError:
            cube.dropped_writes += 1
            return
        if char is C.MOTOR_CONTROL:
            self._accept_motor(i, command, data[0])
        elif char is C.CONFIGURATION:
            self._handle_config(i, command)  # type: ignore[arg-type]
        elif char is C.SENSOR_INFORMATION:
            self._handle_sensor_request(i, command)  # type: ignore[arg-type]
        elif char is C.LIGHT_CONTROL:
            if isinstance(command, pr.LightSmoothBlink) and not firmware.SMOOTH_BLINK.available(self.version):
                cube.dropped_writes += 1
            elif isinstance(command, pr.LightOn):
                cube.light = (command.r, command.g, command.b)
            elif isinstance(command, (pr.LightsOff, pr.LightOff)):
                cube.light = (0, 0, 0)
            elif isinstance(command, pr.LightSequence):
                cube.light = command.steps[0][1:]
        elif char is C.SOUND_CONTROL:
            cube.last_sound = command

    def _accept_motor(self, i: int, command: pr.Command, type_byte: int) -> None:
        w, cube = self.world, self.cubes[i]
        # never before the world's own time (a clock that lags would let a command act in the past)
        arrived = max(float(self.arrival_clock()), w.time)
        too_soon = arrived - self._last_motor_accept[i] < w.params.min_command_interval - 1e-9
        if not firmware.MOTOR_COMMANDS[type_byte].available(self.version) or too_soon:
            cube.dropped_writes += 1
            return
        self._last_motor_accept[i] = arrived
        heapq.heappush(self._pending, (arrived + w.params.command_delay, next(self._seq), i, command))

    def _handle_sensor_request(self, i: int, request: pr.SensorRequest) -> None:
        feature = firmware.POSTURE_KINDS[request.posture_kind] if request.kind == 0x83 else firmware.SENSOR_REQUESTS
        if not feature.available(self.version):
            self.cubes[i].dropped_writes += 1
            return
        if request.kind == 0x81:
            self.cubes[i].notify(C.SENSOR_INFORMATION, self._motion_bytes(i, collision=False))
        elif request.kind == 0x82:
            self.cubes[i].notify(C.SENSOR_INFORMATION, self._magnet_bytes())
        else:
            self.cubes[i].notify(C.SENSOR_INFORMATION, self._posture_bytes(i, request.posture_kind))

    def _handle_config(self, i: int, command: pr.ConfigWrite) -> None:
        cube, s, v = self.cubes[i], self.cubes[i].settings, command.values
        kind = command.command
        feature = firmware.MAGNET_FORCE if kind == 0x1B and len(v) == 3 else \
            firmware.POSTURE_KINDS[v[0]] if kind == 0x1D else firmware.CONFIG_COMMANDS[kind]
        if not feature.available(self.version):
            cube.dropped_writes += 1
            return
        result = 0
        if kind == 0x01:
            self._config_reply(i, pr.ProtocolVersion(self.params.version).encode())
            return
        if kind == 0x05:
            s.motion_threshold = (v[0],) + s.motion_threshold[1:]
        elif kind == 0x06:
            s.motion_threshold = (s.motion_threshold[0], v[0], s.motion_threshold[2])
            self.world.collision_level[i] = v[0]
        elif kind == 0x17:
            s.motion_threshold = s.motion_threshold[:2] + (v[0],)
        elif kind == 0x18:
            self.id_interval[i] = v[0] * 0.01
            self.id_condition[i] = v[1]
        elif kind == 0x19:
            self.missed_delay[i] = v[0] * 0.01
        elif kind == 0x1B:
            s.magnet = tuple(v) + (0,) * (3 - len(v))  # type: ignore[assignment]
            (self._magnet_cubes.add if s.magnet[0] and s.magnet[1] else self._magnet_cubes.discard)(i)
            s.magnet_sent_at = -math.inf
        elif kind == 0x1C:
            self.speed_notify[i] = v[0] == 1
            self._speed_sent[i] = -1
        elif kind == 0x1D:
            s.posture = tuple(v)  # type: ignore[assignment]
            (self._posture_cubes.add if v[1] > 0 else self._posture_cubes.discard)(i)
        elif kind == 0x1E:
            s.serialized = tuple(v)  # type: ignore[assignment]  (accepted; 0xF0 is not generated)
        elif kind == 0x30:
            s.requested_interval = tuple(v)  # type: ignore[assignment]
            if cube.on_interval_request is not None:
                cube.on_interval_request(*v)
        elif kind == 0x31:
            self._config_reply(i, pr.RequestedConnectionInterval(*s.requested_interval).encode())
            return
        elif kind == 0x32:
            self._config_reply(i, pr.CurrentConnectionInterval(cube.interval_1250us).encode())
            return
        elif kind in (0x33, 0x0F):
            result = 0 if self.world.button[i] else 1   # savable settings need the button held
        elif kind == 0x34:
            self._power_off_at[i] = self.world.time + v[0]
        if kind in _CONFIG_RESPONSE_OF:
            self._config_reply(i, pr.ConfigResponse(_CONFIG_RESPONSE_OF[kind], result).encode())

    def _config_reply(self, i: int, data: bytes) -> None:
        self.cubes[i].settings.last_config = data
        self.cubes[i].notify(C.CONFIGURATION, data)

    # ------------------------------------------------------------------------- reads
    def _read(self, i: int, char: C) -> bytes:
        if char is C.ID_INFORMATION:
            return self._last_id_message[i]
        if char is C.MOTOR_CONTROL:
            return self.cubes[i].settings.last_motor or pr.MotorSpeed(
                *map(int, self.world.reported_wheel_speeds()[i])).encode()
        if char is C.SENSOR_INFORMATION:
            return self._motion_bytes(i, collision=False)
        if char is C.BUTTON_INFORMATION:
            return pr.ButtonState(bool(self.world.button[i])).encode()
        if char is C.BATTERY_INFORMATION:
            return pr.BatteryLevel(self._battery_percent(i)).encode()
        if char is C.CONFIGURATION:
            return self.cubes[i].settings.last_config or pr.ProtocolVersion(self.params.version).encode()
        raise ConnectionError(f'{char.name} cannot be read')

    # ------------------------------------------------------------------------- the step
    def before_step(self, world: World) -> None:
        t = world.time
        while self._pending and self._pending[0][0] <= t + 1e-9:
            _due, _seq, i, command = heapq.heappop(self._pending)
            self.motion.apply(i, command)
        self.motion.step()
        for i, when in list(self._power_off_at.items()):
            if t >= when:
                del self._power_off_at[i]
                self.cubes[i].power_off()

    def after_step(self, world: World) -> None:
        connected = self.connected
        if not connected.any():
            return
        self._id_notifications(world, connected)
        self._motion_notifications(world, connected)
        if world.time + 1e-9 >= self._next_speed_check:
            self._next_speed_check = world.time + self.params.speed_period_s
            self._speed_notifications(world, connected)
        for i in np.nonzero(connected & (world.time + 1e-9 >= self._battery_due))[0]:
            self._battery_due[i] = world.time + self.params.battery_period_s
            self.cubes[i].notify(C.BATTERY_INFORMATION, bytes((self._battery_percent(i),)))
        for i in list(self._posture_cubes):
            self._posture_notification(i)
        for i in list(self._magnet_cubes):
            self._magnet_notification(i)

    # ------------------------------------------------------------------------- ID notifications
    def _id_notifications(self, world: World, connected: np.ndarray) -> None:
        t = world.time
        r = world.read_position_ids()
        reading = np.stack([r.x, r.y, r.angle], axis=1)
        changed = (reading != self._prev_reading).any(axis=1)
        self._changed_at[changed] = t
        self._prev_reading = reading
        on = r.on_mat & connected
        interval_ok = t - self._id_sent_at >= self.id_interval - 1e-9
        fresh = ~self._id_on_mat_sent               # first reading after connect or after "missed"
        condition = self.id_condition
        wanted = t - self._changed_at < self.params.balanced_pause_s - 1e-9     # balanced (the default)
        if (condition != pr.ID_BALANCED).any():
            delta = np.abs(reading - self._id_sent)
            angle_delta = np.minimum(delta[:, 2], 360 - delta[:, 2])
            big_change = (delta[:, 0] >= 2) | (delta[:, 1] >= 2) | (angle_delta >= 3)
            wanted = np.where(condition == pr.ID_ALWAYS, True,
                              np.where(condition == pr.ID_ON_CHANGE, big_change, wanted))
        send = on & interval_ok & (wanted | fresh)
        if send.any():
            index = np.nonzero(send)[0]
            rows = np.stack([reading[index, 0], reading[index, 1], reading[index, 2], r.sensor_x[index],
                             r.sensor_y[index]], axis=1).tolist()
            fmt, kind = pr.PositionId.FORMAT, pr.PositionId.TYPE
            for i, (x, y, a, sx, sy) in zip(index.tolist(), rows):
                data = struct.pack(fmt, kind, x, y, a, sx, sy, a)
                self._last_id_message[i] = data
                self.cubes[i].notify(C.ID_INFORMATION, data)
            self._id_sent[send] = reading[send]
            self._id_sent_at[send] = t
            self._id_on_mat_sent[send] = True
        off = connected & ~r.on_mat
        if off.any() or self._off_tracked:
            self._off_mat_since[r.on_mat] = math.nan
            self._off_mat_since[off & np.isnan(self._off_mat_since)] = t
            self._off_tracked = bool(off.any())
            missed = off & self._id_on_mat_sent & (t - self._off_mat_since >= self.missed_delay - 1e-9)
            for i in np.nonzero(missed)[0].tolist():
                self._last_id_message[i] = b'\x03'
                self.cubes[i].notify(C.ID_INFORMATION, b'\x03')
            self._id_on_mat_sent[missed] = False

    # ------------------------------------------------------------------------- other notifications
    def _motion_bytes(self, i: int, collision: bool) -> bytes:
        posture = int(self.world.posture[i])
        message = pr.MotionSensor(posture == 1, collision)
        if firmware.DOUBLE_TAP.available(self.version):
            message = pr.MotionSensor(posture == 1, collision, False, posture,
                                      0 if firmware.SHAKE.available(self.version) else None)
        return message.encode()

    def _motion_notifications(self, world: World, connected: np.ndarray) -> None:
        # the common case -- no collision, no posture or button change anywhere -- costs four cheap checks
        if not (world.collided.any() or self._collision_reported.any()
                or not np.array_equal(world.posture, self._posture_seen)
                or not np.array_equal(world.button, self._button_seen)):
            return
        self._posture_seen, self._button_seen = world.posture.copy(), world.button.copy()
        state = np.stack([(world.posture == 1).astype(np.int64), world.posture.astype(np.int64)], axis=1)
        changed = connected & np.any(state != self._motion_sent, axis=1)
        collided = connected & world.collided
        # collision is momentary: true in the detecting notification, false in the next one
        ended = connected & self._collision_reported & ~world.collided
        for i in np.nonzero(changed | collided | ended)[0]:
            self.cubes[i].notify(C.SENSOR_INFORMATION, self._motion_bytes(i, bool(collided[i])))
        self._motion_sent[connected] = state[connected]
        self._collision_reported = collided
        buttons = connected & (world.button != self._button_sent)
        for i in np.nonzero(buttons)[0]:
            self.cubes[i].notify(C.BUTTON_INFORMATION, b'\x01\x80' if world.button[i] else b'\x01\x00')
        self._button_sent[buttons] = world.button[buttons]

    def _speed_notifications(self, world: World, connected: np.ndarray) -> None:
        active = connected & self.speed_notify
        if not active.any():
            return
        speeds = world.reported_wheel_speeds()
        changed = active & np.any(speeds != self._speed_sent, axis=1)
        for i in np.nonzero(changed)[0]:
            data = bytes((0xE0, int(speeds[i, 0]), int(speeds[i, 1])))
            self.cubes[i].settings.last_motor = data
            self.cubes[i].notify(C.MOTOR_CONTROL, data)
        self._speed_sent[changed] = speeds[changed]

    def _battery_percent(self, i: int) -> int:
        return int(self.world.battery[i] // 10 * 10)

    def _magnet_bytes(self) -> bytes:
        # no magnets on simulated mats: state 0, zero strength and direction
        if firmware.MAGNET_FORCE.available(self.version):
            return pr.MagneticSensor(0, 0, 0, 0, 0).encode()
        return pr.MagneticSensor(0).encode()

    def _posture_bytes(self, i: int, kind: int) -> bytes:
        # the IMU yaw is relative to the heading at power-on, clockwise positive (body z points down)
        yaw = wrap_deg(math.degrees(self.world.theta[i] - self._heading_at_power_on[i]))
        if yaw == -180.0:
            yaw = 180.0
        if kind == 1:
            return pr.PostureEuler(0, 0, int(round(yaw))).encode()
        if kind == 2:
            half = math.radians(yaw) / 2
            return pr.PostureQuaternion(math.cos(half), 0.0, 0.0, math.sin(half)).encode()
        return pr.PostureEulerFloat(0.0, 0.0, yaw).encode()

    def _magnet_notification(self, i: int) -> None:
        s = self.cubes[i].settings
        _mode, interval, condition = s.magnet
        if self.world.time - s.magnet_sent_at < interval * 0.02 - 1e-9:
            return
        if condition == 1 and s.magnet_sent_at > -math.inf:
            return      # on change only: the simulated field never changes after the first report
        s.magnet_sent_at = self.world.time
        self.cubes[i].notify(C.SENSOR_INFORMATION, self._magnet_bytes())

    def _posture_notification(self, i: int) -> None:
        s = self.cubes[i].settings
        kind, interval, condition = s.posture
        if self.world.time - s.posture_sent_at < interval * 0.01 - 1e-9:
            return
        data = self._posture_bytes(i, kind)
        if condition == 1 and data == s.last_posture:
            return
        s.posture_sent_at, s.last_posture = self.world.time, data
        self.cubes[i].notify(C.SENSOR_INFORMATION, data)

    # ------------------------------------------------------------------------- motor commands
    def _motor_reply(self, i: int, multi: bool, control_id: int, result: int) -> None:
        message = (pr.MultiTargetMoveResult if multi else pr.TargetMoveResult)(control_id, result)
        data = message.encode()
        self.cubes[i].settings.last_motor = data
        self.cubes[i].notify(C.MOTOR_CONTROL, data)

