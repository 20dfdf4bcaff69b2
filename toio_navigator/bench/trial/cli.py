"""``toio-nav trial``: closed-loop runs of benchmark scenarios through the navigator's controller and simulated
cubes under a timing profile (ideal, ble, loaded).

    toio-nav trial --planner orca_kr --profile ble --seeds 5 --max-agents 64 --out trial.json

The navigator's compute is charged to the simulated clock by the calibrated cost model (``compute.py``);
``--measured-compute`` charges the CPU it really takes, ``--free-compute`` nothing. Prints one line per
(scenario, seed) on stdout and a summary; a progress bar on stderr when it is a terminal (else one plain line per
finished run). RESULT.json holds ``results`` (one record per run: the benchmark's metrics, ``failure``, the
compute charged, the first motion, link counters; the same for the same seed, bit for bit, unless the compute is
measured), ``summary`` and ``timing`` (wall-clock and CPU figures, which vary from run to run).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from toio_navigator.bags.replay import parse_override
from toio_navigator.bench.cli import DEFAULT_SCENARIOS, ProgressBar, machine, select
from toio_navigator.bench.scenarios import load_scenarios
from toio_navigator.bench.trial.compute import MODES, Compute
from toio_navigator.bench.trial.profiles import PROFILES, get_profile
from toio_navigator.bench.trial.runner import navigator_setup, out_of_memory_record, place, run_trial
from toio_navigator.control.navigator_settings import planner_names


def add_arguments(parser: argparse.ArgumentParser) -> None:

    parser.add_argument('--scenarios', type=Path, default=DEFAULT_SCENARIOS,
                        help='scenarios file (benchmark format); default: the packaged scenarios.yaml')
    parser.add_argument('--planner', required=True, help='navigator planner: ' + ', '.join(planner_names()))
    parser.add_argument('--profile', default='ble', help='timing profile: ' + ', '.join(PROFILES) + ' (default ble)')
    parser.add_argument('--seeds', type=int, default=1, help='runs per scenario, seeds 0..K-1 (default 1)')
    parser.add_argument('--out', type=Path, help='write the JSON result here')
    parser.add_argument('--scenario', help='comma-separated scenario names or categories (default: all)')
    parser.add_argument('--max-agents', type=int, help='only scenarios with at most this many cubes')
    parser.add_argument('-j', '--jobs', type=int, default=1, help='worker processes (default 1)')
    parser.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                        help='navigator parameter override, e.g. --set avoid.margin=30 (repeatable)')
    parser.add_argument('--no-progress', action='store_true', help='nothing on stderr while running')
    parser.add_argument('--memory-limit', type=float, metavar='GB',
                        help='address space of each run; a run that needs more is recorded as failed (out of '
                             'memory) instead of taking the machine down')
    charge = parser.add_mutually_exclusive_group()
    charge.add_argument('--measured-compute', dest='compute', action='store_const', const='measured',
                        default=MODES[0], help="charge the navigator's measured CPU time instead of the cost model "
                                           '(records then depend on the machine and its load)')
    charge.add_argument('--free-compute', dest='compute', action='store_const', const='free',
                        help="charge no compute: a navigator tick takes no simulated time")


def run(args: argparse.Namespace) -> int:

    try:
        if args.planner not in planner_names():
            raise ValueError(f'unknown planner {args.planner!r} (known: {", ".join(planner_names())})')
        profile = get_profile(args.profile)
        if args.seeds < 1:
            raise ValueError(f'--seeds must be >= 1, got {args.seeds}')
        if args.jobs < 1:
            raise ValueError(f'-j/--jobs must be >= 1, got {args.jobs}')
        if args.memory_limit is not None and not 0.5 <= args.memory_limit < 1e6:
            raise ValueError(f'--memory-limit must be at least 0.5 (GB), got {args.memory_limit}')
        overrides = dict(parse_override(text) for text in args.set)
        scenarios = select(load_scenarios(args.scenarios), args.scenario, args.max_agents, option='--scenario')
        for s in scenarios:           # every bad setting shows now, not after an hour of runs
            navigator_setup(s, place(s), args.planner, overrides)
        Compute(args.compute, args.planner)
    except ValueError as exc:         # ScenarioError and ReplayError are ValueErrors naming the problem
        print(f'toio-nav trial: {exc}', file=sys.stderr)
        return 2

    jobs = [(s, seed) for s in scenarios for seed in range(args.seeds)]
    show = not args.no_progress
    tty = show and sys.stderr.isatty()
    records, timing = [], []
    try:
        for index, (record, wall_s, sim_s, step_ms, cpu_s) in _results(jobs, args.planner, profile, overrides,
                                                                       args.jobs, tty, args.compute,
                                                                       args.memory_limit):
            records.append(record)
            timing.append(dict(name=record['name'], seed=record['seed'], wall_s=round(wall_s, 3),
                               simulated_s=sim_s, speed_factor=round(sim_s / max(wall_s, 1e-9), 2),
                               step_ms_median=round(float(np.median(step_ms)), 3) if len(step_ms) else None,
                               compute_cpu_s=round(cpu_s, 3)))
            if show and not tty:
                print(f'[{index}/{len(jobs)}] {record["name"]} seed {record["seed"]}: {wall_s:.1f} s',
                      file=sys.stderr, flush=True)
            print(summary_line(record), flush=True)
    except ValueError as exc:
        print(f'toio-nav trial: {exc}', file=sys.stderr)
        return 1
    except MemoryError:
        print(f'toio-nav trial: a run ran out of memory after {len(records)} of {len(jobs)} runs (--memory-limit '
              'GB records such a run as failed); nothing written', file=sys.stderr)
        return 1
    except BrokenProcessPool:
        print(f'toio-nav trial: a worker process died (killed from outside?) after {len(records)} of {len(jobs)} '
              'runs; nothing written', file=sys.stderr)
        return 1
    configs = sorted({r['config'] for r in records if 'config' in r})
    if len(configs) > 1:               # config/navigator.yaml changed during the runs: they are not comparable
        print(f'toio-nav trial: warning: the navigator parameters changed during the runs ({", ".join(configs)})',
              file=sys.stderr)
    summary = summarise(records)
    print(f"{args.planner} / {profile.name} / compute {args.compute}: {summary['runs']} runs, success "
          f"{summary['success_rate']:.0%}, collision-free {summary['success_collision_free_rate']:.0%}, median "
          f"makespan {_num(summary['median_makespan'], '.2f')} s, median first motion "
          f"{_num(summary['median_first_motion_s'], '.2f')} s")
    report = dict(planner=args.planner, profile=profile.describe(), compute=args.compute,
                  scenarios_file=str(args.scenarios), seeds=args.seeds, overrides=overrides, results=records,
                  summary=summary, timing=timing, machine=machine())
    if args.out is not None:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1) + '\n', encoding='utf-8')
        except OSError as exc:
            print(f'toio-nav trial: cannot write {args.out}: {exc.strerror or exc}', file=sys.stderr)
            return 1
    return 0


def run_one(job, progress=None):
    """One run: (record, wall seconds, simulated seconds, tick wall times, compute CPU seconds)."""

    scenario, seed, planner, profile, overrides, compute, memory_gb = job
    before = resource.getrlimit(resource.RLIMIT_AS)
    if memory_gb is not None:          # the soft limit only, given back after the run (-j 1 runs in this process)
        cap = int(memory_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap if before[1] == resource.RLIM_INFINITY else min(cap, before[1]),
                                                before[1]))
    started = time.perf_counter()
    try:
        result = run_trial(scenario, planner, profile, seed, overrides, progress=progress, compute=compute)
    except MemoryError:
        if memory_gb is None:
            raise
        record = out_of_memory_record(scenario, planner, profile, seed, compute, memory_gb)
        return record, time.perf_counter() - started, 0.0, np.zeros(0), 0.0
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)
    return result.record, result.wall_s, result.simulated_s, result.step_ms, result.compute_cpu_s


def _results(jobs, planner, profile, overrides, workers: int, tty: bool, compute: str, memory_gb: float | None):
    """(index, (record, wall_s, simulated_s, step_ms, compute_cpu_s)) per finished run, in job order."""

    bar = ProgressBar(enabled=tty)
    if workers == 1:
        for index, (scenario, seed) in enumerate(jobs, 1):
            label = f'[{index}/{len(jobs)}] {scenario.name} seed {seed}'
            out = run_one((scenario, seed, planner, profile, overrides, compute, memory_gb),
                       progress=lambda k, total: bar.show(label, k, total))
            bar.clear()
            yield index, out
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_one, (s, seed, planner, profile, overrides, compute, memory_gb)) for s, seed in jobs]
        for index, future in enumerate(futures, 1):
            bar.show(f'{len(jobs)} runs on {workers} processes', index - 1, len(jobs))
            out = future.result()
            bar.clear()
            yield index, out


def summarise(records: list[dict]) -> dict:
    makespans = [r['makespan'] for r in records if r['makespan'] is not None]
    first = [r['first_motion_s'] for r in records if r.get('first_motion_s') is not None]
    return dict(runs=len(records),
                success_rate=sum(bool(r['success']) for r in records) / len(records),
                success_collision_free_rate=sum(bool(r['success_collision_free']) for r in records) / len(records),
                collisions=int(sum(r['collisions'] + r['obstacle_collisions'] for r in records)),
                median_makespan=float(np.median(makespans)) if makespans else None,
                median_first_motion_s=float(np.median(first)) if first else None,
                compute_s=round(float(sum(r.get('compute_s') or 0.0 for r in records)), 6))


def _num(v, fmt: str) -> str:
    return 'n/a' if v is None else format(v, fmt)


def summary_line(r: dict) -> str:
    return (f"{r['name']:<30} seed={r['seed']:<2d} success={'yes' if r['success'] else 'no ':<3} "
            f"collision_free={'yes' if r['success_collision_free'] else 'no ':<3} "
            f"contacts={r['collisions'] + r['obstacle_collisions']:<3d} "
            f"arrived={r['fraction_arrived']:.2f} makespan={_num(r['makespan'], '.2f'):>6} "
            f"first_motion={_num(r.get('first_motion_s'), '.2f'):>5} compute={_num(r.get('compute_s'), '.2f')}"
            + (f"  failure: {r['failure']}" if r['failure'] else ''))
