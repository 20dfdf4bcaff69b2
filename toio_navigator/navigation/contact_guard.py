"""The controller's contact guard: a cube never drives into another one, whatever its planner tells it.

A local planner may steer two cubes into each other: HLAvoid inside its collision state hands each cube an
escape waypoint, and two cubes in a tight swap can creep towards the same gap for a second (docs/navigator.md §6).
The guard runs once the wheel commands of a tick are known and only ever lowers a cube's speed cap:

* every cube's way is predicted on a few instants until it can stop: the command still running drives it (along
  its exact arc) until the new one takes effect, then the new one for its whole duration (if no later tick comes,
  the cube stops by itself then) plus the wheels' coasting; a cube that gets no new command stops when its
  running one ends;
* a cube whose pair with another one comes closer on that way than touching + ``gap`` *and* closer than it is
  now is capped so that its new command covers at most the room the running commands leave (half of it when the
  other cube's new command closes in too: each takes half, so neither waits for the other); 0 when there is
  none: it turns on the spot.

Cubes passing side by side, or moving apart however close they are, are never slowed: a contact that happened
anyway (a cube pushed by hand, a stale reading) can always be left. A cap below the motor dead zone is 0, because
the dead-zone shift would turn a small forward speed into the dead zone's.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.navigation.arcs import drive_arc
from toio_navigator.navigation.planners.common import pairs_within

#: a cube's wheels follow a command with a first-order lag of about 40 ms, so a cube told to stop rolls on for about
#: its speed times this (the simulator's motor_tau, with some room)
WHEEL_COAST_S = 0.05
#: instants on each cube's way at which the pairs are compared
SAMPLES = 8


def ways(pose: np.ndarray, old: np.ndarray, lead: np.ndarray, new: np.ndarray, run: np.ndarray, times: np.ndarray,
         k: float, track: float) -> np.ndarray:
    """(N, T, 2) positions at ``times`` (s from the readings): the old wheels (N, 2) for ``lead`` (N,), then the
    new wheels for ``run`` (N,) seconds, then standing."""
    x, y, th = (pose[:, i][:, None] for i in range(3))
    t_old = np.minimum(times[None, :], lead[:, None])
    p_old = np.stack(drive_arc(x, y, th, old[:, :1], old[:, 1:], t_old, k, track)[:2], axis=-1)
    x1, y1, th1 = drive_arc(x, y, th, old[:, :1], old[:, 1:], lead[:, None], k, track)     # where the new one starts
    t_new = np.clip(times[None, :] - lead[:, None], 0.0, run[:, None])
    p_new = np.stack(drive_arc(x1, y1, th1, new[:, :1], new[:, 1:], t_new, k, track)[:2], axis=-1)
    return np.where((times[None, :] <= lead[:, None])[..., None], p_old, p_new)


def guard_caps(pose: np.ndarray, cap: np.ndarray, old: np.ndarray, lead: np.ndarray, new: np.ndarray,
               movers: np.ndarray, radius: np.ndarray, run: float, gap: float, k: float, track: float,
               dead_zone: float) -> np.ndarray:
    """Speed caps (N,) in motor units: ``cap`` lowered where a mover would close in on another cube.

    ``pose`` (N, 3) x, y, heading of every known cube at its reading (far away for unseen ones); ``old`` (N, 2)
    the wheels of the command still running and ``lead`` (N,) how long it drives the cube from its reading;
    ``new`` (N, 2) this tick's wheels for the ``movers`` (N,); ``radius`` (N,) collision discs; ``run`` the new
    command's duration (s); ``gap`` clearance kept beyond touching (units); ``k`` units/s per motor unit;
    ``track`` the wheel track (units)."""
    cap = np.asarray(cap, dtype=float).copy()
    rows = np.nonzero(movers)[0]
    if rows.size == 0 or len(pose) < 2:
        return cap
    span = np.where(movers, run + WHEEL_COAST_S, 0.0)
    new = np.where(movers[:, None], new, 0.0)
    old_speed = np.abs(old).max(axis=1) * k
    reach = old_speed * lead + np.abs(new).max(axis=1) * k * span
    times = np.linspace(0.0, float((lead + span).max()), SAMPLES + 1)
    a, b, dist = pairs_within(pose[:, :2], 2.0 * float(radius.max()) + gap + float(reach[rows].max())
                              + float(reach.max()) + 1.0, query=rows)
    if a.size == 0:
        return cap
    planned = ways(pose, old, lead, new, span, times, k, track)                    # (N, T, 2)
    standing = ways(pose, old, lead, np.zeros_like(new), span, times, k, track)    # no new command
    need = radius[a] + radius[b] + gap
    closest = np.hypot(*(planned[a] - planned[b]).transpose(2, 0, 1)).min(axis=1)
    closing = (closest < need) & (closest < dist - 1e-6)
    if not closing.any():
        return cap
    # the room the running commands leave, shared when b's own new command closes in too (with a standing)
    left_over = np.hypot(*(standing[a] - standing[b]).transpose(2, 0, 1)).min(axis=1)
    both = np.hypot(*(standing[a] - planned[b]).transpose(2, 0, 1)).min(axis=1) < left_over - 1e-6
    share = np.where(both, 0.5, 1.0)
    allowed = np.maximum(left_over - need, 0.0) * share / ((run + WHEEL_COAST_S) * k)
    limit = np.full(len(pose), np.inf)
    np.minimum.at(limit, a[closing], allowed[closing])
    limit = np.where(limit < dead_zone, 0.0, limit)
    return np.minimum(cap, limit)
