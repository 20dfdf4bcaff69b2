"""Arena speed: fastest path on 15x20 (budget 50 ms) and a full simulated exploration without ROS (budget 2 s).

Prints absolute times, their share of the budget, and their ratio to a fixed pure-Python workload timed in the
same run (so numbers from different machines can be compared). Usage:
    python tools/bench/arena_speed.py [--layouts N] [--seed S]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.arena.explorer import ExplorerConfig  # noqa: E402
from toio_navigator.arena.fastest_path import fastest_path  # noqa: E402
from toio_navigator.arena.layout import ArenaLayout, ImageCard, load_layout  # noqa: E402
from toio_navigator.sim.arena_run import run_exploration  # noqa: E402

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'
PATH_BUDGET_S, EXPLORE_BUDGET_S = 0.050, 2.0


def baseline_seconds() -> float:
    """A fixed pure-Python workload (dict + heap-like work similar to the planners)."""
    t = time.perf_counter()
    d = {}
    for i in range(200_000):
        d[(i % 300, i % 4)] = d.get((i % 300, i % 4), 0) + i
    return time.perf_counter() - t


def layouts(n: int, seed: int) -> list[ArenaLayout]:
    out = [load_layout(p) for p in sorted(ARENAS.glob('*.json'))]
    rng = np.random.default_rng(seed)
    while len(out) < n:
        grid = rng.random((20, 15)) < rng.choice([0.03, 0.06, 0.1])
        grid[0:3, 0:3] = False
        grid[17:20, 12:15] = False
        ys, xs = np.nonzero(grid)
        cards = tuple(ImageCard(int(xs[j]), int(ys[j]), int(rng.integers(4)), int(rng.integers(1, 16)))
                      for j in rng.integers(0, max(1, len(xs)), size=min(5, len(xs))))
        out.append(ArenaLayout(obstacles=grid, waypoint=(int(rng.integers(1, 14)), int(rng.integers(1, 19))),
                               images=cards))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--layouts', type=int, default=12)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    base = min(baseline_seconds() for _ in range(3))
    path_times, explore_times = [], []
    for layout in layouts(args.layouts, args.seed):
        t = time.perf_counter()
        fastest_path(layout.obstacles, layout.start, layout.goal, layout.waypoint, 2.0)
        path_times.append(time.perf_counter() - t)
        for image_mode in (False, True):
            t = time.perf_counter()
            run_exploration(layout, ExplorerConfig(image_mode=image_mode))
            explore_times.append(time.perf_counter() - t)
    print(f'baseline workload: {base * 1e3:.1f} ms')
    for name, times, budget in (('fastest path', path_times, PATH_BUDGET_S),
                                ('exploration', explore_times, EXPLORE_BUDGET_S)):
        worst, median = max(times), statistics.median(times)
        print(f'{name:13s}: median {median * 1e3:7.1f} ms, worst {worst * 1e3:7.1f} ms '
              f'({worst / budget:.0%} of the {budget * 1e3:.0f} ms budget, {worst / base:.2f}x baseline) '
              f'over {len(times)} runs')
    return 0


if __name__ == '__main__':
    sys.exit(main())
