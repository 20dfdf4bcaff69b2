#!/usr/bin/env python3
"""Regenerate docs/planners.md and docs/planner_cost.png: every planner x every scenario of scenarios.yaml.

    python tools/bench/planner_table.py                 # the default table (a few minutes on one core)
    python tools/bench/planner_table.py --full-best     # plus the best planner on the whole circle sweep
    python tools/bench/planner_table.py --no-cap        # every run to its end, the big circles too (slow)

Circle swaps with N >= --cap-from agents (default 128: circle_swap_128...1024) stop after --cap-steps (100) steps
by default: they measure cost per agent-step (the cost-versus-N sweep of METRICS.md §7), and the table marks them
"cost only". Everything else runs under the full METRICS.md protocol. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from toio_navigator.bench.cli import DEFAULT_SCENARIOS, ProgressBar, machine  # noqa: E402
from toio_navigator.bench.runner import run_scenario  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.navigation.planners import (  # noqa: E402
    BEST_PLANNER, DIFF_DRIVE_PLANNERS, PLANNERS, make_planner)

DOC = ROOT / 'docs' / 'planners.md'
PLOT = ROOT / 'docs' / 'planner_cost.png'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--scenarios', type=Path, default=DEFAULT_SCENARIOS)
    parser.add_argument('--planners', default=','.join(p for p in PLANNERS if p not in DIFF_DRIVE_PLANNERS),
                        help='comma-separated planner names (holonomic model)')
    parser.add_argument('--diff-drive', default=','.join((BEST_PLANNER,) + DIFF_DRIVE_PLANNERS),
                        help='planners also run on the differential-drive model (empty: none)')
    parser.add_argument('--cap-from', type=int, default=128, help='cap runs with at least this many agents')
    parser.add_argument('--cap-steps', type=int, default=100, help='steps of a capped (cost only) run')
    parser.add_argument('--cap-category', default='circle', help='only scenarios of this category are capped')
    parser.add_argument('--no-cap', action='store_true', help='run every scenario to its end')
    parser.add_argument('--full-best', action='store_true',
                        help=f'also run {BEST_PLANNER} to the end on the capped scenarios (adds ~4 min)')
    parser.add_argument('--doc', type=Path, default=DOC)
    parser.add_argument('--plot', type=Path, default=PLOT)
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios)
    planners, missing = [], {}
    for name in [p.strip() for p in args.planners.split(',') if p.strip()]:
        try:
            make_planner(name)
            planners.append(name)
        except ValueError as exc:
            missing[name] = str(exc)
            print(f'planner_table: skipping {name}: {exc}', file=sys.stderr)
    bar = ProgressBar()
    results: dict[str, list[dict]] = {}
    started = time.monotonic()
    total = len(planners) * len(scenarios)
    for p_index, planner in enumerate(planners):
        rows = results.setdefault(planner, [])
        for s_index, scenario in enumerate(scenarios):
            capped = (not args.no_cap and scenario.n_agents >= args.cap_from
                      and scenario.category == args.cap_category)
            label = f'[{p_index * len(scenarios) + s_index + 1}/{total}] {planner} {scenario.name}'
            run = run_scenario(scenario, make_planner(planner), max_steps=args.cap_steps if capped else None,
                               progress=lambda k, n: bar.show(label, k, n))
            bar.clear()
            rows.append(dict(run.metrics, category=scenario.category, capped=capped, seed=run.seed,
                             steps=int(run.trajectory.shape[0] - 1)))
    diff_rows: dict[str, list[dict]] = {}
    for name in [p.strip() for p in args.diff_drive.split(',') if p.strip()]:
        for scenario in scenarios:
            if scenario.n_agents >= args.cap_from and scenario.category == args.cap_category:
                continue
            label = f'[diff drive] {name} {scenario.name}'
            run = run_scenario(scenario, make_planner(name), model='diff_drive',
                               progress=lambda k, n: bar.show(label, k, n))
            bar.clear()
            diff_rows.setdefault(name, []).append(dict(run.metrics, category=scenario.category, capped=False))
    full_best = []
    if args.full_best and not args.no_cap and BEST_PLANNER in planners:
        for scenario in scenarios:
            if scenario.n_agents >= args.cap_from and scenario.category == args.cap_category:
                label = f'[full] {BEST_PLANNER} {scenario.name}'
                run = run_scenario(scenario, make_planner(BEST_PLANNER), progress=lambda k, n: bar.show(label, k, n))
                bar.clear()
                full_best.append(dict(run.metrics, capped=False))
    elapsed = time.monotonic() - started
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    args.doc.write_text(render(results, missing, args, elapsed, full_best, diff_rows), encoding='utf-8')
    plot_cost(results, args.plot)
    print(f'wrote {args.doc} and {args.plot} in {elapsed / 60:.1f} min', file=sys.stderr)
    return 0


def cell(value, fmt):
    return '–' if value is None else format(value, fmt)


def success_cell(r):
    if r['capped']:
        return 'cost only'
    if r['success_collision_free']:
        return '**yes**'
    return 'yes (contacts)' if r['success'] else f"no ({r['fraction_arrived']:.0%} arrived)"


def render(results, missing, args, elapsed, full_best=(), diff_rows=None) -> str:
    m = machine()
    lines = [
        '# Local planners: results',
        '',
        '<!-- generated by tools/bench/planner_table.py; do not edit by hand -->',
        '',
        'Regenerate with one command (a few minutes on one core):',
        '',
        '    python tools/bench/planner_table.py' + (' --full-best' if full_best else ''),
        '',
        'Every planner runs every scenario of `toio_navigator/data/scenarios.yaml` under the protocol of',
        'shared/benchmarks/METRICS.md: holonomic model, dt = 0.05 s, r = 16.5 u, v_max = 165 u/s, goal tolerance',
        '10 u, a contact is an overlap deeper than 0.5 u. The same numbers come out of',
        '`toio-nav bench --scenarios FILE --planner NAME --out metrics.json` for any scenarios file of that format;',
        '`--model diff_drive` runs the same planners on the cube\'s differential drive instead (each cube tracks the',
        'planner\'s velocity with a simple unicycle heading controller, wheels capped at motor command 115).',
        f'Circle swaps with N >= {args.cap_from} agents stop after {args.cap_steps} steps (marked *cost only*): they',
        'are the cost-versus-N sweep. `--no-cap` runs them to the end.' if not args.no_cap else
        'This table was made with `--no-cap`: every run went to its end.',
        '',
        f'Machine: {m["cpu"]}, Python {m["python"]}, NumPy {m["numpy"]}; the machine was shared, so absolute times',
        'are noisy: compare `cost_ratio_vs_b0` (the METRICS.md §7 B0 kernel timed in the same run).',
        f'Total wall time of this table: {elapsed / 60:.1f} min.',
        '',
    ]
    lines += planners_section()
    if missing:
        lines += ['Planners not available when the table was made: ' +
                  '; '.join(f'`{k}` ({v})' for k, v in missing.items()), '']
    lines += summary_table(results)
    if diff_rows:
        lines += ['### Differential-drive model', '',
                  'The same scenarios with each cube driving its two wheels (`--model diff_drive`): the planner\'s',
                  'velocity is tracked by a unicycle heading controller, so cubes turn before they go and deviate',
                  'from the commanded velocity. `orca_kr_diff` is `orca_kr` with a 3 u radius margin and a 3 u safety',
                  'gap, which absorb that tracking error (the radius inflation of NH-ORCA).', '']
        lines += summary_table(diff_rows)[4:]
    lines += cost_table(results)
    if full_best:
        lines += [f'## `{BEST_PLANNER}` on the whole circle sweep, every run to its end (`--full-best`)', '',
                  '| scenario | N | success | collisions | min clearance | makespan s | path ratio | '
                  'µs per agent-step |', '|---|---:|---|---:|---:|---:|---:|---:|']
        for r in full_best:
            lines.append(f"| {r['name']} | {r['n_agents']} | {success_cell(r)} | {r['collisions']} | "
                         f"{cell(r['min_clearance'], '.2f')} | {cell(r['makespan'], '.2f')} | "
                         f"{cell(r['path_length_ratio_mean'], '.3f')} | {cell(r['us_per_agent_step'], '.1f')} |")
        lines.append('')
    for planner, rows in results.items():
        lines += [f'## `{planner}`{" (best planner)" if planner == BEST_PLANNER else ""}', '',
                  '| scenario | N | success | collisions (agents / obstacles) | min clearance | makespan s | '
                  'path ratio | µs per agent-step |',
                  '|---|---:|---|---:|---:|---:|---:|---:|']
        for r in rows:
            lines.append(
                f"| {r['name']} | {r['n_agents']} | {success_cell(r)} | {r['collisions']} / "
                f"{r['obstacle_collisions']} | {cell(r['min_clearance'], '.2f')} | {cell(r['makespan'], '.2f')} | "
                f"{cell(r['path_length_ratio_mean'], '.3f')} | {cell(r['us_per_agent_step'], '.1f')} |")
        lines.append('')
    return '\n'.join(lines) + '\n'


def planners_section() -> list[str]:
    return [
        '## Planners',
        '',
        '| name | what it is | parameters (toio scale, shared/reference/local_planners.md §4) |',
        '|---|---|---|',
        '| `sfm` | social force model (Helbing et al. 2000), forces per unit mass, semi-implicit Euler | '
        'ξ 0.3 s, A 600 u/s², B 8 u, k 1500 s⁻², κ 4.1, f_max 1000 u/s², d_h 200 u, K 10 |',
        '| `ttc` | time-to-collision forces, contact push for overlapping pairs | '
        'ξ 0.3 s, τ_H 1.5 s, k_τ 200 u/s², ε 0, f_max 1000 u/s² |',
        '| `vo` | sampling velocity obstacles, 200 seeded samples + v_g, v, 0 | α 1, β 1, γ 600 u, ε 0 |',
        '| `orca` | our ORCA (van den Berg et al. 2011): half-planes, incremental 2-D LP, 3-D fallback | '
        'τ 2 s, τ_obst 1 s, neighbour distance 400 u, 10 neighbours, pref. perturbation 0.01 u/s |',
        f'| `{BEST_PLANNER}` | the same ORCA solver with keep-right symmetry breaking, unsticking, stepping aside '
        'and a safety stop | τ 0.5 s, radius margin 1 u; see below |',
        f'| `orca_kr_diff` | `{BEST_PLANNER}` for the differential-drive model (only in that section) | '
        'radius margin 3 u, safety gap 3 u |',
        '| `hlavoid` | the navigator\'s HLAvoid (adapter by the navigator-core work), if present | '
        'SDK defaults |',
        '',
        'Sampling planners are seeded per scenario with CRC-32 of the scenario name (`seed` in the JSON report).',
        '',
        f'### How `{BEST_PLANNER}` breaks symmetry (deterministic)',
        '',
        'Perfectly symmetric swaps freeze plain ORCA (RVO2 too): the antipodal circles and the head-on pair.',
        f'`{BEST_PLANNER}` keeps the ORCA half-planes and linear program and adds, each switchable in `OrcaParams`:',
        '',
        '* **keep right** – for a head-on pair (preferred directions more than 90° apart, relative preferred',
        '  velocity aimed at the other disc) where ORCA would only brake, the half-plane of the velocity-obstacle leg',
        '  on the agent\'s right is used (clockwise on the mat, whose y axis points down); exact ties also go right.',
        '  Both agents keep right, so they pass instead of pushing against each other.',
        '* **unstick** – a cube away from its goal that moves slower than half its preferred speed for longer',
        '  than its delay turns its preferred velocity to the right at 1.5 rad/s, up to 2.6 rad (so it may back',
        '  off). The delay is 0.5 s times 1 + U[0, 1) per cube, drawn from the scenario seed: a jammed ring of',
        '  identical cubes does not start turning all at once, which breaks its rotational symmetry.',
        '* **step aside** – a cube parked on its goal (within 20 u) moves sideways, away from the line of a blocked',
        '  mover heading at it (within 40 u), at half speed; it returns once the mover has passed.',
        '* **safety stop** – a cube whose step would bring it closer than touching (true radii + 0.1 u) to a',
        '  neighbour or a wall, and closer than it is now, stands still for that step: when the linear program is',
        '  infeasible and relaxed, no contact can deepen.',
        '* a 0.5 s horizon (2 s makes dense crowds stall) and a 1 u radius margin.',
        '',
        'Everything is deterministic for a given seed (the seed is the CRC-32 of the scenario name, reported in',
        'the JSON); the RVO2-style 0.01 u/s seeded perturbation of the preferred velocity is kept as in plain ORCA.',
        '',
    ]


def summary_table(results) -> list[str]:
    categories = []
    for rows in results.values():
        for r in rows:
            if not r['capped'] and r['category'] not in categories:
                categories.append(r['category'])
    head = '| planner | ' + ' | '.join(categories) + ' | all | collisions | median min clearance |'
    lines = ['## Summary', '',
             'Collision-free successes / runs per category (capped runs excluded), total agent + obstacle contact '
             'events, median min clearance (u).', '', head, '|---' * (len(categories) + 4) + '|']
    for planner, rows in results.items():
        full = [r for r in rows if not r['capped']]
        cells = []
        for c in categories:
            rs = [r for r in full if r['category'] == c]
            cells.append(f"{sum(r['success_collision_free'] for r in rs)}/{len(rs)}")
        clear = [r['min_clearance'] for r in full if r['min_clearance'] is not None]
        lines.append(f"| `{planner}` | " + ' | '.join(cells) +
                     f" | {sum(r['success_collision_free'] for r in full)}/{len(full)} | "
                     f"{sum(r['collisions'] + r['obstacle_collisions'] for r in full)} | "
                     f"{cell(float(np.median(clear)) if clear else None, '.2f')} |")
    return lines + ['']


def circle_rows(rows):
    return sorted((r for r in rows if r['name'].startswith('circle_swap_')), key=lambda r: r['n_agents'])


def cost_table(results) -> list[str]:
    planners = list(results)
    sizes = sorted({r['n_agents'] for rows in results.values() for r in circle_rows(rows)})
    lines = ['## Cost versus N (circle_swap_N)', '',
             'µs per agent-step (planner wall time per step / N) and, in brackets, the ratio to the B0 reference',
             'kernel of METRICS.md §7 in the same run. The cost per step grows about linearly with N when the',
             'first number stays flat; docs/planner_cost.png plots the same from the median step time, which',
             'shrugs off steps slowed down by other processes on a shared machine.', '',
             '| N | ' + ' | '.join(f'`{p}`' for p in planners) + ' |', '|---:' + '|---:' * len(planners) + '|']
    for n in sizes:
        cells = []
        for p in planners:
            r = next((r for r in results[p] if r['name'].startswith('circle_swap_') and r['n_agents'] == n), None)
            cells.append('–' if r is None else
                         f"{cell(r['us_per_agent_step'], '.1f')} ({cell(r['cost_ratio_vs_b0'], '.2f')})")
        lines.append(f'| {n} | ' + ' | '.join(cells) + ' |')
    return lines + ['']


def plot_cost(results, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax_step, ax_agent) = plt.subplots(1, 2, figsize=(11, 4.2))
    for planner, rows in results.items():
        circ = circle_rows(rows)
        n = np.array([r['n_agents'] for r in circ])
        # medians: the machine is shared, and a few steps slowed down by other processes move the mean
        ms = np.array([r['ms_per_step_median'] for r in circ])
        us = 1000.0 * ms / n
        ax_step.loglog(n, ms, 'o-', label=planner)
        ax_agent.semilogx(n, us, 'o-', label=planner)
    any_rows = next(iter(results.values()), [])
    circ = circle_rows(any_rows)
    if circ:
        n = np.array([r['n_agents'] for r in circ], float)
        b0 = np.array([r['b0_ms_per_step'] for r in circ])
        ax_step.loglog(n, b0, 'k:', label='B0 kernel (N², for scale)')
        ref = n / n[0] * min(r['ms_per_step_median'] for rows in results.values() for r in circle_rows(rows)[:1])
        ax_step.loglog(n, ref, 'k--', lw=0.8, label='∝ N')
    ax_step.set_xlabel('agents N')
    ax_step.set_ylabel('planner ms per step (median)')
    ax_step.set_title('cost per step (circle_swap_N)')
    ax_agent.set_xlabel('agents N')
    ax_agent.set_ylabel('µs per agent-step (median step / N)')
    ax_agent.set_yscale('log')
    ax_agent.set_title('cost per agent-step')
    for ax in (ax_step, ax_agent):
        ax.grid(True, which='both', alpha=0.3)
    ax_step.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == '__main__':
    sys.exit(main())
