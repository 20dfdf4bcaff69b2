"""Runs one scenario with one planner under the protocol of docs/metrics.md §1 and returns the metrics.

Two motion models:
* ``holonomic`` (the benchmark's): the commanded velocity, capped at max_speed, is applied for the whole step,
  p(t_{k+1}) = p(t_k) + v dt.
* ``diff_drive`` (optional): each cube is a unicycle that tracks the planner's velocity with a simple heading
  controller (turn towards the commanded direction, forward speed |v| cos(heading error), driving backwards when
  that needs less turning), wheel speeds capped at the toio motor ceiling MOTOR_MAX. Cubes start facing their
  goal. Positions of the disc centre are what is measured, as docs/metrics.md §1.2 asks.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from toio_navigator.bench.metrics import MetricSetup, b0_kernel, compute_metrics
from toio_navigator.bench.scenarios import Scenario
from toio_navigator.planners.interface import SwarmState
from toio_navigator.units import MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT, WHEEL_TRACK_UNITS

MODELS = ('holonomic', 'diff_drive')
B0_EVERY = 10  # time the B0 kernel after planner calls 1, 11, 21, ...


@dataclass
class DiffDriveTracking:
    """Unicycle tracking of a holonomic velocity command (only for the optional diff_drive model)."""
    heading_gain: float = 8.0                                       # 1/s, turn rate per rad of heading error
    wheel_speed_max: float = MOTOR_MAX * UNITS_PER_S_PER_MOTOR_UNIT  # u/s, toio top wheel speed
    track: float = WHEEL_TRACK_UNITS                                # u

    def step(self, pos: np.ndarray, heading: np.ndarray, cmd: np.ndarray, dt: float):
        speed_cmd = np.hypot(cmd[:, 0], cmd[:, 1])
        error = _wrap(np.arctan2(cmd[:, 1], cmd[:, 0]) - heading)
        backwards = np.abs(error) > 0.5 * math.pi
        error = np.where(backwards, _wrap(error - math.pi), error)
        forward = speed_cmd * np.cos(error) * np.where(backwards, -1.0, 1.0)
        forward = np.where(speed_cmd > 1e-9, forward, 0.0)
        omega = np.where(speed_cmd > 1e-9, self.heading_gain * error, 0.0)
        # keep both wheels under the motor ceiling: shrink the forward speed first, then the turn rate
        half_turn = np.minimum(np.abs(omega) * 0.5 * self.track, self.wheel_speed_max)
        omega = np.sign(omega) * half_turn / (0.5 * self.track)
        forward = np.clip(forward, -(self.wheel_speed_max - half_turn), self.wheel_speed_max - half_turn)
        # exact unicycle motion over the step (arc), straight line when not turning
        turn = omega * dt
        small = np.abs(turn) < 1e-9
        safe_omega = np.where(small, 1.0, omega)
        dx = np.where(small, forward * dt * np.cos(heading),
                      forward / safe_omega * (np.sin(heading + turn) - np.sin(heading)))
        dy = np.where(small, forward * dt * np.sin(heading),
                      -forward / safe_omega * (np.cos(heading + turn) - np.cos(heading)))
        return pos + np.column_stack([dx, dy]), _wrap(heading + turn)


@dataclass
class RunResult:
    scenario: str
    planner: str
    model: str
    seed: int
    trajectory: np.ndarray                      # (K+1, N, 2)
    step_ms: np.ndarray                         # planner wall time per call
    b0_ms: np.ndarray                           # B0 kernel wall time (every 10th call)
    metrics: dict = field(default_factory=dict)
    step_cpu_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))   # planner CPU time per call (a busy
                                                                           # machine inflates wall time much more)


def run_scenario(scenario: Scenario, planner, model: str = 'holonomic',
                 progress: Callable[[int, int], None] | None = None,
                 max_steps: int | None = None) -> RunResult:
    """Run ``planner`` (a LocalPlanner) on ``scenario``; ``progress(k, n_steps)`` is called after every step.

    ``max_steps`` cuts the run short (for cost-only measurements); the metrics then describe the shortened run.
    """
    if model not in MODELS:
        raise ValueError(f'unknown motion model {model!r} (expected one of {", ".join(MODELS)})')
    n = scenario.n_agents
    dt = scenario.dt
    last_step = scenario.n_steps if max_steps is None else min(scenario.n_steps, max_steps)
    goals = scenario.goals.astype(float)
    pos = scenario.starts.astype(float).copy()
    vel = np.zeros((n, 2))
    delta = goals - pos
    heading = np.arctan2(delta[:, 1], delta[:, 0])
    max_speed = np.full(n, scenario.max_speed)
    state = SwarmState(pos=pos, vel=vel, heading=heading, radius=np.full(n, scenario.agent_radius), goal=goals,
                       max_speed=max_speed, active=np.ones(n, bool), walls=scenario.walls())
    tracking = DiffDriveTracking()
    planner.reset(n, seed=scenario.seed)
    frames = [pos.copy()]
    step_ms: list[float] = []
    step_cpu_ms: list[float] = []
    b0_ms: list[float] = []
    tolerance2 = scenario.goal_tolerance ** 2
    for k in range(last_step + 1):
        if np.all(np.sum((pos - goals) ** 2, axis=1) <= tolerance2) or k == last_step:
            break                                            # success, or the last step with t_k <= T
        state.pos, state.vel, state.heading = pos, vel, heading
        started, cpu = time.perf_counter_ns(), time.process_time_ns()
        out = planner.step(state, dt)
        step_ms.append((time.perf_counter_ns() - started) * 1e-6)
        step_cpu_ms.append((time.process_time_ns() - cpu) * 1e-6)
        cmd = np.asarray(out.velocity, float)
        if cmd.shape != (n, 2) or not np.all(np.isfinite(cmd)):
            raise ValueError(f'planner {getattr(planner, "name", planner)!r} returned an invalid velocity at step {k} '
                             f'(shape {cmd.shape}, finite: {bool(np.all(np.isfinite(cmd)))})')
        cmd = _cap_speed(cmd, max_speed)
        if model == 'holonomic':
            new_pos = pos + cmd * dt
            moved = np.hypot(cmd[:, 0], cmd[:, 1]) > 1e-9
            heading = np.where(moved, np.arctan2(cmd[:, 1], cmd[:, 0]), heading)
        else:
            new_pos, heading = tracking.step(pos, heading, cmd, dt)
        vel = (new_pos - pos) / dt
        pos = new_pos
        frames.append(pos.copy())
        if len(step_ms) % B0_EVERY == 1:
            started = time.perf_counter_ns()
            b0_kernel(pos, goals, scenario.max_speed, dt, scenario.agent_radius)
            b0_ms.append((time.perf_counter_ns() - started) * 1e-6)
        if progress is not None:
            progress(k + 1, last_step)
    trajectory = np.stack(frames)
    result = RunResult(scenario=scenario.name, planner=getattr(planner, 'name', type(planner).__name__),
                       model=model, seed=scenario.seed, trajectory=trajectory, step_ms=np.array(step_ms),
                       b0_ms=np.array(b0_ms), step_cpu_ms=np.array(step_cpu_ms))
    result.metrics = compute_metrics(trajectory, MetricSetup.from_scenario(scenario), result.step_ms,
                                     result.b0_ms, name=scenario.name)
    return result


def _cap_speed(vel: np.ndarray, max_speed: np.ndarray) -> np.ndarray:
    speed = np.hypot(vel[:, 0], vel[:, 1])
    return vel * np.minimum(1.0, max_speed / np.maximum(speed, 1e-12))[:, None]


def _wrap(angle: np.ndarray) -> np.ndarray:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi
