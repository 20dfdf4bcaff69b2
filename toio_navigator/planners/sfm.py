"""Social force model (Helbing, Farkas, Vicsek 2000) as a swarm planner (docs/local_planners.md §3.1).

Per unit mass (accelerations, u/s^2): goal relaxation (v_g - v)/xi, and for every neighbour within the sensing gap
an exponential repulsion A exp((r_ij - d_ij)/B) plus, while discs overlap, a body force k g(r_ij - d_ij) and a
sliding friction kappa g(r_ij - d_ij) ((v_j - v_i).t_ij) t_ij. Walls push the same way from their nearest point.
The force is capped at f_max, integrated over the step (semi-implicit Euler) and the speed capped at v_max.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import (
    cap_norm,
    clip_speed,
    goal_force_and_neighbours,
    nearest_on_walls,
    waypoint_output,
)
from toio_navigator.planners.interface import PlannerOutput, SwarmState


@dataclass
class SfmParams:
    relaxation_time: float = 0.3       # xi, s
    repulsion: float = 600.0           # A, u/s^2
    range: float = 8.0                 # B, u
    body_stiffness: float = 1500.0     # k, 1/s^2
    friction: float = 4.1              # kappa, 1/(u s)
    max_accel: float = 1000.0          # f_max / m, u/s^2
    sensing_gap: float = 200.0         # d_h, u (gap between bodies)
    max_neighbors: int = 10            # K nearest
    arrival_steps: float = 2.0         # t_arr = arrival_steps * dt
    waypoint_horizon: float = 0.25     # s


class SfmPlanner:
    name = 'sfm'

    def __init__(self, params: SfmParams | None = None, **overrides) -> None:
        self.params = params or SfmParams(**overrides)

    def reset(self, n: int, seed: int = 0) -> None:
        """The social force model is deterministic and memoryless: nothing to reset."""

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
        pos, vel, radius = state.pos, state.vel, state.radius
        force, g, near = goal_force_and_neighbours(state, p, dt)
        overlap = np.maximum(-g.gap, 0.0)                                   # g(r_ij - d_ij)
        push = p.repulsion * np.exp(np.minimum(-g.gap, 50.0) / p.range) + p.body_stiffness * overlap
        slide = np.einsum('nkd,nkd->nk', vel[g.j] - vel[:, None, :], g.tangent)
        pair = push[..., None] * g.normal + (p.friction * overlap * slide)[..., None] * g.tangent
        force += np.where(near[..., None], pair, 0.0).sum(axis=1)
        collision = (g.valid & (g.gap < 0.0)).any(axis=1)
        if len(state.walls):
            on_wall, wall_gap = nearest_on_walls(pos, state.walls)
            body_gap = wall_gap - radius[:, None]                              # d_iW - r_i
            away = pos[:, None, :] - on_wall
            normal = away / np.maximum(np.linalg.norm(away, axis=-1), 1e-12)[..., None]
            tangent = np.stack([-normal[..., 1], normal[..., 0]], axis=-1)
            overlap = np.maximum(-body_gap, 0.0)
            push = p.repulsion * np.exp(np.minimum(-body_gap, 50.0) / p.range) + p.body_stiffness * overlap
            slide = np.einsum('nd,nmd->nm', vel, tangent)
            wall = push[..., None] * normal - (p.friction * overlap * slide)[..., None] * tangent
            force += np.where((body_gap < p.sensing_gap)[..., None], wall, 0.0).sum(axis=1)
            collision |= (body_gap < 0.0).any(axis=1)
        force = cap_norm(force, p.max_accel)
        velocity = clip_speed(vel + dt * force, state.max_speed)
        velocity[~state.active] = 0.0
        return waypoint_output(state, velocity, collision, p.waypoint_horizon)
