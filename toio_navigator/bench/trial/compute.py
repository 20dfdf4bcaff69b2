"""What the navigator's compute costs a closed-loop trial on the simulated clock.

A live navigator is a single-threaded node: while a tick computes, its timer and the cubes' states wait, and the
tick's motor commands leave when it is done, stamped with the tick's start (so the driver runs each only until
that stamp + its duration). A trial charges each tick the same way: the navigator is busy from the tick's start
for the tick's *charge*, then its commands go to the driver. Three ways to charge:

* ``modelled`` (the default): a deterministic cost model calibrated on this machine (:data:`MODEL`, made by
  ``tools/bench/compute_model.py``; docs/trial.md), so a record stays a pure function of the seed: a tick costs
  ``base_s + per_cube_s * N`` of its planner.
* ``measured``: the CPU time the tick took in this process (``time.thread_time``), as a live navigator would
  spend it; the record then depends on the machine and its load.
* ``free``: nothing (a tick takes no simulated time): the trials before compute was charged.

A planner that plans on a planning host (``planner.host``: `coordinated`) gets a host whose plans are ready only
once the simulated clock has passed their cost (``s_per_work`` per work unit of the planner's own deterministic
count, or the measured CPU of the job): the cubes hold, or drive on their last plan, meanwhile. That host runs
its jobs inside the ticks' polls; their CPU (``host.busy_s``) is charged through the host, not to the tick.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

#: the ways a trial charges the navigator's compute (the first is the default)
MODES = ('modelled', 'measured', 'free')


@dataclass(frozen=True)
class TickCost:
    """CPU seconds of one tick (a planning host's jobs apart): ``base_s + per_cube_s * N``."""
    base_s: float
    per_cube_s: float

    def __call__(self, n: int) -> float:
        return self.base_s + self.per_cube_s * n


@dataclass(frozen=True)
class CostModel:
    """The calibrated cost model (seconds of CPU on the machine it was calibrated on)."""
    ticks: dict[str, TickCost]           # planner name -> its tick cost
    s_per_work: float                    # a planning host's job: seconds per work unit of the planner
    calibrated_on: str = ''              # where and when (tools/bench/compute_model.py prints it)

    def tick(self, planner: str) -> TickCost:
        try:
            return self.ticks[planner]
        except KeyError:
            raise ValueError(f'the compute model has no tick cost for planner {planner!r} (calibrate it with '
                             'tools/bench/compute_model.py, or use --measured-compute or --free-compute)') from None


#: calibrated by ``python tools/bench/compute_model.py`` (docs/trial.md, "The compute model")
MODEL = CostModel(
    ticks={
        'hlavoid': TickCost(3.904e-03, 1.621e-04),
        'sfm': TickCost(2.688e-03, 7.541e-05),
        'ttc': TickCost(1.676e-03, 1.005e-04),
        'vo': TickCost(7.520e-04, 3.987e-04),
        'orca': TickCost(3.959e-03, 1.031e-04),
        'orca_kr': TickCost(6.573e-03, 1.097e-04),
        'orca_kr_diff': TickCost(3.906e-03, 1.453e-04),
        'coordinated': TickCost(3.114e-03, 2.346e-04),
    },
    s_per_work=1.908e-06,
    calibrated_on='vm, 2 cores, load 5.1, 2026-12-02',
)


@dataclass
class Compute:
    """The charge of every tick of one run (``mode`` one of :data:`MODES`), and what it adds up to."""
    mode: str
    planner: str
    model: CostModel = MODEL
    charged_s: float = 0.0               # simulated seconds charged over the run
    cpu_s: float = 0.0                   # CPU seconds the ticks took here (not deterministic)
    longest_s: float = 0.0               # the longest charge of one tick
    _tick: TickCost | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f'unknown compute mode {self.mode!r} (known: {", ".join(MODES)})')
        if self.mode == 'modelled':
            self._tick = self.model.tick(self.planner)

    def attach(self, planner: object, clock: Callable[[], float]) -> None:
        """Give a planner that plans on a host (``planner.host``) the trial's host: its plans are ready at the
        simulated time their cost says. Without a charge the planner keeps its own (inline) host."""
        if self.mode == 'free' or not hasattr(planner, 'host'):
            return
        from toio_navigator.planners.coordinated.host import ModelledHost  # noqa: PLC0415 only planners with a host
        per_work = self.model.s_per_work
        planner.host = ModelledHost(clock=clock, cost=lambda work: per_work * work, measured=self.mode == 'measured')

    def plans_s(self, planner: object) -> float:
        """Seconds charged for the plans of a planner with a host (0 without one)."""
        host = getattr(planner, 'host', None)
        if self.mode == 'free' or host is None:
            return 0.0
        return float(getattr(host, 'compute_s', 0.0))

    def run_tick(self, step: Callable[[float], list], now: float, planner: object, n: int) -> tuple[list, float]:
        """(the tick's decisions, its charge in seconds): ``step(now)`` run and charged."""
        busy = float(getattr(getattr(planner, 'host', None), 'busy_s', 0.0))
        started = time.thread_time()
        decisions = step(now)
        # a host's jobs run inside the tick's polls: their CPU is the host's to charge (the host may be new)
        cpu = time.thread_time() - started - (float(getattr(getattr(planner, 'host', None), 'busy_s', 0.0)) - busy)
        self.cpu_s += cpu
        if self.mode == 'free':
            charge = 0.0
        elif self.mode == 'measured':
            charge = cpu
        else:
            charge = self._tick(n)
        self.charged_s += charge
        self.longest_s = max(self.longest_s, charge)
        return decisions, charge
