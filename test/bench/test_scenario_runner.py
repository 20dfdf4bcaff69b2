"""Scenarios reader, the benchmark runner (holonomic and differential-drive models) and `toio-nav bench`."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from toio_navigator.bench import cli
from toio_navigator.bench.runner import run_scenario
from toio_navigator.bench.scenarios import Scenario, ScenarioError, load_scenarios, parse_scenarios
from toio_navigator.planners import make_planner
from toio_navigator.planners.interface import PlannerOutput

PACKAGED = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'scenarios.yaml'


def doc(*scenarios, **defaults):
    return {'version': 1, 'defaults': defaults, 'scenarios': list(scenarios)}


PAIR = {'name': 'pair', 'category': 'head_on', 'generator': 'explicit', 'n_agents': 2, 'time_limit': 10,
        'starts': [[0, 0], [200, 0]], 'goals': [[200, 0], [0, 0]]}


def test_packaged_scenarios_load_with_their_defaults():
    scenarios = load_scenarios(PACKAGED)
    names = [s.name for s in scenarios]
    assert len(names) == len(set(names)) >= 28
    by_name = {s.name: s for s in scenarios}
    circle = by_name['circle_swap_4']
    assert (circle.agent_radius, circle.max_speed, circle.dt, circle.goal_tolerance,
            circle.contact_tolerance) == (16.5, 165.0, 0.05, 10.0, 0.5)
    # agent i starts at center + radius (cos a_i, sin a_i) and goes to the antipode
    assert np.allclose(circle.starts, [[400, 250], [250, 400], [100, 250], [250, 100]])
    assert np.allclose(circle.goals, [[100, 250], [250, 100], [400, 250], [250, 400]])
    assert by_name['circle_swap_1024'].n_agents == 1024
    assert by_name['circle_swap_4'].n_steps == 320                  # t_k <= 16 s at 0.05 s
    doorway = by_name['obst_doorway_4v4']
    assert doorway.segments.shape == (2, 4) and doorway.discs.shape == (0, 3)
    pillars = by_name['obst_pillars_crossing'].walls()
    assert pillars.shape == (9, 5) and np.allclose(pillars[0], [140, 140, 140, 140, 20])


def test_per_scenario_constants_override_the_defaults():
    s, = parse_scenarios(doc(dict(PAIR, agent_radius=10.0), dt=0.1))
    assert s.agent_radius == 10.0 and s.dt == 0.1 and s.max_speed == 165.0


@pytest.mark.parametrize('change, message', [
    ({'generator': 'spiral'}, "unknown generator 'spiral'"),
    ({'time_limit': None}, 'time_limit'),
    ({'n_agents': 3}, 'n_agents is 3 but the scenario defines 2'),
    ({'goals': [[0, 0]]}, '2 starts but 1 goals'),
    ({'starts': [[0, 0], [1]]}, r'starts\[1\] must be a pair'),
    ({'obstacles': [{'type': 'wall'}]}, "unknown type 'wall'"),
    ({'obstacles': [{'type': 'disc', 'center': [0, 0], 'radius': -1}]}, 'radius must be > 0'),
    ({'agent_radius': 'big'}, 'agent_radius must be a finite number'),
    ({'agent_radius': 0.2}, 'contact_tolerance 0.5 must be smaller than the agent diameter'),
])
def test_bad_scenarios_name_the_scenario_and_the_problem(change, message):
    entry = {k: v for k, v in dict(PAIR, **change).items() if v is not None}
    with pytest.raises(ScenarioError, match=message) as info:
        parse_scenarios(doc(entry))
    assert "'pair'" in str(info.value)


def test_unreadable_files_give_clear_errors(tmp_path):
    with pytest.raises(ScenarioError, match='cannot read'):
        load_scenarios(tmp_path / 'missing.yaml')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('scenarios: [unclosed\n')
    with pytest.raises(ScenarioError, match='invalid YAML'):
        load_scenarios(bad)
    bad.write_text('- just a list\n')
    with pytest.raises(ScenarioError, match='top level'):
        load_scenarios(bad)
    bad.write_bytes(b'\xff\xfe\x00garbage')
    with pytest.raises(ScenarioError):
        load_scenarios(bad)
    with pytest.raises(ScenarioError, match='duplicate scenario names: pair'):
        parse_scenarios(doc(PAIR, PAIR))


class Straight:
    """A planner that drives every cube at ``speed`` straight at its goal (or returns a fixed answer)."""
    name = 'straight'

    def __init__(self, speed=165.0, fixed=None):
        self.speed, self.fixed, self.calls = speed, fixed, 0

    def reset(self, n, seed=0):
        self.seed = seed

    def step(self, state, dt):
        self.calls += 1
        d = state.goal - state.pos
        dist = np.maximum(np.hypot(*d.T), 1e-12)
        v = d / dist[:, None] * np.minimum(self.speed, dist / dt)[:, None]
        if self.fixed is not None:
            v = np.broadcast_to(np.asarray(self.fixed, float), v.shape).copy()
        return PlannerOutput(velocity=v, waypoint=state.goal, speed_limit=np.full(state.n, self.speed),
                             collision=np.zeros(state.n, bool))


def lone(distance=330.0, **kw):
    base = dict(name='lone', category='t', n_agents=1, time_limit=10.0, starts=np.array([[0.0, 0.0]]),
                goals=np.array([[distance, 0.0]]))
    base.update(kw)
    return Scenario(**base)


def test_holonomic_run_stops_at_success_and_measures_the_planner():
    planner = Straight()
    res = run_scenario(lone(), planner)
    # 330 u at 165 u/s and 0.05 s per step: 8.25 u per step, within 10 u of the goal after 39 steps
    assert res.trajectory.shape == (40, 1, 2)
    assert res.metrics['success'] and res.metrics['success_time'] == pytest.approx(1.95)
    assert planner.calls == 39 and len(res.step_ms) == 39
    assert len(res.b0_ms) == 4                                       # after calls 1, 11, 21, 31
    assert planner.seed == lone().seed == res.seed


def test_holonomic_run_caps_speed_and_runs_to_the_time_limit():
    res = run_scenario(lone(time_limit=1.0), Straight(fixed=[1000.0, 0.0]))
    steps = np.diff(res.trajectory[:, 0, 0])
    assert np.allclose(steps, 165.0 * 0.05)                          # capped at max_speed
    assert res.trajectory.shape[0] == 21                             # k = 0..20, t_20 = 1.0 = time limit
    assert not res.metrics['success']


def test_a_planner_returning_nan_is_reported_not_integrated():
    with pytest.raises(ValueError, match="planner 'straight' returned an invalid velocity at step 0"):
        run_scenario(lone(), Straight(fixed=[math.nan, 0.0]))


def test_differential_drive_model_has_to_turn_before_it_follows_a_sideways_command():
    # cubes start facing their goal (+x); the planner asks for pure +y at full speed
    sideways = lone(time_limit=1.0)
    holo = run_scenario(sideways, Straight(fixed=[0.0, 165.0])).trajectory[:, 0]
    diff = run_scenario(sideways, Straight(fixed=[0.0, 165.0]), model='diff_drive').trajectory[:, 0]
    assert np.allclose(np.diff(holo[:, 1]), 165.0 * 0.05)
    assert diff[1, 1] < 0.5 * holo[1, 1]                             # first it mostly turns
    last_step = diff[-1] - diff[-2]
    assert last_step[1] == pytest.approx(165.0 * 0.05, rel=0.05)     # then it drives along +y
    assert abs(last_step[0]) < 0.5
    with pytest.raises(ValueError, match='unknown motion model'):
        run_scenario(lone(), Straight(), model='tank')


def test_differential_drive_best_planner_still_solves_a_head_on_swap():
    res = run_scenario(parse_scenarios(doc(PAIR))[0], make_planner('orca_kr'), model='diff_drive')
    assert res.metrics['success']


def write_scenarios(tmp_path, *entries):
    path = tmp_path / 'scen.yaml'
    path.write_text(yaml.safe_dump(doc(*entries)))
    return path


def bench(tmp_path, capsys, *argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    code = cli.run(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_bench_cli_writes_the_report(tmp_path, capsys):
    scen = write_scenarios(tmp_path, PAIR, dict(PAIR, name='pair2', category='other'))
    out_file = tmp_path / 'out' / 'metrics.json'
    code, out, err = bench(tmp_path, capsys, '--scenarios', str(scen), '--planner', 'orca_kr', '--out',
                           str(out_file))
    assert code == 0
    assert 'pair ' in out and 'success=yes' in out
    assert '|' in err and 'step' in err                              # the progress bar went to stderr
    report = json.loads(out_file.read_text())
    assert report['planner'] == 'orca_kr' and len(report['scenarios']) == 2
    first = report['scenarios'][0]
    assert first['success'] is True and first['seed'] == parse_scenarios(doc(PAIR))[0].seed
    assert set(cli.aggregate([first])) == {'head_on', 'all'}
    assert report['aggregate']['all']['success_rate'] == 1.0
    assert report['machine']['numpy'] == np.__version__


def test_bench_cli_only_filter_and_errors(tmp_path, capsys):
    scen = write_scenarios(tmp_path, PAIR, dict(PAIR, name='pair2', category='other'))
    code, out, _ = bench(tmp_path, capsys, '--scenarios', str(scen), '--planner', 'sfm', '--only', 'other',
                         '--no-progress')
    assert code == 0 and 'pair2' in out and 'pair ' not in out
    code, _, err = bench(tmp_path, capsys, '--scenarios', str(scen), '--planner', 'nope')
    assert code == 2 and "unknown planner 'nope'" in err
    code, _, err = bench(tmp_path, capsys, '--scenarios', str(tmp_path / 'none.yaml'), '--planner', 'sfm')
    assert code == 2 and 'cannot read scenarios file' in err
    code, _, err = bench(tmp_path, capsys, '--scenarios', str(scen), '--planner', 'sfm', '--only', 'zzz')
    assert code == 2 and 'no scenario or category named zzz' in err
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    code, _, err = bench(tmp_path, capsys, '--scenarios', str(scen), '--planner', 'sfm', '--no-progress',
                         '--out', str(blocker / 'metrics.json'))
    assert code == 1 and 'cannot write' in err
