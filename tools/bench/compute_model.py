#!/usr/bin/env python3
"""Calibrate the trials' compute model on this machine, and compare it with the measured CPU time.

The model (toio_navigator/bench/trial/compute.py, ``MODEL``) charges a tick ``base_s + per_cube_s * N`` of its
planner, and a plan made on a planning host (``coordinated``) ``s_per_work`` per work unit the planner counts.
``--calibrate`` runs a fixed corpus of trials without charge (``ble``, seed 0, the first ``--seconds`` simulated
seconds of each) and measures every tick's CPU (``time.thread_time``; a planning host's jobs apart) and every
plan job's work and CPU; with ``--repeats K`` each run is made K times (every run of a seed is the same) and the
least CPU of each tick and job kept. It fits ``base_s`` and ``per_cube_s`` per planner by least squares over the
mean tick of each run, and ``s_per_work`` as the CPU of all jobs over their work, and prints the ``MODEL`` to
put into compute.py. Without ``--calibrate`` it runs the check set (other scenarios) and prints, per run, the
measured and the modelled seconds side by side.

    python tools/bench/compute_model.py --calibrate --repeats 2 -j 2    # about 15 minutes on two cores
    python tools/bench/compute_model.py -j 2                            # model against measured, check set
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.bench.cli import DEFAULT_SCENARIOS  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.bench.trial.compute import MODEL, Compute  # noqa: E402
from toio_navigator.bench.trial.profiles import get_profile  # noqa: E402
from toio_navigator.bench.trial.runner import ClosedLoop  # noqa: E402
from toio_navigator.planners.coordinated.host import InlineHost  # noqa: E402

PLANNERS = ('hlavoid', 'sfm', 'ttc', 'vo', 'orca', 'orca_kr', 'orca_kr_diff', 'coordinated')
CORPUS = ('circle_swap_4', 'circle_swap_16', 'random_mat_d10_s1', 'crossing90_4x4', 'random_mat_d20_s1',
          'circle_swap_64')
CHECK = ('head_on_pair', 'circle_swap_8', 'obst_doorway_4v4', 'crossing90_3x3', 'random_mat_d20_s2',
         'circle_swap_32')


@dataclasses.dataclass
class Run:
    """One run: its cubes, every tick's CPU (jobs apart), every plan job's (work, CPU)."""
    planner: str
    scenario: str
    n: int
    ticks: np.ndarray
    jobs: np.ndarray            # (J, 2) work units, CPU seconds


class _RecordingHost(InlineHost):
    """The inline host (every plan at once, nothing charged) that keeps each job's work and CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.busy_s = 0.0
        self.jobs: list[tuple[int, float]] = []

    def poll(self):
        started = time.thread_time()
        out = super().poll()
        self.busy_s += time.thread_time() - started
        if out:
            self.jobs.append((out[-1].work, out[-1].cpu_s))
        return out


class _Recording(Compute):
    """Charges nothing (the run is the one of ``--free-compute``) and keeps every tick's CPU."""

    def __init__(self, planner: str) -> None:
        super().__init__('free', planner)
        self.rows: list[float] = []

    def run_tick(self, step, now, planner, n):
        before = self.cpu_s
        out = super().run_tick(step, now, planner, n)
        self.rows.append(self.cpu_s - before)
        return out


def run(job) -> Run:
    planner, name, seconds, scenarios_file = job
    scenario = next(s for s in load_scenarios(scenarios_file) if s.name == name)
    scenario = dataclasses.replace(scenario, time_limit=min(scenario.time_limit, seconds))
    loop = ClosedLoop(scenario, planner, get_profile('ble'), 0, compute='free')
    loop.compute = _Recording(planner)
    host = None
    if hasattr(loop.controller.planner, 'host'):
        host = loop.controller.planner.host = _RecordingHost()
    loop.run()
    jobs = np.array(host.jobs if host is not None else [], float).reshape(-1, 2)
    return Run(planner, name, scenario.n_agents, np.array(loop.compute.rows), jobs)


