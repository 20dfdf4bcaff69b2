"""``toio-nav trial``: closed-loop runs of benchmark scenarios through the navigator's controller and simulated
cubes under a timing profile (ideal, ble, loaded).

    toio-nav trial --planner orca_kr --profile ble --seeds 5 --max-agents 64 --out trial.json

Prints one line per (scenario, seed) on stdout and a summary; a progress bar on stderr when it is a terminal
(else one plain line per finished run). RESULT.json holds ``results`` (one record per run: the benchmark's
metrics, ``failure``, link counters; the same for the same seed, bit for bit), ``summary`` and ``timing``
(wall-clock figures, which vary from run to run).
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from toio_navigator.bags.replay import parse_override
from toio_navigator.bench.cli import DEFAULT_SCENARIOS, ProgressBar, machine, select
from toio_navigator.bench.scenarios import load_scenarios
from toio_navigator.bench.trial.profiles import PROFILES, get_profile
from toio_navigator.bench.trial.runner import navigator_setup, place, run_trial
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


def run(args: argparse.Namespace) -> int:

    try:
        if args.planner not in planner_names():
            raise ValueError(f'unknown planner {args.planner!r} (known: {", ".join(planner_names())})')
        profile = get_profile(args.profile)
        if args.seeds < 1:
            raise ValueError(f'--seeds must be >= 1, got {args.seeds}')
        if args.jobs < 1:
            raise ValueError(f'-j/--jobs must be >= 1, got {args.jobs}')
        overrides = dict(parse_override(text) for text in args.set)
        scenarios = select(load_scenarios(args.scenarios), args.scenario, args.max_agents, option='--scenario')
        for s in scenarios:           # every bad setting shows now, not after an hour of runs
            navigator_setup(s, place(s), args.planner, overrides)
    except ValueError as exc:         # ScenarioError and ReplayError are ValueErrors naming the problem
        print(f'toio-nav trial: {exc}', file=sys.stderr)
        return 2

    jobs = [(s, seed) for s in scenarios for seed in range(args.seeds)]
    show = not args.no_progress
    tty = show and sys.stderr.isatty()
    records, timing = [], []
    try:
        for index, (record, wall_s, sim_s, step_ms) in _results(jobs, args.planner, profile, overrides, args.jobs,
                                                                tty):
            records.append(record)
            timing.append(dict(name=record['name'], seed=record['seed'], wall_s=round(wall_s, 3),
                               simulated_s=sim_s, speed_factor=round(sim_s / max(wall_s, 1e-9), 2),
                               step_ms_median=round(float(np.median(step_ms)), 3) if len(step_ms) else None))
            if show and not tty:
                print(f'[{index}/{len(jobs)}] {record["name"]} seed {record["seed"]}: {wall_s:.1f} s',
                      file=sys.stderr, flush=True)
            print(summary_line(record), flush=True)
    except ValueError as exc:
        print(f'toio-nav trial: {exc}', file=sys.stderr)
        return 1
    except BrokenProcessPool:
        print(f'toio-nav trial: a worker process died (killed from outside?) after {len(records)} of {len(jobs)} '
              'runs; nothing written', file=sys.stderr)
        return 1
    summary = summarise(records)
    print(f"{args.planner} / {profile.name}: {summary['runs']} runs, success {summary['success_rate']:.0%}, "
          f"collision-free {summary['success_collision_free_rate']:.0%}, median makespan "
          f"{_num(summary['median_makespan'], '.2f')} s")
    report = dict(planner=args.planner, profile=profile.describe(), scenarios_file=str(args.scenarios),
                  seeds=args.seeds, overrides=overrides, results=records, summary=summary, timing=timing,
                  machine=machine())
    if args.out is not None:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1) + '\n', encoding='utf-8')
        except OSError as exc:
            print(f'toio-nav trial: cannot write {args.out}: {exc.strerror or exc}', file=sys.stderr)
            return 1
    return 0


def _one(job):
    """A worker's run: (record, wall seconds, simulated seconds, tick wall times)."""

    scenario, seed, planner, profile, overrides = job
    result = run_trial(scenario, planner, profile, seed, overrides)
    return result.record, result.wall_s, result.simulated_s, result.step_ms


def _results(jobs, planner, profile, overrides, workers: int, tty: bool):
    """(index, (record, wall_s, simulated_s, step_ms)) per finished run, in job order."""

    bar = ProgressBar(enabled=tty)
    if workers == 1:
        for index, (scenario, seed) in enumerate(jobs, 1):
            label = f'[{index}/{len(jobs)}] {scenario.name} seed {seed}'
            result = run_trial(scenario, planner, profile, seed, overrides,
                               progress=lambda k, total: bar.show(label, k, total))
            bar.clear()
            yield index, (result.record, result.wall_s, result.simulated_s, result.step_ms)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_one, (s, seed, planner, profile, overrides)) for s, seed in jobs]
        for index, future in enumerate(futures, 1):
            bar.show(f'{len(jobs)} runs on {workers} processes', index - 1, len(jobs))
            out = future.result()
            bar.clear()
            yield index, out


def summarise(records: list[dict]) -> dict:
    makespans = [r['makespan'] for r in records if r['makespan'] is not None]
    return dict(runs=len(records),
                success_rate=sum(bool(r['success']) for r in records) / len(records),
                success_collision_free_rate=sum(bool(r['success_collision_free']) for r in records) / len(records),
                collisions=int(sum(r['collisions'] + r['obstacle_collisions'] for r in records)),
                median_makespan=float(np.median(makespans)) if makespans else None)


def _num(v, fmt: str) -> str:
    return 'n/a' if v is None else format(v, fmt)


def summary_line(r: dict) -> str:
    return (f"{r['name']:<26} seed={r['seed']:<2d} success={'yes' if r['success'] else 'no ':<3} "
            f"collision_free={'yes' if r['success_collision_free'] else 'no ':<3} "
            f"contacts={r['collisions'] + r['obstacle_collisions']:<3d} "
            f"arrived={r['fraction_arrived']:.2f} makespan={_num(r['makespan'], '.2f'):>6}"
            + (f"  failure: {r['failure']}" if r['failure'] else ''))
