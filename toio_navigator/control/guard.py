"""The controller's contact guard: a cube never drives into another one, whatever its planner tells it.

A local planner may steer two cubes into each other: HLAvoid inside its collision state hands each cube an
escape waypoint, and two cubes in a tight swap can creep towards the same gap for a second (docs/navigator.md §6).
The guard runs once the wheel commands of a tick are known and only ever lowers a cube's speed cap:

* every cube's way is predicted on a few instants until it can stop, from the commands still in flight towards
  it: a command takes effect ``latency`` after it is sent (measured 0.15-0.27 s on a loaded host, median 0.2, far
  more than the handle's 0.13 s lag) and drives the cube along its exact arc until the next one takes effect or its
  own duration ends; this tick's new command takes effect ``latency`` from now and runs its whole duration (if no
  later tick comes, the cube stops by itself then), plus the wheels' coasting; a cube that gets no new command
  stops when its last one ends. Why all of them and not only the
  last one sent: a real cube is still executing the three to five commands sent before it, and when those were
  fast and straight while the last one turns on the spot, crediting the turn at once predicts a cube standing
  where it drives 16 units further (a lab run's contact); the driver writes one command per ``write_gap`` and
  drops one still waiting for its slot when the next comes, and so does the prediction;
* the other cube of a pair may have lost its commands in flight (a lost write): it counts both on its way and
  standing where it was read, whichever comes closer;
* a cube whose pair with another one comes closer on that way than touching + ``gap`` *and* closer than it is
  now is capped so that its new command covers at most the room the commands in flight leave (half of it when the
  other cube's new command closes in too: each takes half, so neither waits for the other); 0 when there is
  none: it turns on the spot.

Cubes passing side by side, or moving apart however close they are, are never slowed: a contact that happened
anyway (a cube pushed by hand, a stale reading) can always be left. A cap below the motor dead zone is 0, because
the dead-zone shift would turn a small forward speed into the dead zone's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.control.arcs import drive_arc
from toio_navigator.control.command_history import CommandHistory
from toio_navigator.planners.common import pairs_within

#: a cube's wheels follow a command with a first-order lag of about 40 ms, so a cube told to stop rolls on for about
#: its speed times this (the simulator's motor_tau, with some room)
WHEEL_COAST_S = 0.05
#: instants on each cube's way at which the pairs are compared (about every 40 ms of a way of 0.45 s: 0.2 s latency,
#: a 50 ms old reading, a 150 ms command and the coasting)
SAMPLES = 12
#: the latest a way is followed from a reading, s (an older reading is stale long before)
AHEAD_S = 1.0


@dataclass(frozen=True)
class CommandsInFlight:
    """The commands in flight towards N cubes as segments of their way, in seconds from each cube's reading: the
    wheels (N, M, 2) of each drive from ``start`` to ``end`` (N, M; end <= the next start, none before the
    reading), this tick's new command from ``new_at`` (N,)."""
    wheels: np.ndarray
    start: np.ndarray
    end: np.ndarray
    new_at: np.ndarray

    def only(self, rows: np.ndarray) -> CommandsInFlight:
        """The same with nothing in flight (all zeros) for the cubes not in ``rows`` (N,) bool."""
        return CommandsInFlight(np.where(rows[:, None, None], self.wheels, 0.0),
                                np.where(rows[:, None], self.start, 0.0), np.where(rows[:, None], self.end, 0.0),
                                np.where(rows, self.new_at, 0.0))


@dataclass(frozen=True)
class GuardModel:
    """The guard's motion model: how long this tick's command may run (s), the clearance kept beyond touching (mat
    units), the wheels (``k`` mat units/s per motor unit, ``track`` mat units) and the motor dead zone."""
    run: float
    gap: float
    k: float
    track: float
    dead_zone: float


def in_flight(history: CommandHistory, reading: np.ndarray, now: float, latency: float, replaced: np.ndarray,
              write_gap: float = 0.0) -> CommandsInFlight:
    """The commands in flight towards N cubes as segments of their way, in seconds from each cube's reading.

    ``history`` holds the last M commands sent to each cube; ``reading`` (N,) the time of its reading; ``replaced``
    (N,) the cubes that get a new command this tick. The driver writes at most one command per ``write_gap``: a
    command waits for its slot, and one still waiting when the next comes is replaced by it (never written). A
    written command drives from its write time + ``latency`` until the next one takes effect (this tick's for a
    replaced cube) or its duration from its send time ends (the driver cuts what it waited).
    All times are clipped to >= 0 (nothing drives before the reading)."""
    sent_at = np.asarray(history.sent_at, dtype=float)
    n, m = sent_at.shape
    reading = np.asarray(reading, dtype=float)[:, None]                  # finite: an unseen cube's is now
    slot = sent_at.copy()                                                # when each command's write is due
    written = np.ones((n, m), dtype=bool)
    for j in range(1, m):
        waiting = sent_at[:, j] < slot[:, j - 1]                         # j-1 still waits: j takes its place
        written[:, j - 1] = ~waiting
        slot[:, j] = np.where(waiting, slot[:, j - 1], np.maximum(sent_at[:, j], slot[:, j - 1] + write_gap))
    last = slot[:, -1]
    new_slot = np.where(now < last, last, np.maximum(now, last + write_gap))
    written[:, -1] = ~(replaced & (now < last))
    nxt = np.concatenate([slot[:, 1:], np.where(replaced, new_slot, np.inf)[:, None]], axis=1) + latency
    start = np.clip(slot + latency - reading, 0.0, AHEAD_S)             # an empty slot: -inf, so [0, 0]
    end = np.minimum(sent_at + latency + np.asarray(history.duration, dtype=float), nxt) - reading
    end = np.where(written, np.clip(end, start, AHEAD_S), start)
    return CommandsInFlight(np.asarray(history.wheels, dtype=float), start, end,
                            np.clip(new_slot + latency - reading[:, 0], 0.0, AHEAD_S))


