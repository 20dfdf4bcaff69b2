#!/usr/bin/env python3
"""Regenerate docs/planners.md and docs/planner_cost.png: every planner x every scenario of scenarios.yaml, and the
planners the navigator offers (hlavoid, orca_kr, orca_kr_diff, coordinated) in closed-loop trials.

    python tools/bench/planner_table.py -j 2                # the documented table (times: see the document)
    python tools/bench/planner_table.py --max-agents 64 -j 2   # only the scenarios with at most 64 cubes
    python tools/bench/planner_table.py --no-trial          # the ideal-disc benchmark only (a few minutes)
    python tools/bench/planner_table.py --no-cap            # every run to its end, the big circles too (slow)
    python tools/bench/planner_table.py --full-best -j 2 --trial-planners hlavoid --trial-reuse trials.json
                                       # a change to hlavoid only: the other planners' trials from a saved run
    python tools/bench/planner_table.py --trial-planners coordinated --trial-records ble.json,loaded.json,unseen.json
                                       # coordinated's trials from toio-nav trial --out files (run what is missing)

Circle swaps with N >= --cap-from agents (default 128: circle_swap_128...1024) stop after --cap-steps (100) steps
by default: they measure cost per agent-step (the cost-versus-N sweep), and the table marks them "cost only".
Everything else runs to the end. The trials (``toio-nav trial``) run every scenario with at most --trial-max-agents
cubes, --trial-seeds seeds per scenario, under each of --trial-profiles. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from planner_trials import (  # noqa: E402
    TRIAL_PLANNERS,
    cell,
    comparison_section,
    compute_section,
    git_commit,
    reuse_trials,
    run_trials,
    saved_records,
    unseen_section,
)

from toio_navigator.bench.cli import DEFAULT_SCENARIOS, ProgressBar, machine  # noqa: E402
from toio_navigator.bench.runner import run_scenario  # noqa: E402
from toio_navigator.bench.scenarios import load_scenarios  # noqa: E402
from toio_navigator.planners import BEST_PLANNER, COORDINATED, DIFF_DRIVE_PLANNERS, PLANNERS, make_planner  # noqa: E402

DOC = ROOT / 'docs' / 'planners.md'
UNSEEN = ROOT / 'toio_navigator' / 'data' / 'scenarios_unseen.yaml'
PLOT = ROOT / 'docs' / 'planner_cost.png'


def parse(argv: list[str] | None) -> argparse.Namespace:
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
    parser.add_argument('--trial-planners', default=','.join(TRIAL_PLANNERS),
                        help='planners run in closed-loop trials (empty: none)')
    parser.add_argument('--trial-profiles', default='ble,loaded', help='timing profiles of the trials')
    parser.add_argument('--trial-seeds', type=int, default=5, help='trial runs per scenario and profile')
    parser.add_argument('--trial-max-agents', type=int, default=64, help='trials only for scenarios this small')
    parser.add_argument('--no-trial', action='store_true', help='no closed-loop trials')
    parser.add_argument('--trial-compute', default='modelled', choices=('modelled', 'measured', 'free'),
                        help="how the trials charge the navigator's compute (docs/trial.md; default modelled)")
    parser.add_argument('--trial-memory-limit', type=float, default=4.0, metavar='GB',
                        help='address space of each trial run (beyond it the run fails as out of memory)')
    parser.add_argument('--unseen', default=str(UNSEEN),
                        help='the unseen scenario families, reported apart (empty: none)')
    parser.add_argument('--unseen-planners', default=COORDINATED, help='planners run on the unseen families')
    parser.add_argument('--unseen-seeds', type=int, default=3, help='trial seeds per unseen scenario (ble)')
    parser.add_argument('--trial-out', type=Path,
                        help='also write every trial record here ({"results": [...]}, as toio-nav trial --out)')
    parser.add_argument('--trial-reuse', type=Path,
                        help='take the trials of the planners not in --trial-planners from this file (written by '
                             '--trial-out): only for planners whose code has not changed since')
    parser.add_argument('--trial-records',
                        help='comma-separated toio-nav trial --out files: every run they hold (same planner, '
                             'profile, scenario, seed and compute) is taken from there instead of run')
    parser.add_argument('--max-agents', type=int, help='only scenarios with at most this many cubes (all parts)')
    parser.add_argument('--coordinated-max-agents', type=int, default=256,
                        help=f'{COORDINATED} only on scenarios with at most this many cubes (its first step plans '
                             'for every cube, minutes in Python beyond a few hundred)')
    parser.add_argument('-j', '--jobs', type=int, default=1, help='worker processes for the trials')
    parser.add_argument('--doc', type=Path, default=DOC)
    parser.add_argument('--plot', type=Path, default=PLOT)
    args = parser.parse_args(argv)
    args.unseen = Path(args.unseen) if args.unseen else None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    scenarios = load_scenarios(args.scenarios)
    if args.max_agents is not None:
        scenarios = [s for s in scenarios if s.n_agents <= args.max_agents]
    planners, missing = [], {}
    for name in [p.strip() for p in args.planners.split(',') if p.strip()]:
        try:
            make_planner(name)
            planners.append(name)
        except ValueError as exc:
            missing[name] = str(exc)
            print(f'planner_table: skipping {name}: {exc}', file=sys.stderr)
    bar = ProgressBar()
    started = time.monotonic()
    results, diff_rows, full_best = run_bench(scenarios, planners, args, bar)
    bench_s = time.monotonic() - started
    trials = all_trials(scenarios, args, bar)
    elapsed = time.monotonic() - started
    args.parts = dict(bench=bench_s, trials=elapsed - bench_s)
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    args.doc.write_text(render(results, missing, args, elapsed, full_best, diff_rows, trials), encoding='utf-8')
    plot_cost(results, args.plot)
    print(f'wrote {args.doc} and {args.plot} in {elapsed / 60:.1f} min', file=sys.stderr)
    return 0


def run_bench(scenarios, planners, args, bar):
    """The ideal-disc runs: (planner -> rows, differential-drive planner -> rows, the best planner's full runs)."""
    results: dict[str, list[dict]] = {}
    total = len(planners) * len(scenarios)
    for p_index, planner in enumerate(planners):
        rows = results.setdefault(planner, [])
        for s_index, scenario in enumerate(scenarios):
            if planner == COORDINATED and scenario.n_agents > args.coordinated_max_agents:
                continue
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
    return results, diff_rows, full_best


def all_trials(scenarios, args, bar) -> dict:
    """The trials of the packaged scenarios ((planner, profile) -> records), the unseen families' in
    ``args.unseen_rows``; every record also in --trial-out."""
    args.saved = saved_records(args.trial_records)       # read now: the files may be written meanwhile
    trials = {} if args.no_trial else run_trials(scenarios, args, bar)
    args.reused = reuse_trials(args.trial_reuse, trials, scenarios, args) if args.trial_reuse and trials else None
    unseen = {}
    if not args.no_trial and args.unseen is not None:
        unseen = run_trials(load_scenarios(args.unseen), args, bar, planners=args.unseen_planners.split(','),
                            profiles=['ble'], seeds=args.unseen_seeds, tag='unseen')
    args.unseen_rows = unseen
    if args.trial_out is not None:
        records = [record for rows in list(trials.values()) + list(unseen.values()) for record in rows]
        args.trial_out.write_text(json.dumps({'results': records, 'commit': git_commit()}, indent=1) + '\n',
                                  encoding='utf-8')
    return trials


def success_cell(r):
    if r['capped']:
        return 'cost only'
    if r['success_collision_free']:
        return '**yes**'
    return 'yes (contacts)' if r['success'] else f"no ({r['fraction_arrived']:.0%} arrived)"


def header(args, elapsed, full_best, trials) -> list[str]:
    """The document's head: the command that made it, what the runs are, the machine and the wall time."""
    m = machine()
    command = 'python tools/bench/planner_table.py' + (' --full-best' if full_best else '') + \
        (f' --max-agents {args.max_agents}' if args.max_agents is not None else '') + \
        (' --no-trial' if not trials else f' -j {args.jobs}' if args.jobs > 1 else '')
    if trials and args.trial_planners != ','.join(TRIAL_PLANNERS):
        command += f' --trial-planners {args.trial_planners}'
    return [
        '# Planners: results',
        '',
        '<!-- generated by tools/bench/planner_table.py; do not edit by hand -->',
        '',
        'Regenerate with one command:',
        '',
        '    ' + command,
        '',
        'Every planner runs every scenario of `toio_navigator/data/scenarios.yaml` on ideal discs (`toio-nav',
        'bench`, protocol and metrics: docs/metrics.md §1 to §7): all cubes start at rest, each step the planner',
        'sees every position and answers with a velocity',
        'that is applied for the whole step (holonomic model, dt = 0.05 s, r = 16.5 u, v_max = 165 u/s); a cube is',
        'at its goal within 10 u, a run succeeds when all are at once, and a contact is an overlap deeper than',
        '0.5 u (one event per touch). The same numbers come out of',
        '`toio-nav bench --scenarios FILE --planner NAME --out metrics.json` for any scenarios file of that format;',
        '`--model diff_drive` runs the same planners on the cube\'s differential drive instead (each cube tracks the',
        'planner\'s velocity with a simple unicycle heading controller, wheels capped at motor command 115).',
        f'Circle swaps with N >= {args.cap_from} agents stop after {args.cap_steps} steps (marked *cost only*): they',
        'are the cost-versus-N sweep. `--no-cap` runs them to the end.' if not args.no_cap else
        'This table was made with `--no-cap`: every run went to its end.',
        '',
        'Closed-loop trials (`toio-nav trial`, docs/trial.md) run the navigator\'s own controller and planner with',
        'simulated cubes (differential drive, motor lag, the 45 ms write rule) under a timing profile: `ble`',
        '(60-150 ms per write, 3 % of writes lost, position reports every 30 ± 15 ms, 1 % lost, 1 u of noise) and',
        '`loaded` (`ble` on a navigator host that ticks up to three periods late and stalls 300 ms every 2-5 s).',
        '',
        f'Machine: {m["cpu"]}, Python {m["python"]}, NumPy {m["numpy"]}; the machine was shared, so absolute times',
        'are noisy: compare `cost_ratio_vs_b0` (the B0 reference kernel of docs/metrics.md §7, timed in the same',
        'run).',
        f'Wall time of this table: {elapsed / 60:.1f} min ({_parts(args)}).' +
        ('' if args.max_agents is None else f' Only the scenarios with at most {args.max_agents} cubes.') +
        (f' Trials of {args.reused} (`--trial-reuse`: their code had not changed).' if args.reused else ''),
        '',
    ] + trial_note(args, trials)


def trial_note(args, trials) -> list[str]:
    """Which planners' trials are missing, and how many runs came from saved records."""
    out = []
    absent = [p for p in TRIAL_PLANNERS if trials and p not in args.trial_planners.split(',')]
    if absent:
        out.append('Closed-loop trials of ' + ', '.join(f'`{p}`' for p in absent) + ' were not run for this table '
                   '(too long on this machine with the compute charged); their ideal-disc rows are current.')
    if getattr(args, 'taken', 0):
        out.append(f'{args.taken} trial runs were taken from `toio-nav trial --out` files (`--trial-records`: the '
                   'same records, made once).')
    return out + [''] if out else []


def render(results, missing, args, elapsed, full_best=(), diff_rows=None, trials=None) -> str:
    lines = header(args, elapsed, full_best, trials)
    lines += planners_section(args.doc)
    if missing:
        lines += ['Planners not available when the table was made: ' +
                  '; '.join(f'`{k}` ({v})' for k, v in missing.items()), '']
    if trials:
        lines += comparison_section(results, diff_rows or {}, trials, args)
        lines += compute_section(trials, args)
    if getattr(args, 'unseen_rows', None):
        lines += unseen_section(args.unseen_rows, args)
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
        label = ' (best local planner)' if planner == BEST_PLANNER else ''
        note = ([f'Scenarios with more than {args.coordinated_max_agents} cubes are not run: the first step plans '
                 'for every cube, which takes minutes in Python beyond a few hundred.', '']
                if planner == COORDINATED else [])
        lines += [f'## `{planner}`{label}', ''] + note + [
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


def _parts(args) -> str:
    parts = getattr(args, 'parts', {})
    return ', '.join(f'{name} {seconds / 60:.1f} min' for name, seconds in parts.items())



def planners_section(doc: Path = DOC) -> list[str]:
    return [
        '## Planners',
        '',
        '| name | what it is | parameters (toio scale, docs/local_planners.md §4) |',
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
        f'| `{COORDINATED}` | the whole swarm at once: a lattice fitted to the walls, a complete search for every '
        'cube\'s path (LaCAM over PIBT; priority-based search for few cubes), a temporal plan graph whose waits are '
        'checked against measured progress, speeds that stop within what is granted, a safety layer; see below | '
        'pair margin 2 u (real cubes 13 u), wall margin 1 u (7 u) |',
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
    ] + coordinated_section(doc)


COORDINATED_BEGIN = '<!-- coordinated: design (hand-written, issue-53-planner) -->'
COORDINATED_END = '<!-- coordinated: end -->'


def coordinated_section(doc: Path = DOC) -> list[str]:
    """How `coordinated` works: the hand-written block of the existing document, kept as it is (its authors
    edit it there, between COORDINATED_BEGIN and COORDINATED_END)."""
    text = doc.read_text(encoding='utf-8') if doc.is_file() else ''
    if COORDINATED_BEGIN in text and COORDINATED_END in text:
        block = text[text.index(COORDINATED_BEGIN):text.index(COORDINATED_END) + len(COORDINATED_END)]
        return block.splitlines() + ['']
    return [COORDINATED_BEGIN, f'### How `{COORDINATED}` works', '', '(to be written)', '', COORDINATED_END, '']


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
             'kernel (a fixed NumPy computation) in the same run. The cost per step grows about linearly with N when',
             'the first number stays flat; docs/planner_cost.png plots the same from the median step time, which',
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
    fig = Figure(figsize=(11, 4.2))
    ax_step, ax_agent = fig.subplots(1, 2)
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


if __name__ == '__main__':
    sys.exit(main())
