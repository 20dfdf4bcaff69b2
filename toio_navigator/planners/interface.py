"""The one interface every local planner implements, so the navigator node can switch planner by parameter.

A planner sees the whole swarm as arrays (one row per cube, mat units / radians / seconds) and answers for all
cubes at once. HLAvoid/Boids answer naturally with a waypoint and a speed limit; velocity planners (SFM, TTC,
VO, ORCA) answer with a holonomic velocity. Both are carried in :class:`PlannerOutput` so the caller can drive a
cube either way: a waypoint goes to CubeHandle's move-to-target, a velocity to the holonomic model or, through a
short-horizon waypoint, to CubeHandle as well.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass
class SwarmState:
    """What all planners see in one tick. Arrays have N rows (cubes) unless noted."""
    pos: np.ndarray                 # (N, 2) position, mat units
    vel: np.ndarray                 # (N, 2) velocity, mat units/s
    heading: np.ndarray             # (N,) heading, rad (mat frame, clockwise)
    radius: np.ndarray              # (N,) body radius used for clearance, mat units
    goal: np.ndarray                # (N, 2) goal position, mat units
    max_speed: np.ndarray           # (N,) speed cap, mat units/s
    active: np.ndarray              # (N,) bool; inactive cubes do not move and are obstacles for the others
    walls: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))  # (M, 5) x1, y1, x2, y2, margin
    bounds: tuple[float, float, float, float] | None = None   # x_min, y_min, x_max, y_max cubes may use; None = any
    latency: float = 0.0            # s from this state to a command taking effect (0: ideal discs, the benchmark)
    age: np.ndarray | None = None   # (N,) s since each state was measured (None: fresh)
    command_s: float = 0.0          # s a wheel command runs on by itself unless a newer one replaces it
    sent: np.ndarray | None = None  # (N,) u/s: the speed of the last wheel command sent to each cube, run out or
                                    # not (a late tick comes after its end, but it may reach the cube only now)
    elapsed: float | None = None    # s since the planner's last tick (None: the step's dt); a busy host ticks
                                    # late: a planner that keeps time (how long a command runs, a cube stands)
                                    # reads this, while dt stays the control period a velocity is planned for
    plan_time: float = 0.0          # s of wall time a plan made beside the ticks (a live navigator's, in a worker
                                    # thread) may spend improving itself once it has one (0: no limit)

    @property
    def n(self) -> int:
        return int(self.pos.shape[0])


@dataclass
class PlannerOutput:
    """The planner's answer for every cube in one tick."""
    velocity: np.ndarray            # (N, 2) commanded holonomic velocity, mat units/s
    waypoint: np.ndarray            # (N, 2) where to steer next, mat units
    speed_limit: np.ndarray         # (N,) speed to use towards the waypoint, mat units/s
    collision: np.ndarray           # (N,) bool: the planner considers the cube in collision now
    backward: np.ndarray | None = None   # (N,) bool: drive to the waypoint tail first (None: every cube forwards);
                                         # a cube whose way turns back goes on without turning round


class LocalPlanner(Protocol):
    """A local planner over the whole swarm. Implementations keep any per-cube memory inside themselves."""
    name: str

    def reset(self, n: int, seed: int = 0) -> None:
        """Forget all memory and prepare for ``n`` cubes; ``seed`` drives any sampling deterministically."""

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        """Answer for every cube of ``state``; ``dt`` is the control period in seconds."""
