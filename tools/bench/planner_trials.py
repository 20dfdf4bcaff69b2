"""The closed-loop trials of tools/bench/planner_table.py: running them (or taking saved records), and the
document's sections about them (the planners side by side, the compute charged, the unseen families).

Saved records come in two ways: ``--trial-reuse FILE`` (a ``--trial-out`` file) gives the trials of the planners
not run this time; ``--trial-records FILE,...`` (``toio-nav trial --out`` files) gives any run it holds, found by
planner, profile, scenario, seed and compute mode, so that the acceptance runs made with ``toio-nav trial`` are
the document's runs and need not be made twice.
"""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from toio_navigator.bench.trial.cli import run_one as trial_one
from toio_navigator.bench.trial.profiles import get_profile
from toio_navigator.planners import BEST_PLANNER, COORDINATED

ROOT = Path(__file__).resolve().parents[2]
#: the planners the navigator node is run with: the reference, the best local planner (on ideal discs and on the
#: differential drive) and the coordinating planner
TRIAL_PLANNERS = ('hlavoid', BEST_PLANNER, 'orca_kr_diff', COORDINATED)


def saved_records(files: str | None) -> dict[tuple, dict]:
    """(planner, profile, scenario, seed, compute) -> the record, from comma-separated ``toio-nav trial --out``
    files (SystemExit naming a file that is not one)."""
    out = {}
    for name in [f for f in (files or '').split(',') if f]:
        try:
            records = json.loads(Path(name).read_text(encoding='utf-8'))['results']
            out.update(((r['planner'], r['profile'], r['name'], r['seed'], r.get('compute')), r) for r in records)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f'planner_table: --trial-records {name}: not a toio-nav trial --out file ({exc})') from exc
    return out


def _trial_job(job) -> dict:
    scenario, planner, profile, seed, compute, memory_gb = job
    profile = get_profile(profile)
    record = trial_one((scenario, seed, planner, profile, {}, compute, memory_gb))[0]
    return record


def run_trials(scenarios, args, bar, planners=None, profiles=None, seeds=None, tag='trials'
               ) -> dict[tuple[str, str], list[dict]]:
    """(planner, profile) -> trial records, every small enough scenario and seed: those in ``args.saved``
    (--trial-records) taken from there, the others run."""
    planners = planners or [p.strip() for p in args.trial_planners.split(',') if p.strip()]
    profiles = profiles or [p.strip() for p in args.trial_profiles.split(',') if p.strip()]
    small = [s for s in scenarios if s.n_agents <= args.trial_max_agents]
    jobs = [(s, planner, profile, seed, args.trial_compute, args.trial_memory_limit) for planner in planners
            for profile in profiles for s in small for seed in range(seeds or args.trial_seeds)]
    saved = getattr(args, 'saved', {})
    key = lambda job: (job[1], job[2], job[0].name, job[3], job[4])  # noqa: E731
    todo = [job for job in jobs if key(job) not in saved]
    done = dict(zip(map(key, todo), _run(todo, args.jobs, bar, tag)))
    out: dict[tuple[str, str], list[dict]] = {}
    for job in jobs:
        out.setdefault((job[1], job[2]), []).append(saved.get(key(job)) or done[key(job)])
    args.taken = getattr(args, 'taken', 0) + len(jobs) - len(todo)
    return out


def _run(jobs, workers: int, bar, tag: str) -> list[dict]:
    records = []
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        for index, (job, record) in enumerate(zip(jobs, pool.map(_trial_job, jobs)), 1):
            bar.show(f'[{tag}] {job[1]} {job[2]} {job[0].name} seed {job[3]}', index, len(jobs))
            records.append(record)
    bar.clear()
    return records


def git_commit() -> str | None:
    """The checkout's commit, with "+changes" when its files differ from it (None outside git)."""
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ('+changes' if dirty else '')