def measure(planners, names, seconds: float, repeats: int, workers: int, scenarios_file) -> list[Run]:
    """Each (planner, scenario) run ``repeats`` times; the least CPU of every tick and job."""
    jobs = [(p, s, seconds, scenarios_file) for p in planners for s in names for _ in range(repeats)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(run, jobs))
    out = []
    for k in range(0, len(done), repeats):
        group = done[k:k + repeats]
        jobs_cpu = np.min([g.jobs[:, 1] for g in group], axis=0) if len(group[0].jobs) else np.zeros(0)
        out.append(dataclasses.replace(group[0], ticks=np.min([g.ticks for g in group], axis=0),
                                       jobs=np.column_stack([group[0].jobs[:, 0], jobs_cpu])))
    return out


def calibrate(runs: list[Run]) -> str:
    """The MODEL fitted to ``runs``, as Python source for compute.py."""
    lines = ['MODEL = CostModel(', '    ticks={']
    for planner in dict.fromkeys(r.planner for r in runs):
        mine = [r for r in runs if r.planner == planner]
        n = np.array([r.n for r in mine], float)
        mean = np.array([r.ticks.mean() for r in mine])
        per_cube, base = np.polyfit(n, mean, 1) if len(set(n)) > 1 else (0.0, float(mean.mean()))
        if base < 0.0:                   # a tick costs at least nothing: through the origin then
            base, per_cube = 0.0, float((n * mean).sum() / (n * n).sum())
        lines.append(f"        '{planner}': TickCost({base:.3e}, {max(per_cube, 0.0):.3e}),")
    jobs = np.vstack([r.jobs for r in runs if len(r.jobs)] or [np.zeros((0, 2))])
    per_work = float(jobs[:, 1].sum() / max(jobs[:, 0].sum(), 1.0))
    lines += ['    },', f'    s_per_work={per_work:.3e},',
              f"    calibrated_on='{platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
              f"{time.strftime('%Y-%m-%d')}',", ')']
    return '\n'.join(lines)


def compare(runs: list[Run]) -> str:
    """Per run: ticks and plan jobs, measured CPU and the model's seconds, and their ratio."""
    rows = ['| planner | scenario | N | ticks | ticks: measured s | modelled s | ratio | plans | plans: measured s | '
            'modelled s | ratio |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in runs:
        tick_model = MODEL.tick(r.planner)(r.n) * len(r.ticks)
        tick_cpu = float(r.ticks.sum())
        plan_cpu, plan_model = float(r.jobs[:, 1].sum()), float(r.jobs[:, 0].sum()) * MODEL.s_per_work
        plans = (f'{len(r.jobs)} | {plan_cpu:.2f} | {plan_model:.2f} | {plan_model / max(plan_cpu, 1e-9):.2f}'
                 if len(r.jobs) else '0 | - | - | -')
        rows.append(f'| {r.planner} | {r.scenario} | {r.n} | {len(r.ticks)} | {tick_cpu:.3f} | {tick_model:.3f} | '
                    f'{tick_model / max(tick_cpu, 1e-9):.2f} | {plans} |')
    return '\n'.join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calibrate', action='store_true', help='fit the model on the corpus and print it')
    parser.add_argument('--planners', default=','.join(PLANNERS))
    parser.add_argument('--scenarios', help='comma-separated scenario names (default: the corpus or check set)')
    parser.add_argument('--scenarios-file', type=Path, default=DEFAULT_SCENARIOS)
    parser.add_argument('--seconds', type=float, default=6.0, help='simulated seconds of each run (default 6)')
    parser.add_argument('--repeats', type=int, default=1, help='identical runs per (planner, scenario) (least CPU)')
    parser.add_argument('-j', '--jobs', type=int, default=1)
    args = parser.parse_args(argv)
    names = args.scenarios.split(',') if args.scenarios else list(CORPUS if args.calibrate else CHECK)
    planners = [p for p in args.planners.split(',') if p]
    started = time.monotonic()
    runs = measure(planners, names, args.seconds, max(1, args.repeats), args.jobs, args.scenarios_file)
    print(compare(runs))
    if args.calibrate:
        print()
        print(calibrate(runs))
    print(f'\n({time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.1f})', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