def ways(pose: np.ndarray, flight: CommandsInFlight, new: np.ndarray, run: np.ndarray, times: np.ndarray, k: float,
         track: float) -> np.ndarray:
    """(N, T, 2) positions at ``times`` (s from the readings): the commands in ``flight`` (in order, not
    overlapping), standing between them, then the ``new`` wheels (N, 2) from ``flight.new_at`` for ``run`` (N,)
    seconds, then standing."""
    x, y, th = (pose[:, i][:, None] for i in range(3))                   # (N, 1): where the next segment starts
    out = np.broadcast_to(pose[:, None, :2], (len(pose), len(times), 2)).copy()
    old = flight.wheels
    segments = [(old[:, j], flight.start[:, j], flight.end[:, j]) for j in range(old.shape[1])]
    segments.append((new, flight.new_at, flight.new_at + run))
    for wheels, t0, t1 in segments:      # a few segments: each runs for all cubes and instants at once
        length = np.maximum(t1 - t0, 0.0)[:, None]
        t = np.clip(times[None, :] - t0[:, None], 0.0, length)
        p = np.stack(drive_arc(x, y, th, wheels[:, :1], wheels[:, 1:], t, k, track)[:2], axis=-1)
        out = np.where((times[None, :] >= t0[:, None])[..., None], p, out)
        x, y, th = drive_arc(x, y, th, wheels[:, :1], wheels[:, 1:], length, k, track)
    return out


def guard_caps(pose: np.ndarray, cap: np.ndarray, flight: CommandsInFlight, new: np.ndarray, movers: np.ndarray,
               radius: np.ndarray, model: GuardModel) -> np.ndarray:
    """Speed caps (N,) in motor units: ``cap`` lowered where a mover would close in on another cube.

    ``pose`` (N, 3) x, y, heading of every known cube at its reading (far away for unseen ones); ``flight`` the
    commands in flight and when this tick's takes effect (:func:`in_flight`); ``new`` (N, 2) this tick's wheels
    for the ``movers`` (N,); ``radius`` (N,) collision discs."""
    run, gap, k, track = model.run, model.gap, model.k, model.track
    old, start, end, new_at = flight.wheels, flight.start, flight.end, flight.new_at
    cap = np.asarray(cap, dtype=float).copy()
    rows = np.nonzero(movers)[0]
    if rows.size == 0 or len(pose) < 2:
        return cap
    span = np.where(movers, run + WHEEL_COAST_S, 0.0)
    new = np.where(movers[:, None], new, 0.0)
    old_reach = (np.abs(old).max(axis=2) * k * (end - start)).sum(axis=1)
    reach = old_reach + np.abs(new).max(axis=1) * k * span
    times = np.linspace(0.0, float(max((new_at + span).max(), end.max(initial=0.0))), SAMPLES + 1)
    a, b, dist = pairs_within(pose[:, :2], 2.0 * float(radius.max()) + gap + float(reach[rows].max())
                              + float(reach.max()) + 1.0, query=rows)
    if a.size == 0:
        return cap
    planned = ways(pose, flight, new, span, times, k, track)                                     # (N, T, 2)
    standing = ways(pose, flight, np.zeros_like(new), span, times, k, track)                     # no new command
    need = radius[a] + radius[b] + gap
    # b's commands in flight may never arrive (a lost write): it may also stand where it was read
    held = np.broadcast_to(pose[b, None, :2], planned[b].shape)
    closest = np.minimum(np.hypot(*(planned[a] - planned[b]).transpose(2, 0, 1)).min(axis=1),
                         np.hypot(*(planned[a] - held).transpose(2, 0, 1)).min(axis=1))
    closing = (closest < need) & (closest < dist - 1e-6)
    if not closing.any():
        return cap
    # the room the commands in flight leave, shared when b's own new command closes in too (with a standing)
    left_over = np.minimum(np.hypot(*(standing[a] - standing[b]).transpose(2, 0, 1)).min(axis=1),
                           np.hypot(*(standing[a] - held).transpose(2, 0, 1)).min(axis=1))
    both = np.hypot(*(standing[a] - planned[b]).transpose(2, 0, 1)).min(axis=1) < left_over - 1e-6
    share = np.where(both, 0.5, 1.0)
    allowed = np.maximum(left_over - need, 0.0) * share / ((run + WHEEL_COAST_S) * k)
    limit = np.full(len(pose), np.inf)
    np.minimum.at(limit, a[closing], allowed[closing])
    limit = np.where(limit < model.dead_zone, 0.0, limit)
    return np.minimum(cap, limit)