def reuse_trials(path: Path, trials: dict, scenarios, args) -> str:
    """Add to ``trials`` the saved records of every planner this run did not try, for the same profiles,
    scenarios and seeds (SystemExit naming what is missing); which planners came from which commit."""
    try:
        saved = json.loads(path.read_text(encoding='utf-8'))
        records = saved['results']
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f'planner_table: --trial-reuse {path}: not a --trial-out file ({exc})') from exc
    ran = {planner for planner, _ in trials}
    profiles = [p.strip() for p in args.trial_profiles.split(',') if p.strip()]
    wanted = {(s.name, seed) for s in scenarios if s.n_agents <= args.trial_max_agents
              for seed in range(args.trial_seeds)}
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        if r['planner'] not in ran and r['profile'] in profiles and (r['name'], r['seed']) in wanted:
            groups.setdefault((r['planner'], r['profile']), []).append(r)
    reused = sorted({planner for planner, _ in groups})
    order = {s.name: i for i, s in enumerate(scenarios)}
    for planner in reused:
        for profile in profiles:
            rows = groups.get((planner, profile), [])
            have = {(r['name'], r['seed']) for r in rows}
            if have != wanted:
                raise SystemExit(f'planner_table: --trial-reuse {path}: {planner} under {profile} lacks '
                                 f'{len(wanted - have)} of the {len(wanted)} runs this table needs')
            trials[(planner, profile)] = sorted(rows, key=lambda r: (order[r['name']], r['seed']))
    args.trial_planners = ','.join(sorted(ran | set(reused),
                                          key=lambda p: TRIAL_PLANNERS.index(p) if p in TRIAL_PLANNERS else 99))
    return f'{", ".join(reused)} from {path.name} (commit {saved.get("commit") or "unknown"})' if reused else ''


def cell(value, fmt):
    return '–' if value is None else format(value, fmt)


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _tally(rows) -> str:
    return f"{sum(bool(r['success_collision_free']) for r in rows)}/{len(rows)}"


def _contacts(rows) -> int:
    return int(sum(r['collisions'] + r['obstacle_collisions'] for r in rows))


def comparison_section(results, diff_rows, trials, args) -> list[str]:
    """The planners the navigator runs with, side by side: ideal discs and closed-loop trials, and the
    coordinated planner's makespan against orca_kr's where orca_kr succeeds."""
    profiles = [p.strip() for p in args.trial_profiles.split(',') if p.strip()]
    planners = [p.strip() for p in args.trial_planners.split(',') if p.strip()]
    small = lambda rows: [r for r in rows if r['n_agents'] <= args.trial_max_agents and not r['capped']]  # noqa
    names = [r['name'] for r in small(next(iter(results.values()), []))]
    head = '| planner | ideal discs: successes | contacts | median makespan s |' + ''.join(
        f' `{p}` trials: successes | contacts | median makespan s |' for p in profiles)
    lines = [f'## `{COORDINATED}` beside the reference and the best local planners', '',
             f'The {len(names)} scenarios with at most {args.trial_max_agents} cubes: collision-free successes / runs, '
             'contact events (cube and obstacle) summed over the runs, median makespan of the runs where every cube '
             f'arrived. Trials: {args.trial_seeds} seeds per scenario. `orca_kr_diff` is tuned for the '
             'differential drive, so its ideal-disc columns are from that model.', '',
             head, '|---' * (1 + 3 * (1 + len(profiles))) + '|']
    for planner in planners:
        bench = small(diff_rows.get(planner, []) if planner == 'orca_kr_diff' else results.get(planner, []))
        cells = [f'`{planner}`', _tally(bench), str(_contacts(bench)),
                 cell(_median([r['makespan'] for r in bench]), '.2f')]
        for profile in profiles:
            rows = trials.get((planner, profile), [])
            cells += [_tally(rows), str(_contacts(rows)), cell(_median([r['makespan'] for r in rows]), '.2f')]
        lines.append('| ' + ' | '.join(cells) + ' |')
    lines.append('')
    ours, base = results.get(COORDINATED, []), results.get(BEST_PLANNER, [])
    if ours and base:
        lines += [f'### Makespan of `{COORDINATED}` against `{BEST_PLANNER}` where `{BEST_PLANNER}` succeeds', '',
                  'Ideal discs, and the median over the trial seeds where both succeed (`ble` profile).', '',
                  '| scenario | ideal: coordinated s | orca_kr s | ratio | ble: coordinated s | orca_kr s | ratio |',
                  '|---|---:|---:|---:|---:|---:|---:|']
        ble_ours = trials.get((COORDINATED, 'ble'), [])
        ble_base = trials.get((BEST_PLANNER, 'ble'), [])
        for a, b in zip(small(ours), small(base)):
            both = [(x['makespan'], y['makespan']) for x in ble_ours for y in ble_base
                    if x['name'] == y['name'] == a['name'] and x['seed'] == y['seed']
                    and x['success_collision_free'] and y['success_collision_free']]
            t_ours, t_base = _median([x for x, _ in both]), _median([y for _, y in both])
            if not (b['success_collision_free'] or both):
                continue
            ratio = a['makespan'] / b['makespan'] if b['success_collision_free'] and a['makespan'] else None
            t_ratio = t_ours / t_base if both else None
            lines.append(f"| {a['name']} | {cell(a['makespan'], '.2f')} | "
                         f"{cell(b['makespan'] if b['success_collision_free'] else None, '.2f')} | "
                         f"{cell(ratio, '.2f')} | {cell(t_ours, '.2f')} | {cell(t_base, '.2f')} | "
                         f"{cell(t_ratio, '.2f')} |")
        lines.append('')
    per = {p: trials.get((COORDINATED, p), []) for p in profiles}
    if any(per.values()):
        lines += [f'### `{COORDINATED}` in the trials, per scenario', '',
                  '| scenario | N |' + ''.join(f' `{p}` successes | contacts | median makespan s |'
                                             for p in profiles),
                  '|---|---:' + '|---:' * 3 * len(profiles) + '|']
        for name in names:
            cells = []
            n_agents = None
            for p in profiles:
                rows = [r for r in per[p] if r['name'] == name]
                n_agents = rows[0]['n_agents'] if rows else n_agents
                cells += [_tally(rows), str(_contacts(rows)), cell(_median([r['makespan'] for r in rows]), '.2f')]
            lines.append(f'| {name} | {n_agents} | ' + ' | '.join(cells) + ' |')
        lines.append('')
    return lines


