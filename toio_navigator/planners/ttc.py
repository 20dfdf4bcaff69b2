"""Time-to-collision forces (Karamouzas et al. 2014 family, predictive), a swarm planner (docs/local_planners.md §3.2).

For every neighbour the time to collision tau under constant velocities (optionally inflated by a velocity error
bound epsilon) gives an avoidance acceleration k_tau (tau_H - tau)/tau along the unit vector from the neighbour to
the agent at the predicted moment of impact, for 0 < tau < tau_H. Pairs already overlapping (tau = 0) get the SFM
body push k g(r_ij - d_ij) n_ij instead of nothing. Walls are static obstacles seen from their nearest point.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import (
    cap_norm,
    clip_speed,
    goal_force_and_neighbours,
    time_to_collision,
    wall_time_to_collision,
    waypoint_output,
)
from toio_navigator.planners.interface import PlannerOutput, SwarmState


@dataclass
class TtcParams:
    relaxation_time: float = 0.3       # xi, s
    horizon: float = 1.5               # tau_H, s
    strength: float = 200.0            # k_tau, u/s^2
    velocity_error: float = 0.0        # epsilon, u/s (15-25 on hardware)
    body_stiffness: float = 1500.0     # k of the contact push, 1/s^2
    max_accel: float = 1000.0          # f_max / m, u/s^2
    sensing_gap: float = 200.0         # d_h, u
    max_neighbors: int = 10            # K nearest
    arrival_steps: float = 2.0         # t_arr = arrival_steps * dt
    waypoint_horizon: float = 0.25     # s


class TtcPlanner:
    name = 'ttc'

    def __init__(self, params: TtcParams | None = None, **overrides) -> None:
        self.params = params or TtcParams(**overrides)

    def reset(self, n: int, seed: int = 0) -> None:
        """Deterministic and memoryless: nothing to reset."""

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
        pos, vel, radius = state.pos, state.vel, state.radius
        force, g, near = goal_force_and_neighbours(state, p, dt)
        rel_pos = pos[:, None, :] - pos[g.j]                                       # x_ij, from j to i
        rel_vel = vel[:, None, :] - vel[g.j]
        force += self._avoidance(rel_pos, rel_vel, g.combined, g.normal, near)
        collision = (g.valid & (g.gap < 0.0)).any(axis=1)
        if len(state.walls):
            wall_tau, wall_normal, body_gap = wall_time_to_collision(pos, vel, state.walls, radius,
                                                                     p.velocity_error)
            ahead = (body_gap < p.sensing_gap) & (wall_tau > 0.0) & (wall_tau < p.horizon)
            safe_tau = np.where(ahead, wall_tau, 1.0)
            magnitude = np.where(ahead, p.strength * (p.horizon - safe_tau) / safe_tau, 0.0)
            push = magnitude + p.body_stiffness * np.maximum(-body_gap, 0.0)
            force += (push[..., None] * wall_normal).sum(axis=1)
            collision |= (body_gap < 0.0).any(axis=1)
        force = cap_norm(force, p.max_accel)
        velocity = clip_speed(vel + dt * force, state.max_speed)
        velocity[~state.active] = 0.0
        return waypoint_output(state, velocity, collision, p.waypoint_horizon)

    def _avoidance(self, rel_pos, rel_vel, combined, normal, use):
        p = self.params
        tau = time_to_collision(rel_pos, rel_vel, combined, p.velocity_error)
        predicted = rel_pos + rel_vel * np.where(np.isfinite(tau), tau, 0.0)[..., None]
        direction = predicted / np.maximum(np.linalg.norm(predicted, axis=-1), 1e-12)[..., None]
        ahead = use & (tau > 0.0) & (tau < p.horizon)
        magnitude = np.where(ahead, p.strength * (p.horizon - np.where(ahead, tau, 1.0)) /
                             np.where(ahead, tau, 1.0), 0.0)
        overlap = np.maximum(combined - np.linalg.norm(rel_pos, axis=-1), 0.0)
        contact = np.where(use & (tau == 0.0), p.body_stiffness * overlap, 0.0)
        return (magnitude[..., None] * direction + contact[..., None] * normal).sum(axis=1)
