"""The metrics of docs/metrics.md (version 1), computed from recorded positions only.

``traj`` is the (K+1, N, 2) array of p_i(t_k), k = 0..K. Contacts are found with a uniform-grid pair search per
frame (frames are processed in chunks as separate groups), so a 1024-agent run of thousands of steps stays cheap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import pairs_within

#: keys of the per-scenario JSON object, in the order of docs/metrics.md §8
REPORT_KEYS = (
    'name', 'n_agents', 'success', 'success_time', 'success_collision_free', 'fraction_arrived', 'collisions',
    'obstacle_collisions', 'contact_pair_steps', 'min_clearance', 'min_obstacle_clearance', 'makespan',
    'mean_time_to_goal', 'path_length_ratio_mean', 'path_length_ratio_max', 'mean_abs_accel', 'max_abs_accel',
    'mean_abs_jerk', 'ms_per_step_mean', 'ms_per_step_median', 'us_per_agent_step', 'b0_ms_per_step',
    'cost_ratio_vs_b0', 'dt', 'time_limit')

_POINTS_PER_CHUNK = 200_000


@dataclass
class MetricSetup:
    """The constants the metrics (docs/metrics.md) need besides the trajectory."""
    goals: np.ndarray                  # (N, 2)
    agent_radius: float = 16.5
    dt: float = 0.05
    goal_tolerance: float = 10.0
    contact_tolerance: float = 0.5
    time_limit: float = math.inf
    discs: np.ndarray | None = None    # (D, 3) cx, cy, R
    segments: np.ndarray | None = None  # (S, 4) ax, ay, bx, by

    @classmethod
    def from_scenario(cls, scenario) -> 'MetricSetup':
        return cls(goals=scenario.goals, agent_radius=scenario.agent_radius, dt=scenario.dt,
                   goal_tolerance=scenario.goal_tolerance, contact_tolerance=scenario.contact_tolerance,
                   time_limit=scenario.time_limit, discs=scenario.discs, segments=scenario.segments)


def compute_metrics(traj: np.ndarray, setup: MetricSetup, step_ms: np.ndarray | None = None,
                    b0_ms: np.ndarray | None = None, name: str = '') -> dict:
    """Every metric of docs/metrics.md §2-§7 for one run, as a JSON-ready dict (undefined values are None)."""
    traj = np.asarray(traj, float)
    if traj.ndim != 3 or traj.shape[2] != 2 or traj.shape[0] < 1:
        raise ValueError(f'trajectory must have shape (K+1, N, 2), got {traj.shape}')
    n = traj.shape[1]
    dt, r = setup.dt, setup.agent_radius
    goals = np.asarray(setup.goals, float)
    out: dict = {'name': name, 'n_agents': n}
    out.update(_goal_metrics(traj, goals, dt, setup.goal_tolerance, setup.time_limit))
    arrival = out.pop('_arrival')
    events, pair_steps, clearance = agent_contacts(traj, r, setup.contact_tolerance)
    out.update(collisions=events, contact_pair_steps=pair_steps, min_clearance=clearance)
    obstacle_events, obstacle_clearance = obstacle_contacts(traj, r, setup.contact_tolerance,
                                                            setup.discs, setup.segments)
    out.update(obstacle_collisions=obstacle_events, min_obstacle_clearance=obstacle_clearance)
    out['success_collision_free'] = bool(out['success'] and events == 0 and obstacle_events == 0)
    out.update(_path_metrics(traj, goals, arrival))
    out.update(_smoothness(traj, arrival, dt))
    out.update(_cost(step_ms, b0_ms, n))
    out.update(dt=dt, time_limit=setup.time_limit)
    return {key: _json_value(out.get(key)) for key in REPORT_KEYS}


def _goal_metrics(traj, goals, dt, tolerance, time_limit) -> dict:
    k_count, n = traj.shape[:2]
    at_goal = np.hypot(*(traj - goals[None]).transpose(2, 0, 1)) <= tolerance        # (K+1, N)
    arrived = at_goal.any(axis=0)
    arrival = np.where(arrived, np.argmax(at_goal, axis=0), -1)
    in_time = np.arange(k_count) * dt <= time_limit + 1e-9
    all_at = at_goal.all(axis=1) & in_time
    success = bool(all_at.any())
    times = np.round(arrival[arrived] * dt, 9)
    return {
        'success': success,
        'success_time': round(float(np.argmax(all_at) * dt), 9) if success else None,
        'fraction_arrived': float(arrived.mean()),
        'makespan': float(times.max()) if arrived.all() else None,
        'mean_time_to_goal': float(times.mean()) if arrived.any() else None,
        '_arrival': arrival,
    }


def _frame_chunks(k_count: int, n: int):
    step = max(1, _POINTS_PER_CHUNK // max(n, 1))
    for first in range(0, k_count, step):
        yield first, min(k_count, first + step)


def _frame_pairs(traj: np.ndarray, cutoff: float):
    """Yield (frame, i, j, distance) arrays of all pairs i < j closer than ``cutoff``, chunk by chunk."""
    k_count, n = traj.shape[:2]
    for first, last in _frame_chunks(k_count, n):
        points = traj[first:last].reshape(-1, 2)
        group = np.repeat(np.arange(last - first), n)
        q, p, d = pairs_within(points, cutoff, group=group)
        keep = q < p
        q, p, d = q[keep], p[keep], d[keep]
        yield first + q // n, q % n, p % n, d


def agent_contacts(traj: np.ndarray, radius: float, tolerance: float) -> tuple[int, int, float | None]:
    """(contact events, contact pair-steps, min clearance) of docs/metrics.md §3 for agent pairs."""
    k_count, n = traj.shape[:2]
    if n < 2:
        return 0, 0, None
    threshold = 2.0 * radius - tolerance
    frames, pairs = [], []
    for frame, i, j, _d in _frame_pairs(traj, threshold):
        frames.append(frame)
        pairs.append(i * n + j)
    frame = np.concatenate(frames) if frames else np.zeros(0, np.int64)
    pair = np.concatenate(pairs) if pairs else np.zeros(0, np.int64)
    events = count_events(pair, frame)
    return events, int(len(frame)), _min_distance(traj, 2.0 * radius) - 2.0 * radius


def count_events(entity: np.ndarray, frame: np.ndarray) -> int:
    """Number of maximal runs of consecutive frames per entity (a contact present at frame 0 starts an event)."""
    if len(frame) == 0:
        return 0
    order = np.lexsort((frame, entity))
    entity, frame = entity[order], frame[order]
    continues = (entity[1:] == entity[:-1]) & (frame[1:] == frame[:-1] + 1)
    return int(len(frame) - continues.sum())


def _min_distance(traj: np.ndarray, start_cutoff: float) -> float:
    """Smallest centre distance over all frames and pairs, widening the search until some pair is found."""
    span = float(np.ptp(traj.reshape(-1, 2), axis=0).max()) if traj.size else 0.0
    cutoff = max(start_cutoff, 1e-6)
    while True:
        best = math.inf
        for _frame, _i, _j, d in _frame_pairs(traj, cutoff):
            if len(d):
                best = min(best, float(d.min()))
        if best < math.inf or cutoff > 2.0 * span + 1.0:
            return best
        cutoff *= 4.0


def obstacle_contacts(traj: np.ndarray, radius: float, tolerance: float, discs: np.ndarray | None,
                      segments: np.ndarray | None) -> tuple[int, float | None]:
    """(agent-obstacle contact events, min obstacle clearance) of docs/metrics.md §3."""
    discs = np.zeros((0, 3)) if discs is None else np.asarray(discs, float).reshape(-1, 3)
    segments = np.zeros((0, 4)) if segments is None else np.asarray(segments, float).reshape(-1, 4)
    m = len(discs) + len(segments)
    if m == 0:
        return 0, None
    k_count, n = traj.shape[:2]
    # a disc is a zero-length segment whose surface is R away from it
    a = np.vstack([segments[:, :2], discs[:, :2]])
    b = np.vstack([segments[:, 2:], discs[:, :2]])
    surface = np.concatenate([np.zeros(len(segments)), discs[:, 2]])
    best, entities, frames = math.inf, [], []
    for first, last in _frame_chunks(k_count, n * m):
        p = traj[first:last][:, :, None, :]                                         # (F, N, 1, 2)
        ab = b - a
        t = np.clip(np.sum((p - a) * ab, axis=-1) / np.maximum(np.sum(ab * ab, axis=-1), 1e-12), 0.0, 1.0)
        dist = np.linalg.norm(p - (a + t[..., None] * ab), axis=-1) - surface        # (F, N, M)
        best = min(best, float(dist.min()))
        f, i, o = np.nonzero(dist < radius - tolerance)
        frames.append(f + first)
        entities.append(i * m + o)
    events = count_events(np.concatenate(entities), np.concatenate(frames))
    return events, best - radius


def _path_metrics(traj, goals, arrival) -> dict:
    k_last = traj.shape[0] - 1
    steps = np.linalg.norm(np.diff(traj, axis=0), axis=-1)                          # (K, N)
    end = np.where(arrival >= 0, arrival, k_last)
    length = (steps * (np.arange(k_last)[:, None] < end[None, :])).sum(axis=0)      # up to k_i (or K)
    straight = np.linalg.norm(goals - traj[0], axis=-1)
    # agents that start on their goal have no defined ratio (0 / 0); they are left out
    use = (arrival >= 0) & (straight > 1e-9)
    ratio = length[use] / straight[use]
    return {'path_length_ratio_mean': float(ratio.mean()) if ratio.size else None,
            'path_length_ratio_max': float(ratio.max()) if ratio.size else None}


def _smoothness(traj, arrival, dt) -> dict:
    k_last = traj.shape[0] - 1
    if k_last < 1:
        return {'mean_abs_accel': None, 'max_abs_accel': None, 'mean_abs_jerk': None}
    vel = np.diff(traj, axis=0) / dt                                                # v(k), k = 0..K-1
    vel_prev = np.concatenate([np.zeros_like(vel[:1]), vel[:-1]])                  # v(k-1), v(-1) = 0
    acc = (vel - vel_prev) / dt                                                     # a(k), k = 0..K-1
    jerk = np.diff(acc, axis=0) / dt                                                # j(k), k = 1..K-1
    end = np.where(arrival >= 0, arrival, k_last)
    included = np.arange(k_last)[:, None] < end[None, :]                            # (K, N): k < k_i
    acc_norm = np.linalg.norm(acc, axis=-1)[included]
    jerk_norm = np.linalg.norm(jerk, axis=-1)[included[1:]]
    return {
        'mean_abs_accel': float(acc_norm.mean()) if acc_norm.size else None,
        'max_abs_accel': float(acc_norm.max()) if acc_norm.size else None,
        'mean_abs_jerk': float(jerk_norm.mean()) if jerk_norm.size else None,
    }


def _cost(step_ms, b0_ms, n) -> dict:
    if step_ms is None or len(step_ms) == 0:
        return {}
    mean = float(np.mean(step_ms))
    out = {'ms_per_step_mean': mean, 'ms_per_step_median': float(np.median(step_ms)),
           'us_per_agent_step': 1000.0 * mean / n}
    if b0_ms is not None and len(b0_ms):
        out['b0_ms_per_step'] = float(np.mean(b0_ms))
        out['cost_ratio_vs_b0'] = mean / out['b0_ms_per_step'] if out['b0_ms_per_step'] > 0 else None
    return out


def b0_kernel(pos: np.ndarray, goal: np.ndarray, max_speed: float, dt: float, radius: float):
    """The B0 reference computation of docs/metrics.md §7 (timed by the runner): goal velocities, the full N x N
    squared-distance matrix and the K = min(10, N-1) nearest of every row with a (10 r)^2 validity mask."""
    d = goal - pos
    dist = np.sqrt(np.einsum('ij,ij->i', d, d))
    v_pref = d * (np.minimum(max_speed, dist / dt) / np.maximum(dist, 1e-12))[:, None]
    diff = pos[:, None, :] - pos[None, :, :]
    sq = np.einsum('ijk,ijk->ij', diff, diff)
    np.fill_diagonal(sq, np.inf)
    k = min(10, len(pos) - 1)
    if k < 1:
        return v_pref, None, None
    nearest = np.argpartition(sq, k - 1, axis=1)[:, :k]
    valid = np.take_along_axis(sq, nearest, axis=1) <= (10.0 * radius) ** 2
    return v_pref, nearest, valid


def _json_value(value):
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value
