"""The path of a motor command from the navigator's tick to the cube, and of a position back, in simulated time.

Motor commands go as the cube driver sends them: a 0x02 write with the command's duration, at most one write per
``min_interval_s`` per cube (a newer command replaces one still waiting, as the driver's coalescing writer does),
then over the radio: each write is lost with the profile's ``write_loss`` or arrives ``write_latency`` later, in
the order sent (the BLE link layer keeps order, so a fast write never overtakes a slow one). The virtual cube's
firmware (:mod:`toio_navigator.sim.virtual_cube`) then applies its own rules: a write arriving within 45 ms of
the last accepted one is ignored, the duration stops the wheels.

Positions come back as the firmware's own ID notifications (bytes, decoded with the driver's codec), sampled at
the profile's notification times; a lost notification is simply not delivered.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from toio_navigator.cube import protocol as pr
from toio_navigator.sim.virtual_cube import VirtualCubes

#: event kinds, in the order simultaneous events are handled (the cube side first, then the host: a tick's
#: commands leave before the inputs that waited for it are read)
ARRIVE, NOTIFY, WRITE, EMIT, STATE, TIMER, TICK = range(7)


class EventQueue:
    """Time-ordered events; equal times keep their kind order, then the order they were pushed (deterministic)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, int, object]] = []
        self._seq = itertools.count()

    def push(self, when: float, kind: int, cube: int = -1, payload: object = None) -> None:
        heapq.heappush(self._heap, (when, kind, next(self._seq), cube, payload))

    def pop_before(self, limit: float):
        """The next event earlier than ``limit`` as (time, kind, cube, payload), or None."""
        if self._heap and self._heap[0][0] < limit:
            when, kind, _seq, cube, payload = heapq.heappop(self._heap)
            return when, kind, cube, payload
        return None


@dataclass
class LinkCounters:
    """What happened to the writes and notifications of one run (JSON-ready ints)."""
    commands: int = 0            # motor commands the navigator published
    coalesced: int = 0           # replaced by a newer one before the driver could write them
    writes: int = 0              # writes the driver sent
    writes_lost: int = 0         # lost on the radio
    writes_dropped: int = 0      # arrived but ignored by the cube (45 ms rule)
    writes_expired: int = 0      # not sent: the command's stamp + duration passed while it waited
    notifications: int = 0       # position notifications the cubes sent
    notifications_lost: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class MotorLink:
    """Driver writer + radio for every cube. ``events`` is the run's queue; WRITE and ARRIVE events it pushes
    come back to :meth:`on_write` and :meth:`on_arrive`."""

    def __init__(self, firmware: VirtualCubes, events: EventQueue, min_interval_s: float,
                 latency: tuple[float, float], loss: float, latency_rng: np.random.Generator,
                 loss_rng: np.random.Generator, set_arrival: Callable[[float], None]) -> None:
        n = len(firmware)
        self.firmware, self.events, self.min_interval_s = firmware, events, min_interval_s
        self.latency, self.loss = latency, loss
        self.latency_rng, self.loss_rng = latency_rng, loss_rng
        self.set_arrival = set_arrival
        self.pending: list[tuple[int, int, int, float] | None] = [None] * n   # left, right, duration ms, end
        self.draining = np.zeros(n, dtype=bool)
        self.last_write = np.full(n, -math.inf)
        self.last_arrival = np.full(n, -math.inf)
        self.counters = LinkCounters()
        self.first_motion: float | None = None     # when the first write that drives a wheel (not lost) was sent

    def submit(self, cube: int, left: int, right: int, duration_ms: int, now: float,
               stamp: float | None = None) -> None:
        """The driver got a motor command at ``now``, stamped ``stamp`` (the start of the tick that made it;
        default ``now``)."""
        c = self.counters
        c.commands += 1
        if self.pending[cube] is not None:
            c.coalesced += 1
        # stamped with the tick that sent it, as the node does: the driver runs it until stamp + duration at most
        self.pending[cube] = (left, right, duration_ms, (now if stamp is None else stamp) + duration_ms / 1000.0)
        if not self.draining[cube]:
            self.draining[cube] = True
            self.events.push(max(now, self.last_write[cube] + self.min_interval_s), WRITE, cube)

    def on_write(self, cube: int, now: float) -> None:
        (left, right, duration_ms, ends), self.pending[cube] = self.pending[cube], None
        self.draining[cube] = False
        c = self.counters
        # the driver's expire_by_stamp: a command that waited for the 45 ms gap runs only for what is left of it
        left_10ms = min(duration_ms, int((ends - now) * 1000.0)) // 10
        if left_10ms < 1:
            c.writes_expired += 1
            return
        data = pr.MotorControlTimed(left, right, min(255, left_10ms)).encode()
        self.last_write[cube] = now
        c.writes += 1
        # draw both every time, so the loss pattern does not depend on the latencies and vice versa
        lost = self.loss_rng.random() < self.loss
        lo, hi = self.latency
        delay = self.latency_rng.uniform(lo, hi) if hi > 0 else 0.0
        if lost:
            c.writes_lost += 1
            return
        if self.first_motion is None and (left or right):
            self.first_motion = now
        arrival = max(now + delay, self.last_arrival[cube])
        self.last_arrival[cube] = arrival
        self.events.push(arrival, ARRIVE, cube, data)

    def on_arrive(self, cube: int, data: bytes, now: float) -> None:
        target = self.firmware[cube]
        before = target.dropped_writes
        self.set_arrival(now)
        target.write(pr.Characteristic.MOTOR_CONTROL, data)
        self.counters.writes_dropped += target.dropped_writes - before


class PositionFeed:
    """The latest ID notification of every cube (the firmware sends one every physics step) and the profile's
    sampling of them: ``take(cube)`` is what the driver would receive now, or None if this one is lost."""

    def __init__(self, firmware: VirtualCubes, period: float, jitter: float, loss: float,
                 interval_rng: np.random.Generator, loss_rng: np.random.Generator) -> None:
        self.period, self.jitter, self.loss = period, jitter, loss
        self.interval_rng, self.loss_rng = interval_rng, loss_rng
        n = len(firmware)
        self.latest: list[bytes | None] = [None] * n
        self.pose = np.full((n, 3), np.nan)       # the driver's last decoded pose (kept while off the mat)
        for i in range(n):
            firmware[i].subscribe(pr.Characteristic.ID_INFORMATION, self._store(i))

    def _store(self, cube: int):
        def store(data: bytes) -> None:
            self.latest[cube] = data
        return store

    def next_interval(self) -> float:
        if self.jitter <= 0:
            return self.period
        return self.period + self.interval_rng.uniform(-self.jitter, self.jitter)

    def take(self, cube: int, counters: LinkCounters):
        """(x, y, theta, on_mat) as the driver publishes it, or None (nothing read yet, or lost)."""
        data = self.latest[cube]
        if data is None:
            return None
        counters.notifications += 1
        if self.loss_rng.random() < self.loss:
            counters.notifications_lost += 1
            return None
        note = pr.decode(pr.Characteristic.ID_INFORMATION, data)
        if isinstance(note, pr.PositionId):
            theta = math.radians(note.angle % 360)      # the driver's convention: [-pi, pi)
            if theta >= math.pi:
                theta -= 2.0 * math.pi
            self.pose[cube] = (float(note.x), float(note.y), theta)
            return float(note.x), float(note.y), theta, True
        x, y, theta = self.pose[cube]
        return float(x), float(y), float(theta), False