def compute_section(trials, args) -> list[str]:
    """What the navigator's compute costs in the trials: first motion and compute per run, per planner."""
    lines = ['### Compute charged in the trials', '',
             f'Compute charged as `{args.trial_compute}` (docs/trial.md): the median over the runs of the time from '
             'the goals to the first motor write that drives a wheel, the median and the largest navigator compute '
             'of a run (ticks and plans), and the longest single tick.', '',
             '| planner | profile | first motion s (median) | compute s (median) | compute s (max) | '
             'longest tick s |', '|---|---|---:|---:|---:|---:|']
    for (planner, profile), rows in trials.items():
        compute = [r['compute_s'] for r in rows if r.get('compute_s') is not None]
        longest = [r['navigator']['longest_tick_s'] for r in rows if 'navigator' in r]
        lines.append(f"| `{planner}` | `{profile}` | {cell(_median([r.get('first_motion_s') for r in rows]), '.2f')} | "
                     f"{cell(_median(compute), '.2f')} | {cell(max(compute, default=None), '.2f')} | "
                     f"{cell(max(longest, default=None), '.2f')} |")
    return lines + ['']


def unseen_section(unseen, args) -> list[str]:
    """The unseen families (never tuned on), per family, and every failed run."""
    lines = ['## Unseen scenario families', '',
             f'`{args.unseen.name}` (generated from a fixed seed by tools/bench/unseen_scenarios.py, committed '
             'before any tuning; docs/trial.md): `ble` trials, '
             f'{args.unseen_seeds} seeds per scenario, compute charged as `{args.trial_compute}`. Collision-free '
             'successes / runs, contact events, median makespan and first motion.', '']
    for (planner, _profile), rows in unseen.items():
        lines += [f'### `{planner}`: {_tally(rows)} runs, {_contacts(rows)} contacts', '',
                  '| family | scenarios | N | successes | contacts | median makespan s | median first motion s |',
                  '|---|---:|---|---:|---:|---:|---:|']
        for family in dict.fromkeys(r['category'] for r in rows):
            mine = [r for r in rows if r['category'] == family]
            sizes = sorted({r['n_agents'] for r in mine})
            lines.append(f"| {family} | {len({r['name'] for r in mine})} | {', '.join(map(str, sizes))} | "
                         f"{_tally(mine)} | {_contacts(mine)} | {cell(_median([r['makespan'] for r in mine]), '.2f')}"
                         f" | {cell(_median([r.get('first_motion_s') for r in mine]), '.2f')} |")
        failed = [r for r in rows if not r['success_collision_free']]
        if failed:
            lines += ['', 'Failed runs:', '']
            lines += [f"* {r['name']} seed {r['seed']}: {r['failure']}" for r in failed]
        lines.append('')
    return lines
