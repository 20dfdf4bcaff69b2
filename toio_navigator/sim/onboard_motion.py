"""The cube's on-board motion controllers, as the simulated firmware runs them.

* 0x03 / 0x04 (target moves): drive to one or up to 29 target poses with the cube's own controller: steer towards
  the target (backwards when it is behind and the movement type allows), slow down by the speed profile, then turn
  to the target angle; arrived within ``arrival_distance`` units in x and y and ``arrival_angle_deg``. Each move is
  answered by exactly one 0x83 / 0x84 (reached, timeout, ID missed, invalid parameters, replaced by a later motor
  command, not supported below ``min_target_speed``, append rejected). A 0x04 with ``append`` queues behind the
  running 0x04 (one deep).
* 0x05 (acceleration move): a unicycle command -- the translational speed ramps towards its target by the given
  acceleration every 100 ms, the rotation is fixed; when both do not fit under the motor limit, the priority
  decides which one is cut.
* 0x01 / 0x02 replace whatever runs on board and set the wheels directly.

:class:`OnboardMotion` holds the running moves of every cube of a world; the virtual cube firmware hands it the
motor commands whose delay has passed and calls :meth:`OnboardMotion.step` before every world step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from toio_navigator.cube import protocol as pr
from toio_navigator.sim.world import World

#: answer of a target move: (cube index, multi-target, control id, result code)
Reply = Callable[[int, bool, int, int], None]


def wrap_deg(d: float) -> float:
    """Degrees to [-180, 180)."""
    return (d + 180.0) % 360.0 - 180.0


@dataclass(frozen=True)
class MotionParams:
    """Constants of the on-board controllers."""
    arrival_distance: float = 15.0             # 0x03/0x04: |dx| and |dy| within this ...
    arrival_angle_deg: float = 4.0             # ... and the angle within this
    default_target_timeout_s: float = 10.0     # timeout byte 0
    min_target_speed: int = 10                 # max speed below this -> result 0x06
    steering_gain: float = 4.0                 # rad/s of turn per rad of heading error


@dataclass
class _Goal:
    x: float
    y: float
    angle: float | None       # degrees, None = no final rotation
    direction: int            # 0 shortest, +1 clockwise, -1 counter-clockwise


@dataclass
class _TargetMove:
    """A running 0x03 / 0x04 (on-board controller)."""
    command: pr.MotorTarget | pr.MotorMultiTarget
    goals: list[_Goal]
    deadline: float
    start_distance: float
    rotating: bool = False
    queued: pr.MotorMultiTarget | None = None

    @property
    def multi(self) -> bool:
        return isinstance(self.command, pr.MotorMultiTarget)


@dataclass
class _AccelMove:
    """A running 0x05: translational speed ramps toward its target, rotation is fixed."""
    target_speed: float       # signed motor units
    speed: float
    step_per_s: float         # 0 = jump
    rotation_u: float         # signed "rotate" motor units (left minus right)
    rotation_priority: bool
    end: float


class OnboardMotion:
    """The running on-board moves of every cube of a world."""

    def __init__(self, world: World, params: MotionParams, reply: Reply) -> None:
        self.world, self.params, self._reply = world, params, reply
        self._targets: dict[int, _TargetMove] = {}
        self._accels: dict[int, _AccelMove] = {}

    def step(self) -> None:
        """Drive every running move one world step further (before the world moves)."""
        for i in list(self._targets):
            self._drive_target(i)
        for i in list(self._accels):
            self._drive_accel(i)

    def forget(self, i: int) -> None:
        """The cube disconnected: its moves end without an answer."""
        self._targets.pop(i, None)
        self._accels.pop(i, None)

    def apply(self, i: int, command: pr.Command) -> None:
        """Start a motor command that arrived (after the cube's command delay)."""
        w = self.world
        if isinstance(command, (pr.MotorControl, pr.MotorControlTimed)):
            self._replace_running(i)
            duration = command.duration_10ms * 0.01 if isinstance(command, pr.MotorControlTimed) else None
            w.set_wheels(i, command.left, command.right, duration or None)
        elif isinstance(command, pr.MotorAcceleration):
            previous = self._accels.get(i)
            self._replace_running(i)
            self._start_accel(i, command, previous)
        elif isinstance(command, (pr.MotorTarget, pr.MotorMultiTarget)):
            self._start_target(i, command)

    def _replace_running(self, i: int) -> None:
        running = self._targets.pop(i, None)
        if running is not None:
            self._reply(i, running.multi, running.command.control_id, pr.TargetResult.REPLACED)
            if running.queued is not None:
                self._reply(i, True, running.queued.control_id, pr.TargetResult.REPLACED)
        self._accels.pop(i, None)

    # ------------------------------------------------------------------------- 0x03 / 0x04
    def _start_target(self, i: int, command: pr.MotorTarget | pr.MotorMultiTarget) -> None:
        multi = isinstance(command, pr.MotorMultiTarget)
        targets = command.targets if multi else (command.target,)
        first = targets[0]
        keep = pr.KEEP_COORDINATE
        if first.x == keep and first.y == keep and first.angle_mode == pr.AngleMode.KEEP_HEADING:
            self._reply(i, multi, command.control_id, pr.TargetResult.INVALID_PARAMETERS)
            return
        if command.max_speed < self.params.min_target_speed:
            self._reply(i, multi, command.control_id, pr.TargetResult.NOT_SUPPORTED)
            return
        running = self._targets.get(i)
        if multi and command.append and running is not None and running.multi:
            if running.queued is not None:
                self._reply(i, True, command.control_id, pr.TargetResult.APPEND_REJECTED)
            else:
                running.queued = command
            return
        self._replace_running(i)
        w = self.world
        if not w.sensor_on_mat()[i]:
            self._reply(i, multi, command.control_id, pr.TargetResult.ID_MISSED)
            w.stop(i)
            return
        goals = self._resolve_goals(i, targets)
        timeout = command.timeout_s or self.params.default_target_timeout_s
        self._targets[i] = _TargetMove(command, goals, w.time + timeout,
                                       math.hypot(goals[0].x - w.x[i], goals[0].y - w.y[i]))

    def _resolve_goals(self, i: int, targets: tuple[pr.Target, ...]) -> list[_Goal]:
        w = self.world
        x, y, heading = float(w.x[i]), float(w.y[i]), math.degrees(w.theta[i]) % 360
        goals = []
        for target in targets:
            x = x if target.x == pr.KEEP_COORDINATE else float(target.x)
            y = y if target.y == pr.KEEP_COORDINATE else float(target.y)
            mode, a = target.angle_mode, float(target.angle)
            angle: float | None
            direction = {1: 1, 2: -1, 3: 1, 4: -1}.get(mode, 0)
            if mode in (0, 1, 2):
                angle = a % 360
            elif mode == 3:
                angle = (heading + a) % 360
            elif mode == 4:
                angle = (heading - a) % 360
            elif mode == 6:
                angle = heading
            else:
                angle = None
            if angle is not None:
                heading = angle
            goals.append(_Goal(x, y, angle, direction))
        return goals

    def _finish_target(self, i: int, move: _TargetMove, result: int) -> None:
        self.world.stop(i)
        del self._targets[i]
        self._reply(i, move.multi, move.command.control_id, result)
        if move.queued is not None:
            if result == pr.TargetResult.REACHED:
                self._start_target(i, move.queued)
            else:   # a failed move aborts what was appended to it
                self._reply(i, True, move.queued.control_id, result)

    def _drive_target(self, i: int) -> None:
        w, p, move = self.world, self.params, self._targets[i]
        if not w.sensor_on_mat()[i]:
            self._finish_target(i, move, pr.TargetResult.ID_MISSED)
            return
        if w.time >= move.deadline - 1e-9:
            self._finish_target(i, move, pr.TargetResult.TIMEOUT)
            return
        goal = move.goals[0]
        command = move.command
        limit = min(command.max_speed, w.params.max_motor)
        heading = float(w.theta[i])
        dx, dy = goal.x - w.x[i], goal.y - w.y[i]
        if not move.rotating and abs(dx) <= p.arrival_distance and abs(dy) <= p.arrival_distance:
            move.rotating = True
        if move.rotating:
            error = 0.0 if goal.angle is None else wrap_deg(goal.angle - math.degrees(heading))
            if abs(error) <= p.arrival_angle_deg:
                move.goals.pop(0)
                if not move.goals:
                    self._finish_target(i, move, pr.TargetResult.REACHED)
                    return
                move.rotating = False
                move.deadline = w.time + (command.timeout_s or p.default_target_timeout_s)
                move.start_distance = math.hypot(move.goals[0].x - w.x[i], move.goals[0].y - w.y[i])
                w.stop(i)
                return
            if goal.direction and abs(error) > 20:   # a forced direction may go the long way round
                turn = (goal.angle - math.degrees(heading)) % 360
                error = turn if goal.direction > 0 else turn - 360
            rotate = math.copysign(min(max(0.5 * abs(error), 2 * w.params.dead_zone), limit), error)
            w.set_wheels(i, rotate / 2, -rotate / 2)
            return
        distance = math.hypot(dx, dy)
        error = math.atan2(dy, dx) - heading
        error = (error + math.pi) % (2 * math.pi) - math.pi
        sign = 1.0
        if command.movement_type == 0 and abs(error) > math.pi / 2:      # drive backwards instead of turning
            sign = -1.0
            error = (error + 2 * math.pi) % (2 * math.pi) - math.pi
        progress = 1.0 - min(distance / max(move.start_distance, 1e-9), 1.0)
        floor = p.min_target_speed
        factor = {0: 1.0, 1: progress, 2: 1.0 - progress, 3: 1.0 - abs(2 * progress - 1)}[command.speed_profile]
        speed = floor + (limit - floor) * factor if command.speed_profile else float(limit)
        if command.movement_type == 2 and abs(error) > math.radians(10):
            speed = 0.0                                                 # turn on the spot first
        speed *= max(math.cos(error), 0.0)
        k = w.params.units_per_s_per_motor_unit
        rotate = p.steering_gain * error * w.params.wheel_track / k
        if speed == 0.0:
            rotate = math.copysign(max(abs(rotate), 2 * w.params.dead_zone), rotate)
        left, right = sign * speed + rotate / 2, sign * speed - rotate / 2
        scale = max(abs(left), abs(right), limit) / limit
        w.set_wheels(i, left / scale, right / scale)

    # ------------------------------------------------------------------------- 0x05
    def _start_accel(self, i: int, command: pr.MotorAcceleration, previous: _AccelMove | None) -> None:
        w = self.world
        target = -command.speed if command.backward else float(command.speed)
        rotation_u = math.radians(command.rotation_deg_s) * w.params.wheel_track / w.params.units_per_s_per_motor_unit
        chained = previous is not None and command.acceleration > 0
        end = w.time + command.duration_10ms * 0.01 if command.duration_10ms else math.inf
        self._accels[i] = _AccelMove(target, previous.speed if chained else target,
                                     command.acceleration * 10.0, rotation_u, command.rotation_priority, end)
        self._drive_accel(i)

    def _drive_accel(self, i: int) -> None:
        w, move = self.world, self._accels[i]
        if w.time >= move.end - 1e-9:
            del self._accels[i]
            w.stop(i)
            return
        if move.step_per_s:
            step = move.step_per_s * w.params.dt
            move.speed += max(-step, min(step, move.target_speed - move.speed))
        else:
            move.speed = move.target_speed
        limit = float(w.params.max_motor)
        speed, rotate = move.speed, move.rotation_u
        if abs(speed) + abs(rotate) / 2 > limit:
            if move.rotation_priority:
                rotate = math.copysign(min(abs(rotate), 2 * limit), rotate)
                speed = math.copysign(max(limit - abs(rotate) / 2, 0.0), speed)
            else:
                speed = math.copysign(min(abs(speed), limit), speed)
                rotate = math.copysign(max(2 * (limit - abs(speed)), 0.0), rotate)
        w.set_wheels(i, speed + rotate / 2, speed - rotate / 2)
