"""The reference Navigator (HLAvoid / Boids / both) behind the shared LocalPlanner interface (planner.py).

Each tick every active cube gets one Navigator query (modes of fact sheet §1.4) through the vectorised
``swarm_step``; the waypoint is turned into a holonomic velocity towards it at the reference's drive speed
min(speedLimit, maxSpeed · speedRatio) — speedLimit is in motor units in the reference (B2), so the cap is
compared in motor units and converted back with K — and never farther than the waypoint in one tick.
The yaw rate the reference reads from the wheels is estimated from the heading change between ticks.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT

from .angles import wrap
from .navigator import Mode
from .params import NavigatorParams
from .planner import PlannerOutput, SwarmState
from .swarm import swarm_step


class HLAvoidPlanner:
    """LocalPlanner running the reference Navigator in ``mode`` (AVOID, BOIDS or BOIDS_AVOID)."""

    def __init__(self, params: NavigatorParams | None = None, mode: Mode | str = Mode.AVOID):
        self.params = params or NavigatorParams()
        self.mode = Mode(mode)
        self.name = {Mode.AVOID: 'hlavoid', Mode.BOIDS: 'boids', Mode.BOIDS_AVOID: 'boids_avoid'}[self.mode]
        self._prev_heading: np.ndarray | None = None
        self.last = None      # the last NaviBatch, for inspection

    def reset(self, n: int, seed: int = 0) -> None:
        self._prev_heading = None          # deterministic: no sampling, the seed is not needed

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        n = state.n
        heading = np.asarray(state.heading, dtype=float)
        vel = np.asarray(state.vel, dtype=float)
        spd = vel[:, 0] * np.cos(heading) + vel[:, 1] * np.sin(heading)
        if self._prev_heading is None or self._prev_heading.shape != heading.shape or dt <= 0:
            w = np.zeros(n)
        else:
            w = wrap(heading - self._prev_heading) / dt
        self._prev_heading = heading.copy()
        res = swarm_step(state.pos, heading, spd, vel, w, state.goal, self.params, state.walls, self.mode,
                         margin=np.asarray(state.radius, dtype=float))
        self.last = res
        k = UNITS_PER_S_PER_MOTOR_UNIT
        max_speed = np.asarray(state.max_speed, dtype=float)
        if self.params.fixes.speed_limit_units:     # the limit is taken as what it is built as: dot/s
            speed = np.minimum(res.speed_limit, max_speed * res.speed_ratio)
        else:                                       # reference: the limit caps a motor-unit speed (B2)
            speed = np.minimum(res.speed_limit, max_speed / k * res.speed_ratio) * k
        pos = np.asarray(state.pos, dtype=float)
        delta = res.waypoint - pos
        dist = np.hypot(delta[:, 0], delta[:, 1])
        if dt > 0:
            speed = np.minimum(speed, dist / dt)
        speed = np.minimum(speed, max_speed)
        safe = np.where(dist > 0, dist, 1.0)
        velocity = delta / safe[:, None] * np.where(dist > 0, speed, 0.0)[:, None]
        active = np.asarray(state.active, dtype=bool)
        velocity[~active] = 0.0
        waypoint = np.where(active[:, None], res.waypoint, pos)
        return PlannerOutput(velocity, waypoint, np.where(active, speed, 0.0), res.collision & active)
