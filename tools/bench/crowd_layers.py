#!/usr/bin/env python3
"""Where the time of `coordinated` goes in the big crowds: the same scenarios, one layer of reality at a time.

Each row adds one thing real cubes bring; each cell is a makespan in seconds (every run is given three times its
time limit, so that it ends).

1. ideal discs on the ideal-disc lattice (``toio-nav bench``: the planner's own 2 u margin);
2. ideal discs on the lattice of real cubes (the closed-loop margins: 13 u between cubes, 7 u to walls);
3. the same with the bench's differential-drive model (exact positions, no delay, but cubes turn);
4. a trial under the ``ideal`` profile;
5. a trial under the ``ble`` profile.

The trials charge no compute (``--free-compute``): this table is about carrying a plan out.

    python tools/bench/crowd_layers.py -j 2         # its five big crowds (about 6 min on 2 cores)
    python tools/bench/crowd_layers.py --scenario circle_swap_16 --seed 1
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.bench.cli import DEFAULT_SCENARIOS  # noqa: E402
from toio_navigator.bench.metrics import MetricSetup, compute_metrics  # noqa: E402
from toio_navigator.bench.runner import run_scenario  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.bench.trial.profiles import get_profile  # noqa: E402
from toio_navigator.bench.trial.runner import ClosedLoop  # noqa: E402
from toio_navigator.planners.coordinated.planner import CoordinatedParams, CoordinatedPlanner  # noqa: E402

SCENARIOS = 'circle_swap_32,circle_swap_64,random_mat_d20_s1,random_mat_d20_s2,random_mat_d20_s3'
LIMIT_FACTOR = 3.0
_REAL = CoordinatedParams()
REAL_LATTICE = dict(margin=_REAL.loop_margin, wall_margin=_REAL.loop_wall_margin)

# (label, how): ('bench', model, planner parameters) or ('trial', profile, planner parameters, navigator parameters)
ROWS = [
    ('ideal discs on the ideal-disc lattice (D = 35 u), `toio-nav bench`', ('bench', 'holonomic', {})),
    ('ideal discs on the lattice of real cubes (D = 46 u)', ('bench', 'holonomic', REAL_LATTICE)),
    ('the same with `--model diff_drive` (exact positions, no delay, cubes turn)',
     ('bench', 'diff_drive', REAL_LATTICE)),
    ('trial, `ideal` profile', ('trial', 'ideal', {}, {})),
    ('trial, `ble` profile', ('trial', 'ble', {}, {})),
]


def makespan(job: tuple[str, int, int]) -> float | None:
    """The makespan of one (scenario, row, trial seed), None if a cube had not arrived by the extended limit."""
    name, row, seed = job
    scenario = next(s for s in load_scenarios(DEFAULT_SCENARIOS) if s.name == name)
    scenario = dataclasses.replace(scenario, time_limit=scenario.time_limit * LIMIT_FACTOR)
    kind, mode, planner_params, *navigator = ROWS[row][1]
    if kind == 'bench':
        metrics = run_scenario(scenario, CoordinatedPlanner(**planner_params), model=mode).metrics
    else:
        loop = ClosedLoop(scenario, 'coordinated', get_profile(mode), seed, navigator[0], compute='free')
        planner = loop.controller.planner
        planner.params = dataclasses.replace(planner.params, **planner_params)
        metrics = compute_metrics(loop.run(), MetricSetup.from_scenario(scenario), name=name)
    return metrics['makespan'] if metrics['success'] else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scenario', default=SCENARIOS, help=f'comma-separated names (default {SCENARIOS})')
    parser.add_argument('--seed', type=int, default=0, help='the trials\' seed (the bench runs have none)')
    parser.add_argument('-j', '--jobs', type=int, default=1)
    args = parser.parse_args()
    known = {s.name: s for s in load_scenarios(DEFAULT_SCENARIOS)}
    names = args.scenario.split(',')
    unknown = [n for n in names if n not in known]
    if unknown or args.jobs < 1:
        print(f'crowd_layers: unknown scenario {unknown} (or -j < 1)', file=sys.stderr)
        return 2
    jobs = [(n, r, args.seed) for r in range(len(ROWS)) for n in names]
    with ProcessPoolExecutor(args.jobs) as pool:
        cells = dict(zip(jobs, pool.map(makespan, jobs)))
    print('| | ' + ' | '.join(f'`{n}`' for n in names) + ' |')
    print('|---|' + '---:|' * len(names))
    print('| time limit | ' + ' | '.join(f'{known[n].time_limit:g}' for n in names) + ' |')
    for r, (label, _how) in enumerate(ROWS):
        values = [cells[(n, r, args.seed)] for n in names]
        print(f'| {label} | ' + ' | '.join('–' if v is None else f'{v:.2f}' for v in values) + ' |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
