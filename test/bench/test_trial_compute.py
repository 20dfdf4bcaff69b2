"""toio-nav trial charges the navigator's compute to the simulated clock: a tick's commands leave once it is
computed, stamped with its start, and everything else the navigator does waits meanwhile.

Two-cube runs of a few simulated seconds with orca_kr (a planner without plans: every tick costs its tick model).
"""
from __future__ import annotations

import json
import resource

import pytest

from toio_navigator.bench.cli import DEFAULT_SCENARIOS
from toio_navigator.bench.scenarios import Scenario, load_scenarios
from toio_navigator.bench.trial.compute import MODEL, MODES, Compute, CostModel, TickCost
from toio_navigator.bench.trial.profiles import BLE, IDEAL
from toio_navigator.bench.trial.runner import run_trial
from toio_navigator.cli import main


@pytest.fixture(scope='module')
def head_on() -> Scenario:
    return next(s for s in load_scenarios(DEFAULT_SCENARIOS) if s.name == 'head_on_pair')


def charging(seconds_per_tick: float) -> Compute:
    """Every orca_kr tick costs ``seconds_per_tick``."""
    return Compute('modelled', 'orca_kr', CostModel(ticks={'orca_kr': TickCost(seconds_per_tick, 0.0)},
                                                    s_per_work=0.0))


def test_a_tick_that_takes_longer_than_its_commands_never_moves_a_cube(head_on):
    """The driver runs a command until its tick's stamp + 150 ms: a tick computed for 0.3 s sends only
    commands that have run out, so the cubes stand, the run fails, and nothing is recorded as a first motion."""
    record = run_trial(head_on, 'orca_kr', IDEAL, seed=0, compute=charging(0.3)).record
    assert record['first_motion_s'] is None and not record['success']
    assert record['link']['writes'] == 0 and record['link']['writes_expired'] > 0
    assert record['compute_s'] == pytest.approx(0.3 * record['navigator']['ticks'])


def test_charged_ticks_delay_the_first_motion_come_less_often_and_arrive_later(head_on):
    free = run_trial(head_on, 'orca_kr', IDEAL, seed=0, compute='free').record
    late = run_trial(head_on, 'orca_kr', IDEAL, seed=0, compute=charging(0.03)).record
    slow = run_trial(head_on, 'orca_kr', IDEAL, seed=0, compute=charging(0.08)).record
    assert free['compute_s'] == 0.0 and free['first_motion_s'] < 0.06
    assert late['first_motion_s'] == pytest.approx(free['first_motion_s'] + 0.03)
    assert slow['success'] and slow['makespan'] > free['makespan']
    # a tick every 0.08 s at most instead of the 20 Hz timer's 0.05 s; states pile up meanwhile and are dropped
    assert slow['navigator']['ticks'] / slow['simulated_s'] <= 1 / 0.08 + 0.1 < 19.0 <= \
        free['navigator']['ticks'] / free['simulated_s']
    assert slow['navigator']['states_dropped'] > 0 == free['navigator']['states_dropped']


def test_the_modelled_charge_is_the_same_every_time_and_the_measured_one_is_the_cpu_spent(head_on):
    first = run_trial(head_on, 'orca_kr', BLE, seed=1).record
    again = run_trial(head_on, 'orca_kr', BLE, seed=1).record
    assert first['compute'] == MODES[0] == 'modelled'
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    expected = MODEL.tick('orca_kr')(2) * first['navigator']['ticks']
    assert first['compute_s'] == pytest.approx(expected, rel=1e-9) and expected > 0
    measured = run_trial(head_on, 'orca_kr', BLE, seed=1, compute='measured')
    assert measured.record['compute_s'] == pytest.approx(measured.compute_cpu_s) and measured.compute_cpu_s > 0


def test_the_options_choose_the_charge_and_exclude_each_other(head_on, tmp_path, capsys):
    out = tmp_path / 'free.json'
    assert main(['trial', '--planner', 'orca_kr', '--scenario', 'head_on_pair', '--free-compute', '--no-progress',
                 '--out', str(out)]) == 0
    report = json.loads(out.read_text())
    assert report['compute'] == 'free' and report['results'][0]['compute_s'] == 0.0
    assert report['timing'][0]['compute_cpu_s'] > 0
    assert 'first_motion=' in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(['trial', '--planner', 'orca_kr', '--free-compute', '--measured-compute'])
    assert stop.value.code == 2
    assert 'not allowed with' in capsys.readouterr().err


def test_a_planner_without_a_calibrated_cost_is_refused_with_a_way_out():
    with pytest.raises(ValueError, match='no tick cost for planner .*--free-compute'):
        Compute('modelled', 'orca_kr', CostModel(ticks={}, s_per_work=0.0))
    with pytest.raises(ValueError, match="unknown compute mode 'cheap'"):
        Compute('cheap', 'orca_kr')


def test_a_run_beyond_its_memory_limit_is_recorded_as_failed_not_a_crash(tmp_path, capsys):
    """A 1024-cube plan needs more than 0.6 GB at once: the run fails by itself, the others go on."""
    out = tmp_path / 'oom.json'
    assert main(['trial', '--planner', 'coordinated', '--scenario', 'circle_swap_1024,head_on_pair',
                 '--memory-limit', '0.6', '--free-compute', '--no-progress', '--out', str(out)]) == 0
    big, pair = json.loads(out.read_text())['results']
    assert not big['success'] and 'out of memory' in big['failure'] and '0.6 GB' in big['failure']
    assert pair['success']
    assert 'out of memory' in capsys.readouterr().out
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY   # this process's own is given back
