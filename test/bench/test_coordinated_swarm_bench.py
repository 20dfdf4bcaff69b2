"""tools/bench/coordinated_swarm.py, the issue-53 benchmark: per scenario and planner the medians of its runs, the
compute as charged beside the CPU measured, the makespan against orca_kr's over the seeds both solve, and the
targets; a tiny crowd end to end."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / 'tools' / 'bench' / 'coordinated_swarm.py'


@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('coordinated_swarm', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(planner, seed, makespan, first=0.5, charged=2.0, cpu=1.0, peak=300.0):
    return dict(name='crowd_d20_16', n=16, planner=planner, seed=seed, success=makespan is not None,
                makespan=makespan, first_motion_s=first, compute_s=charged, cpu_s=cpu, peak_mb=peak)


def test_the_table_gives_medians_the_ratio_over_seeds_both_solve_and_the_targets(bench):
    rows = [_run('coordinated', 0, 10.0, first=0.2), _run('coordinated', 1, 12.0, first=0.4),
            _run('coordinated', 2, None, first=0.9, peak=1500.0),
            _run('orca_kr', 0, 20.0), _run('orca_kr', 1, None), _run('orca_kr', 2, 30.0)]
    lines = bench.table(rows, ['coordinated', 'orca_kr'], 'modelled').splitlines()
    assert 'compute s (modelled)' in lines[0] and 'CPU s (measured)' in lines[0]
    mine = [cell.strip() for cell in lines[2].split('|')[1:-1]]
    assert mine[:9] == ['crowd_d20_16', '16', 'coordinated', '2/3', '0.40', '2.00', '1.00', '2.00', '1500']
    assert mine[9] == '11.00'                       # the median makespan of the solved runs
    assert mine[10] == '0.50 (1 seeds)'             # only seed 0 is solved by both
    assert 'first motion <= 0.3 s: NO' in mine[11] and 'makespan <= 0.8 x: yes' in mine[11]
    assert 'memory <= 1 GB: NO' in mine[11]
    orca = [cell.strip() for cell in lines[3].split('|')[1:-1]]
    assert orca[2:4] == ['orca_kr', '2/3'] and orca[9] == '25.00' and orca[10] == ''


def test_a_tiny_crowd_runs_both_planners_in_fresh_processes(tmp_path):
    out = tmp_path / 'swarm.json'
    done = subprocess.run([sys.executable, str(TOOL), '--sizes', '4', '--layouts', 'crowd', '--runs', '1', '-j', '2',
                           '--out', str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    assert '| crowd_d20_4 | 4 | coordinated | 1/1 |' in printed and '| crowd_d20_4 | 4 | orca_kr |' in printed
    runs = json.loads(out.read_text())['runs']
    assert [r['planner'] for r in runs] == ['coordinated', 'orca_kr']
    for r in runs:
        assert r['first_motion_s'] > 0.0 and r['compute_s'] > 0.0 and r['cpu_s'] > 0.0
        assert 20.0 < r['peak_mb'] < 1024.0
