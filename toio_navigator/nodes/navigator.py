"""The navigator node: every cube's state in, one swarm step per tick, waypoints and motor commands out.

Topics (names relative, each cube's in its namespace ``/<cube>``):
  in   ``<cube>/state`` CubeState, ``<cube>/goal`` NavGoal
  out  ``<cube>/nav_result`` NavResult, ``<cube>/motor_cmd`` MotorCommand, ``navigator/markers`` MarkerArray
Services: ``navigator/set_goal`` (SetGoal: accepted + reason), ``navigator/goal_status`` (GoalStatus).

The node is a thin shell around :class:`SwarmController` (no rclpy inside), which gathers the latest state of
every cube into arrays, runs the core's swarm step (HLAvoid/Boids modes) or a registry planner once for all cubes,
and turns waypoint + speed into wheel commands with a duration, so a cube whose navigator or link dies stops.
A cube whose state is older than ``stale_timeout_s`` (or whose link is down) is stopped and stays in the swarm
as a static obstacle; so is a cube off the mat. Malformed goals are rejected with a logged reason.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, fields, replace

import numpy as np

from toio_navigator.navigation.params import CubeHandleParams, Fixes, NavigatorParams
from toio_navigator.units import (FRAME_ID, METRES_PER_UNIT, MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT,
                                  WHEEL_TRACK_UNITS, mat_to_ros_xy, mat_to_ros_yaw, yaw_to_quaternion)

MODES = ('AVOID', 'BOIDS', 'BOIDS_AVOID')
HLAVOID = 'hlavoid'
LINK_CONNECTED = 2          # CubeState.LINK_CONNECTED (kept numeric so the controller needs no message import)
TOWARDS, AWAY, STOP = 0, 1, 2
BODY_RADIUS = 0.0318 / 2 / METRES_PER_UNIT   # half the 31.8 mm body, mat units (contact below twice this)


def planner_names() -> list[str]:
    from toio_navigator.navigation.planners import PLANNERS
    return [HLAVOID] + sorted(set(PLANNERS) - {HLAVOID})


# ------------------------------------------------------------------------------------------------ settings

@dataclass
class NavigatorSettings:
    """Everything the controller needs besides the reference parameter dataclasses."""
    cubes: tuple[str, ...] = ()
    rate_hz: float = 20.0
    mode: str = 'AVOID'
    planner: str = HLAVOID
    stale_timeout_s: float = 0.5
    mat_rect: tuple[float, float, float, float] = (45.0, 45.0, 455.0, 455.0)   # x_min, y_min, x_max, y_max
    walls: tuple[float, ...] = ()             # x1, y1, x2, y2, margin per wall (navigator walls, mat units)
    border: tuple[float, ...] = ()            # width, x1, x2, y1, y2: the reference's add_border; () = none
    max_speed: float = 70.0                   # motor units, navi_to_target default
    tolerance: float = 20.0                   # goal "reached" radius, mat units (navi_to_target default)
    handle_tolerance: float = 8.0             # move_to_target's own reached radius (hard-coded 8 in the reference)
    rotate_time_ms: float = 250.0             # move_to_target's rotateTime; also the command duration
    stop_duration_ms: int = 100               # duration of a stop command
    command_duration_ms: int = 250            # duration carried by every driving command
    use_pred: bool = False                    # navigator entities at the pose predicted after the command lag
    # dead-lock breaker (fact sheet §7.2; the reference has none): a cube with a goal that has moved less than
    # stuck_distance in stuck_time_s side-steps to its right for sidestep_time_s (then left, then right, ...)
    stuck_time_s: float = 1.0                 # 0 = never side-step (pure reference behaviour)
    stuck_distance: float = 6.0
    sidestep_distance: float = 40.0
    sidestep_time_s: float = 0.8

    def check(self) -> None:
        """ValueError naming the first bad setting."""
        if not self.cubes:
            raise ValueError('cubes: the list of cube names is empty')
        if len(set(self.cubes)) != len(self.cubes):
            raise ValueError(f'cubes: duplicate names in {list(self.cubes)}')
        for c in self.cubes:
            if not c or not c.replace('_', 'a').isalnum() or c[0].isdigit():
                raise ValueError(f'cubes: {c!r} is not a valid ROS name (letters, digits, _; not starting with a '
                                 'digit)')
        if self.mode not in MODES:
            raise ValueError(f'mode: {self.mode!r} is not one of {", ".join(MODES)}')
        if self.planner not in planner_names():
            raise ValueError(f'planner: {self.planner!r} is not one of {", ".join(planner_names())}')
        for name in ('rate_hz', 'stale_timeout_s', 'max_speed', 'tolerance', 'rotate_time_ms'):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f'{name}: must be a finite number > 0, got {v}')
        if self.max_speed > MOTOR_MAX:
            raise ValueError(f'max_speed: must be <= {MOTOR_MAX} motor units, got {self.max_speed}')
        for name in ('stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s'):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f'{name}: must be a finite number >= 0, got {v}')
        for name in ('command_duration_ms', 'stop_duration_ms'):
            v = getattr(self, name)
            if not 10 <= v <= 2550:
                raise ValueError(f'{name}: must be within 10..2550 ms, got {v}')
        r = self.mat_rect
        if len(r) != 4 or not all(math.isfinite(v) for v in r) or not (r[0] < r[2] and r[1] < r[3]):
            raise ValueError(f'mat_rect: need [x_min, y_min, x_max, y_max] with min < max, got {list(r)}')
        if len(self.walls) % 5 or not all(math.isfinite(v) for v in self.walls):
            raise ValueError(f'walls: need finite numbers in groups of 5 (x1, y1, x2, y2, margin), got '
                             f'{len(self.walls)} numbers')
        if self.border and (len(self.border) != 5 or not all(math.isfinite(v) for v in self.border)):
            raise ValueError(f'border: need [] or [width, x1, x2, y1, y2], got {list(self.border)}')

    def wall_rows(self) -> np.ndarray:
        rows = list(np.asarray(self.walls, dtype=float).reshape(-1, 5))
        if self.border:
            w, x1, x2, y1, y2 = self.border
            rows += [(x1, y1, x1, y2, w), (x2, y1, x2, y2, w), (x1, y1, x2, y1, w), (x1, y2, x2, y2, w)]
        return np.asarray(rows, dtype=float).reshape(-1, 5)


# ------------------------------------------------------------------------------------------------ goals

@dataclass
class Goal:
    goal_id: int
    x: float
    y: float
    direction: int
    max_speed: float          # motor units; 0 = default
    tolerance: float          # mat units; 0 = default
    reached: bool = False


def check_goal(cube: str, msg_cube: str, x: float, y: float, direction: int, max_speed: float, tolerance: float,
               cubes: tuple[str, ...], mat_rect: tuple[float, float, float, float]) -> str:
    """'' if the goal is acceptable, else the reason it is rejected."""
    if cube not in cubes:
        return f'unknown cube {cube!r} (known: {", ".join(cubes)})'
    if msg_cube not in ('', cube):
        return f'goal.cube {msg_cube!r} does not match the topic namespace {cube!r}'
    if direction not in (TOWARDS, AWAY, STOP):
        return f'direction {direction} is not TOWARDS (0), AWAY (1) or STOP (2)'
    if direction == STOP:
        return ''
    if not (math.isfinite(x) and math.isfinite(y)):
        return f'goal position ({x}, {y}) is not finite'
    x0, y0, x1, y1 = mat_rect
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        return f'goal ({x:.1f}, {y:.1f}) is off the mat (x {x0:g}..{x1:g}, y {y0:g}..{y1:g})'
    if not (math.isfinite(max_speed) and 0 <= max_speed <= MOTOR_MAX):
        return f'max_speed {max_speed} is not within 0..{MOTOR_MAX} motor units'
    if not (math.isfinite(tolerance) and tolerance >= 0):
        return f'tolerance {tolerance} is not a finite number >= 0'
    return ''


# ------------------------------------------------------------------------------------------------ motion

def _wrap(a):
    return (np.asarray(a) + math.pi) % (2 * math.pi) - math.pi


def predict_pose(x, y, th, left, right, active_s, lag, k: float, track: float):
    """Pose after ``lag`` seconds (scalar or per cube) of the last wheel command (motor units), which stays on for
    ``active_s`` more seconds: the handle's view of where the next command will take effect (fact sheet §4.2,
    without the acceleration ramp). Constant wheel speeds drive an exact arc, so no time stepping is needed."""
    x, y, th = (np.array(v, dtype=float) for v in (x, y, th))
    vl, vr = np.asarray(left, float) * k, np.asarray(right, float) * k
    tau = np.minimum(np.broadcast_to(np.asarray(lag, dtype=float), x.shape), np.maximum(active_s, 0.0))
    v, w = 0.5 * (vl + vr), (vl - vr) / track
    turn = w * tau
    straight = np.abs(turn) < 1e-9
    safe_w = np.where(straight, 1.0, w)
    dx = np.where(straight, v * tau * np.cos(th), v / safe_w * (np.sin(th + turn) - np.sin(th)))
    dy = np.where(straight, v * tau * np.sin(th), -v / safe_w * (np.cos(th + turn) - np.cos(th)))
    return x + dx, y + dy, _wrap(th + turn)


def move_to_target(x, y, th, px, py, pth, tx, ty, max_spd, hp: CubeHandleParams, rotate_time_s: float,
                   tolerance: float):
    """CubeHandle.move_to_target (fact sheet §4.5) for N cubes: (left, right, reached) in motor units.

    (x, y, th) observed pose, (px, py, pth) predicted pose, (tx, ty) target, max_spd (N,) motor units.
    Then the handle's dead-zone shift and a saturation that keeps the rotation (§4.4 steps 2-3, §7.2)."""
    k, w, d_zone, u_max = hp.k, hp.wheel_track, float(hp.dead_zone), float(hp.max_spd)
    tau = rotate_time_s
    d = np.hypot(tx - px, ty - py)
    dhat = _wrap(np.arctan2(ty - py, tx - px) - pth)
    delta = _wrap(np.arctan2(ty - y, tx - x) - th)
    reached = np.hypot(tx - x, ty - y) < tolerance
    v = np.asarray(max_spd, dtype=float)
    e_deg = 110.0 * np.minimum(1.0, np.maximum(d, 20.0) / np.maximum(1.0, v) / k / 1.5 / tau)
    tr = v * np.clip(1.0 - (np.degrees(np.abs(delta)) - 10.0) / e_deg, 0.0, 1.0)
    vd = np.maximum(v, d_zone)
    tr = tr * np.clip(d, d_zone / 2, vd / 2) / (vd / 2)
    rot = dhat / tau * w / k
    # the handle's border (fact sheet §4.4 step 5, quick outward test): a cube at or beyond the border rectangle
    # whose next 50 ms would take it further out on that axis only turns
    (bx0, bx1), (by0, by1) = hp.border_x, hp.border_y
    cx, cy, rx, ry = (bx0 + bx1) / 2, (by0 + by1) / 2, (bx1 - bx0) / 2, (by1 - by0) / 2
    x1 = px + tr * k * hp.dt * np.cos(pth)
    y1 = py + tr * k * hp.dt * np.sin(pth)
    outside = (np.abs(px - cx) >= rx) | (np.abs(py - cy) >= ry)
    outward = ((np.abs(x1 - cx) >= rx) & (np.abs(x1 - cx) >= np.abs(px - cx))) | \
              ((np.abs(y1 - cy) >= ry) & (np.abs(y1 - cy) >= np.abs(py - cy)))
    tr = np.where(outside & outward, 0.0, tr)
    mu = np.abs(tr) / u_max
    rot = rot * (mu * np.abs(tr) / 50.0 + (1.0 - mu))
    left, right = tr + rot / 2, tr - rot / 2
    left, right = dead_zone_shift(left, right, d_zone)
    left, right = saturate(left, right, u_max)
    left = np.where(reached, 0.0, left)
    right = np.where(reached, 0.0, right)
    return left, right, reached


