#!/usr/bin/env python3
"""What a user of `coordinated` waits for, next to orca_kr in the same run: closed-loop trials (``ble``) with the
navigator's compute charged, for 16, 32, 64 and 128 cubes in a circle swap and a 20 % crowd.

Per (scenario, planner), the medians of ``--runs`` runs (seeds 0..runs-1): the first motion (goals -> the first
write that drives a wheel), the compute per set of goals (the navigator's compute over the run; a scenario is one
set of goals) as charged and as measured (the CPU the same run took here, ticks and plan jobs) side by side with
their ratio, the peak resident memory of the run's process (every run in a fresh process) and the makespan with
planning included; then the ratio of the two planners' makespans (median over the seeds both solve) and the
targets of issue 53 beside them. The compute is charged by the cost model (``--compute modelled``, the default:
the records are a pure function of the seed, and the measured column says how honest the model is) or as
measured (``--compute measured``: what this machine takes now, load included).

    python tools/bench/coordinated_swarm.py -j 2                          # everything (long: the 128-cube runs)
    python tools/bench/coordinated_swarm.py --sizes 16,32 --runs 1        # a quick look
    python tools/bench/coordinated_swarm.py --compute measured --out swarm.json
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from unseen_scenarios import spread  # noqa: E402

from toio_navigator.bench.cli import DEFAULT_SCENARIOS, machine  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios, parse_scenarios  # noqa: E402
from toio_navigator.bench.trial.profiles import get_profile  # noqa: E402
from toio_navigator.bench.trial.runner import run_trial  # noqa: E402

SIZES = (16, 32, 64, 128)
CROWD_SEED = 20                      # the crowds' layout (fixed; not a seed of the runs)
R, V = 16.5, 165.0
#: first motion targets (s) by number of cubes; makespan ratio and memory targets
FIRST_MOTION = {16: 0.3, 64: 1.0, 128: 3.0}
MAKESPAN_RATIO = 0.8
MEMORY_MB = 1024.0


def crowd(n: int):
    """A 20 % crowd of n cubes: a random permutation of random places in a square of area n pi r^2 / 0.2."""
    side = math.sqrt(n * math.pi * R * R / 0.2)
    rng = np.random.default_rng([CROWD_SEED, n])
    lo, hi = 250.0 - side / 2 + R, 250.0 + side / 2 - R
    starts = np.round(spread(rng, n, (lo, lo), (hi, hi)), 1)
    goals = starts[rng.permutation(n)]
    limit = int(math.ceil(3.0 * float(np.hypot(*(goals - starts).T).max()) / V + 10.0))
    doc = dict(version=1, scenarios=[dict(name=f'crowd_d20_{n}', category='crowd', time_limit=limit,
                                          starts=starts.tolist(), goals=goals.tolist())])
    return parse_scenarios(doc, source='coordinated_swarm')[0]


LAYOUTS = ('circle', 'crowd')


def scenarios(sizes, layouts=LAYOUTS):
    """Per size, the packaged circle swap of that many cubes (if there is one) and the 20 % crowd."""
    packaged = {s.name: s for s in load_scenarios(DEFAULT_SCENARIOS)}
    out = []
    for n in sizes:
        if 'circle' in layouts and f'circle_swap_{n}' in packaged:
            out.append(packaged[f'circle_swap_{n}'])
        if 'crowd' in layouts:
            out.append(crowd(n))
    return out


def _limit_memory(gb: float | None) -> None:
    if gb:
        cap = int(gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def one(job) -> dict:
    """One trial in this (fresh) process: the record's figures and the process's peak resident memory."""
    scenario, planner, seed, compute, memory_gb = job
    _limit_memory(memory_gb)
    started = time.perf_counter()
    try:
        result = run_trial(scenario, planner, get_profile('ble'), seed, compute=compute)
    except MemoryError:
        return dict(name=scenario.name, n=scenario.n_agents, planner=planner, seed=seed, success=False,
                    failure=f'out of memory (limit {memory_gb} GB)', makespan=None, first_motion_s=None,
                    compute_s=None, cpu_s=None, peak_mb=_peak_mb(), wall_s=time.perf_counter() - started)
    r = result.record
    return dict(name=scenario.name, n=scenario.n_agents, planner=planner, seed=seed, success=r['success'],
                contacts=r['collisions'] + r['obstacle_collisions'], arrived=r['fraction_arrived'],
                failure=r['failure'], makespan=r['makespan'], first_motion_s=r['first_motion_s'],
                compute_s=r['compute_s'], cpu_s=result.compute_cpu_s, plans=r['navigator']['plans'],
                peak_mb=_peak_mb(), wall_s=result.wall_s)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0     # Linux: kB


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _fmt(v, spec='.2f', none='-'):
    return none if v is None else format(v, spec)


def table(rows: list[dict], planners: list[str], compute: str = 'modelled') -> str:
    """The markdown table: per scenario and planner the medians, then the ratio and the targets."""
    out = [f'| scenario | N | planner | solved | first motion s | compute s ({compute}) | CPU s (measured) | '
           'charged / measured | peak MB | makespan s | makespan / orca_kr | targets |',
           '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|']
    for name in dict.fromkeys(r['name'] for r in rows):
        mine = [r for r in rows if r['name'] == name]
        n = mine[0]['n']
        for planner in planners:
            runs_ = [r for r in mine if r['planner'] == planner]
            if not runs_:
                continue
            solved = [r for r in runs_ if r['success']]
            first = _median([r['first_motion_s'] for r in runs_])
            peak = max(r['peak_mb'] for r in runs_)
            ratio = targets = ''
            if planner != 'orca_kr':
                ratio, targets = _against_orca(mine, planner, n, first, peak)
            charged, cpu = _median([r['compute_s'] for r in runs_]), _median([r['cpu_s'] for r in runs_])
            honest = _median([r['compute_s'] / r['cpu_s'] for r in runs_ if r['compute_s'] is not None
                              and r['cpu_s']])
            out.append(f"| {name} | {n} | {planner} | {len(solved)}/{len(runs_)} | {_fmt(first)} | "
                       f"{_fmt(charged)} | {_fmt(cpu)} | {_fmt(honest)} | {peak:.0f} | "
                       f"{_fmt(_median([r['makespan'] for r in solved]))} | {ratio} | {targets} |")
    return '\n'.join(out)


def _against_orca(rows, planner, n, first, peak) -> tuple[str, str]:
    """(makespan ratio to orca_kr over the seeds both solve, the targets met or missed)."""
    ratios = []
    for r in rows:
        if r['planner'] == planner and r['success']:
            other = [o for o in rows if o['planner'] == 'orca_kr' and o['seed'] == r['seed'] and o['success']]
            if other and other[0]['makespan'] > 0.0:
                ratios.append(r['makespan'] / other[0]['makespan'])
    ratio = _median(ratios)
    checks = []
    if n in FIRST_MOTION and first is not None:
        checks.append(f"first motion <= {FIRST_MOTION[n]:g} s: {'yes' if first <= FIRST_MOTION[n] else 'NO'}")
    if ratio is not None:
        checks.append(f"makespan <= {MAKESPAN_RATIO:g} x: {'yes' if ratio <= MAKESPAN_RATIO else 'NO'}")
    checks.append(f"memory <= 1 GB: {'yes' if peak <= MEMORY_MB else 'NO'}")
    return (f'{ratio:.2f} ({len(ratios)} seeds)' if ratio is not None else 'n/a'), '; '.join(checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--sizes', default=','.join(map(str, SIZES)), help='numbers of cubes (default 16,32,64,128)')
    parser.add_argument('--layouts', default=','.join(LAYOUTS), help='circle, crowd or both (default both)')
    parser.add_argument('--planners', default='coordinated,orca_kr')
    parser.add_argument('--runs', type=int, default=3, help='runs (seeds 0..runs-1) per scenario and planner')
    parser.add_argument('--compute', default='modelled', choices=('modelled', 'measured'),
                        help='how the trials charge the compute (default modelled; the CPU is measured anyway)')
    parser.add_argument('--memory-limit', type=float, default=4.0,
                        help='GB of address space per run (a run beyond it fails; default 4, 0: none)')
    parser.add_argument('-j', '--jobs', type=int, default=1)
    parser.add_argument('--out', type=Path, help='also write every run as JSON here')
    args = parser.parse_args(argv)
    planners = [p for p in args.planners.split(',') if p]
    chosen = scenarios([int(v) for v in args.sizes.split(',')], args.layouts.split(','))
    jobs = [(s, p, seed, args.compute, args.memory_limit)
            for s in chosen for p in planners for seed in range(args.runs)]
    started = time.monotonic()
    rows = []
    # a fresh process per run: its peak resident memory is the run's own
    with ProcessPoolExecutor(max_workers=args.jobs, max_tasks_per_child=1) as pool:
        for k, row in enumerate(pool.map(one, jobs), 1):
            rows.append(row)
            print(f"[{k}/{len(jobs)}] {row['name']} {row['planner']} seed {row['seed']}: "
                  f"{'solved' if row['success'] else 'failed'} makespan {_fmt(row['makespan'])} first motion "
                  f"{_fmt(row['first_motion_s'])} compute {_fmt(row['compute_s'])} (CPU {_fmt(row['cpu_s'])}) "
                  f"peak {row['peak_mb']:.0f} MB "
                  f"({row['wall_s']:.0f} s)" + (f" -- {row['failure']}" if row['failure'] else ''),
                  file=sys.stderr, flush=True)
    print(f'compute {args.compute}, profile ble, medians of {args.runs} run(s) (seeds 0..{args.runs - 1}); '
          f'{machine()["cpu"]}; {time.monotonic() - started:.0f} s\n')
    print(table(rows, planners, args.compute))
    if args.out is not None:
        args.out.write_text(json.dumps(dict(compute=args.compute, runs=rows, machine=machine()), indent=1) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
