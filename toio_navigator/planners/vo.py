"""Sampling velocity obstacles (the seed's VO, corrected; docs/local_planners.md §3.3) as a swarm planner.

Every step each cube scores K random candidate velocities drawn uniformly in its speed disc (seeded), plus its
goal velocity, its current velocity and standing still, with
    J(v_c) = alpha |v_c - v_g| + beta |v_c - v| + gamma / tau_min(v_c),
tau_min being the earliest time to collision with any neighbour (relative velocity v_c - v_j, or the reciprocal
2 v_c - v_i - v_j) or obstacle (v_c). Candidates with tau_min = 0 are rejected. For a pair that already overlaps,
a candidate that separates the two (relative velocity pointing apart) does not count as colliding: otherwise
every candidate would be rejected and the cube could never get out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import (
    goal_velocity,
    k_nearest,
    neighbour_geometry,
    wall_time_to_collision,
    waypoint_output,
)
from toio_navigator.planners.interface import PlannerOutput, SwarmState


@dataclass
class VoParams:
    samples: int = 200                 # K random candidates per cube and step
    goal_weight: float = 1.0           # alpha
    velocity_weight: float = 1.0       # beta
    collision_weight: float = 600.0    # gamma, u
    velocity_error: float = 0.0        # epsilon, u/s
    reciprocal: bool = False           # relative velocity 2 v_c - v_i - v_j instead of v_c - v_j
    ignore_beyond: float = 60.0        # s, a predicted collision later than this counts as none (round-off)
    sensing_gap: float = 200.0         # d_h, u
    max_neighbors: int = 10            # K nearest
    arrival_steps: float = 2.0         # t_arr = arrival_steps * dt
    waypoint_horizon: float = 0.25     # s


class VoPlanner:
    name = 'vo'

    def __init__(self, params: VoParams | None = None, **overrides) -> None:
        self.params = params or VoParams(**overrides)
        self.seed = 0
        self._rng = np.random.default_rng(0)

    def reset(self, n: int, seed: int = 0) -> None:
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
        n = state.n
        pos, vel, radius = state.pos, state.vel, state.radius
        v_goal = goal_velocity(pos, state.goal, state.max_speed, dt, p.arrival_steps * dt)
        # candidates (N, S, 2): uniform in the disc |v| <= v_max, then v_g, v and 0
        r = state.max_speed[:, None] * np.sqrt(self._rng.random((n, p.samples)))
        angle = 2.0 * np.pi * self._rng.random((n, p.samples))
        cand = np.concatenate([np.stack([r * np.cos(angle), r * np.sin(angle)], axis=-1),
                               v_goal[:, None, :], vel[:, None, :], np.zeros((n, 1, 2))], axis=1)
        nbr, _ = k_nearest(pos, p.max_neighbors, p.sensing_gap + 2.0 * float(radius.max()),
                           start_cutoff=4.0 * float(radius.max()))
        g = neighbour_geometry(state, nbr)
        near = g.valid & (g.gap < p.sensing_gap)
        rel_pos = pos[:, None, :] - pos[g.j]                                          # (N, K, 2)
        other = vel[g.j]
        if p.reciprocal:
            rel_x = 2.0 * cand[..., 0, None] - vel[:, None, None, 0] - other[:, None, :, 0]
            rel_y = 2.0 * cand[..., 1, None] - vel[:, None, None, 1] - other[:, None, :, 1]
        else:
            rel_x = cand[..., 0, None] - other[:, None, :, 0]                          # (N, S+3, K)
            rel_y = cand[..., 1, None] - other[:, None, :, 1]
        tau = _sampled_tau(rel_pos[:, None, :, 0], rel_pos[:, None, :, 1], rel_x, rel_y,
                           g.combined[:, None, :], p.velocity_error)
        tau_min = np.where(near[:, None, :], tau, np.inf).min(axis=2)
        collision = (g.valid & (g.gap < 0.0)).any(axis=1)
        if len(state.walls):
            wall_tau, wall_normal, body_gap = wall_time_to_collision(pos, cand, state.walls, radius,
                                                                     p.velocity_error)
            # already touching a wall: moving away from it is not a collision
            leaving = np.einsum('nsd,nmd->nsm', cand, wall_normal) >= 0.0
            wall_tau = np.where((wall_tau == 0.0) & leaving, np.inf, wall_tau)
            wall_tau = np.where((body_gap < p.sensing_gap)[:, None, :], wall_tau, np.inf)
            tau_min = np.minimum(tau_min, wall_tau.min(axis=2))
            collision |= (body_gap < 0.0).any(axis=1)
        cost = (p.goal_weight * np.linalg.norm(cand - v_goal[:, None, :], axis=-1)
                + p.velocity_weight * np.linalg.norm(cand - vel[:, None, :], axis=-1))
        tau_min = np.where(tau_min > p.ignore_beyond, np.inf, tau_min)
        with np.errstate(divide='ignore'):
            cost = cost + np.where(tau_min > 0.0, p.collision_weight / tau_min, np.inf)
        # with alpha = beta every point between v and v_g costs the same when nothing is in the way; v_g comes
        # before v and 0 in the candidate list, so argmin settles such ties towards the goal
        best = np.argmin(cost, axis=1)
        velocity = cand[np.arange(n), best]
        # every candidate rejected (boxed in): stand still rather than pick at random
        velocity[~np.isfinite(cost[np.arange(n), best])] = 0.0
        velocity[~state.active] = 0.0
        return waypoint_output(state, velocity, collision, p.waypoint_horizon)


def _sampled_tau(px, py, vx, vy, combined, velocity_error):
    """time_to_collision on component arrays (the hot loop of VO: N x candidates x neighbours), where a pair
    that already overlaps but separates under the candidate is not a collision."""
    closing = px * vx + py * vy
    a = vx * vx + vy * vy - velocity_error ** 2
    b = closing - velocity_error * combined
    c = px * px + py * py - combined * combined
    disc = b * b - a * c
    approaching = (b < 0.0) & (disc > 0.0)
    with np.errstate(invalid='ignore', divide='ignore'):
        tau = np.where(approaching, c / (-b + np.sqrt(np.maximum(disc, 0.0))), np.inf)
    return np.where(c < 0.0, np.where(closing >= 0.0, np.inf, 0.0), tau)