def dead_zone_shift(left, right, d_zone: float):
    """Shift both wheels by the same amount so each is 0 or at least the dead zone, keeping left - right
    (the common cases of fact sheet §4.4 step 2; |left - right| < dead zone with opposite signs keeps the turn)."""
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    total = left + right
    both_ok = ((np.abs(left) >= d_zone) | (left == 0)) & ((np.abs(right) >= d_zone) | (right == 0))
    up = np.where(lo < d_zone / 2, -lo, d_zone - lo)      # forward: lift the slower wheel to 0 or +D
    down = np.where(hi > -d_zone / 2, -hi, -d_zone - hi)  # backward: lower the faster wheel to 0 or -D
    narrow = (hi - lo) < d_zone
    up = np.where(narrow, d_zone - lo, up)
    down = np.where(narrow, -d_zone - hi, down)
    shift = np.where(total > 0, up, np.where(total < 0, down, 0.0))
    shift = np.where(both_ok, 0.0, shift)
    return left + shift, right + shift


def saturate(left, right, u_max: float):
    """Shift both wheels by the excess over ±u_max so the turn is kept; clip if the turn alone is too big."""
    over = np.maximum(np.maximum(left, right) - u_max, 0.0)
    under = np.minimum(np.minimum(left, right) + u_max, 0.0)
    left, right = left - over - under, right - over - under
    return np.clip(left, -u_max, u_max), np.clip(right, -u_max, u_max)


