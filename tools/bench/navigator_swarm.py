#!/usr/bin/env python3
"""Benchmark of the Navigator swarm step (issue 3, deliverable 5).

Prints ms per swarm step (all N cubes answered by one ``swarm_step`` call) for N = 10, 100, 1000 and the ratio
to a plain per-cube loop of the same code (one ``navigate`` call per cube with every other cube as its others,
i.e. what N single queries cost), both measured in this run.

Layouts follow the benchmark scenarios (docs/metrics.md §9):
  * circle   — the circle_swap generator, the cost-versus-N sweep (docs/metrics.md §7): N cubes on a circle of radius
               max(150, ceil(N·52.8/(2π))) around (250, 250), heading to the antipode at 100 u/s;
  * random10 — random non-overlapping starts (centres ≥ 2r apart) and random goals in a square of area density
               0.10 (N·π·r²/L², r = 16.5),
               as random_mat_d10 / random_sq1200_d10, random headings and speeds 0..165 u/s;
  * random20 — the same at density 0.20 (random_mat_d20), the densest benchmark layout.
Every layout has the AddBorder walls around its square. Usage: navigator_swarm.py [--repeats K] [--loop-cubes C]
"""
from __future__ import annotations

import argparse
import math
import platform
import time

import numpy as np

from toio_navigator.reference.batch import EgoBatch, PairBatch
from toio_navigator.reference.entities import border_walls, walls_array
from toio_navigator.reference.navigator import navigate
from toio_navigator.reference.params import NavigatorParams
from toio_navigator.reference.swarm import swarm_step

RADIUS = 16.5


def circle_layout(n: int, rng: np.random.Generator):
    r = max(150.0, math.ceil(n * 52.8 / (2 * math.pi)))
    a = 2 * math.pi * np.arange(n) / n
    pos = 250 + r * np.stack([np.cos(a), np.sin(a)], axis=1)
    goals = 250 - r * np.stack([np.cos(a), np.sin(a)], axis=1)
    heading = np.arctan2(goals[:, 1] - pos[:, 1], goals[:, 0] - pos[:, 0])
    spd = np.full(n, 100.0)
    lo, hi = 250 - r - 40, 250 + r + 40
    return pos, goals, heading, spd, (lo, hi)


def separated_points(n: int, side: float, rng: np.random.Generator) -> np.ndarray:
    """n points in [0, side]² with centres at least 2r apart (random sequential addition), like real starts."""
    pts = np.empty((0, 2))
    while pts.shape[0] < n:
        cand = rng.uniform(0, side, (4 * n, 2))
        for p in cand:
            if pts.shape[0] == n:
                break
            if pts.shape[0] == 0 or np.min(np.sum((pts - p) ** 2, axis=1)) >= (2 * RADIUS) ** 2:
                pts = np.vstack([pts, p])
    return pts


def random_layout(n: int, rng: np.random.Generator, density: float = 0.10):
    side = math.sqrt(n * math.pi * RADIUS ** 2 / density)
    pos = separated_points(n, side, rng)
    goals = rng.uniform(0, side, (n, 2))
    heading = rng.uniform(-math.pi, math.pi, n)
    spd = rng.uniform(0, 165, n)
    return pos, goals, heading, spd, (-20.0, side + 20)


def state(layout):
    pos, goals, heading, spd, (lo, hi) = layout
    vel = spd[:, None] * np.stack([np.cos(heading), np.sin(heading)], axis=1)
    walls = walls_array(border_walls(20, lo, hi, lo, hi))
    return pos, heading, spd, vel, np.zeros(len(pos)), goals, walls


def time_swarm(st, prm, repeats: int) -> tuple[float, float]:
    """Median wall-clock and median CPU ms of one swarm step (CPU time is robust to a busy machine)."""
    pos, heading, spd, vel, w, goals, walls = st
    swarm_step(pos, heading, spd, vel, w, goals, prm, walls)      # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        swarm_step(pos, heading, spd, vel, w, goals, prm, walls)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)) * 1000, float(np.median(cpu)) * 1000


def time_loop(st, prm, cubes: int) -> tuple[float, float]:
    """Wall and CPU ms for all N cubes as a loop of single queries (timed on ``cubes`` cubes, scaled to N)."""
    pos, heading, spd, vel, w, goals, walls = st
    n = len(pos)
    m = min(n, cubes)
    one = np.ones(1)
    t, c = time.perf_counter(), time.process_time()
    for i in range(m):
        others = np.array([j for j in range(n) if j != i], dtype=np.intp)
        k = others.shape[0]
        egos = EgoBatch(pos[i:i + 1, 0], pos[i:i + 1, 1], heading[i:i + 1], spd[i:i + 1], w[i:i + 1],
                        one * prm.avoid.margin, one * prm.boids.margin, goals[i:i + 1, 0], goals[i:i + 1, 1],
                        0 * one, 0 * one)
        pairs = PairBatch(np.zeros(k, dtype=np.intp), pos[others, 0], pos[others, 1], vel[others, 0],
                          vel[others, 1], np.full(k, 16.0), np.full(k, prm.avoid.margin),
                          np.full(k, prm.boids.margin), np.ones(k, dtype=bool))
        with np.errstate(all='ignore'):
            navigate(egos, pairs, walls, prm, 'AVOID', 'towards')
    return (time.perf_counter() - t) / m * n * 1000, (time.process_time() - c) / m * n * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--repeats', type=int, default=15, help='swarm steps timed per case (median reported)')
    ap.add_argument('--loop-cubes', type=int, default=100, help='cubes timed in the per-cube loop (scaled to N)')
    args = ap.parse_args()
    prm = NavigatorParams()
    print(f'# numpy {np.__version__}, python {platform.python_version()}, {platform.processor() or platform.machine()}')
    print('# wall = median wall-clock ms per swarm step; cpu = median process CPU ms (robust on a busy machine);')
    print('# loop = the same N queries as a per-cube loop of the same code; speed-up = loop cpu / swarm cpu')
    print(f'{"layout":<9} {"N":>5} {"pairs<=cut":>10} {"wall ms":>8} {"cpu ms":>8} {"loop cpu ms":>12} {"speed-up":>9}')
    layouts = (('circle', circle_layout), ('random10', random_layout),
               ('random20', lambda n, rng: random_layout(n, rng, 0.20)))
    for name, make in layouts:
        for n in (10, 100, 1000):
            rng = np.random.default_rng(n)
            st = state(make(n, rng))
            d = st[0][:, None, :] - st[0][None, :, :]
            near = int(((d ** 2).sum(-1) <= 244.0 ** 2).sum() - n)
            ms, cpu = time_swarm(st, prm, args.repeats)
            _, loop = time_loop(st, prm, args.loop_cubes)
            print(f'{name:<9} {n:>5} {near:>10} {ms:>8.2f} {cpu:>8.2f} {loop:>12.1f} {loop / cpu:>8.1f}x')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
