"""tools/bench/planner_table.py --trial-reuse: a change to one planner reruns only its trials and takes the others'
from a saved --trial-out file, which must hold every run the table needs."""
from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest

from toio_navigator.bench.cli import DEFAULT_SCENARIOS
from toio_navigator.bench.scenarios import load_scenarios

TOOL = Path(__file__).resolve().parents[2] / 'tools' / 'bench' / 'planner_table.py'


@pytest.fixture(scope='module')
def table():
    spec = importlib.util.spec_from_file_location('planner_table', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _saved(tmp_path: Path, scenarios, seeds: int) -> Path:
    records = [dict(planner=p, profile='ble', name=s.name, seed=k, success=p == 'coordinated')
               for p in ('hlavoid', 'coordinated') for s in scenarios for k in range(seeds)]
    path = tmp_path / 'trials.json'
    path.write_text(json.dumps({'results': records, 'commit': 'abc1234'}))
    return path


def test_the_planners_not_run_come_from_the_saved_file_and_the_document_says_so(table, tmp_path):
    scenarios = load_scenarios(DEFAULT_SCENARIOS)[:3]
    args = argparse.Namespace(trial_profiles='ble', trial_max_agents=64, trial_seeds=2, trial_planners='hlavoid')
    fresh = [dict(planner='hlavoid', profile='ble', name=s.name, seed=k, success=True) for s in scenarios
             for k in range(2)]
    trials = {('hlavoid', 'ble'): fresh}
    said = table.reuse_trials(_saved(tmp_path, scenarios, 2), trials, scenarios, args)
    assert trials[('hlavoid', 'ble')] is fresh                       # what ran is kept, not the saved copy
    assert [r['success'] for r in trials[('coordinated', 'ble')]] == [True] * 6
    assert args.trial_planners == 'hlavoid,coordinated' and said == 'coordinated from trials.json (commit abc1234)'


def test_a_saved_file_without_every_run_the_table_needs_is_refused(table, tmp_path):
    scenarios = load_scenarios(DEFAULT_SCENARIOS)[:3]
    args = argparse.Namespace(trial_profiles='ble', trial_max_agents=64, trial_seeds=3, trial_planners='hlavoid')
    with pytest.raises(SystemExit, match='coordinated under ble lacks 3 of the 9 runs'):
        table.reuse_trials(_saved(tmp_path, scenarios, 2), {('hlavoid', 'ble'): []}, scenarios, args)
    args.trial_seeds, args.trial_profiles = 2, 'ble,loaded'        # saved under ble only
    with pytest.raises(SystemExit, match='coordinated under loaded lacks 6 of the 6 runs'):
        table.reuse_trials(_saved(tmp_path, scenarios, 2), {('hlavoid', 'ble'): []}, scenarios, args)
    (tmp_path / 'bad.json').write_text('[1, 2]')
    with pytest.raises(SystemExit, match='not a --trial-out file'):
        table.reuse_trials(tmp_path / 'bad.json', {('hlavoid', 'ble'): []}, scenarios, args)


def test_runs_in_toio_nav_trial_files_are_taken_as_they_are_and_only_those_of_the_same_compute(table, tmp_path):
    scenarios = load_scenarios(DEFAULT_SCENARIOS)[:2]
    records = [dict(planner='coordinated', profile='ble', name=s.name, seed=k, compute=compute, success=True,
                    made=compute) for s in scenarios for k in range(2) for compute in ('modelled', 'free')]
    (tmp_path / 'ble.json').write_text(json.dumps({'results': records, 'summary': {}}))
    args = argparse.Namespace(trial_planners='coordinated', trial_profiles='ble', trial_max_agents=64,
                              trial_seeds=2, trial_compute='modelled', trial_memory_limit=4.0, jobs=1)
    args.saved = table.saved_records(str(tmp_path / 'ble.json'))

    class Bar:
        def show(self, *_):
            raise AssertionError('nothing may run: every run is in the file')

        def clear(self):
            pass
    out = table.run_trials(scenarios, args, Bar())
    assert [(r['name'], r['seed'], r['made']) for r in out[('coordinated', 'ble')]] == [
        (s.name, k, 'modelled') for s in scenarios for k in range(2)]
    assert args.taken == 4
    (tmp_path / 'bad.json').write_text('{"results": 3}')
    with pytest.raises(SystemExit, match='not a toio-nav trial --out file'):
        table.saved_records(f"{tmp_path / 'ble.json'},{tmp_path / 'bad.json'}")
