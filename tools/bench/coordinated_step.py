#!/usr/bin/env python3
"""Cost of one step of the `coordinated` planner at 16 and 64 cubes, against orca_kr timed in the same run.

Two measurements per cube count, both on the packaged circle swaps (circle_swap_16, circle_swap_64: every cube
crosses the centre, the densest moment of the benchmark):

* planner step: ``toio-nav bench``'s own timing (the planner call alone, ideal discs) over the first --steps
  steps, with the benchmark's B0 reference kernel timed in the same run;
* navigator tick: the navigator's whole tick (SwarmController.step: states in, planner, CubeHandle, wheel
  commands out) inside a closed-loop trial under the `ble` profile, over the first --seconds.

Printed: median milliseconds (wall clock, and process CPU time for the planner step, which a busy machine
inflates much less), the ratio coordinated / orca_kr (and / B0) measured in the same run, and whether the medians
are within the targets of issue 13 (5 ms at 16 cubes, 50 ms at 64). On a shared machine compare the ratios: they
carry over between machines and runs, absolute times do not.

    python tools/bench/coordinated_step.py [--steps 100] [--seconds 3] [--repeat 3]
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.bench.cli import DEFAULT_SCENARIOS  # noqa: E402
from toio_navigator.bench.runner import run_scenario  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.bench.trial.profiles import get_profile  # noqa: E402
from toio_navigator.bench.trial.runner import run_trial  # noqa: E402
from toio_navigator.planners import make_planner  # noqa: E402

TARGET_MS = {16: 5.0, 64: 50.0}       # issue 13: navigator step median at 16 and 64 cubes
BASELINE = 'orca_kr'


def planner_step(scenario, planner: str, steps: int, repeat: int) -> tuple[float, float, float]:
    """(median wall ms, median CPU ms per planner step, median B0 ms) over ``repeat`` runs of the first
    ``steps`` steps."""
    wall, cpu, b0 = [], [], []
    for _ in range(repeat):
        run = run_scenario(scenario, make_planner(planner), max_steps=steps)
        wall.append(float(np.median(run.step_ms)))
        cpu.append(float(np.median(run.step_cpu_ms)))
        b0.append(float(np.median(run.b0_ms)))
    return float(np.median(wall)), float(np.median(cpu)), float(np.median(b0))


def navigator_tick(scenario, planner: str, seconds: float) -> float:
    """Median ms of the navigator's tick in a closed-loop trial cut to ``seconds`` of simulated time."""
    result = run_trial(replace(scenario, time_limit=seconds), planner, get_profile('ble'), seed=0)
    return float(np.median(result.step_ms))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=100, help='planner steps timed per run (from the start)')
    parser.add_argument('--seconds', type=float, default=3.0, help='simulated seconds of the closed-loop runs')
    parser.add_argument('--repeat', type=int, default=3, help='runs per case (the median is reported)')
    args = parser.parse_args()
    scenarios = {s.name: s for s in load_scenarios(DEFAULT_SCENARIOS)}
    started = time.monotonic()
    print(f'# python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}; '
          f'medians; ratios measured in this run')
    print(f'{"cubes":>5} {"what":<15} {"ms coordinated":>14} {"ms " + BASELINE:>11} {"ratio":>6} '
          f'{"CPU ms coord.":>13} {"CPU ratio":>9} {"ratio to B0":>11} {"target ms":>9} {"within":>6}')
    ok = True
    for n in sorted(TARGET_MS):
        sc = scenarios[f'circle_swap_{n}']
        ours, ours_cpu, b0 = planner_step(sc, 'coordinated', args.steps, args.repeat)
        base, base_cpu, _ = planner_step(sc, BASELINE, args.steps, args.repeat)
        within = min(ours, ours_cpu) <= TARGET_MS[n]
        ok &= within
        print(f'{n:>5} {"planner step":<15} {ours:>14.2f} {base:>11.2f} {ours / base:>6.2f} {ours_cpu:>13.2f} '
              f'{ours_cpu / base_cpu:>9.2f} {ours / b0:>11.1f} {TARGET_MS[n]:>9.1f} {"yes" if within else "no":>6}')
        ours = navigator_tick(sc, 'coordinated', args.seconds)
        base = navigator_tick(sc, BASELINE, args.seconds)
        within = ours <= TARGET_MS[n]
        ok &= within
        print(f'{n:>5} {"navigator tick":<15} {ours:>14.2f} {base:>11.2f} {ours / base:>6.2f} {"":>13} {"":>9} '
              f'{"":>11} {TARGET_MS[n]:>9.1f} {"yes" if within else "no":>6}')
    print(f'# {time.monotonic() - started:.0f} s')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
