"""``toio-nav bench``: run the scenarios of a scenarios file with one local planner, report docs/metrics.md metrics.

    toio-nav bench --scenarios FILE --planner NAME [--out metrics.json] [--only NAME,...] [--model diff_drive]

Prints one line per scenario on stdout, a progress bar on stderr and, with --out, the full JSON report (one object
per scenario as docs/metrics.md §8, the aggregates per category, the seed and the machine description).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from toio_navigator.bench.runner import run_scenario
from toio_navigator.bench.scenarios import ScenarioError, load_scenarios
from toio_navigator.planners import PLANNERS, make_planner

DEFAULT_SCENARIOS = Path(__file__).resolve().parent.parent / 'data' / 'scenarios.yaml'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--scenarios', type=Path, default=DEFAULT_SCENARIOS,
                        help='scenarios file (format: docs/metrics.md §9); default: the packaged scenarios.yaml')
    parser.add_argument('--planner', required=True, help='planner name: ' + ', '.join(_planner_names()))
    parser.add_argument('--out', type=Path, help='write the JSON report here')
    parser.add_argument('--only', help='comma-separated scenario names or categories to run (default: all)')
    parser.add_argument('--model', default='holonomic', choices=('holonomic', 'diff_drive'),
                        help='motion model: holonomic (docs/metrics.md) or differential drive tracking the velocity')
    parser.add_argument('--max-steps', type=int, default=None,
                        help='stop every run after this many steps (cost measurements; metrics then partial)')
    parser.add_argument('--max-agents', type=int, default=None, help='only scenarios with at most this many cubes')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')


def run(args: argparse.Namespace) -> int:

    try:
        make_planner(args.planner)
        scenarios = select(load_scenarios(args.scenarios), args.only, args.max_agents)
    except (ScenarioError, ValueError) as exc:
        print(f'toio-nav bench: {exc}', file=sys.stderr)
        return 2
    if args.max_steps is not None and args.max_steps < 1:
        print('toio-nav bench: --max-steps must be >= 1', file=sys.stderr)
        return 2
    bar = ProgressBar(enabled=not args.no_progress)
    results = []
    for index, scenario in enumerate(scenarios, 1):
        planner = make_planner(args.planner)
        label = f'[{index}/{len(scenarios)}] {scenario.name}'
        try:
            result = run_scenario(scenario, planner, model=args.model, max_steps=args.max_steps,
                                  progress=lambda k, total: bar.show(label, k, total))
        except (ValueError, FloatingPointError) as exc:
            bar.clear()
            print(f'toio-nav bench: {scenario.name}: {exc}', file=sys.stderr)
            return 1
        bar.clear()
        entry = dict(result.metrics, category=scenario.category, planner=result.planner, model=result.model,
                     seed=result.seed, steps=int(result.trajectory.shape[0] - 1))
        results.append(entry)
        print(summary_line(entry), flush=True)
    report = {'planner': args.planner, 'model': args.model, 'scenarios_file': str(args.scenarios),
              'max_steps': args.max_steps, 'machine': machine(), 'scenarios': results,
              'aggregate': aggregate(results)}
    if args.out is not None:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1) + '\n', encoding='utf-8')
        except OSError as exc:
            print(f'toio-nav bench: cannot write {args.out}: {exc.strerror or exc}', file=sys.stderr)
            return 1
    return 0


def select(scenarios: list, only: str | None, max_agents: int | None = None, option: str = '--only') -> list:
    """Scenarios whose name or category is in the comma-separated ``only`` (all if None) and, unless
    ``max_agents`` is None, with at most that many cubes. ValueError (naming ``option``, the command's name for
    ``only``) for an unknown name, a ``max_agents`` below 1 or nothing left to run."""
    if max_agents is not None and max_agents < 1:
        raise ValueError(f'--max-agents must be >= 1, got {max_agents}')
    chosen = scenarios
    if only:
        wanted = [w.strip() for w in only.split(',') if w.strip()]
        chosen = [s for s in scenarios if s.name in wanted or s.category in wanted]
        known = {s.name for s in scenarios} | {s.category for s in scenarios}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise ValueError(f'{option}: no scenario or category named {", ".join(unknown)}')
    if max_agents is not None:
        chosen = [s for s in chosen if s.n_agents <= max_agents]
    if not chosen:              # (also an ``only`` of nothing but commas)
        raise ValueError(f'no scenario left to run (check {option} and --max-agents)')
    return chosen


def aggregate(results: list[dict]) -> dict:
    """Per category and overall: success rate, total collisions, median min clearance, median makespan."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r['category'], []).append(r)
    if results:
        groups['all'] = list(results)
    return {name: {
        'runs': len(rs),
        'success_rate': sum(bool(r['success']) for r in rs) / len(rs),
        'success_collision_free_rate': sum(bool(r['success_collision_free']) for r in rs) / len(rs),
        'collisions': int(sum(r['collisions'] for r in rs)),
        'obstacle_collisions': int(sum(r['obstacle_collisions'] for r in rs)),
        'median_min_clearance': _median([r['min_clearance'] for r in rs]),
        'median_makespan': _median([r['makespan'] for r in rs]),
    } for name, rs in groups.items()}


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def summary_line(r: dict) -> str:
    def num(v, fmt):
        return 'n/a' if v is None else format(v, fmt)
    return (f"{r['name']:<28} success={'yes' if r['success'] else 'no ':<3} collisions={r['collisions']:<4d} "
            f"obstacle_collisions={r['obstacle_collisions']:<3d} min_clearance={num(r['min_clearance'], '.2f'):>7} "
            f"makespan={num(r['makespan'], '.2f'):>6} path_ratio={num(r['path_length_ratio_mean'], '.3f'):>5} "
            f"us/agent-step={num(r['us_per_agent_step'], '.1f')}")


def machine() -> dict:
    cpu = platform.processor() or ''
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return {'cpu': cpu, 'python': platform.python_version(), 'numpy': np.__version__}


def _planner_names() -> list[str]:
    return sorted(PLANNERS)


class ProgressBar:
    """One self-overwriting line on stderr, redrawn at most every 0.1 s."""

    def __init__(self, enabled: bool = True, width: int = 30, stream=None) -> None:
        self.enabled = enabled
        self.width = width
        self.stream = stream if stream is not None else sys.stderr
        self._last = 0.0
        self._drawn = False

    def show(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        fraction = 0.0 if total <= 0 else min(1.0, done / total)
        filled = int(math.floor(fraction * self.width))
        self.stream.write(f'\r{label} |{"#" * filled}{"-" * (self.width - filled)}| step {done}/{total}\033[K')
        self.stream.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            self.stream.write('\r\033[K')
            self.stream.flush()
            self._drawn = False
