"""The navigator's per-tick logic without ROS: latest cube states and goals in, one swarm step, wheel commands out.

:class:`SwarmController` gathers the latest state of every cube into arrays, runs the core's swarm step
(HLAvoid/Boids modes) or a registry planner once for all cubes, and turns waypoint + speed into wheel commands
with a duration (so a cube whose navigator or link dies stops by itself). The wheels come from the core's
reference-exact batched CubeHandle (``handle_batch``); where the controller deliberately differs from the
reference it is a named setting (defaults = the tuned behaviour of config/navigator.yaml):

* ``border_stop``       the handle border's outward stop on the translation (docs/navigator.md §4.4 step 5, quick test)
* ``saturation``        'keep_rotation' (symmetric, keeps the turn) or 'reference' (B13's asymmetric truncation)
* latency-aware prediction (:func:`predict_pose`): horizon = command lag + age of the state at the tick
* ``contact_guard``     a cube never closes in on another one nearer than touching + ``contact_gap``, whatever
                        its planner says (:mod:`~toio_navigator.control.guard`; not for a planner with
                        its own safety layer)
* ``stuck_time_s`` > 0  the dead-lock breaker (the reference has none; 0 turns it off): a side-step for a cube
                        stuck far from its goal, and a waypoint moved out of the handle's reach for a stuck cube
                        whose planner keeps it inside (:meth:`SwarmController._out_of_reach`)

A tick is a pure function of its inputs: the state stamps (``stamp_ns`` of :meth:`update_state`), the goals and
the tick time given to :meth:`step`. Nothing reads a wall clock there, so a bag holding those replays exactly.
A cube whose state is older than ``stale_timeout_s`` (or whose link is down) is stopped and stays in the swarm
as a static obstacle; so is a cube off the mat. Malformed goals are rejected with a reason.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from toio_navigator.control.arcs import drive_arc
from toio_navigator.control.guard import guard_caps, in_flight
from toio_navigator.planners import PLANNERS, make_planner
from toio_navigator.planners.interface import SwarmState
from toio_navigator.reference.handle_batch import move_to_target_batch, wheels_batch
from toio_navigator.reference.params import CubeHandleParams, NavigatorParams
from toio_navigator.reference.swarm import swarm_step
from toio_navigator.units import BODY_RADIUS, MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT

MODES = ('AVOID', 'BOIDS', 'BOIDS_AVOID')
HLAVOID = 'hlavoid'
LINK_CONNECTED = 2          # CubeState.LINK_CONNECTED (kept numeric so the controller needs no message import)
TOWARDS, AWAY, STOP = 0, 1, 2
SATURATIONS = ('keep_rotation', 'reference')
GUARD_PASSES = 3           # the contact guard checks the wheels it slowed again (a slower arc is another arc)
GUARD_HISTORY = 10         # commands kept per cube for the contact guard: all those in flight at 20 Hz for a reading
                           # up to 0.25 s old with 0.2 s latency (3-5 were in flight in a loaded lab run)
ESCAPE_SPEED = 20.0         # motor units (~41 units/s): the breaker's crawl out of an HLAvoid overlap


def planner_names() -> list[str]:
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
    body_radius: float = BODY_RADIUS          # each cube's disc for the registry planners (HLAvoid has margins)
    # dead-lock breaker (docs/navigator.md §6; the reference has none): a cube with a goal that has moved less than
    # stuck_distance in stuck_time_s side-steps to its right for sidestep_time_s (then left, then right, ...),
    # and its waypoint leaves the handle's reach (see SwarmController._out_of_reach)
    stuck_time_s: float = 1.0                 # 0 = no breaker (pure reference behaviour)
    stuck_distance: float = 6.0
    sidestep_distance: float = 40.0
    sidestep_time_s: float = 0.8
    # the wheel shaping options (module docstring): the tuned behaviour by default, the reference's when off
    border_stop: bool = True                  # the border's outward stop; False = no border rule in the handle
    saturation: str = 'keep_rotation'         # or 'reference' (asymmetric truncation, B13)
    # the contact guard (module docstring); off here, on in config/navigator.yaml: its bound assumes each command
    # may run its whole duration, which the shipped 150 ms commands at 50 motor units allow near other cubes,
    # the reference's 250 ms at 70 hardly (cubes would crawl wherever they pass)
    contact_guard: bool = False
    contact_gap: float = 3.0                  # clearance the guard keeps beyond touching, mat units
    # a command takes effect this long after it is sent, as far as the guard is concerned: a loaded lab run measured
    # 0.15-0.27 s (10-90 %), median 0.198 (the handle's lag, 0.13 s, is the reference CubeHandle's model)
    contact_guard_latency_s: float = 0.2
    # the drivers write at most one motor command per this long (their min_motor_interval_ms): a command waits for
    # its slot, and one still waiting when the next comes is never written
    contact_guard_write_gap_s: float = 0.045
    # a live navigator's `coordinated` plan (made in a worker thread while the cubes stand) stops improving itself
    # after this long; 0 = no limit. Trials, benchmarks and replays plan within the tick and take no notice
    plan_time_s: float = 10.0

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
        for name in ('rate_hz', 'stale_timeout_s', 'max_speed', 'tolerance', 'rotate_time_ms', 'body_radius'):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f'{name}: must be a finite number > 0, got {v}')
        if self.saturation not in SATURATIONS:
            raise ValueError(f'saturation: {self.saturation!r} is not one of {", ".join(SATURATIONS)}')
        if not (math.isfinite(self.handle_tolerance) and self.handle_tolerance >= 0):
            raise ValueError(f'handle_tolerance: must be a finite number >= 0, got {self.handle_tolerance}')
        if self.tolerance < self.handle_tolerance:
            raise ValueError(f'tolerance: {self.tolerance:g} is below handle_tolerance {self.handle_tolerance:g} '
                             '(move-to-target stops within handle_tolerance, so the goal could never be reached)')
        if self.max_speed > MOTOR_MAX:
            raise ValueError(f'max_speed: must be <= {MOTOR_MAX} motor units, got {self.max_speed}')
        for name in ('stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s', 'contact_gap',
                     'contact_guard_latency_s', 'contact_guard_write_gap_s', 'plan_time_s'):
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
               cubes: tuple[str, ...], mat_rect: tuple[float, float, float, float],
               handle_tolerance: float = 0.0) -> str:
    """'' if the goal is acceptable, else the reason it is rejected. A tolerance (> 0) below the handle's own
    reached radius is refused, not clamped: move-to-target stops the cube within ``handle_tolerance`` of the
    goal, so such a goal could never be reported reached, and a silently widened one would be a surprise."""
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
    if 0 < tolerance < handle_tolerance:
        return (f'tolerance {tolerance:g} is below the handle tolerance {handle_tolerance:g}: the cube stops '
                f'within {handle_tolerance:g} of the goal, so it could never count as reached (use 0 for the '
                'default or a tolerance >= handle_tolerance)')
    return ''


# ------------------------------------------------------------------------------------------------ motion

def stamp_seconds(stamp_ns: int) -> float:
    """A ROS time in nanoseconds as float seconds, computed one way everywhere (node, replay) so the same
    recorded stamps give bit-identical ages."""
    stamp_ns = int(stamp_ns)
    return stamp_ns // 1_000_000_000 + (stamp_ns % 1_000_000_000) * 1e-9


def _wrap(a):
    return (np.asarray(a) + math.pi) % (2 * math.pi) - math.pi


def overlap_escape(p: np.ndarray, others: np.ndarray, reach: np.ndarray, walls: np.ndarray, wall_add: float,
                   lookahead: float, prefer: np.ndarray, directions: int = 16) -> np.ndarray:
    """Unit vector of the way out of overlaps for a cube at ``p``: of ``directions`` evenly spread headings, the
    one whose point ``lookahead`` away lies least deep inside the discs (centres ``others``, radii ``reach``)
    and wall bands (rows x1, y1, x2, y2, margin; half-width margin + ``wall_add``), summed; among equally good
    ones the closest to ``prefer``. Looking ahead (rather than down the local slope) finds the way out of a
    pocket where the pushes of two cubes and a wall cancel or change sides after a few units."""
    a = np.arange(directions) * (2 * math.pi / directions)
    u = np.column_stack([np.cos(a), np.sin(a)])
    q = p + lookahead * u                                                         # (D, 2)
    depth = np.maximum(reach[None, :] - np.hypot(*(q[:, None, :] - others[None, :, :]).transpose(2, 0, 1)),
                       0.0).sum(axis=1)
    for x1, y1, x2, y2, m in walls:
        w0, ab = np.array([x1, y1]), np.array([x2 - x1, y2 - y1])
        t = np.clip((q - w0) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0)
        depth += np.maximum(m + wall_add - np.hypot(*(q - (w0 + t[:, None] * ab)).T), 0.0)
    best = depth <= depth.min() + 1e-6
    k = int(np.argmax(np.where(best, u @ prefer, -np.inf)))
    return u[k]


def predict_pose(x, y, th, left, right, active_s, horizon, k: float, track: float):
    """Pose ``horizon`` seconds (scalar or per cube) after the observed one, driving the last wheel command
    (motor units), which stays on for ``active_s`` more seconds from the observation.

    The controller's latency-aware prediction (a deliberate difference from CubeHandle.predict, §4.2, which
    replays a command history with an acceleration ramp per cube): the horizon is the command lag plus the age
    of the state at the tick, so a late reading is predicted further (:func:`drive_arc`: all cubes at once)."""
    x, y, th = (np.array(v, dtype=float) for v in (x, y, th))
    tau = np.minimum(np.broadcast_to(np.asarray(horizon, dtype=float), x.shape), np.maximum(active_s, 0.0))
    x1, y1, th1 = drive_arc(x, y, th, left, right, tau, k, track)
    return x1, y1, _wrap(th1)


def border_outward_stop(translate, x_pred, y_pred, rad_pred, hp: CubeHandleParams):
    """Option ``border_stop``: the quick outward test of the handle's border (docs/navigator.md §4.4 step 5) applied to
    the translation before the wheels are shaped: a cube at or beyond the border rectangle whose next ``dt``
    would take it further out on that axis only turns. (The reference runs the test on the stop-predicted pose
    after the saturation and also cuts durations inside the border; that needs per-cube history.)"""
    (bx0, bx1), (by0, by1) = hp.border_x, hp.border_y
    cx, cy, rx, ry = (bx0 + bx1) / 2, (by0 + by1) / 2, (bx1 - bx0) / 2, (by1 - by0) / 2
    x1 = x_pred + translate * hp.k * hp.dt * np.cos(rad_pred)
    y1 = y_pred + translate * hp.k * hp.dt * np.sin(rad_pred)
    outside = (np.abs(x_pred - cx) >= rx) | (np.abs(y_pred - cy) >= ry)
    outward = ((np.abs(x1 - cx) >= rx) & (np.abs(x1 - cx) >= np.abs(x_pred - cx))) | \
              ((np.abs(y1 - cy) >= ry) & (np.abs(y1 - cy) >= np.abs(y_pred - cy)))
    return np.where(outside & outward, 0.0, translate)


def saturate_keep_rotation(left, right, u_max: float):
    """Option ``saturation='keep_rotation'``: shift both wheels by the excess over ±u_max so left − right (the
    turn) is kept; clip only if the turn alone is too big. The reference (B13) recomputes the excess after the
    left wheel moved, which loses part of the turn exactly when a fast cube must swerve."""
    over = np.maximum(np.maximum(left, right) - u_max, 0.0)
    under = np.minimum(np.minimum(left, right) + u_max, 0.0)
    left, right = left - over - under, right - over - under
    return np.clip(left, -u_max, u_max), np.clip(right, -u_max, u_max)


def drive_wheels(x, y, th, x_pred, y_pred, th_pred, tx, ty, max_spd, hp: CubeHandleParams, rotate_time_ms: float,
                 tolerance: float, border_stop: bool, saturation: str, backward: np.ndarray | None = None):
    """(left, right) motor units of N cubes driving to (tx, ty): the core's reference-exact move_to_target and
    dead-zone shift (handle_batch), then the named options (``border_stop``; ``saturation`` 'reference' or
    'keep_rotation'). A cube driving ``backward`` is steered as a cube facing the other way would be, whose
    left wheel is its right one: the same commands, negated and swapped."""
    x_pred, y_pred, th_pred = (np.asarray(a, dtype=float) for a in (x_pred, y_pred, th_pred))
    if backward is not None and np.any(backward):
        flip = np.where(backward, math.pi, 0.0)
        left, right = drive_wheels(x, y, np.asarray(th, float) + flip, x_pred, y_pred, th_pred + flip, tx, ty,
                                   max_spd, hp, rotate_time_ms, tolerance, border_stop, saturation)
        return np.where(backward, -right, left), np.where(backward, -left, right)
    tr, rot, _dur, _reached = move_to_target_batch(x, y, th, x_pred, y_pred, th_pred, tx, ty, max_spd, hp,
                                                   rotate_time_ms, tolerance)
    if border_stop:
        tr = border_outward_stop(tr, x_pred, y_pred, th_pred, hp)
    if saturation == 'reference':
        return wheels_batch(tr, rot, hp)
    # the reference dead-zone shift alone (an unreachable saturation bound), then the symmetric saturation
    left, right = wheels_batch(tr, rot, replace(hp, max_spd=math.inf))
    return saturate_keep_rotation(left, right, float(hp.max_spd))


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
    state_stamp_ns: int = 0   # stamp of the cube's state used in this tick (0 = none yet)
    goal: Goal | None = None  # the last goal accepted for the cube (a STOP included), None = none yet
    state: tuple | None = None  # that state as it came (x, y, theta, on_mat, link_state); None = none yet


class SwarmController:
    """The navigator's logic without ROS: latest states, goals, one swarm step per tick."""

    def __init__(self, settings: NavigatorSettings, params: NavigatorParams | None = None,
                 handle: CubeHandleParams | None = None, clock=time.monotonic, realtime: bool = False) -> None:
        """``realtime``: ticks run in real time beside the node's other work (the navigator node), so a planner
        that can plan in the background (``plan_in_background``) does; otherwise every tick gives the same
        answers for the same inputs (trials, benchmarks, bag replay)."""
        settings.check()
        self.realtime = realtime
        self.settings = settings
        self.params = params or NavigatorParams()
        self.handle = handle or CubeHandleParams()
        self.clock = clock
        n = len(settings.cubes)
        self.index = {c: i for i, c in enumerate(settings.cubes)}
        self.pose = np.full((n, 3), np.nan)            # x, y, theta (mat)
        self.on_mat = np.zeros(n, dtype=bool)
        self.link_ok = np.zeros(n, dtype=bool)
        self.stamp = np.full(n, -np.inf)               # stamp of the latest state, s (the tick's time base)
        self.stamp_ns = np.zeros(n, dtype=np.int64)    # the same stamp as given, ns (echoed in CubeCommand)
        self.state_in: list[tuple | None] = [None] * n  # that state as given (echoed in CubeCommand)
        self.frozen = np.zeros((n, 3))                 # believed final pose of a cube that went silent
        self.frozen_valid = np.zeros(n, dtype=bool)
        self.frozen_extra = np.zeros(n)                # margin added to a silent cube (uncertain stop point)
        self.goals: list[Goal | None] = [None] * n
        # the last GUARD_HISTORY commands sent to each cube, oldest first: the contact guard's commands in flight;
        # the newest is the motion model's last command (last_cmd, last_cmd_until)
        self.sent_at = np.full((n, GUARD_HISTORY), -np.inf)     # clock time sent (-inf = none)
        self.sent_wheels = np.zeros((n, GUARD_HISTORY, 2))      # motor units
        self.sent_duration = np.zeros((n, GUARD_HISTORY))       # s
        self.walls = settings.wall_rows()
        self.planner = None
        self.last_rays: tuple[np.ndarray, np.ndarray] | None = None   # (N, S) directions and free distances
        self.last_waypoints = np.full((n, 2), np.nan)
        self.last_collision = np.zeros(n, dtype=bool)
        self.last_goal_id = [0] * n
        self.last_goal: list[Goal | None] = [None] * n   # the last accepted goal, a STOP included
        self.anchor = np.full((n, 2), np.nan)          # where the cube was when it last made progress
        self.anchor_time = np.zeros(n)
        self.sidestep_until = np.full(n, -np.inf)
        self.sidestep_goal = np.zeros((n, 2))
        self.sidestep_sign = np.ones(n)                # +1 = to the right of the goal direction (mat y down)
        self.sidesteps = np.zeros(n, dtype=int)
        self.escaping = np.zeros(n, dtype=bool)          # the breaker drives it out of an HLAvoid overlap ...
        self.escape_dir = np.zeros((n, 2))               # ... this way
        self.stop_requested: set[int] = set()
        self.planned_at = -math.inf                      # clock time of the last tick that ran the planner
        self.set_planner(settings.planner)

    # ---- inputs
    def set_planner(self, name: str) -> None:
        if name == HLAVOID:
            self.planner = None
        else:
            planner = make_planner(name)
            if self.realtime and hasattr(planner, 'plan_in_background'):
                planner.plan_in_background = True
            planner.reset(len(self.settings.cubes), seed=0)
            self.planner = planner
        self.settings.planner = name

    def update_state(self, cube: str, x: float, y: float, theta: float, on_mat: bool, link_state: int,
                     stamp_ns: int | None = None) -> bool:
        """The latest state of a cube, stamped ``stamp_ns`` (when the pose was read, on the clock of the ticks;
        None = now on ``clock``). The age at a tick (tick − stamp) lengthens the prediction and decides
        staleness. False (nothing changed) for an unknown cube or a non-finite reading."""
        i = self.index.get(cube)
        if i is None:
            return False
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(theta)):
            return False                               # a garbage reading never enters the arrays
        self.pose[i] = (x, y, theta)
        self.state_in[i] = (float(x), float(y), float(theta), bool(on_mat), int(link_state))
        # a cube believed silent that reports again (still stale: e.g. its link is not up yet) is believed where it
        # says it is, not where an older reading put it: that belief would depend on states before a recording
        self.frozen_valid[i] = False
        x0, y0, x1, y1 = self.settings.mat_rect
        self.on_mat[i] = bool(on_mat) and x0 <= x <= x1 and y0 <= y <= y1
        self.link_ok[i] = link_state == LINK_CONNECTED
        if stamp_ns is None:
            self.stamp[i] = float(self.clock())
            self.stamp_ns[i] = int(round(self.stamp[i] * 1e9))
        else:
            self.stamp_ns[i] = int(stamp_ns)
            self.stamp[i] = stamp_seconds(stamp_ns)
        return True

    def set_goal(self, cube: str, goal_id: int, x: float, y: float, direction: int, max_speed: float,
                 tolerance: float, msg_cube: str = '') -> str:
        """Apply a goal; returns '' or the reason it was rejected (then nothing changed)."""
        reason = check_goal(cube, msg_cube, x, y, direction, max_speed, tolerance, self.settings.cubes,
                            self.settings.mat_rect, self.settings.handle_tolerance)
        if reason:
            return reason
        if direction == AWAY and self.settings.planner != HLAVOID:
            return f'direction AWAY needs planner {HLAVOID!r} (current: {self.settings.planner!r})'
        i = self.index[cube]
        self.last_goal_id[i] = int(goal_id)
        self.last_goal[i] = Goal(int(goal_id), float(x), float(y), int(direction), float(max_speed),
                                 float(tolerance))
        self.goals[i] = None if direction == STOP else replace(self.last_goal[i])
        if direction == STOP:
            self.stop_requested.add(i)
        return ''

    # ---- status
    def live(self, now: float | None = None) -> np.ndarray:
        now = self.clock() if now is None else now
        return (now - self.stamp <= self.settings.stale_timeout_s) & self.link_ok

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
        seen = np.isfinite(self.pose[:, 0])
        live = self.live(now) & seen
        ok = live & self.on_mat                       # controllable this tick
        pose = self._believed_poses(live, seen)
        pos = np.where(seen[:, None], pose[:, :2], np.array([-1e4, -1e4]))  # unseen cubes: far away
        th = np.where(seen, pose[:, 2], 0.0)
        # velocities from the command model (the reference's entity velocities); not for stopped cubes
        until = self.last_cmd_until                    # derived from the history: computed once per tick
        running = ok & (now < until)
        wheels = self.last_cmd * hp.k                  # u/s of each wheel under the last command sent
        spd_l, spd_r = np.where(running[:, None], wheels, 0.0).T
        spd = 0.5 * (spd_l + spd_r)
        sent = np.abs(0.5 * wheels.sum(axis=1))        # its speed, run out or not (a late tick comes after its end)
        vel = np.column_stack([np.cos(th) * spd, np.sin(th) * spd])
        w = (spd_l - spd_r) / hp.wheel_track
        has_goal = np.array([g is not None for g in self.goals])
        goal_xy = np.array([(g.x, g.y) if g else (p[0], p[1]) for g, p in zip(self.goals, pos)], dtype=float)
        cap = np.array([g.max_speed if g and g.max_speed > 0 else s.max_speed for g in self.goals])
        tol = np.array([g.tolerance if g and g.tolerance > 0 else s.tolerance for g in self.goals])
        away = np.array([bool(g and g.direction == AWAY) for g in self.goals])
        active = ok & has_goal
        coordinating = bool(getattr(self.planner, 'resolves_deadlocks', False))   # it has its own dead-lock handling
        goal_xy, breaking = self._unstick(now, pos, goal_xy, active & ~away & (not coordinating))

        # the state was read `age` before the tick; the next command takes effect `lag` after it
        age = np.clip(np.where(seen, now - self.stamp, 0.0), 0.0, 1.0)
        rest = np.where(ok, np.maximum(until - now, 0.0), 0.0)
        px, py, pth = predict_pose(pos[:, 0], pos[:, 1], th, self.last_cmd[:, 0], self.last_cmd[:, 1], rest,
                                   hp.lag + age, hp.k, hp.wheel_track)
        if s.use_pred:        # the reference's usePred: every entity where the next command will find it
            ent_pos, ent_th = np.column_stack([px, py]), pth
            vel = np.column_stack([np.cos(pth) * spd, np.sin(pth) * spd])
        else:
            ent_pos, ent_th = pos, th
        waypoint, limit, ratio, collision, backward = self._plan(ent_pos, ent_th, spd, vel, w, sent, goal_xy, cap, away,
                                                                 active, ok, age, now)
        real_goal = np.array([(g.x, g.y) if g else (p[0], p[1]) for g, p in zip(self.goals, pos)], dtype=float)
        at_goal = np.hypot(real_goal[:, 0] - pos[:, 0], real_goal[:, 1] - pos[:, 1]) <= tol
        reached = active & ~away & at_goal
        if coordinating:   # it may move a cube off its goal to let another one pass
            reached &= np.hypot(waypoint[:, 0] - pos[:, 0], waypoint[:, 1] - pos[:, 1]) <= s.handle_tolerance
        # a cube on its way out of an overlap stays in the breaker until it is out, progress or not
        waypoint, self.escaping = self._out_of_reach(pos, waypoint, goal_xy, (breaking | self.escaping) & ~away
                                                     & ~reached, collision)
        speed = np.minimum(limit, cap * ratio)                 # navi_to_target: min(speedLimit, maxSpd·ratio)
        speed = np.clip(np.nan_to_num(speed, nan=0.0, posinf=MOTOR_MAX), 0.0, MOTOR_MAX)
        speed = np.where(self.escaping, np.maximum(speed, np.minimum(ESCAPE_SPEED, cap)), speed)
        left, right = drive_wheels(pos[:, 0], pos[:, 1], th, px, py, pth, waypoint[:, 0], waypoint[:, 1], speed, hp,
                                   s.rotate_time_ms, s.handle_tolerance, s.border_stop, s.saturation, backward)
        flight = self._in_flight(now, seen, ok, active) if s.contact_guard and not coordinating else None
        for _ in range(GUARD_PASSES if flight is not None else 0):
            guarded = guard_caps(np.column_stack([pos, th]), speed, *flight, np.column_stack([left, right]),
                                 active & ~reached, s.body_radius + self.frozen_extra, s.command_duration_ms / 1000.0,
                                 s.contact_gap, hp.k, hp.wheel_track, float(hp.dead_zone))
            if not (guarded < speed).any():
                break
            speed = guarded
            left, right = drive_wheels(pos[:, 0], pos[:, 1], th, px, py, pth, waypoint[:, 0], waypoint[:, 1], speed,
                                       hp, s.rotate_time_ms, s.handle_tolerance, s.border_stop, s.saturation, backward)
        stop_now, self.stop_requested = self.stop_requested, set()
        out: list[CubeCommand] = []
        issued = []
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
                issued.append((i, motor))
            out.append(CubeCommand(cube, self.last_goal_id[i], bool(active[i]),
                                   (float(waypoint[i, 0]), float(waypoint[i, 1])), float(speed[i]), float(ratio[i]),
                                   bool(collision[i]), bool(g.reached) if g else False, motor, not bool(live[i]),
                                   bool(self.on_mat[i]), int(self.stamp_ns[i]) if seen[i] else 0,
                                   self.last_goal[i], self.state_in[i] if seen[i] else None))
        self._remember(now, issued)
        self.last_waypoints = waypoint
        self.last_collision = collision
        return out

    @property
    def last_cmd(self) -> np.ndarray:
        """(N, 2) the last wheel command sent to each cube, motor units (0, 0 before the first)."""
        return self.sent_wheels[:, -1]

    @property
    def last_cmd_until(self) -> np.ndarray:
        """(N,) the clock time each cube's last command expires (-inf before the first)."""
        return self.sent_at[:, -1] + self.sent_duration[:, -1]

    def replace_last_command(self, i: int, motor: tuple[int, int, int]) -> None:
        """Put ``motor`` (left, right, duration_ms), which cube row ``i`` got instead, in place of the command
        this controller sent it last (bag replay: what the recorded cubes got). It keeps that command's send
        time, and both the motion model and the contact guard see the new one."""
        if not np.isfinite(self.sent_at[i, -1]):
            raise ValueError(f'{self.settings.cubes[i]} has been sent no command to replace')
        self.sent_wheels[i, -1] = motor[:2]
        self.sent_duration[i, -1] = motor[2] / 1000.0

    def _remember(self, now: float, sent: list[tuple[int, tuple[int, int, int]]]) -> None:
        """Append this tick's commands ((cube row, (left, right, duration_ms))) to each cube's history."""
        if not sent:
            return
        rows = np.array([i for i, _ in sent])
        motors = np.array([m for _, m in sent], dtype=float)
        for a in (self.sent_at, self.sent_wheels, self.sent_duration):
            a[rows, :-1] = a[rows, 1:]
        self.sent_at[rows, -1] = now
        self.sent_wheels[rows, -1] = motors[:, :2]
        self.sent_duration[rows, -1] = motors[:, 2] / 1000.0

    def _in_flight(self, now: float, seen: np.ndarray, ok: np.ndarray, active: np.ndarray):
        """For the contact guard, on its own motion model (on the safe side of the planner's): the commands still
        in flight towards each cube as segments of its way from its reading (:func:`in_flight`). A command takes
        effect ``contact_guard_latency_s`` after it is sent and drives until the next one does or its duration
        ends, so a cube may still be executing several older commands (the planner's entity velocities see only
        the last one, as the reference does); this tick's command, which every active cube gets (a hold at its
        goal included), takes over that latency after the tick. A cube not controllable this tick has none."""
        wheels, start, end, new_at = in_flight(self.sent_at, self.sent_wheels, self.sent_duration,
                                               np.where(seen, self.stamp, now), now,
                                               self.settings.contact_guard_latency_s, active,
                                               self.settings.contact_guard_write_gap_s)
        return (np.where(ok[:, None, None], wheels, 0.0), np.where(ok[:, None], start, 0.0),
                np.where(ok[:, None], end, 0.0), np.where(ok, new_at, 0.0))

    def _believed_poses(self, live: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """Poses to plan with: the latest state of a live cube; for a cube gone silent, where its last command
        took it after its last state (a dead link does not stop a cube at once: its command runs out first)."""
        hp = self.handle
        gone = seen & ~live
        for i in np.nonzero(gone & ~self.frozen_valid)[0]:
            # it stopped somewhere between its last reading and the end of its last command (a driver that
            # died may never have delivered that command): plan with a disc covering both
            run = max(self.last_cmd_until[i] + hp.lag - self.stamp[i], 0.0)
            x, y, th = predict_pose(self.pose[i, 0], self.pose[i, 1], self.pose[i, 2], self.last_cmd[i, 0],
                                    self.last_cmd[i, 1], run, run, hp.k, hp.wheel_track)
            self.frozen[i] = (0.5 * (self.pose[i, 0] + float(x)), 0.5 * (self.pose[i, 1] + float(y)), float(th))
            self.frozen_extra[i] = 0.5 * math.hypot(float(x) - self.pose[i, 0], float(y) - self.pose[i, 1])
        self.frozen_valid = gone
        self.frozen_extra[~gone] = 0.0
        return np.where(gone[:, None], self.frozen, self.pose)

    def _unstick(self, now: float, pos: np.ndarray, goal_xy: np.ndarray, moving: np.ndarray):
        """(goals for this tick, breaker engaged). The goal is the real one, or a side-step target for a cube
        that has stopped making progress far from its goal (symmetric encounters where HLAvoid keeps choosing a
        waypoint that is too short to move). The breaker is engaged for a cube that has made no progress for
        ``stuck_time_s`` (wherever it is) or is side-stepping; :meth:`_out_of_reach` acts on those."""
        s = self.settings
        fresh = ~moving | ~np.isfinite(self.anchor[:, 0]) | \
            (np.hypot(*(pos - self.anchor).T) > s.stuck_distance)
        self.anchor[fresh] = pos[fresh]
        self.anchor_time[fresh] = now
        no_progress = moving & (s.stuck_time_s > 0) & (now - self.anchor_time >= s.stuck_time_s)
        far = np.hypot(*(goal_xy - pos).T) > max(s.tolerance, s.sidestep_distance)
        stuck = no_progress & far & (now >= self.sidestep_until)
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
        return np.where(stepping[:, None], target, goal_xy), no_progress | stepping

    def _out_of_reach(self, pos: np.ndarray, waypoint: np.ndarray, target: np.ndarray, breaking: np.ndarray,
                      collision: np.ndarray) -> np.ndarray:
        """The breaker's answer to a waypoint inside the handle's own reached radius (``handle_tolerance``):
        move-to-target stops there, so a cube whose planner keeps handing it such a waypoint gets 0/0 every
        tick and never moves again, side-step or not: HLAvoid in its collision state returns an escape
        waypoint a few units away whatever the goal is (the demo's 80 s stall). For a cube with the breaker
        engaged such a waypoint is moved out to ``handle_tolerance + stuck_distance``: for HLAvoid in its
        collision state, away from what it overlaps (:func:`overlap_escape`), at no less than ESCAPE_SPEED
        (its stop rule holds a cube that heads into an overlap at 0 there, and in a pocket between a wall and
        two cubes every heading does); otherwise along the planner's own direction, or towards this tick's
        target (side-step target or goal) when it gives none, under the planner's speed limit.
        Returns (waypoints, escaping: the cubes driven out of an overlap)."""
        s = self.settings
        d = waypoint - pos
        dist = np.hypot(d[:, 0], d[:, 1])
        short = breaking & (dist <= s.handle_tolerance)
        escaping = np.zeros(len(pos), dtype=bool)
        if not short.any():
            return waypoint, escaping
        t = target - pos
        t_dist = np.hypot(t[:, 0], t[:, 1])
        direction = np.where((dist > 1e-6)[:, None], d / np.maximum(dist, 1e-9)[:, None],
                             t / np.maximum(t_dist, 1e-9)[:, None])
        if self.planner is None:
            margin = self.params.avoid.margin + self.frozen_extra    # each cube's avoid margin, as planned
            for i in np.nonzero(short & collision)[0]:
                if not self.escaping[i]:                # a way out is chosen once and kept until it is out
                    others = np.arange(len(pos)) != i   # HLAvoid: two cubes overlap within both avoid margins
                    self.escape_dir[i] = overlap_escape(pos[i], pos[others], margin[i] + margin[others],
                                                        self.walls, margin[i], s.sidestep_distance,
                                                        t[i] / max(t_dist[i], 1e-9))
                direction[i], escaping[i] = self.escape_dir[i], True
        pushed = pos + direction * (s.handle_tolerance + s.stuck_distance)
        return np.where(short[:, None], pushed, waypoint), escaping

    def _elapsed(self, now: float) -> float:
        """Seconds since the planner's last tick (``SwarmState.elapsed``): a busy host ticks late or stalls, and
        a planner that counted ticks as periods would lose track of time (how long a command has been running,
        how long a cube has stood). The first tick counts one period; a gap counts ``stale_timeout_s`` at most
        (by then every cube is stopped anyway)."""
        gap = now - self.planned_at
        self.planned_at = now
        if not 0.0 < gap < math.inf:
            return 1.0 / self.settings.rate_hz
        return min(gap, self.settings.stale_timeout_s)

    def _plan(self, pos, th, spd, vel, w, sent, goal_xy, cap, away, active, ok, age, now):
        """Waypoints (N, 2), speed limits (N,) in motor units, speed ratios (N,), collision flags (N,), and which
        cubes drive backwards (N,)."""
        n = pos.shape[0]
        backward = np.zeros(n, bool)
        if self.planner is None:
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
            if self.params.fixes.speed_limit_units:     # B2 fixed: HLAvoid's limit is dot/s, the cap motor units
                lim = np.asarray(lim, float) / self.handle.k
            self.last_rays = rays
        else:
            state = SwarmState(pos=pos, vel=vel, heading=th, radius=self.settings.body_radius + self.frozen_extra,
                               goal=goal_xy, max_speed=cap * UNITS_PER_S_PER_MOTOR_UNIT, active=active,
                               walls=self.walls, bounds=self.settings.mat_rect, latency=self.handle.lag, age=age,
                               command_s=self.settings.command_duration_ms / 1000.0, elapsed=self._elapsed(now),
                               sent=sent, plan_time=self.settings.plan_time_s if self.realtime else 0.0)
            res = self.planner.step(state, 1.0 / self.settings.rate_hz)
            wp, col = np.asarray(res.waypoint, float), np.asarray(res.collision, bool)
            if res.backward is not None:
                backward = np.asarray(res.backward, bool) & active
            lim = np.asarray(res.speed_limit, float) / UNITS_PER_S_PER_MOTOR_UNIT
            ratio = np.ones(n)
            self.last_rays = None
        wp = np.where(active[:, None] & np.isfinite(wp), wp, pos)
        return wp, np.asarray(lim, float), np.asarray(ratio, float), np.asarray(col, bool) & ok, backward


