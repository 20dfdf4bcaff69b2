"""The reference Navigator (HLAvoid / Boids / both) behind the shared LocalPlanner interface (planner.py).

Each tick every active cube gets one Navigator query (modes of docs/navigator.md §1.4) through the vectorised
``swarm_step``. A toio cube steers like CubeHandle.move_to_target (§4.5): it turns towards the waypoint at
δ/rotateTime and translates only when roughly facing it, so a speed limit of 0 (the overlap stop rule) means
"turn in place", which is how the reference gets out of a jam. A holonomic simulator has no heading of its own
worth using, so the planner keeps a heading per cube with exactly that steering model, feeds it to HLAvoid, and
moves the cube along it at the reference's drive speed min(speedLimit, maxSpeed · speedRatio) (speedLimit is in
motor units in the reference, B2, unless ``Fixes.speed_limit_units``), never past the waypoint in one tick.
A cube stops once both its goal and its waypoint are within ``arrive_tolerance`` (move_to_target's 8). Unlike
the real handle it does not stop for a short waypoint short of the goal: with no sensor noise to break the
symmetry that would freeze symmetric encounters for good (B26, B27).
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.interface import PlannerOutput, SwarmState
from toio_navigator.reference.angles import wrap
from toio_navigator.reference.navigator import Mode
from toio_navigator.reference.params import NavigatorParams
from toio_navigator.reference.swarm import swarm_step
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT


class HLAvoidPlanner:
    """LocalPlanner running the reference Navigator in ``mode`` (AVOID, BOIDS or BOIDS_AVOID)."""

    def __init__(self, params: NavigatorParams | None = None, mode: Mode | str = Mode.AVOID,
                 rotate_time_s: float = 0.25, full_speed_deg: float = 10.0, stop_deg: float = 120.0,
                 arrive_tolerance: float = 8.0):
        self.params = params or NavigatorParams()
        self.mode = Mode(mode)
        self.name = {Mode.AVOID: 'hlavoid', Mode.BOIDS: 'boids', Mode.BOIDS_AVOID: 'boids_avoid'}[self.mode]
        self.rotate_time_s = rotate_time_s                 # move_to_target's rotateTime (250 ms)
        self.full_speed = math.radians(full_speed_deg)     # full translation within this heading error
        self.stop = math.radians(stop_deg)                 # no translation beyond this heading error
        self.arrive_tolerance = arrive_tolerance           # stop once goal and waypoint are this close
        self._heading: np.ndarray | None = None
        self._w: np.ndarray | None = None
        self.last = None      # the last NaviBatch, for inspection

    def reset(self, n: int, seed: int = 0) -> None:
        self._heading = None          # deterministic: no sampling, the seed is not needed
        self._w = None

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        n = state.n
        pos = np.asarray(state.pos, dtype=float)
        vel = np.asarray(state.vel, dtype=float)
        if self._heading is None or self._heading.shape != (n,):
            self._heading = np.asarray(state.heading, dtype=float).copy()
            self._w = np.zeros(n)
        heading = self._heading
        spd = vel[:, 0] * np.cos(heading) + vel[:, 1] * np.sin(heading)
        res = swarm_step(pos, heading, spd, vel, self._w, state.goal, self.params, state.walls, self.mode,
                         margin=np.asarray(state.radius, dtype=float))
        self.last = res
        k = UNITS_PER_S_PER_MOTOR_UNIT
        max_speed = np.asarray(state.max_speed, dtype=float)
        if self.params.fixes.speed_limit_units:     # the limit is taken as what it is built as: dot/s
            speed = np.minimum(res.speed_limit, max_speed * res.speed_ratio)
        else:                                       # reference: the limit caps a motor-unit speed (B2)
            speed = np.minimum(res.speed_limit, max_speed / k * res.speed_ratio) * k
        delta = res.waypoint - pos
        dist = np.hypot(delta[:, 0], delta[:, 1])
        # steer like move_to_target: turn towards the waypoint, translate when facing it
        goal_d = np.hypot(*(np.asarray(state.goal, dtype=float) - pos).T)
        reached = (dist < self.arrive_tolerance) & (goal_d < self.arrive_tolerance)
        err = np.where(reached, 0.0, wrap(np.arctan2(delta[:, 1], delta[:, 0]) - heading))
        turn = err * min(1.0, dt / self.rotate_time_s) if dt > 0 else np.zeros(n)
        new_heading = wrap(heading + turn)
        facing = np.clip(1 - (np.abs(err) - self.full_speed) / (self.stop - self.full_speed), 0.0, 1.0)
        speed = np.where(reached, 0.0, speed * facing)
        if dt > 0:
            speed = np.minimum(speed, dist / dt)
        speed = np.minimum(speed, max_speed)
        velocity = speed[:, None] * np.stack([np.cos(new_heading), np.sin(new_heading)], axis=1)
        active = np.asarray(state.active, dtype=bool)
        velocity[~active] = 0.0
        self._w = np.where(active, turn / dt, 0.0) if dt > 0 else np.zeros(n)
        self._heading = np.where(active, new_heading, heading)
        waypoint = np.where(active[:, None], res.waypoint, pos)
        return PlannerOutput(velocity, waypoint, np.where(active, speed, 0.0), res.collision & active)
