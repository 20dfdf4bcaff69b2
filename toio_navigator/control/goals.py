"""Goals without ROS: what a goal the controller accepts is (:class:`Goal`, :func:`check_goal`), and the goal
bookkeeping of the navigator node: which goal each cube pursues, where it came from, how far it has left, when it
should arrive, and how it ended.

The navigator node keeps one :class:`GoalBook` beside its :class:`~toio_navigator.control.controller.
SwarmController`. Every goal the controller accepts, from any interface (the ``<cube>/goal`` topic,
``navigator/set_goal``, ``<cube>/goal_pose``, the ``<cube>/navigate_to_pose`` action), goes through
:meth:`GoalBook.replace`, so a newer goal for a cube pre-empts the older one whatever interface either came
from. After every controller tick the node feeds each cube's outcome to :meth:`GoalBook.update`, which returns
the goal's progress (distance, estimated time) or how it ended:

* ``REACHED``   the controller reports the cube within the goal's tolerance;
* ``STALE``     no state from the cube (or its link down) for ``fail_after_s`` without a break;
* ``OFF_MAT``   the cube off the mat for ``fail_after_s`` without a break;
* ``BLOCKED``   no progress (``progress_distance`` closer than ever before) for ``blocked_after_s``;
* ``PREEMPTED`` a newer goal for the cube, ``CANCELLED`` the caller's cancel (:meth:`GoalBook.cancel`).

Only goals that ``give_up`` end by failing (the action's and goal_pose's: their callers expect an end); a goal
from the topic or the service stays until it is reached or replaced, as those interfaces always behaved. The
numbers are the ``NavigateToPose`` result constants. Everything is in mat units and seconds.

Goals are positions: the controller steers every cube to a point (move-to-target has no final heading), so an
orientation given with a goal is not followed (docs/goals.md says why it is not bolted on outside the controller).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.units import MOTOR_MAX

#: a goal's direction: drive to it, away from it (HLAvoid only), or stop where the cube is
TOWARDS, AWAY, STOP = 0, 1, 2
REACHED, STALE, OFF_MAT, BLOCKED, PREEMPTED, CANCELLED, REJECTED = range(7)
OUTCOME_NAMES = ('reached', 'stale', 'off the mat', 'blocked', 'pre-empted', 'cancelled', 'rejected')
#: ids of goals that arrive without one (goal_pose, the action): from here up, apart from the callers' own ids
FIRST_OWN_GOAL_ID = 1 << 30


@dataclass
class Goal:
    """A goal as the controller pursues it."""
    goal_id: int
    x: float
    y: float
    direction: int
    max_speed: float          # motor units; 0 = default
    tolerance: float          # mat units; 0 = default
    reached: bool = False


def check_goal(cube: str, goal: Goal, msg_cube: str, settings: NavigatorSettings) -> str:
    """'' if ``goal`` for ``cube`` is acceptable, else the reason it is rejected (``msg_cube``: the cube the
    message names, '' = none). A tolerance (> 0) below the handle's own reached radius is refused, not clamped:
    move-to-target stops the cube within ``handle_tolerance`` of the goal, so such a goal could never be reported
    reached, and a silently widened one would be a surprise."""
    if cube not in settings.cubes:
        return f'unknown cube {cube!r} (known: {", ".join(settings.cubes)})'
    if msg_cube not in ('', cube):
        return f'goal.cube {msg_cube!r} does not match the topic namespace {cube!r}'
    if goal.direction not in (TOWARDS, AWAY, STOP):
        return f'direction {goal.direction} is not TOWARDS (0), AWAY (1) or STOP (2)'
    if goal.direction == STOP:
        return ''
    return _check_position(goal, settings.mat_rect) or _check_limits(goal, settings.handle_tolerance)


def _check_position(goal: Goal, mat_rect: tuple[float, float, float, float]) -> str:
    x, y = goal.x, goal.y
    if not (math.isfinite(x) and math.isfinite(y)):
        return f'goal position ({x}, {y}) is not finite'
    x0, y0, x1, y1 = mat_rect
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        return f'goal ({x:.1f}, {y:.1f}) is off the mat (x {x0:g}..{x1:g}, y {y0:g}..{y1:g})'
    return ''


def _check_limits(goal: Goal, handle_tolerance: float) -> str:
    max_speed, tolerance = goal.max_speed, goal.tolerance
    if not (math.isfinite(max_speed) and 0 <= max_speed <= MOTOR_MAX):
        return f'max_speed {max_speed} is not within 0..{MOTOR_MAX} motor units'
    if not (math.isfinite(tolerance) and tolerance >= 0):
        return f'tolerance {tolerance} is not a finite number >= 0'
    if 0 < tolerance < handle_tolerance:
        return (f'tolerance {tolerance:g} is below the handle tolerance {handle_tolerance:g}: the cube stops '
                f'within {handle_tolerance:g} of the goal, so it could never count as reached (use 0 for the '
                'default or a tolerance >= handle_tolerance)')
    return ''


@dataclass(frozen=True)
class GoalArrays:
    """The goals of N cubes as arrays for one tick (a cube without one: its own position)."""
    has_goal: np.ndarray        # (N,)
    position: np.ndarray        # (N, 2)
    speed_cap: np.ndarray       # (N,) motor units (the goal's, else the settings' max_speed)
    tolerance: np.ndarray       # (N,) reached radius, mat units (the goal's, else the settings')
    away: np.ndarray            # (N,) direction AWAY

    @classmethod
    def of(cls, goals: list[Goal | None], position: np.ndarray, settings: NavigatorSettings) -> GoalArrays:
        """The arrays of ``goals`` (one per cube, None: no goal) for cubes at ``position`` (N, 2)."""
        s = settings
        return cls(has_goal=np.array([g is not None for g in goals]),
                   position=np.array([(g.x, g.y) if g else (p[0], p[1]) for g, p in zip(goals, position)],
                                     dtype=float),
                   speed_cap=np.array([g.max_speed if g and g.max_speed > 0 else s.max_speed for g in goals]),
                   tolerance=np.array([g.tolerance if g and g.tolerance > 0 else s.tolerance for g in goals]),
                   away=np.array([bool(g and g.direction == AWAY) for g in goals]))


@dataclass(frozen=True)
class GoalPolicy:
    """When a goal that gives up fails, and how close a pose goal must come."""
    fail_after_s: float = 2.0         # stale or off the mat this long without a break: failed
    blocked_after_s: float = 10.0     # no progress this long: blocked (0 = never)
    progress_distance: float = 10.0   # mat units closer than ever before counts as progress
    # "reached" radius of goal_pose goals and of action goals that give none, mat units (13.6 mm; 0 = the
    # navigator's tolerance): a pose from rviz2 or a script asks for that spot, not the swarm's looser default
    pose_tolerance: float = 10.0

    def check(self) -> None:
        """ValueError naming the first bad field."""
        for name in ('fail_after_s', 'blocked_after_s', 'progress_distance', 'pose_tolerance'):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f'{name}: must be a finite number >= 0, got {v}')


@dataclass
class TrackedGoal:
    """One goal as the book follows it. ``owner`` is the interface's own handle (e.g. the action goal handle);
    the book only hands it back."""
    cube: str
    goal_id: int
    source: str                   # 'action', 'goal_pose', 'goal', 'set_goal'
    x: float
    y: float
    speed: float                  # nominal approach speed, mat units/s (the goal's speed cap)
    started: float
    give_up: bool
    owner: object = None
    distance: float = math.nan    # latest distance to (x, y), mat units
    _best: float = math.inf
    _progress_at: float = math.nan
    _trouble: tuple[int, float] | None = None   # (STALE or OFF_MAT, since)
    _approach: float = math.nan   # smoothed approach speed, mat units/s
    _last: tuple[float, float] | None = None    # (time, distance) of the previous update


@dataclass(frozen=True)
class Ended:
    """How a goal ended: an outcome constant, the reason in words ('' when reached), the distance left."""
    goal: TrackedGoal
    outcome: int
    reason: str
    distance: float
    elapsed: float

    @property
    def name(self) -> str:
        return OUTCOME_NAMES[self.outcome]


@dataclass(frozen=True)
class Progress:
    """A running goal after a tick: distance left (mat units), estimated seconds to go, seconds since start."""
    goal: TrackedGoal
    distance: float
    eta_s: float
    elapsed: float


@dataclass
class GoalBook:
    """The goal of every cube (None: none being followed)."""
    cubes: tuple[str, ...]
    policy: GoalPolicy = field(default_factory=GoalPolicy)

    def __post_init__(self) -> None:
        self.policy.check()
        self.goals: dict[str, TrackedGoal | None] = {c: None for c in self.cubes}
        self._next_id = FIRST_OWN_GOAL_ID

    def next_goal_id(self) -> int:
        """A fresh id for a goal that came without one."""
        self._next_id += 1
        return self._next_id

    def active(self, cube: str) -> TrackedGoal | None:
        return self.goals.get(cube)

    def replace(self, cube: str, goal: TrackedGoal | None, now: float, by: str) -> Ended | None:
        """``goal`` (None: a STOP or a goal the book does not follow) becomes the cube's goal; the one it replaces
        ends PREEMPTED, with ``by`` saying what replaced it."""
        old = self.goals.get(cube)
        self.goals[cube] = goal
        if goal is not None:
            goal._progress_at = now
        if old is None:
            return None
        return self._end(old, PREEMPTED, f'pre-empted by {by}', now)

    def cancel(self, cube: str, owner: object, now: float) -> Ended | None:
        """End the cube's goal CANCELLED if ``owner`` owns it (None if it no longer does)."""
        goal = self.goals.get(cube)
        if goal is None or goal.owner is not owner:
            return None
        self.goals[cube] = None
        return self._end(goal, CANCELLED, 'cancelled by the caller', now)

    def end_owned(self, owner: object) -> TrackedGoal | None:
        """Forget the goal ``owner`` owns (its interface went away); the goal itself, or None."""
        for cube, goal in self.goals.items():
            if goal is not None and goal.owner is owner:
                self.goals[cube] = None
                return goal
        return None

    def update(self, cube: str, now: float, x: float, y: float, reached: bool, stale: bool,
               on_mat: bool) -> Progress | Ended | None:
        """After a tick: the cube's latest pose and what the controller reported. The goal's Progress, or how it
        Ended (it is then no longer the cube's goal), or None when the cube has no goal."""
        goal = self.goals.get(cube)
        if goal is None:
            return None
        p = self.policy
        seen = math.isfinite(x) and math.isfinite(y)
        if seen:
            goal.distance = math.hypot(goal.x - x, goal.y - y)
            self._note_approach(goal, now)
        trouble = STALE if stale or not seen else OFF_MAT if not on_mat else None
        if trouble is None:
            goal._trouble = None
        elif goal._trouble is None or goal._trouble[0] != trouble:
            goal._trouble = (trouble, now)
        if goal.give_up and goal._trouble is not None and now - goal._trouble[1] >= p.fail_after_s:
            what = 'no state from the cube' if trouble == STALE else 'the cube is off the mat'
            return self._finish(goal, trouble, f'{what} for {now - goal._trouble[1]:.1f} s', now)
        if trouble is None and reached:
            return self._finish(goal, REACHED, '', now)
        if goal.distance <= goal._best - p.progress_distance or (goal._best == math.inf and seen):
            goal._best, goal._progress_at = goal.distance, now
        if goal.give_up and p.blocked_after_s > 0 and now - goal._progress_at >= p.blocked_after_s:
            what = f'no progress towards the goal ({goal.distance:.0f} units away)'
            return self._finish(goal, BLOCKED, f'{what} for {now - goal._progress_at:.1f} s', now)
        return Progress(goal, goal.distance, self._eta(goal), now - goal.started)

    # ---- internals
    def _note_approach(self, goal: TrackedGoal, now: float) -> None:
        if goal._last is not None and now - goal._last[0] > 1e-3:
            speed = (goal._last[1] - goal.distance) / (now - goal._last[0])
            goal._approach = speed if not math.isfinite(goal._approach) else 0.8 * goal._approach + 0.2 * speed
        goal._last = (now, goal.distance)

    def _eta(self, goal: TrackedGoal) -> float:
        """Seconds to go: the distance at the recent approach speed (never assumed slower than a fifth of the
        nominal speed, nor faster than it)."""
        if not math.isfinite(goal.distance):
            return math.nan
        speed = goal._approach if math.isfinite(goal._approach) else goal.speed
        speed = min(max(speed, 0.2 * goal.speed), goal.speed)
        return goal.distance / speed

    def _finish(self, goal: TrackedGoal, outcome: int, reason: str, now: float) -> Ended:
        self.goals[goal.cube] = None
        return self._end(goal, outcome, reason, now)

    @staticmethod
    def _end(goal: TrackedGoal, outcome: int, reason: str, now: float) -> Ended:
        return Ended(goal, outcome, reason, goal.distance, now - goal.started)
