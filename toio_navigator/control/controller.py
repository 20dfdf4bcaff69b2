"""The navigator's per-tick logic without ROS: latest cube states and goals in, one swarm step, wheel commands out.

:class:`SwarmController` gathers the latest state of every cube into arrays, runs the core's swarm step
(HLAvoid/Boids modes) or a registry planner once for all cubes, and turns waypoint + speed into wheel commands
with a duration (so a cube whose navigator or link dies stops by itself). One tick (:meth:`SwarmController.step`):

1. **observe**: each cube's latest state, its age at the tick, and whether it is live (fresh, link up) and on the
   mat; a cube gone silent is believed where its last command took it;
2. **motion**: its speed and turn rate under the last command sent, and where the next command will find it
   (:func:`~toio_navigator.control.wheels.predict_pose`: horizon = command lag + age of the state);
3. **plan**: the dead-lock breaker's targets (:mod:`~toio_navigator.control.breaker`), then the planner's
   waypoints, speed limits and collision flags;
4. **wheels**: move-to-target's wheel speeds (:mod:`~toio_navigator.control.wheels`), slowed by the contact guard
   where a cube would close in on another one (:mod:`~toio_navigator.control.guard`; not for a planner with its
   own safety layer);
5. **commands**: a driving command for every active cube, a stop for one at its goal, stale or off the mat.

A tick is a pure function of its inputs: the state stamps (``stamp_ns`` of :meth:`update_state`), the goals and
the tick time given to :meth:`step`. Nothing reads a wall clock there, so a bag holding those replays exactly.
A cube whose state is older than ``stale_timeout_s`` (or whose link is down) is stopped and stays in the swarm
as a static obstacle; so is a cube off the mat. Malformed goals are rejected with a reason.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from toio_navigator.control.breaker import ESCAPE_SPEED, DeadlockBreaker, Overlaps
from toio_navigator.control.command_history import CommandHistory
from toio_navigator.control.goals import AWAY, STOP, Goal, GoalArrays, check_goal
from toio_navigator.control.guard import CommandsInFlight, GuardModel, guard_caps, in_flight
from toio_navigator.control.navigator_settings import HLAVOID, NavigatorSettings
from toio_navigator.control.wheels import Poses, WheelShaping, drive_wheels, predict_pose
from toio_navigator.planners import make_planner
from toio_navigator.planners.interface import SwarmState
from toio_navigator.reference.params import CubeHandleParams, NavigatorParams
from toio_navigator.reference.swarm import swarm_step
from toio_navigator.units import MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT

LINK_CONNECTED = 2          # CubeState.LINK_CONNECTED (kept numeric so the controller needs no message import)
GUARD_PASSES = 3           # the contact guard checks the wheels it slowed again (a slower arc is another arc)
GUARD_HISTORY = 10         # commands kept per cube for the contact guard: all those in flight at 20 Hz for a reading
                           # up to 0.25 s old with 0.2 s latency (3-5 were in flight in a loaded lab run)
UNSEEN_POSITION = (-1e4, -1e4)   # where a cube the controller has no state of is planned with: far away


def stamp_seconds(stamp_ns: int) -> float:
    """A ROS time in nanoseconds as float seconds, computed one way everywhere (node, replay) so the same
    recorded stamps give bit-identical ages."""
    stamp_ns = int(stamp_ns)
    return stamp_ns // 1_000_000_000 + (stamp_ns % 1_000_000_000) * 1e-9


@dataclass(kw_only=True)
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


class ControllerConfig(Protocol):
    """What :meth:`SwarmController.reconfigure` takes (the node's NavigatorConfig is one)."""
    @property
    def settings(self) -> NavigatorSettings: ...
    @property
    def params(self) -> NavigatorParams: ...
    @property
    def handle(self) -> CubeHandleParams: ...


@dataclass(frozen=True)
class Observed:
    """What a tick knows of the N cubes before it plans."""
    now: float
    seen: np.ndarray            # (N,) a state has arrived
    live: np.ndarray            # (N,) ... it is fresh and the link is up
    controllable: np.ndarray    # (N,) ... and the cube is on the mat: this tick drives it
    position: np.ndarray        # (N, 2) believed positions (UNSEEN_POSITION for an unseen cube)
    heading: np.ndarray         # (N,)
    age: np.ndarray             # (N,) s from reading to tick, within 0..1


@dataclass(frozen=True)
class Motion:
    """The cubes under the last command sent to each: what the planner counts as their motion."""
    speed: np.ndarray           # (N,) units/s; 0 once the command ran out (or for a cube not controllable)
    velocity: np.ndarray        # (N, 2) units/s along the observed heading
    turn_rate: np.ndarray       # (N,) rad/s
    sent_speed: np.ndarray      # (N,) units/s of the last command, run out or not
    predicted: Poses            # where the next command will find each cube


@dataclass(frozen=True)
class Plan:
    """The planner's answer, in the controller's units."""
    waypoint: np.ndarray        # (N, 2)
    speed_limit: np.ndarray     # (N,) motor units
    speed_ratio: np.ndarray     # (N,)
    collision: np.ndarray       # (N,) only for controllable cubes
    backward: np.ndarray        # (N,) drive tail first


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
        # the contact guard's commands in flight; the newest is the motion model's last command
        self.history = CommandHistory.empty(n, GUARD_HISTORY)
        self.breaker = DeadlockBreaker(n)
        self.walls = settings.wall_rows()
        self.planner = None
        self.last_rays: tuple[np.ndarray, np.ndarray] | None = None   # (N, S) directions and free distances
        self.last_waypoints = np.full((n, 2), np.nan)
        self.last_collision = np.zeros(n, dtype=bool)
        self.last_goal_id = [0] * n
        self.last_goal: list[Goal | None] = [None] * n   # the last accepted goal, a STOP included
        self.stop_requested: set[int] = set()
        self.planned_at = -math.inf                      # clock time of the last tick that ran the planner
        self.set_planner(settings.planner)

    # ---- configuration
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

    def reconfigure(self, config: ControllerConfig) -> None:
        """Run with ``config``'s settings, reference parameters and handle from the next tick on (a run-time
        parameter change). States, goals, the commands sent and the breaker's memory stay; a new planner starts
        afresh. ValueError for bad settings or a different list of cubes."""
        settings = config.settings
        settings.check()
        if tuple(settings.cubes) != tuple(self.settings.cubes):
            raise ValueError(f'cubes: cannot change while running ({list(self.settings.cubes)} -> '
                             f'{list(settings.cubes)})')
        if settings.planner != self.settings.planner:
            self.set_planner(settings.planner)
        self.settings = settings
        self.walls = settings.wall_rows()
        self.params, self.handle = config.params, config.handle

    # ---- inputs
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
        reason = check_goal(cube, Goal(goal_id, x, y, direction, max_speed, tolerance), msg_cube, self.settings)
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

    def replace_last_command(self, i: int, motor: tuple[int, int, int]) -> None:
        """Put ``motor`` (left, right, duration_ms), which cube row ``i`` got instead, in place of the command
        this controller sent it last (bag replay: what the recorded cubes got). It keeps that command's send
        time, and both the motion model and the contact guard see the new one."""
        if not self.history.has_sent(i):
            raise ValueError(f'{self.settings.cubes[i]} has been sent no command to replace')
        self.history.replace_last(i, motor)

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

    @property
    def last_cmd(self) -> np.ndarray:
        """(N, 2) the last wheel command sent to each cube, motor units (0, 0 before the first)."""
        return self.history.last_wheels

    @property
    def last_cmd_until(self) -> np.ndarray:
        """(N,) the clock time each cube's last command expires (-inf before the first)."""
        return self.history.last_until

    @property
    def sidesteps(self) -> np.ndarray:
        """(N,) side-steps the dead-lock breaker made each cube take."""
        return self.breaker.sidesteps

    # ---- one tick
    def step(self, now: float | None = None) -> list[CubeCommand]:
        """One tick at ``now`` (None: the clock): every cube's decision, and the wheel commands to send."""
        now = self.clock() if now is None else now
        obs = self._observe(now)
        goals = GoalArrays.of(self.goals, obs.position, self.settings)
        active = obs.controllable & goals.has_goal
        coordinating = bool(getattr(self.planner, 'resolves_deadlocks', False))   # it has its own dead-lock handling
        target, breaking = self.breaker.targets(now, obs.position, goals.position,
                                                active & ~goals.away & (not coordinating), self.settings, self.handle)
        motion = self._motion(obs)
        plan = self._plan(obs, motion, target, goals, active)
        reached = self._reached(obs, goals, active, plan.waypoint, coordinating)
        # a cube on its way out of an overlap stays in the breaker until it is out, progress or not
        engaged = (breaking | self.breaker.escaping) & ~goals.away & ~reached
        waypoint = self.breaker.out_of_reach(obs.position, plan.waypoint, target, engaged, plan.collision,
                                             self.settings, self._overlaps())
        speed = self._speed(plan, goals)
        guarded = self.settings.contact_guard and not coordinating
        wheels, speed = self._wheels(obs, motion, waypoint, speed, plan.backward, active, active & ~reached, guarded)
        out = self._commands(obs, goals, active, reached, plan, waypoint, speed, wheels)
        self.last_waypoints = waypoint
        self.last_collision = plan.collision
        return out

    def _observe(self, now: float) -> Observed:
        seen = np.isfinite(self.pose[:, 0])
        live = self.live(now) & seen
        controllable = live & self.on_mat
        pose = self._believed_poses(live, seen)
        return Observed(now=now, seen=seen, live=live, controllable=controllable,
                        position=np.where(seen[:, None], pose[:, :2], np.array(UNSEEN_POSITION)),
                        heading=np.where(seen, pose[:, 2], 0.0),
                        age=np.clip(np.where(seen, now - self.stamp, 0.0), 0.0, 1.0))

    def _motion(self, obs: Observed) -> Motion:
        """The reference's entity velocities from the command model (none for stopped cubes); the state was read
        ``age`` before the tick and the next command takes effect ``lag`` after it."""
        hp, now, heading = self.handle, obs.now, obs.heading
        until = self.last_cmd_until                    # derived from the history: computed once per tick
        running = obs.controllable & (now < until)
        wheels = self.last_cmd * hp.k                  # u/s of each wheel under the last command sent
        left, right = np.where(running[:, None], wheels, 0.0).T
        speed = 0.5 * (left + right)
        rest = np.where(obs.controllable, np.maximum(until - now, 0.0), 0.0)
        observed = Poses(obs.position[:, 0], obs.position[:, 1], heading)
        return Motion(speed=speed, velocity=np.column_stack([np.cos(heading) * speed, np.sin(heading) * speed]),
                      turn_rate=(left - right) / hp.wheel_track,
                      sent_speed=np.abs(0.5 * wheels.sum(axis=1)),   # a late tick comes after its end
                      predicted=predict_pose(observed, self.last_cmd, rest, hp.lag + obs.age, hp))

    def _reached(self, obs: Observed, goals: GoalArrays, active: np.ndarray, waypoint: np.ndarray,
                 coordinating: bool) -> np.ndarray:
        position = obs.position
        at_goal = np.hypot(goals.position[:, 0] - position[:, 0], goals.position[:, 1] - position[:, 1]) \
            <= goals.tolerance
        reached = active & ~goals.away & at_goal
        if coordinating:   # it may move a cube off its goal to let another one pass
            reached &= np.hypot(waypoint[:, 0] - position[:, 0], waypoint[:, 1] - position[:, 1]) \
                <= self.settings.handle_tolerance
        return reached

    def _overlaps(self) -> Overlaps | None:
        """HLAvoid's overlaps for the breaker (each cube's avoid margin, as planned); None for other planners."""
        if self.planner is not None:
            return None
        return Overlaps(self.params.avoid.margin + self.frozen_extra, self.walls)

    def _speed(self, plan: Plan, goals: GoalArrays) -> np.ndarray:
        """Motor units: navi_to_target's min(speedLimit, maxSpd·ratio); a cube escaping an overlap crawls on."""
        cap = goals.speed_cap
        speed = np.minimum(plan.speed_limit, cap * plan.speed_ratio)
        speed = np.clip(np.nan_to_num(speed, nan=0.0, posinf=MOTOR_MAX), 0.0, MOTOR_MAX)
        return np.where(self.breaker.escaping, np.maximum(speed, np.minimum(ESCAPE_SPEED, cap)), speed)

    def _wheels(self, obs: Observed, motion: Motion, waypoint: np.ndarray, speed: np.ndarray, backward: np.ndarray,
                active: np.ndarray, movers: np.ndarray, guarded: bool) -> tuple[np.ndarray, np.ndarray]:
        """((N, 2) wheels, (N,) speed caps): move-to-target's wheels, re-shaped at a lower speed cap while the
        contact guard (``guarded``) lowers it for the ``movers``."""
        s, hp = self.settings, self.handle
        observed = Poses(obs.position[:, 0], obs.position[:, 1], obs.heading)
        shaping = WheelShaping.of(s, hp)
        left, right = drive_wheels(observed, motion.predicted, waypoint, speed, shaping, backward)
        if not guarded:
            return np.column_stack([left, right]), speed
        flight = self._in_flight(obs, active)
        model = GuardModel(run=s.command_duration_ms / 1000.0, gap=s.contact_gap, k=hp.k, track=hp.wheel_track,
                           dead_zone=float(hp.dead_zone))
        pose = np.column_stack([obs.position, obs.heading])
        for _ in range(GUARD_PASSES):
            capped = guard_caps(pose, speed, flight, np.column_stack([left, right]), movers,
                                s.body_radius + self.frozen_extra, model)
            if not (capped < speed).any():
                break
            speed = capped
            left, right = drive_wheels(observed, motion.predicted, waypoint, speed, shaping, backward)
        return np.column_stack([left, right]), speed

    def _commands(self, obs: Observed, goals: GoalArrays, active: np.ndarray, reached: np.ndarray, plan: Plan,
                  waypoint: np.ndarray, speed: np.ndarray, wheels: np.ndarray) -> list[CubeCommand]:
        """Every cube's decision; the wheel commands go into the history. A driving command for an active cube
        on its way, a stop for one at its goal, for a stale / off-mat cube with a goal, and after a STOP goal."""
        s = self.settings
        stop_now, self.stop_requested = self.stop_requested, set()
        out: list[CubeCommand] = []
        issued = []
        for i, cube in enumerate(s.cubes):
            g = self.goals[i]
            if g is not None and reached[i]:
                g.reached = True
            motor: tuple[int, int, int] | None = None
            if active[i] and not reached[i]:
                motor = (int(round(wheels[i, 0])), int(round(wheels[i, 1])), int(s.command_duration_ms))
            elif (active[i] and reached[i]) or (obs.seen[i] and not obs.controllable[i] and goals.has_goal[i]) \
                    or i in stop_now:
                motor = (0, 0, int(s.stop_duration_ms))   # hold at the goal; stop a stale / off-mat cube
            if motor is not None:
                issued.append((i, motor))
            out.append(CubeCommand(
                cube=cube, goal_id=self.last_goal_id[i], active=bool(active[i]),
                waypoint=(float(waypoint[i, 0]), float(waypoint[i, 1])), speed_limit=float(speed[i]),
                speed_ratio=float(plan.speed_ratio[i]), collision=bool(plan.collision[i]),
                reached=bool(g.reached) if g else False, motor=motor, stale=not bool(obs.live[i]),
                on_mat=bool(self.on_mat[i]), state_stamp_ns=int(self.stamp_ns[i]) if obs.seen[i] else 0,
                goal=self.last_goal[i], state=self.state_in[i] if obs.seen[i] else None))
        self.history.append(obs.now, issued)
        return out

    def _in_flight(self, obs: Observed, active: np.ndarray) -> CommandsInFlight:
        """For the contact guard, on its own motion model (on the safe side of the planner's): the commands still
        in flight towards each cube as segments of its way from its reading (:func:`in_flight`). A command takes
        effect ``contact_guard_latency_s`` after it is sent and drives until the next one does or its duration
        ends, so a cube may still be executing several older commands (the planner's entity velocities see only
        the last one, as the reference does); this tick's command, which every active cube gets (a hold at its
        goal included), takes over that latency after the tick. A cube not controllable this tick has none."""
        now = obs.now
        flight = in_flight(self.history, np.where(obs.seen, self.stamp, now), now,
                           self.settings.contact_guard_latency_s, active, self.settings.contact_guard_write_gap_s)
        return flight.only(obs.controllable)

    def _believed_poses(self, live: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """Poses to plan with: the latest state of a live cube; for a cube gone silent, where its last command
        took it after its last state (a dead link does not stop a cube at once: its command runs out first)."""
        hp = self.handle
        gone = seen & ~live
        for i in np.nonzero(gone & ~self.frozen_valid)[0]:
            # it stopped somewhere between its last reading and the end of its last command (a driver that
            # died may never have delivered that command): plan with a disc covering both
            run = max(self.last_cmd_until[i] + hp.lag - self.stamp[i], 0.0)
            end = predict_pose(Poses(self.pose[i, 0], self.pose[i, 1], self.pose[i, 2]), self.last_cmd[i], run, run,
                               hp)
            x, y = float(end.x), float(end.y)
            self.frozen[i] = (0.5 * (self.pose[i, 0] + x), 0.5 * (self.pose[i, 1] + y), float(end.heading))
            self.frozen_extra[i] = 0.5 * math.hypot(x - self.pose[i, 0], y - self.pose[i, 1])
        self.frozen_valid = gone
        self.frozen_extra[~gone] = 0.0
        return np.where(gone[:, None], self.frozen, self.pose)

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

    def _entities(self, obs: Observed, motion: Motion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, headings, velocities) the planner sees: as observed, or with the reference's usePred
        where the next command will find each cube."""
        if not self.settings.use_pred:
            return obs.position, obs.heading, motion.velocity
        p = motion.predicted
        return (np.column_stack([p.x, p.y]), p.heading,
                np.column_stack([np.cos(p.heading) * motion.speed, np.sin(p.heading) * motion.speed]))

    def _plan(self, obs: Observed, motion: Motion, target: np.ndarray, goals: GoalArrays, active: np.ndarray) -> Plan:
        """The planner's waypoints towards ``target`` (a cube not active stays where the planner sees it)."""
        pos, heading, velocity = self._entities(obs, motion)
        if self.planner is None:
            plan = self._plan_hlavoid(pos, heading, velocity, motion, target, goals.away)
        else:
            plan = self._plan_registry(pos, heading, velocity, motion, target, goals.speed_cap, active, obs)
        waypoint = np.where(active[:, None] & np.isfinite(plan.waypoint), plan.waypoint, pos)
        return Plan(waypoint=waypoint, speed_limit=np.asarray(plan.speed_limit, float),
                    speed_ratio=np.asarray(plan.speed_ratio, float),
                    collision=np.asarray(plan.collision, bool) & obs.controllable, backward=plan.backward)

    def _plan_hlavoid(self, pos, heading, velocity, motion: Motion, target, away) -> Plan:
        """The core's swarm step (HLAvoid/Boids modes); a cube going AWAY gets the step run away from its goal."""
        extra = self.frozen_extra
        kw = dict(params=self.params, walls=self.walls, mode=self.settings.mode, margin=16.0 + extra,
                  avoid_margin=self.params.avoid.margin + extra)
        args = (pos, heading, motion.speed, velocity, motion.turn_rate, target)
        res = swarm_step(*args, direction='towards', **kw)
        waypoint, limit, ratio, collision = res.waypoint, res.speed_limit, res.speed_ratio, res.collision
        rays = (res.avoid.rads, res.avoid.dists) if res.avoid is not None else None
        if away.any():
            res_a = swarm_step(*args, direction='away', **kw)
            waypoint = np.where(away[:, None], res_a.waypoint, waypoint)
            limit = np.where(away, res_a.speed_limit, limit)
            ratio = np.where(away, res_a.speed_ratio, ratio)
            collision = np.where(away, res_a.collision, collision)
        if self.params.fixes.speed_limit_units:     # B2 fixed: HLAvoid's limit is dot/s, the cap motor units
            limit = np.asarray(limit, float) / self.handle.k
        self.last_rays = rays
        return Plan(waypoint, limit, ratio, collision, np.zeros(pos.shape[0], bool))

    def _plan_registry(self, pos, heading, velocity, motion: Motion, target, cap, active, obs: Observed) -> Plan:
        """A registry planner, in mat units/s; its speed limits back in motor units."""
        s = self.settings
        state = SwarmState(pos=pos, vel=velocity, heading=heading, radius=s.body_radius + self.frozen_extra,
                           goal=target, max_speed=cap * UNITS_PER_S_PER_MOTOR_UNIT, active=active,
                           walls=self.walls, bounds=s.mat_rect, latency=self.handle.lag, age=obs.age,
                           command_s=s.command_duration_ms / 1000.0, elapsed=self._elapsed(obs.now),
                           sent=motion.sent_speed, plan_time=s.plan_time_s if self.realtime else 0.0)
        res = self.planner.step(state, 1.0 / s.rate_hz)
        backward = np.zeros(pos.shape[0], bool)
        if res.backward is not None:
            backward = np.asarray(res.backward, bool) & active
        self.last_rays = None
        return Plan(np.asarray(res.waypoint, float), np.asarray(res.speed_limit, float) / UNITS_PER_S_PER_MOTOR_UNIT,
                    np.ones(pos.shape[0]), np.asarray(res.collision, bool), backward)
