"""Timing profiles of a closed-loop trial: what the radio link and the navigator's host do to the control loop.

A profile is a plain description (numbers only); every random draw is made by the trial from numpy Generators
derived from the run's seed, one independent stream per effect (:func:`streams`), so a run is reproducible bit
for bit and changing one effect of a profile does not reshuffle the others.

* ``ideal``  no latency, no loss, a position notification every 30 ms exactly, no noise, punctual ticks.
* ``ble``    every motor write takes 60-150 ms (uniform) from the driver to the cube and 3 % are lost;
             position notifications every 30 +- 15 ms (uniform), 1 % lost, position noise sigma 1 unit.
* ``loaded`` ``ble`` on a busy navigator host: each timer tick runs up to 3 periods late (uniform) and the whole
             navigator process stalls for 300 ms every 2-5 s (uniform); its inputs queue meanwhile.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

#: names of the independent random streams of one run (order fixed: a new stream goes at the end)
STREAMS = ('write_latency', 'write_loss', 'notify_interval', 'notify_loss', 'position_noise', 'tick_late',
           'stall')


@dataclass(frozen=True)
class TimingProfile:
    """Link and host timing of a trial. Times in seconds, distances in mat units, probabilities in 0..1."""
    name: str
    write_latency: tuple[float, float] = (0.0, 0.0)   # driver write -> the cube has it (uniform lo..hi)
    write_loss: float = 0.0                           # probability a motor write never arrives
    notify_period: float = 0.03                       # mean time between two position notifications
    notify_jitter: float = 0.0                        # +- this, uniform
    notify_loss: float = 0.0                          # probability a position notification is lost
    position_noise: float = 0.0                       # sigma of the reported x and y
    tick_late_periods: float = 0.0                    # a timer tick runs up to this many periods late (uniform)
    stall_s: float = 0.0                              # the navigator process stalls this long ...
    stall_every: tuple[float, float] = (math.inf, math.inf)   # ... after a gap drawn uniform lo..hi

    def check(self) -> None:
        """ValueError naming the first bad field."""
        lo, hi = self.write_latency
        if not (0 <= lo <= hi < math.inf):
            raise ValueError(f'profile {self.name}: write_latency needs 0 <= lo <= hi, got {self.write_latency}')
        for name in ('write_loss', 'notify_loss'):
            v = getattr(self, name)
            if not 0 <= v < 1:
                raise ValueError(f'profile {self.name}: {name} must be within [0, 1), got {v}')
        if not (0 < self.notify_period < math.inf and 0 <= self.notify_jitter < self.notify_period):
            raise ValueError(f'profile {self.name}: need notify_period > 0 and 0 <= notify_jitter < '
                             f'notify_period, got {self.notify_period}, {self.notify_jitter}')
        for name in ('position_noise', 'tick_late_periods', 'stall_s'):
            v = getattr(self, name)
            if not 0 <= v < math.inf:
                raise ValueError(f'profile {self.name}: {name} must be a finite number >= 0, got {v}')
        lo, hi = self.stall_every
        if self.stall_s > 0 and not (0 < lo <= hi < math.inf):
            raise ValueError(f'profile {self.name}: stall_every needs 0 < lo <= hi, got {self.stall_every}')

    def describe(self) -> dict:
        """The profile as a JSON-ready dict (for the result file)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        if not math.isfinite(self.stall_every[0]):
            out['stall_every'] = None
        return out


IDEAL = TimingProfile('ideal')
BLE = TimingProfile('ble', write_latency=(0.060, 0.150), write_loss=0.03, notify_period=0.030,
                    notify_jitter=0.015, notify_loss=0.01, position_noise=1.0)
LOADED = replace(BLE, name='loaded', tick_late_periods=3.0, stall_s=0.300, stall_every=(2.0, 5.0))

PROFILES: dict[str, TimingProfile] = {p.name: p for p in (IDEAL, BLE, LOADED)}


def get_profile(name: str) -> TimingProfile:
    """The profile called ``name``; ValueError naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f'unknown timing profile {name!r} (known: {", ".join(PROFILES)})') from None


def streams(seed: int, salt: int = 0) -> dict[str, np.random.Generator]:
    """One independent Generator per effect (:data:`STREAMS`) for a run of ``seed`` (``salt``: e.g. a scenario's
    own seed, so two scenarios run with seed 0 do not share their draws)."""
    children = np.random.SeedSequence([int(seed), int(salt)]).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children)}
