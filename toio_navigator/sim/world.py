"""N cubes on a mat: fixed-step differential-drive physics, vectorised over cubes.

Conventions are the cube's own (``toio_navigator.units``): mat units, x right, y down, heading in radians
clockwise from +x, wheel commands in motor units. The world knows nothing about bytes; the firmware of each
cube (``sim.virtual_cube``) turns writes into :meth:`World.set_wheels` calls after the command delay and turns
:meth:`World.read_position_ids` into notifications.

Model per fixed step (reference simulator facts): expire timed commands -> wheel targets (dead zone and
saturation already applied by :meth:`set_wheels`, zero while stopped / lifted / button held) -> first-order
motor lag -> unicycle integration (heading first, then position) in sub-steps short enough that no cube moves
more than half its radius -> cube-cube (discs) and cube-fence contacts resolved by projection -> collision
events -> battery drain. The world is deterministic for a given seed and command sequence.
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from toio_navigator.sim.mats import DEFAULT_MAT, FENCE_MARGIN_UNITS, Mat, fence_rect, get_mat
from toio_navigator.units import BODY_RADIUS, MOTOR_DEAD_ZONE, MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT, WHEEL_TRACK_UNITS


@dataclass(frozen=True)
class WorldParams:
    """Every constant of the model, with the defaults of docs/navigator.md §5."""
    dt: float = 0.02                       # physics step (reference simulator: 50 Hz)
    motor_tau: float = 0.04                # first-order wheel lag
    command_delay: float = 0.13            # write -> effect latency (reference prefab value)
    min_command_interval: float = 0.045    # motor writes closer than this to the last accepted one are ignored
    dead_zone: int = MOTOR_DEAD_ZONE       # |u| below this does not turn the wheel (2.0.0 firmware: 10)
    max_motor: int = MOTOR_MAX             # |u| above this saturates (2.0.0 firmware: 100)
    units_per_s_per_motor_unit: float = UNITS_PER_S_PER_MOTOR_UNIT
    wheel_track: float = WHEEL_TRACK_UNITS
    body_radius: float = BODY_RADIUS         # collision disc: half the 31.8 mm body width (~11.67 units)
    sensor_back: float = 11.1 / 1.3625     # ID sensor sits behind the reported centre ...
    sensor_left: float = 9.4 / 1.3625      # ... and to its left (docs/ble_protocol.md §3.4)
    fence_margin: float = FENCE_MARGIN_UNITS
    position_noise: float = 0.0            # std of reported x/y, units (the reference simulator has none)
    angle_noise_deg: float = 0.0
    glitch_probability: float = 0.0        # chance per reading of a one-off jump (real cubes: rare, ~185 mm)
    glitch_distance: float = 185.0 / 1.3625
    collision_speed_per_level: float = 6.0  # approach speed (units/s) per collision-threshold level [inferred]
    battery_drain_pct_per_s: float = 0.0
    max_contact_iterations: int = 30
    contact_tolerance: float = 0.01        # overlap (units) the contact solver may leave

    def __post_init__(self) -> None:
        positive = ('dt', 'units_per_s_per_motor_unit', 'wheel_track', 'body_radius')
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f'WorldParams.{name} must be > 0, got {getattr(self, name)}')
        for name in ('motor_tau', 'command_delay', 'min_command_interval', 'position_noise', 'angle_noise_deg',
                     'fence_margin', 'collision_speed_per_level', 'battery_drain_pct_per_s'):
            if not getattr(self, name) >= 0:
                raise ValueError(f'WorldParams.{name} must be >= 0, got {getattr(self, name)}')
        if not 0 <= self.glitch_probability <= 1:
            raise ValueError(f'glitch_probability must be in [0, 1], got {self.glitch_probability}')
        if not 0 <= self.dead_zone <= self.max_motor <= 255:
            raise ValueError('need 0 <= dead_zone <= max_motor <= 255')


class StepListener(Protocol):
    def before_step(self, world: 'World') -> None: ...
    def after_step(self, world: 'World') -> None: ...


@dataclass
class PositionReadings:
    """What the ID sensors of all cubes read this step (integer arrays; meaningless where not on_mat)."""
    on_mat: np.ndarray
    x: np.ndarray
    y: np.ndarray
    angle: np.ndarray
    sensor_x: np.ndarray
    sensor_y: np.ndarray


class World:
    """The mat, the fences and N cubes. Arrays are public for reading; change state through the methods."""

    def __init__(self, poses: Sequence[Sequence[float]] | np.ndarray, mat: str | Mat = DEFAULT_MAT,
                 params: WorldParams | None = None, seed: int = 0) -> None:
        poses = np.asarray(poses, dtype=float)
        if poses.ndim != 2 or poses.shape[1] != 3 or not np.all(np.isfinite(poses)):
            raise ValueError(f'poses must be finite (N, 3) rows of x, y, heading_rad; got shape {poses.shape}')
        self.params = params or WorldParams()
        self.mat = mat if isinstance(mat, Mat) else get_mat(mat)
        self.fence = fence_rect(self.mat, self.params.fence_margin)
        self.rng = np.random.default_rng(seed)
        n = len(poses)
        self.n = n
        self.time = 0.0
        self.x, self.y = poses[:, 0].copy(), poses[:, 1].copy()
        self.theta = np.mod(poses[:, 2], 2 * math.pi)
        self.wheel_speed = np.zeros((n, 2))            # actual wheel speeds, units/s (signed)
        self.wheel_command = np.zeros((n, 2))          # applied command after dead zone / saturation, motor units
        self.command_end = np.full(n, np.inf)          # when the running timed command stops the wheels
        self.driving_enabled = np.ones(n, dtype=bool)  # the firmware clears it while disconnected / powered off
        self.lifted = np.zeros(n, dtype=bool)
        self.button = np.zeros(n, dtype=bool)
        self.posture = np.ones(n, dtype=np.int8)       # 1 = top up (on its wheels)
        self.battery = np.full(n, 100.0)
        self.collision_level = np.full(n, 7, dtype=np.int8)
        self.collided = np.zeros(n, dtype=bool)        # a collision was detected in the last step
        self._contacts: set[tuple[int, int]] = set()  # pairs touching after the last sub-step
        self._fence_contact = np.zeros(n, dtype=bool)
        self._accumulated = 0.0
        self._listeners: list[StepListener] = []
        self.max_overlap = 0.0                         # deepest cube-cube overlap left after any step

    # ------------------------------------------------------------------------------------------ commands
    def set_wheels(self, index: int, left: float, right: float, duration_s: float | None = None) -> None:
        """Apply a wheel command now (the firmware calls this after the command delay).

        Speeds in motor units, signed; |u| < dead zone -> 0, |u| > max -> max. duration None or 0 = no limit.
        """
        self._check_index(index)
        command = np.array([left, right], dtype=float)
        if not np.all(np.isfinite(command)):
            raise ValueError(f'wheel command must be finite, got {left}, {right}')
        if duration_s is not None and not duration_s >= 0:
            raise ValueError(f'duration must be None or >= 0 s, got {duration_s}')
        command = np.clip(command, -self.params.max_motor, self.params.max_motor)
        command[np.abs(command) < self.params.dead_zone] = 0.0
        self.wheel_command[index] = command
        self.command_end[index] = self.time + duration_s if duration_s else np.inf

    def stop(self, index: int) -> None:
        self.set_wheels(index, 0.0, 0.0)

    def place(self, index: int, x: float, y: float, theta: float) -> None:
        """Put a cube down at a pose (teleport), at rest, on its wheels."""
        self._check_index(index)
        if not all(map(math.isfinite, (x, y, theta))):
            raise ValueError('pose must be finite')
        self.x[index], self.y[index], self.theta[index] = x, y, theta % (2 * math.pi)
        self.wheel_speed[index] = 0.0
        self.lifted[index] = False
        self.posture[index] = 1

    def lift(self, index: int) -> None:
        self._check_index(index)
        self.lifted[index] = True
        self.wheel_speed[index] = 0.0

    def press_button(self, index: int, pressed: bool = True) -> None:
        self._check_index(index)
        self.button[index] = pressed

    def set_battery(self, index: int, percent: float) -> None:
        self._check_index(index)
        if not 0 <= percent <= 100:
            raise ValueError(f'battery percent must be 0..100, got {percent}')
        self.battery[index] = percent

    def set_posture(self, index: int, posture: int) -> None:
        """1 top up, 2 bottom up, 3 rear up, 4 front up, 5 right side up, 6 left side up."""
        self._check_index(index)
        if posture not in range(1, 7):
            raise ValueError(f'posture must be 1..6, got {posture}')
        self.posture[index] = posture

    def attach(self, listener: StepListener) -> None:
        """Call listener.before_step(world) / after_step(world) around every physics step."""
        self._listeners.append(listener)

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.n:
            raise IndexError(f'no cube {index} (world has {self.n})')

    # ------------------------------------------------------------------------------------------ stepping
    def step(self, duration: float | None = None) -> int:
        """Advance by ``duration`` seconds of simulated time (default: one physics step) in fixed steps.

        A remainder shorter than a step is carried over to the next call. Returns the number of steps run.
        """
        if duration is None:
            duration = self.params.dt
        if not duration >= 0 or not math.isfinite(duration):
            raise ValueError(f'duration must be a finite number >= 0, got {duration}')
        self._accumulated += duration
        steps = int(self._accumulated / self.params.dt + 1e-9)
        self._accumulated -= steps * self.params.dt
        for _ in range(steps):
            for listener in self._listeners:
                listener.before_step(self)
            self._physics_step()
            for listener in self._listeners:
                listener.after_step(self)
        return steps

    def _physics_step(self) -> None:
        p, dt = self.params, self.params.dt
        expired = self.time >= self.command_end - 1e-9
        if expired.any():
            self.wheel_command[expired] = 0.0
            self.command_end[expired] = np.inf
        can_drive = self.driving_enabled & ~self.button & ~self.lifted & (self.battery > 0)
        target = self.wheel_command * p.units_per_s_per_motor_unit * can_drive[:, None]
        self.wheel_speed += (target - self.wheel_speed) * (dt / max(p.motor_tau, dt))
        # the exponential lag never reaches zero; a real wheel does stop
        self.wheel_speed[(target == 0) & (np.abs(self.wheel_speed) < 0.05)] = 0.0
        if self.lifted.any():
            self.wheel_speed[self.lifted] = 0.0   # wheels in the air move nothing

        v = self.wheel_speed.mean(axis=1)
        omega = (self.wheel_speed[:, 0] - self.wheel_speed[:, 1]) / p.wheel_track
        fastest = float(np.max(np.abs(self.wheel_speed), initial=0.0))
        substeps = max(1, math.ceil(fastest * dt / (0.5 * p.body_radius)))
        h = dt / substeps
        self.collided[:] = False
        for _ in range(substeps):
            self.theta = np.mod(self.theta + omega * h, 2 * math.pi)
            self.x += np.cos(self.theta) * v * h
            self.y += np.sin(self.theta) * v * h
            self._resolve_contacts(v)
        self.battery = np.maximum(self.battery - p.battery_drain_pct_per_s * dt, 0.0)
        self.time += dt

    def _resolve_contacts(self, v: np.ndarray) -> None:
        """Push overlapping discs apart and keep them inside the fences; flag new hard contacts as collisions.

        Candidate pairs (closer than the diameter plus a slack) are found once with an N x N distance matrix;
        the projection iterations then only touch those pairs, which keeps 100 cubes cheap.
        """
        p, r = self.params, self.params.body_radius
        x0, y0, x1, y1 = self.fence
        lo_x, lo_y, hi_x, hi_y = x0 + r, y0 + r, x1 - r, y1 - r
        at_fence = (self.x < lo_x) | (self.x > hi_x) | (self.y < lo_y) | (self.y > hi_y)
        np.clip(self.x, lo_x, hi_x, out=self.x)
        np.clip(self.y, lo_y, hi_y, out=self.y)
        dx = self.x - self.x[:, None]
        dy = self.y - self.y[:, None]
        i, j = np.nonzero(dx * dx + dy * dy < (2 * r + 2.0) ** 2)
        upper = i < j
        i, j = i[upper], j[upper]
        if len(i) and self.lifted.any():
            active = ~self.lifted[i] & ~self.lifted[j]
            i, j = i[active], j[active]
        touching: set[tuple[int, int]] = set()
        if len(i):
            touched = np.zeros(len(i), dtype=bool)
            for _ in range(p.max_contact_iterations):
                pdx, pdy = self.x[j] - self.x[i], self.y[j] - self.y[i]
                dist = np.hypot(pdx, pdy)
                overlap = 2 * r - dist
                touched |= overlap > 0
                close = overlap > p.contact_tolerance
                if not close.any():
                    break
                ci, cj, cd = i[close], j[close], dist[close]
                # coincident centres: separate along x, deterministically
                safe = cd > 1e-9
                nx = np.where(safe, pdx[close] / np.where(safe, cd, 1.0), 1.0)
                ny = np.where(safe, pdy[close] / np.where(safe, cd, 1.0), 0.0)
                half = 0.5 * overlap[close]
                # each cube of a pair gives way by half; the fence clamp below pushes back whoever crossed it,
                # and the next iteration hands that push on (projection, iterated to contact_tolerance)
                np.add.at(self.x, ci, -nx * half)
                np.add.at(self.y, ci, -ny * half)
                np.add.at(self.x, cj, nx * half)
                np.add.at(self.y, cj, ny * half)
                at_fence |= (self.x < lo_x) | (self.x > hi_x) | (self.y < lo_y) | (self.y > hi_y)
                np.clip(self.x, lo_x, hi_x, out=self.x)
                np.clip(self.y, lo_y, hi_y, out=self.y)
            residual = 2 * r - np.hypot(self.x[j] - self.x[i], self.y[j] - self.y[i])
            self.max_overlap = max(self.max_overlap, float(residual.max()))
            touching = set(zip(i[touched].tolist(), j[touched].tolist()))
        if at_fence.any() or self._fence_contact.any():
            self._fence_hits(at_fence, v)
        if touching or self._contacts:
            self._collision_events(touching, v)

    def _fence_hits(self, at_fence: np.ndarray, v: np.ndarray) -> None:
        new = at_fence & ~self._fence_contact
        threshold = self.collision_level * self.params.collision_speed_per_level
        self.collided |= new & (np.abs(v) >= threshold)
        self._fence_contact = at_fence

    def _collision_events(self, touching: set[tuple[int, int]], v: np.ndarray) -> None:
        new = touching - self._contacts
        self._contacts = touching
        if not new:
            return
        i, j = np.array(sorted(new)).T
        vx, vy = np.cos(self.theta) * v, np.sin(self.theta) * v
        dx, dy = self.x[j] - self.x[i], self.y[j] - self.y[i]
        dist = np.maximum(np.hypot(dx, dy), 1e-9)
        approach = ((vx[i] - vx[j]) * dx + (vy[i] - vy[j]) * dy) / dist   # closing speed, units/s
        per_level = self.params.collision_speed_per_level
        self.collided[i[approach >= self.collision_level[i] * per_level]] = True
        self.collided[j[approach >= self.collision_level[j] * per_level]] = True

    # ------------------------------------------------------------------------------------------ sensing
    @property
    def poses(self) -> np.ndarray:
        """(N, 3): x, y, heading (rad, clockwise, [0, 2pi)) -- the true poses."""
        return np.stack([self.x, self.y, self.theta], axis=1)

    def sensor_points(self) -> tuple[np.ndarray, np.ndarray]:
        """Where the ID sensors are (true, unquantised)."""
        p = self.params
        c, s = np.cos(self.theta), np.sin(self.theta)
        # forward = (c, s); the cube's left on a y-down mat = (s, -c)
        return self.x - p.sensor_back * c + p.sensor_left * s, self.y - p.sensor_back * s - p.sensor_left * c

    def sensor_on_mat(self, points: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Which cubes' ID sensors see the coded area (not lifted, on their wheels, sensor over the mat)."""
        m = self.mat
        sx, sy = self.sensor_points() if points is None else points
        return ((sx >= m.x_min) & (sx <= m.x_max) & (sy >= m.y_min) & (sy <= m.y_max)
                & ~self.lifted & (self.posture == 1))

    def read_position_ids(self) -> PositionReadings:
        """Quantised Position ID of every cube as the firmware would report it (noise drawn only if enabled)."""
        p, n = self.params, self.n
        c, s = np.cos(self.theta), np.sin(self.theta)
        # rows: x, y, sensor x, sensor y, heading in degrees -- quantised together below
        raw = np.empty((5, n))
        raw[0], raw[1] = self.x, self.y
        # forward = (c, s); the cube's left on a y-down mat = (s, -c)
        raw[2] = self.x - p.sensor_back * c + p.sensor_left * s
        raw[3] = self.y - p.sensor_back * s - p.sensor_left * c
        on_mat = self.sensor_on_mat((raw[2], raw[3]))
        np.degrees(self.theta, out=raw[4])
        if p.position_noise > 0:
            noise = self.rng.normal(0.0, p.position_noise, size=(2, n))
            raw[0:2] += noise     # the centre and the sensor point are read off the same shifted pattern
            raw[2:4] += noise
        if p.angle_noise_deg > 0:
            raw[4] += self.rng.normal(0.0, p.angle_noise_deg, size=n)
        if p.glitch_probability > 0:
            glitch = self.rng.random(n) < p.glitch_probability
            direction = self.rng.uniform(0, 2 * math.pi, size=n)
            jump = p.glitch_distance * glitch
            raw[[0, 2]] += np.cos(direction) * jump
            raw[[1, 3]] += np.sin(direction) * jump
        q = np.rint(raw).astype(np.int64)
        np.clip(q[:4], 0, 0xFFFF, out=q[:4])
        q[4] %= 360
        return PositionReadings(on_mat, q[0], q[1], q[4], q[2], q[3])

    def reported_wheel_speeds(self) -> np.ndarray:
        """(N, 2) unsigned wheel speeds in motor units, as the 0xE0 notification reports them."""
        units = np.rint(np.abs(self.wheel_speed) / self.params.units_per_s_per_motor_unit)
        return np.minimum(units, 255).astype(np.int64)