# ------------------------------------------------------------------------------------------------ controller

@dataclass
class CubeCommand:
    """What the controller decided for one cube in one tick."""
    cube: str
    goal_id: int
    active: bool
    waypoint: tuple[float, float]
    speed_limit: float        # motor units
    speed_ratio: float
    collision: bool
    reached: bool
    motor: tuple[int, int, int] | None   # (left, right, duration_ms); None = send nothing
    stale: bool
    on_mat: bool


class SwarmController:
    """The navigator's logic without ROS: latest states, goals, one swarm step per tick."""

    def __init__(self, settings: NavigatorSettings, params: NavigatorParams | None = None,
                 handle: CubeHandleParams | None = None, clock=time.monotonic) -> None:
        settings.check()
        self.settings = settings
        self.params = params or NavigatorParams()
        self.handle = handle or CubeHandleParams()
        self.clock = clock
        n = len(settings.cubes)
        self.index = {c: i for i, c in enumerate(settings.cubes)}
        self.pose = np.full((n, 3), np.nan)            # x, y, theta (mat)
        self.on_mat = np.zeros(n, dtype=bool)
        self.link_ok = np.zeros(n, dtype=bool)
        self.received = np.full(n, -np.inf)            # clock time of the last state
        self.age = np.zeros(n)                         # smoothed age of the states on arrival, s
        self.frozen = np.zeros((n, 3))                 # believed final pose of a cube that went silent
        self.frozen_valid = np.zeros(n, dtype=bool)
        self.frozen_extra = np.zeros(n)                # margin added to a silent cube (uncertain stop point)
        self.goals: list[Goal | None] = [None] * n
        self.last_cmd = np.zeros((n, 2))               # last wheel command sent, motor units
        self.last_cmd_until = np.full(n, -np.inf)      # clock time the last command expires
        self.walls = settings.wall_rows()
        self.planner = None
        self.last_rays: tuple[np.ndarray, np.ndarray] | None = None   # (N, S) directions and free distances
        self.last_waypoints = np.full((n, 2), np.nan)
        self.last_collision = np.zeros(n, dtype=bool)
        self.last_goal_id = [0] * n
        self.anchor = np.full((n, 2), np.nan)          # where the cube was when it last made progress
        self.anchor_time = np.zeros(n)
        self.sidestep_until = np.full(n, -np.inf)
        self.sidestep_goal = np.zeros((n, 2))
        self.sidestep_sign = np.ones(n)                # +1 = to the right of the goal direction (mat y down)
        self.sidesteps = np.zeros(n, dtype=int)
        self.stop_requested: set[int] = set()
        self.set_planner(settings.planner)

    # ---- inputs
    def set_planner(self, name: str) -> None:
        if name == HLAVOID:
            self.planner = None
        else:
            from toio_navigator.navigation.planners import make_planner
            planner = make_planner(name)
            planner.reset(len(self.settings.cubes), seed=0)
            self.planner = planner
        self.settings.planner = name

    def update_state(self, cube: str, x: float, y: float, theta: float, on_mat: bool, link_state: int,
                     age: float = 0.0) -> None:
        """The latest state of a cube; ``age``: how old the reading already was on arrival (s), which the
        prediction adds to the command lag."""
        i = self.index.get(cube)
        if i is None:
            return
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(theta)):
            return                                     # a garbage reading never enters the arrays
        if math.isfinite(age) and 0.0 <= age <= 1.0:
            self.age[i] = 0.8 * self.age[i] + 0.2 * age   # smoothed: one late message must not jerk the plan
        self.pose[i] = (x, y, theta)
        x0, y0, x1, y1 = self.settings.mat_rect
        self.on_mat[i] = bool(on_mat) and x0 <= x <= x1 and y0 <= y <= y1
        self.link_ok[i] = link_state == LINK_CONNECTED
        self.received[i] = self.clock()

    def set_goal(self, cube: str, goal_id: int, x: float, y: float, direction: int, max_speed: float,
                 tolerance: float, msg_cube: str = '') -> str:
        """Apply a goal; returns '' or the reason it was rejected (then nothing changed)."""
        reason = check_goal(cube, msg_cube, x, y, direction, max_speed, tolerance, self.settings.cubes,
                            self.settings.mat_rect)
        if reason:
            return reason
        if direction == AWAY and self.settings.planner != HLAVOID:
            return f'direction AWAY needs planner {HLAVOID!r} (current: {self.settings.planner!r})'
        i = self.index[cube]
        self.last_goal_id[i] = int(goal_id)
        self.goals[i] = None if direction == STOP else Goal(int(goal_id), float(x), float(y), int(direction),
                                                              float(max_speed), float(tolerance))
        if direction == STOP:
            self.stop_requested.add(i)
        return ''

    # ---- status
    def live(self, now: float | None = None) -> np.ndarray:
        now = self.clock() if now is None else now
        return (now - self.received <= self.settings.stale_timeout_s) & self.link_ok

    def status(self, cube: str) -> dict | None:
        i = self.index.get(cube)
        if i is None:
            return None
        g = self.goals[i]
        live = bool(self.live()[i])
        dist = float(np.hypot(g.x - self.pose[i, 0], g.y - self.pose[i, 1])) if g else math.nan
        return dict(goal_id=self.last_goal_id[i],
                    active=g is not None and not g.reached, reached=bool(g and g.reached), stale=not live,
                    on_mat=bool(self.on_mat[i]), distance=dist)

    # ---- one tick
    def step(self, now: float | None = None) -> list[CubeCommand]:
        s, hp = self.settings, self.handle
        now = self.clock() if now is None else now
        n = len(s.cubes)
        seen = np.isfinite(self.pose[:, 0])
        live = self.live(now) & seen
        ok = live & self.on_mat                       # controllable this tick
        pose = self._believed_poses(live, seen)
        pos = np.where(seen[:, None], pose[:, :2], np.array([-1e4, -1e4]))  # unseen cubes: far away
        th = np.where(seen, pose[:, 2], 0.0)
        # velocities from the command model (the reference's entity velocities); not for stopped cubes
        running = ok & (now < self.last_cmd_until)
        spd_l = np.where(running, self.last_cmd[:, 0], 0.0) * hp.k
        spd_r = np.where(running, self.last_cmd[:, 1], 0.0) * hp.k
        spd = 0.5 * (spd_l + spd_r)
        vel = np.column_stack([np.cos(th) * spd, np.sin(th) * spd])
        w = (spd_l - spd_r) / hp.wheel_track
        has_goal = np.array([g is not None for g in self.goals])
        goal_xy = np.array([(g.x, g.y) if g else (p[0], p[1]) for g, p in zip(self.goals, pos)], dtype=float)
        cap = np.array([g.max_speed if g and g.max_speed > 0 else s.max_speed for g in self.goals])
        tol = np.array([g.tolerance if g and g.tolerance > 0 else s.tolerance for g in self.goals])
        away = np.array([bool(g and g.direction == AWAY) for g in self.goals])
        active = ok & has_goal
        goal_xy = self._unstick(now, pos, goal_xy, active & ~away)

        rest = np.where(ok, np.maximum(self.last_cmd_until - now, 0.0), 0.0)
        px, py, pth = predict_pose(pos[:, 0], pos[:, 1], th, self.last_cmd[:, 0], self.last_cmd[:, 1], rest,
                                   hp.lag + self.age, hp.k, hp.wheel_track)
        if s.use_pred:        # the reference's usePred: every entity where the next command will find it
            ent_pos, ent_th = np.column_stack([px, py]), pth
            vel = np.column_stack([np.cos(pth) * spd, np.sin(pth) * spd])
        else:
            ent_pos, ent_th = pos, th
        waypoint, limit, ratio, collision = self._plan(ent_pos, ent_th, spd, vel, w, goal_xy, cap, away, active, ok)
        speed = np.minimum(limit, cap * ratio)                 # navi_to_target: min(speedLimit, maxSpd·ratio)
        speed = np.clip(np.nan_to_num(speed, nan=0.0, posinf=MOTOR_MAX), 0.0, MOTOR_MAX)
        left, right, _mv_reached = move_to_target(pos[:, 0], pos[:, 1], th, px, py, pth, waypoint[:, 0],
                                                  waypoint[:, 1], speed, hp, s.rotate_time_ms / 1000.0,
                                                  s.handle_tolerance)
        real_goal = np.array([(g.x, g.y) if g else (p[0], p[1]) for g, p in zip(self.goals, pos)], dtype=float)
        at_goal = np.hypot(real_goal[:, 0] - pos[:, 0], real_goal[:, 1] - pos[:, 1]) <= tol
        reached = active & ~away & at_goal
        stop_now, self.stop_requested = self.stop_requested, set()
        out: list[CubeCommand] = []
        for i, cube in enumerate(s.cubes):
            g = self.goals[i]
            if g is not None and reached[i]:
                g.reached = True
            motor: tuple[int, int, int] | None = None
            if active[i] and not reached[i]:
                motor = (int(round(left[i])), int(round(right[i])), int(s.command_duration_ms))
            elif (active[i] and reached[i]) or (seen[i] and not ok[i] and has_goal[i]) or i in stop_now:
                motor = (0, 0, int(s.stop_duration_ms))   # hold at the goal; stop a stale / off-mat cube
            if motor is not None:
                self.last_cmd[i] = motor[:2]
                self.last_cmd_until[i] = now + motor[2] / 1000.0
            out.append(CubeCommand(cube, g.goal_id if g else 0, bool(active[i]),
                                   (float(waypoint[i, 0]), float(waypoint[i, 1])), float(speed[i]), float(ratio[i]),
                                   bool(collision[i]), bool(g.reached) if g else False, motor, not bool(live[i]),
                                   bool(self.on_mat[i])))
        self.last_waypoints = waypoint
        self.last_collision = collision
        return out

    def _believed_poses(self, live: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """Poses to plan with: the latest state of a live cube; for a cube gone silent, where its last command
        took it after its last state (a dead link does not stop a cube at once: its command runs out first)."""
        hp = self.handle
        gone = seen & ~live
        for i in np.nonzero(gone & ~self.frozen_valid)[0]:
            # it stopped somewhere between its last reading and the end of its last command (a driver that
            # died may never have delivered that command): plan with a disc covering both
            run = max(self.last_cmd_until[i] + hp.lag - self.received[i] + self.age[i], 0.0)
            x, y, th = predict_pose(self.pose[i, 0], self.pose[i, 1], self.pose[i, 2], self.last_cmd[i, 0],
                                    self.last_cmd[i, 1], run, run, hp.k, hp.wheel_track)
            self.frozen[i] = (0.5 * (self.pose[i, 0] + float(x)), 0.5 * (self.pose[i, 1] + float(y)), float(th))
            self.frozen_extra[i] = 0.5 * math.hypot(float(x) - self.pose[i, 0], float(y) - self.pose[i, 1])
        self.frozen_valid = gone
        self.frozen_extra[~gone] = 0.0
        return np.where(gone[:, None], self.frozen, self.pose)

    def _unstick(self, now: float, pos: np.ndarray, goal_xy: np.ndarray, moving: np.ndarray) -> np.ndarray:
        """Goals for this tick: the real goal, or a side-step target for a cube that has stopped making
        progress (symmetric encounters where HLAvoid keeps choosing a waypoint that is too short to move)."""
        s = self.settings
        fresh = ~moving | ~np.isfinite(self.anchor[:, 0]) | \
            (np.hypot(*(pos - self.anchor).T) > s.stuck_distance)
        self.anchor[fresh] = pos[fresh]
        self.anchor_time[fresh] = now
        far = np.hypot(*(goal_xy - pos).T) > max(s.tolerance, s.sidestep_distance)
        stuck = moving & far & (s.stuck_time_s > 0) & (now - self.anchor_time >= s.stuck_time_s) & \
            (now >= self.sidestep_until)
        for i in np.nonzero(stuck)[0]:
            d = goal_xy[i] - pos[i]
            d = d / max(float(np.hypot(*d)), 1e-9)
            right = np.array([-d[1], d[0]])          # 90° clockwise on the mat (y down) = the cube's right
            self.sidestep_goal[i] = pos[i] + self.sidestep_sign[i] * s.sidestep_distance * right
            self.sidestep_until[i] = now + s.sidestep_time_s
            self.sidestep_sign[i] *= -1.0
            self.sidesteps[i] += 1
            self.anchor_time[i] = now + s.sidestep_time_s
        stepping = moving & (now < self.sidestep_until)
        (x0, x1), (y0, y1) = self.handle.border_x, self.handle.border_y     # never side-step off the mat
        target = np.column_stack([np.clip(self.sidestep_goal[:, 0], x0, x1), np.clip(self.sidestep_goal[:, 1], y0, y1)])
        return np.where(stepping[:, None], target, goal_xy)

    def _plan(self, pos, th, spd, vel, w, goal_xy, cap, away, active, ok):
        """Waypoints (N, 2), speed limits (N,) in motor units, speed ratios (N,), collision flags (N,)."""
        n = pos.shape[0]
        if self.planner is None:
            from toio_navigator.navigation.swarm import swarm_step
            extra = self.frozen_extra
            kw = dict(params=self.params, walls=self.walls, mode=self.settings.mode, margin=16.0 + extra,
                      avoid_margin=self.params.avoid.margin + extra)
            res = swarm_step(pos, th, spd, vel, w, goal_xy, direction='towards', **kw)
            wp, lim, ratio, col = res.waypoint, res.speed_limit, res.speed_ratio, res.collision
            rays = (res.avoid.rads, res.avoid.dists) if res.avoid is not None else None
            if away.any():
                res_a = swarm_step(pos, th, spd, vel, w, goal_xy, direction='away', **kw)
                wp = np.where(away[:, None], res_a.waypoint, wp)
                lim = np.where(away, res_a.speed_limit, lim)
                ratio = np.where(away, res_a.speed_ratio, ratio)
                col = np.where(away, res_a.collision, col)
            self.last_rays = rays
        else:
            from toio_navigator.navigation.planner import SwarmState
            state = SwarmState(pos=pos, vel=vel, heading=th, radius=BODY_RADIUS + self.frozen_extra, goal=goal_xy,
                               max_speed=cap * UNITS_PER_S_PER_MOTOR_UNIT, active=active, walls=self.walls)
            res = self.planner.step(state, 1.0 / self.settings.rate_hz)
            wp, col = np.asarray(res.waypoint, float), np.asarray(res.collision, bool)
            lim = np.asarray(res.speed_limit, float) / UNITS_PER_S_PER_MOTOR_UNIT
            ratio = np.ones(n)
            self.last_rays = None
        wp = np.where(active[:, None] & np.isfinite(wp), wp, pos)
        return wp, np.asarray(lim, float), np.asarray(ratio, float), np.asarray(col, bool) & ok


# ------------------------------------------------------------------------------------------------ parameters

def _dataclass_params(prefix: str, obj) -> dict[str, object]:
    """{'<prefix>.<field>': value} for the scalar fields of a parameter dataclass."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (bool, int, float)):
            out[f'{prefix}.{f.name}'] = v
    return out


def reference_parameters(params: NavigatorParams, handle: CubeHandleParams) -> dict[str, object]:
    """Every tunable constant of the core as a ROS parameter name -> default."""
    out = {k: v for k, v in _dataclass_params('navigator', params).items()}
    out.update(_dataclass_params('avoid', params.avoid))
    out.update(_dataclass_params('boids', params.boids))
    out.update(_dataclass_params('fixes', params.fixes))
    out.update(_dataclass_params('handle', handle))
    return out


def _coerce(name: str, value, like):
    """``value`` as the type of ``like`` (bool, int or float), or ValueError naming the parameter."""
    try:
        if isinstance(like, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(value, (bool, str, list, tuple, bytes)) or value is None:
            raise TypeError
        if isinstance(like, int):
            if float(value) != int(value):
                raise TypeError
            return int(value)
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f'{name}: expected a {type(like).__name__}, got {value!r}') from None
    if not math.isfinite(value):
        raise ValueError(f'{name}: must be finite, got {value}')
    return value


def coerce_setting(name: str, value):
    """A NavigatorSettings field from a parameter value (ValueError naming the parameter if it cannot be)."""
    like = getattr(NavigatorSettings(), name)
    if name == 'cubes':
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'cubes: expected a list of names, got {value!r}')
        return tuple(value)
    if isinstance(like, tuple):
        if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
            raise ValueError(f'{name}: expected a list of numbers, got {value!r}')
        return tuple(_coerce(name, v, 0.0) for v in value)
    if isinstance(like, str):
        if not isinstance(value, str):
            raise ValueError(f'{name}: expected a string, got {value!r}')
        return value
    return _coerce(name, value, like)


def apply_reference_parameter(params: NavigatorParams, handle: CubeHandleParams, name: str, value):
    """(params, handle) with one ``<group>.<field>`` changed; ValueError for a bad value."""
    group, _, field_name = name.partition('.')
    current = reference_parameters(params, handle)
    if name not in current:
        raise ValueError(f'unknown parameter {name}')
    value = _coerce(name, value, current[name])
    if group == 'navigator':
        return replace(params, **{field_name: value}), handle
    if group == 'avoid':
        return replace(params, avoid=replace(params.avoid, **{field_name: value})), handle
    if group == 'boids':
        return replace(params, boids=replace(params.boids, **{field_name: value})), handle
    if group == 'fixes':
        return replace(params, fixes=replace(params.fixes, **{field_name: bool(value)})), handle
    if group == 'handle':
        if field_name in ('dead_zone', 'max_spd') and not 0 <= value <= MOTOR_MAX:
            raise ValueError(f'{name}: must be within 0..{MOTOR_MAX}, got {value}')
        return params, replace(handle, **{field_name: value})
    raise ValueError(f'unknown parameter {name}')


SETTING_PARAMETERS = ('cubes', 'rate_hz', 'mode', 'planner', 'stale_timeout_s', 'mat_rect', 'walls', 'border',
                      'max_speed', 'tolerance', 'handle_tolerance', 'rotate_time_ms', 'stop_duration_ms',
                      'command_duration_ms', 'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance',
                      'sidestep_time_s')
RUNTIME_SETTINGS = ('mode', 'planner', 'stale_timeout_s', 'max_speed', 'tolerance', 'handle_tolerance',
                    'rotate_time_ms', 'stop_duration_ms', 'command_duration_ms', 'walls', 'border', 'rate_hz',
                    'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s')


# ------------------------------------------------------------------------------------------------ the node

def _make_node_class():
    """The rclpy node class (built lazily so the controller above imports without ROS)."""
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from visualization_msgs.msg import Marker, MarkerArray

    from toio_navigator.msg import CubeState, MotorCommand, NavGoal, NavResult
    from toio_navigator.srv import GoalStatus, SetGoal

    class NavigatorNode(Node):
        def __init__(self, **kwargs) -> None:
            super().__init__('navigator', **kwargs)
            defaults = NavigatorSettings()
            dyn = ParameterDescriptor(dynamic_typing=True)   # 20 and 20.0 both work in YAML / ros2 param set
            self.declare_parameter('cubes', ['cube1'], ParameterDescriptor(description='cube names (namespaces)'))
            for name in SETTING_PARAMETERS[1:]:
                value = getattr(defaults, name)
                self.declare_parameter(name, [float(v) for v in value] if isinstance(value, tuple) else value, dyn)
            self.declare_parameter('markers_every', 2, dyn)
            self.declare_parameter('tick_on_fresh_states', True)
            params, handle = NavigatorParams(), CubeHandleParams()
            for name, value in reference_parameters(params, handle).items():
                self.declare_parameter(name, value, dyn)
            settings = self._settings_from_parameters()
            for name in reference_parameters(params, handle):
                params, handle = apply_reference_parameter(params, handle, name,
                                                           self.get_parameter(name).value)
            self.controller = SwarmController(settings, params, handle)   # ValueError on bad settings
            self.markers_every = max(1, int(self.get_parameter('markers_every').value))
            self.tick_on_fresh = bool(self.get_parameter('tick_on_fresh_states').value)
            self.ticks = 0
            self.last_tick = -math.inf
            self.fresh = set()
            self.cmd_pubs, self.result_pubs = {}, {}
            for cube in settings.cubes:
                self.create_subscription(CubeState, f'{cube}/state', lambda m, c=cube: self._on_state(c, m),
                                         qos_profile_sensor_data)
                self.create_subscription(NavGoal, f'{cube}/goal', lambda m, c=cube: self._on_goal(c, m), 10)
                self.cmd_pubs[cube] = self.create_publisher(MotorCommand, f'{cube}/motor_cmd', 10)
                self.result_pubs[cube] = self.create_publisher(NavResult, f'{cube}/nav_result', 10)
            self.marker_pub = self.create_publisher(MarkerArray, 'navigator/markers', 10)
            self.create_service(SetGoal, 'navigator/set_goal', self._srv_set_goal)
            self.create_service(GoalStatus, 'navigator/goal_status', self._srv_status)
            self.timer = self.create_timer(1.0 / settings.rate_hz, self._on_timer)
            self.add_on_set_parameters_callback(self._on_set_parameters)
            self._msgs = (MotorCommand, NavResult, Marker, MarkerArray, SetParametersResult)
            self.get_logger().info(f'navigator: {len(settings.cubes)} cubes {list(settings.cubes)}, mode '
                                   f'{settings.mode}, planner {settings.planner}, {settings.rate_hz:g} Hz')

        # ---- parameters
        def _settings_from_parameters(self) -> NavigatorSettings:
            s = NavigatorSettings()
            for name in SETTING_PARAMETERS:
                setattr(s, name, coerce_setting(name, self.get_parameter(name).value))
            s.check()
            return s

        def _on_set_parameters(self, changes):
            result_cls = self._msgs[4]
            c = self.controller
            settings = replace(c.settings)
            params, handle = c.params, c.handle
            try:
                for p in changes:
                    if p.name in ('cubes', 'mat_rect'):
                        raise ValueError(f'{p.name} is fixed at start-up (restart the navigator to change it)')
                    if p.name in RUNTIME_SETTINGS:
                        setattr(settings, p.name, coerce_setting(p.name, p.value))
                    elif '.' in p.name and p.name.split('.')[0] in ('navigator', 'avoid', 'boids', 'fixes',
                                                                    'handle'):
                        params, handle = apply_reference_parameter(params, handle, p.name, p.value)
                    elif p.name in ('markers_every', 'tick_on_fresh_states'):
                        continue
                settings.check()
            except (ValueError, TypeError) as exc:
                self.get_logger().warning(f'parameter change rejected: {exc}')
                return result_cls(successful=False, reason=str(exc))
            old_rate = c.settings.rate_hz
            if settings.planner != c.settings.planner:
                c.set_planner(settings.planner)
            c.settings = settings
            c.walls = settings.wall_rows()
            c.params, c.handle = params, handle
            for p in changes:
                if p.name == 'markers_every':
                    self.markers_every = max(1, int(p.value))
                elif p.name == 'tick_on_fresh_states':
                    self.tick_on_fresh = bool(p.value)
            if settings.rate_hz != old_rate:
                self.timer.cancel()
                self.destroy_timer(self.timer)
                self.timer = self.create_timer(1.0 / settings.rate_hz, self._on_timer)
            self.get_logger().info('parameters changed: ' + ', '.join(f'{p.name}={p.value}' for p in changes))
            return result_cls(successful=True)

        # ---- inputs
        def _on_state(self, cube: str, msg) -> None:
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            age = time.time() - stamp if stamp > 0 else 0.0          # same host clock as the driver's stamp
            self.controller.update_state(cube, msg.x, msg.y, msg.theta, msg.on_mat, msg.link_state, age)
            if not self.tick_on_fresh:
                return
            self.fresh.add(cube)
            live = self.controller.live()
            waiting = [c for i, c in enumerate(self.controller.settings.cubes) if live[i] and c not in self.fresh]
            # every live cube has reported since the last tick: act now instead of waiting for the timer, so
            # the command leaves within a few ms of the position that caused it (never faster than the rate)
            if not waiting and time.monotonic() - self.last_tick >= 0.8 / self.controller.settings.rate_hz:
                self._tick()

        def _apply_goal(self, cube: str, goal) -> str:
            reason = self.controller.set_goal(cube, goal.goal_id, goal.x, goal.y, goal.direction, goal.max_speed,
                                              goal.tolerance, msg_cube=goal.cube)
            if reason:
                self.get_logger().warning(f'goal {goal.goal_id} for {cube!r} rejected: {reason}')
            else:
                self.get_logger().info(f'goal {goal.goal_id} for {cube}: ' + (
                    'STOP' if goal.direction == STOP else
                    f'{"TOWARDS" if goal.direction == TOWARDS else "AWAY"} ({goal.x:.1f}, {goal.y:.1f})'))
            return reason

        def _on_goal(self, cube: str, msg) -> None:
            self._apply_goal(cube, msg)

        def _srv_set_goal(self, request, response):
            goal = request.goal
            reason = self._apply_goal(goal.cube, goal) if goal.cube else 'goal.cube is empty'
            if not goal.cube:
                self.get_logger().warning(f'goal {goal.goal_id} rejected: {reason}')
            response.accepted = not reason
            response.reason = reason
            return response

        def _srv_status(self, request, response):
            st = self.controller.status(request.cube)
            if st is None:
                response.known = False
                response.distance = math.nan
                response.status = f'unknown cube {request.cube!r}'
                return response
            response.known = True
            for k, v in st.items():
                setattr(response, k, v)
            response.status = ('stale' if st['stale'] else 'off the mat' if not st['on_mat'] else
                               'reached' if st['reached'] else 'moving' if st['active'] else 'idle')
            return response

        # ---- ticks
        def _on_timer(self) -> None:
            if time.monotonic() - self.last_tick >= 0.8 / self.controller.settings.rate_hz:
                self._tick()

        def _tick(self) -> None:
            MotorCommand, NavResult = self._msgs[0], self._msgs[1]
            self.last_tick = time.monotonic()
            self.fresh.clear()
            stamp = self.get_clock().now().to_msg()
            s = self.controller.settings
            decisions = self.controller.step()
            for cmd in decisions:          # wheel commands first: they are what the latency budget is about
                if cmd.motor is not None:
                    self.cmd_pubs[cmd.cube].publish(MotorCommand(left=cmd.motor[0], right=cmd.motor[1],
                                                                 duration_ms=cmd.motor[2]))
            for cmd in decisions:
                r = NavResult(cube=cmd.cube, goal_id=cmd.goal_id, active=cmd.active, waypoint_x=cmd.waypoint[0],
                              waypoint_y=cmd.waypoint[1], speed_limit=cmd.speed_limit,
                              speed_ratio=cmd.speed_ratio, collision=cmd.collision, reached=cmd.reached,
                              mode=s.mode, planner=s.planner)
                r.header.stamp = stamp
                r.header.frame_id = FRAME_ID
                self.result_pubs[cmd.cube].publish(r)
            self.ticks += 1
            if self.ticks % self.markers_every == 0 and self.marker_pub.get_subscription_count() > 0:
                self.marker_pub.publish(self._markers(stamp))

        def _markers(self, stamp):
            Marker, MarkerArray = self._msgs[2], self._msgs[3]
            c = self.controller
            arr = MarkerArray()
            live = c.live()

            def marker(ns, mid, mtype, rgba, scale=(0.01, 0.01, 0.01)):
                m = Marker(ns=ns, id=mid, type=mtype, action=Marker.ADD)
                m.header.stamp, m.header.frame_id = stamp, FRAME_ID
                m.color.r, m.color.g, m.color.b, m.color.a = rgba
                m.scale.x, m.scale.y, m.scale.z = scale
                m.pose.orientation.w = 1.0
                return m

            def point(x, y, z=0.0):
                from geometry_msgs.msg import Point
                rx, ry = mat_to_ros_xy(float(x), float(y))
                return Point(x=rx, y=ry, z=z)

            body = 2 * BODY_RADIUS * METRES_PER_UNIT
            margin = 2 * c.params.avoid.margin * METRES_PER_UNIT
            for i, cube in enumerate(c.settings.cubes):
                x, y, th = c.frozen[i] if c.frozen_valid[i] else c.pose[i]   # a silent cube: where we expect it
                if not math.isfinite(x):
                    continue
                g = c.goals[i]
                rgba = ((0.9, 0.1, 0.1, 1.0) if not live[i] or not c.on_mat[i] else
                        (1.0, 0.5, 0.0, 1.0) if c.last_collision[i] else
                        (0.1, 0.8, 0.2, 1.0) if g and g.reached else (0.2, 0.4, 1.0, 1.0))
                m = marker('cubes', i, Marker.CUBE, rgba, (body, body, body))
                m.pose.position = point(x, y, body / 2)
                qx, qy, qz, qw = yaw_to_quaternion(mat_to_ros_yaw(float(th)))
                m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = \
                    qx, qy, qz, qw
                arr.markers.append(m)
                t = marker('names', i, Marker.TEXT_VIEW_FACING, (1.0, 1.0, 1.0, 1.0), (0.0, 0.0, 0.015))
                t.pose.position = point(x, y, body * 1.8)
                t.text = cube
                arr.markers.append(t)
                m = marker('margins', i, Marker.CYLINDER, (rgba[0], rgba[1], rgba[2], 0.2), (margin, margin, 0.002))
                m.pose.position = point(x, y)
                arr.markers.append(m)
                wp = c.last_waypoints[i] if i < len(c.last_waypoints) else (math.nan, math.nan)
                m = marker('waypoints', i, Marker.ARROW, (1.0, 1.0, 0.0, 0.9), (0.003, 0.006, 0.006))
                if g is not None and math.isfinite(wp[0]):
                    m.points = [point(x, y, 0.01), point(wp[0], wp[1], 0.01)]
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
                m = marker('goals', i, Marker.SPHERE, (1.0, 0.0, 1.0, 0.8), (0.012, 0.012, 0.012))
                if g is not None:
                    m.pose.position = point(g.x, g.y, 0.006)
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
                m = marker('scan_rays', i, Marker.LINE_LIST, (0.6, 0.6, 0.6, 0.5), (0.001, 0.0, 0.0))
                if c.last_rays is not None and g is not None:
                    rads, dists = c.last_rays
                    for a, d in zip(rads[i], dists[i]):
                        d = min(abs(float(d)), c.params.avoid.range)
                        m.points += [point(x, y, 0.004), point(x + d * math.cos(a), y + d * math.sin(a), 0.004)]
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
            m = marker('walls', 0, Marker.LINE_LIST, (0.8, 0.2, 0.2, 0.8), (0.004, 0.0, 0.0))
            for x1, y1, x2, y2, _w in c.walls:
                m.points += [point(x1, y1, 0.002), point(x2, y2, 0.002)]
            if not m.points:
                m.action = Marker.DELETE
            arr.markers.append(m)
            x0, y0, x1, y1 = c.settings.mat_rect
            m = marker('mat', 0, Marker.LINE_STRIP, (0.9, 0.9, 0.9, 0.6), (0.002, 0.0, 0.0))
            m.points = [point(x0, y0), point(x1, y0), point(x1, y1), point(x0, y1), point(x0, y0)]
            arr.markers.append(m)
            return arr

    return NavigatorNode


_NODE_CLASS = None


def NavigatorNode(**kwargs):
    """Create the navigator node (rclpy must be initialised). Raises ValueError for bad parameters."""
    global _NODE_CLASS
    if _NODE_CLASS is None:
        _NODE_CLASS = _make_node_class()
    return _NODE_CLASS(**kwargs)


def _executor():
    """rclpy's EventsExecutor where it exists (Jazzy: rclpy.experimental): its dispatch is much cheaper than the
    SingleThreadedExecutor's wait-set rebuild, which dominates the state -> command path at 10 cubes.
    TOIO_NAV_EXECUTOR=single selects the SingleThreadedExecutor."""
    import os

    from rclpy.executors import SingleThreadedExecutor
    if os.environ.get('TOIO_NAV_EXECUTOR', 'events') != 'single':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
    return SingleThreadedExecutor()


def main(args: list[str] | None = None) -> int:
    """`ros2 run toio_navigator navigator [--ros-args ...]`."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=args)
    try:
        try:
            node = NavigatorNode()
        except ValueError as exc:
            print(f'navigator: bad parameters: {exc}', file=sys.stderr)
            return 2
        executor = _executor()
        executor.add_node(node)
        try:
            while rclpy.ok():                  # spin_once, not spin(): a SIGTERM must end the loop
                executor.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        node.destroy_node()
    finally:
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
