#!/usr/bin/env python3
"""How much faster than real time `toio-nav trial` runs: simulated seconds per wall and per CPU second.

For each cube count, one circle swap of the packaged scenarios runs through the whole trial (the navigator's
controller and planner, the driver and radio model, the virtual cubes' firmware and physics) under a timing
profile. In the same run, as the baseline, the bare World (the same cubes, mat and physics step, new random wheel
commands every 50 ms, no firmware, link or navigator) steps through the same simulated time. Printed per cube
count: both speed factors (best of --repeat, wall and CPU), the trial's cost relative to the bare physics, and
the share of the trial spent in the navigator's own ticks. CPU time is the fair number on a shared machine.

    python tools/bench/trial_speed.py                       # 8 and 64 cubes, hlavoid, ble
    python tools/bench/trial_speed.py --planner orca_kr --profile loaded --cubes 8
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.bench.cli import DEFAULT_SCENARIOS  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.bench.trial.profiles import PROFILES  # noqa: E402
from toio_navigator.bench.trial.runner import PHYSICS_DT, place, run_trial  # noqa: E402
from toio_navigator.sim.world import World, WorldParams  # noqa: E402

TARGETS = {8: 20.0}            # required simulated seconds per wall second (issue 13)
COMMAND_PERIOD_S = 0.05


def bare_world(scenario, seconds: float, seed: int) -> tuple[float, float]:
    """(wall, CPU) speed factors of the World alone over ``seconds`` of the scenario's cubes."""
    placement = place(scenario)
    starts = scenario.starts + placement.offset
    world = World(np.column_stack([starts, np.zeros(len(starts))]), mat=placement.mat,
                  params=WorldParams(dt=PHYSICS_DT), seed=seed)
    rng = np.random.default_rng(seed)
    wall, cpu = time.perf_counter(), time.process_time()
    while world.time < seconds - 1e-9:
        for i in range(world.n):
            world.set_wheels(i, int(rng.integers(-60, 61)), int(rng.integers(-60, 61)), 0.15)
        world.step(COMMAND_PERIOD_S)
    return world.time / (time.perf_counter() - wall), world.time / max(time.process_time() - cpu, 1e-9)


def trial(scenario, planner: str, profile, seed: int) -> tuple[float, float, float, float]:
    """(wall factor, CPU factor, simulated seconds, navigator share of the wall time) of one trial run."""
    cpu = time.process_time()
    result = run_trial(scenario, planner, profile, seed)
    cpu = time.process_time() - cpu
    sim = result.simulated_s
    return sim / result.wall_s, sim / max(cpu, 1e-9), sim, float(np.sum(result.step_ms)) / 1e3 / result.wall_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--cubes', type=int, nargs='+', default=[8, 64],
                        help='cube counts, each a circle_swap_N of the packaged scenarios (default 8 64)')
    parser.add_argument('--planner', default='hlavoid')
    parser.add_argument('--profile', default='ble', choices=sorted(PROFILES))
    parser.add_argument('--repeat', type=int, default=2, help='runs per measurement; the best counts (default 2)')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    scenarios = {s.name: s for s in load_scenarios(DEFAULT_SCENARIOS)}
    missing = [n for n in args.cubes if f'circle_swap_{n}' not in scenarios]
    if missing or args.repeat < 1:
        print(f'trial_speed: no circle_swap scenario for {missing} cubes (or --repeat < 1)', file=sys.stderr)
        return 2
    failed = False
    print(f'{"cubes":>5} {"sim s":>6} {"trial wall":>10} {"trial cpu":>9} {"world wall":>10} {"world cpu":>9} '
          f'{"trial/world (cpu)":>17} {"navigator":>9}  target (trial, wall)')
    for n in args.cubes:
        scenario = scenarios[f'circle_swap_{n}']
        runs = [trial(scenario, args.planner, PROFILES[args.profile], args.seed) for _ in range(args.repeat)]
        wall, cpu = max(r[0] for r in runs), max(r[1] for r in runs)
        sim, share = runs[0][2], float(np.mean([r[3] for r in runs]))
        base = [bare_world(scenario, sim, args.seed) for _ in range(args.repeat)]
        base_wall, base_cpu = max(b[0] for b in base), max(b[1] for b in base)
        target = TARGETS.get(n)
        verdict = '' if target is None else f'{target:>4.0f}x {"ok" if wall >= target else "MISSED"}'
        failed |= target is not None and wall < target
        print(f'{n:>5} {sim:>6.1f} {wall:>9.1f}x {cpu:>8.1f}x {base_wall:>9.1f}x {base_cpu:>8.1f}x '
              f'{cpu / base_cpu:>17.3f} {share:>8.0%}  {verdict}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