def grid_poses(n: int, mat: str | Mat = DEFAULT_MAT, spacing: float = 40.0, heading: float = 0.0) -> np.ndarray:
    """n poses on a square grid centred on the mat, ``spacing`` units apart (for demos and benchmarks)."""
    m = mat if isinstance(mat, Mat) else get_mat(mat)
    side = max(1, math.ceil(math.sqrt(n)))
    if (side - 1) * spacing > min(m.size):
        raise ValueError(f'{n} cubes {spacing} units apart do not fit on mat {m.name}')
    cx, cy = m.centre
    k = np.arange(n)
    offset = (side - 1) * spacing / 2
    return np.stack([cx - offset + (k % side) * spacing, cy - offset + (k // side) * spacing,
                     np.full(n, heading)], axis=1)


async def run_realtime(world: World, speed: float = 1.0, stop: asyncio.Event | None = None,
                       tick_s: float = 0.01, max_catch_up_s: float = 0.25) -> None:
    """Advance the world by wall-clock time x ``speed`` until ``stop`` is set (or the task is cancelled).

    For the simulated transport: notifications then arrive at the pace a real cube sends them. A late tick
    advances at most ``max_catch_up_s`` of simulated time, so a stalled loop does not make cubes jump.
    """
    if speed <= 0 or tick_s <= 0:
        raise ValueError('speed and tick_s must be > 0')
    loop = asyncio.get_running_loop()
    last = loop.time()
    while stop is None or not stop.is_set():
        await asyncio.sleep(tick_s)
        now = loop.time()
        world.step(min((now - last) * speed, max_catch_up_s))
        last = now
