#!/usr/bin/env python3
"""Calibrate the trials' compute model on this machine, and compare it with the measured CPU time.

The model (toio_navigator/bench/trial/compute.py, ``MODEL``) charges a tick that makes no plan
``base_s + per_cube_s * N`` of its planner, and a tick that makes a plan (a planner planning within its ticks)
its counted calls times ``s_per_call``. ``--calibrate`` runs a fixed corpus of trials without charge (``ble``,
seed 0, the first ``--seconds`` simulated seconds of each), measures the CPU time of every tick
(``time.thread_time``, the minimum of ``--repeats`` identical runs: every run of a seed is the same), fits
``base_s`` and ``per_cube_s`` per planner by least squares over the mean tick of each run, and ``s_per_call`` as
the CPU of all planning ticks over their calls, and prints the ``MODEL`` to put into compute.py. Without
``--calibrate`` it runs other scenarios (the check set) and prints, per run, the measured and the modelled
compute side by side.

    python tools/bench/compute_model.py --calibrate -j 2     # about 10 minutes on two cores
    python tools/bench/compute_model.py -j 2                 # model against measured on the check set
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
from toio_navigator.bench.trial.compute import MODEL, Compute, counted_calls  # noqa: E402
from toio_navigator.bench.trial.profiles import get_profile  # noqa: E402
from toio_navigator.bench.trial.runner import ClosedLoop  # noqa: E402

PLANNERS = ('hlavoid', 'sfm', 'ttc', 'vo', 'orca', 'orca_kr', 'orca_kr_diff', 'coordinated')
CORPUS = ('circle_swap_4', 'circle_swap_16', 'random_mat_d10_s1', 'crossing90_4x4', 'random_mat_d20_s1',
          'circle_swap_64')
CHECK = ('head_on_pair', 'circle_swap_8', 'obst_doorway_4v4', 'crossing90_3x3', 'random_mat_d20_s2',
         'circle_swap_32')


@dataclasses.dataclass
class Ticks:
    """Every tick of one run: its cubes, measured CPU, whether it made a plan, its counted calls (or 0)."""
    planner: str
    scenario: str
    n: int
    cpu: np.ndarray
    planned: np.ndarray
    calls: np.ndarray


class _Recording(Compute):
    """Charges nothing (the run is the one of ``--free-compute``) and keeps every tick's CPU and calls."""

    def __init__(self, planner: str, count: bool) -> None:
        super().__init__('free', planner)
        self.count, self.rows = count, []

    def run_tick(self, step, now, planner, n):
        import cProfile  # noqa: PLC0415 only here
        plans = getattr(planner, 'plans', None)
        profile = cProfile.Profile() if self.count and getattr(planner, 'replan', False) else None
        started = time.thread_time()
        if profile is not None:
            profile.enable()
        decisions = step(now)
        if profile is not None:
            profile.disable()
        cpu = time.thread_time() - started
        planned = getattr(planner, 'plans', None) != plans
        self.rows.append((cpu, planned, counted_calls(profile) if profile is not None and planned else 0))
        return decisions, 0.0


def run(job) -> Ticks:
    planner, name, seconds, count, scenarios_file = job
    scenario = next(s for s in load_scenarios(scenarios_file) if s.name == name)
    scenario = dataclasses.replace(scenario, time_limit=min(scenario.time_limit, seconds))
    loop = ClosedLoop(scenario, planner, get_profile('ble'), 0, compute='free')
    loop.compute = _Recording(planner, count)
    loop.run()
    cpu, planned, calls = (np.array(c) for c in zip(*loop.compute.rows))
    return Ticks(planner, name, scenario.n_agents, cpu, planned.astype(bool), calls)


def measure(planners, names, seconds: float, repeats: int, workers: int, scenarios_file) -> list[Ticks]:
    """Each (planner, scenario) run ``repeats`` times (tick CPU: the minimum), and once more counting calls
    for the planners that plan within their ticks."""
    jobs = [(p, s, seconds, False, scenarios_file) for p in planners for s in names for _ in range(repeats)]
    counting = [(p, s, seconds, True, scenarios_file) for p in planners if p == 'coordinated' for s in names]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(run, jobs + counting))
    timed, counted = done[:len(jobs)], done[len(jobs):]
    out = []
    for k in range(0, len(timed), repeats):
        group = timed[k:k + repeats]
        best = dataclasses.replace(group[0], cpu=np.min([g.cpu for g in group], axis=0))
        for c in counted:
            if (c.planner, c.scenario) == (best.planner, best.scenario):
                best.calls = c.calls
        out.append(best)
    return out


def calibrate(runs: list[Ticks]) -> str:
    """The MODEL fitted to ``runs``, as Python source for compute.py."""
    lines = ['MODEL = CostModel(', '    ticks={']
    for planner in dict.fromkeys(r.planner for r in runs):
        mine = [r for r in runs if r.planner == planner]
        n = np.array([r.n for r in mine], float)
        mean = np.array([r.cpu[~r.planned].mean() for r in mine])
        per_cube, base = np.polyfit(n, mean, 1) if len(set(n)) > 1 else (0.0, float(mean.mean()))
        base, per_cube = max(base, 0.0), max(per_cube, 0.0)
        lines.append(f"        '{planner}': TickCost({base:.3e}, {per_cube:.3e}),")
    plans = [(r.cpu[r.planned].sum(), r.calls[r.planned].sum()) for r in runs if r.calls.any()]
    per_call = sum(c for c, _ in plans) / max(sum(k for _, k in plans), 1)
    load = os.getloadavg()[0]
    lines += ['    },', f'    s_per_call={per_call:.3e},', f'    s_per_work={MODEL.s_per_work:.3e},',
              f"    calibrated_on='{platform.node()} {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores, load {load:.1f}, {time.strftime('%Y-%m-%d')}',", ')']
    return '\n'.join(lines)


def compare(runs: list[Ticks]) -> str:
    """Per run: ticks, measured CPU and the model's charge (ticks without a plan, planning ticks), and ratio."""
    rows = ['| planner | scenario | N | ticks | plans | measured s | modelled s | modelled / measured | '
            'plan: measured s | plan: modelled s |', '|---|---|---|---|---|---|---|---|---|---|']
    for r in runs:
        tick = MODEL.tick(r.planner)(r.n)
        plan_model = r.calls[r.planned].sum() * MODEL.s_per_call
        model = tick * int((~r.planned).sum()) + plan_model
        measured = float(r.cpu.sum())
        plan = f'{r.cpu[r.planned].sum():.2f} | {plan_model:.2f}' if r.planned.any() else '- | -'
        rows.append(f'| {r.planner} | {r.scenario} | {r.n} | {len(r.cpu)} | {int(r.planned.sum())} | '
                    f'{measured:.2f} | {model:.2f} | {model / max(measured, 1e-9):.2f} | {plan} |')
    return '\n'.join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calibrate', action='store_true', help='fit the model on the corpus and print it')
    parser.add_argument('--planners', default=','.join(PLANNERS))
    parser.add_argument('--scenarios', help='comma-separated scenario names (default: the corpus or check set)')
    parser.add_argument('--scenarios-file', type=Path, default=DEFAULT_SCENARIOS)
    parser.add_argument('--seconds', type=float, default=6.0, help='simulated seconds of each run (default 6)')
    parser.add_argument('--repeats', type=int, default=1, help='identical runs per (planner, scenario) (min CPU)')
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
