"""Every file reader and output path gives a clear error naming the file, the field and the rule: the examples
a user found (a layout with "start": 0, JSON numbers too large for a float, deep nesting, a bag whose stored
parameters are a list, render --out naming a directory, bench coordinates of 1e300, a dt that would take years,
YAML reading 1e-2 as a string), and fastest-path costs that no longer overflow."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from toio_navigator import cli
from toio_navigator.arena.layout import LayoutError, parse_layout
from toio_navigator.bench.scenarios import ScenarioError, load_scenarios, parse_scenarios
from toio_navigator.input_files import InputError, load_json, load_yaml

REPO = Path(__file__).resolve().parents[2]
ARENA = REPO / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'
CASE = sorted((REPO / 'test' / 'data' / 'conformance' / 'cases').glob('*.json'))[0]
BAG = REPO / 'test' / 'data' / 'bags' / 'cross2_sqlite3'
PAIR = {'name': 'pair', 'category': 'head_on', 'generator': 'explicit', 'n_agents': 2, 'time_limit': 10,
        'starts': [[0, 0], [200, 0]], 'goals': [[200, 0], [0, 0]]}


def toio_nav(capsys, *args) -> tuple[int, str, str]:
    """`toio-nav ARGS` in this process: (exit code, stdout, stderr); an exception escaping is a test failure."""
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    assert 'Traceback' not in out.err
    return code, out.out, out.err


def layout(**changes) -> dict:
    data = json.loads(ARENA.read_text())
    data.update(changes)
    return data


@pytest.mark.parametrize('changes, words', [
    ({'start': 0}, 'start must be an object'),
    ({'start': {'centre': [1, 1], 'heding': 'N'}}, "unknown key 'heding' (did you mean 'heading'?)"),
    ({'goal': {'center': [13, 18]}}, "unknown key 'center' (did you mean 'centre'?)"),
    ({'waypont': [7, 10]}, "unknown key 'waypont' (did you mean 'waypoint'?)"),
    ({'goal': []}, 'goal must be an object'),
    ({'start': {'centre': [1, 10 ** 400]}}, 'is outside 1..13 x 1..18'),
    ({'name': 5}, 'name must be a string'),
    ({'expected': 'fast'}, 'expected must be an object'),
])
def test_layout_typos_and_wrong_types_are_refused_not_defaulted(changes, words):
    with pytest.raises(LayoutError) as info:
        parse_layout(layout(**changes))
    assert words in str(info.value)


def test_layout_files_name_the_file_for_encoding_nesting_and_size(tmp_path, capsys):
    bad = tmp_path / 'latin1.json'
    bad.write_bytes(json.dumps(layout(name='caf\u00e9'), ensure_ascii=False).encode('latin-1'))
    code, _, err = toio_nav(capsys, 'fastest-path', '--arena', bad, '--out', tmp_path / 'r.json')
    assert code == 2 and f'{bad}' in err and 'not UTF-8' in err
    deep = tmp_path / 'deep.json'
    deep.write_text('[' * 100_000 + ']' * 100_000)
    code, _, err = toio_nav(capsys, 'explore', '--arena', deep, '--out', tmp_path / 'r.json')
    assert code == 2 and 'nested' in err and f'{deep}' in err
    code, _, err = toio_nav(capsys, 'fastest-path', '--arena', tmp_path, '--out', tmp_path / 'r.json')
    assert code == 2 and 'directory' in err


def test_fastest_path_costs_are_exact_for_any_turn_cost(tmp_path, capsys):
    out = tmp_path / 'path.json'
    code, text, _ = toio_nav(capsys, 'fastest-path', '--arena', ARENA, '--turn-cost', '1e308', '--out', out)
    result = json.loads(out.read_text())
    assert code == 0 and result['found'] and 'no path' not in text
    turns = sum(1 for a in result['actions'] if a in 'LR')
    assert turns >= 1 and result['cost'] == turns * int(1e308) + len(result['actions']) - turns
    # the route that turns least (ties: the fewest moves); a huge P never makes the planner give up
    code, _, _ = toio_nav(capsys, 'fastest-path', '--arena', ARENA, '--turn-cost', '1e6', '--out', out)
    assert sum(1 for a in json.loads(out.read_text())['actions'] if a in 'LR') == turns
    code, _, err = toio_nav(capsys, 'fastest-path', '--arena', ARENA, '--turn-cost', 'inf', '--out', out)
    assert code == 2 and 'finite' in err


def _query(capsys, tmp_path, text: str):
    src = tmp_path / 'scenario.json'
    src.write_text(text)
    return toio_nav(capsys, 'query', src, tmp_path / 'result.json')


def test_conformance_numbers_too_large_for_a_float_and_deep_nesting(tmp_path, capsys):
    doc = json.loads(CASE.read_text())
    doc['scenario']['ego']['x'] = 10 ** 400
    code, _, err = _query(capsys, tmp_path, json.dumps(doc))
    assert code == 2 and 'scenario.ego.x' in err and 'too large for a 64-bit float' in err
    doc['scenario']['ego']['x'] = 1.0
    code, _, err = _query(capsys, tmp_path, json.dumps(doc).replace('"x": 1.0', '"x": 1e400', 1))
    assert code == 2 and 'scenario.ego.x is 1e400: too large' in err
    code, _, err = _query(capsys, tmp_path, '{"scenario": ' + '[' * 5000 + ']' * 5000 + '}')
    assert code == 2 and 'nested' in err
    doc = json.loads(CASE.read_text())
    doc['scenario']['params'] = {'avoid': {'nsample': 100_000}}
    doc['scenario']['others'] = [dict(x=float(i), y=1.0) for i in range(300)]
    code, _, err = _query(capsys, tmp_path, json.dumps(doc))
    assert code == 2 and 'reasonable time' in err


def bench_file(tmp_path, *entries, **defaults) -> Path:
    path = tmp_path / 'scenarios.yaml'
    path.write_text(yaml.safe_dump({'version': 1, 'defaults': defaults, 'scenarios': list(entries)}))
    return path


@pytest.mark.parametrize('change, words', [
    ({'starts': [[1e300, 0], [200, 0]]}, 'starts[0] must be <= 100000, got 1e+300'),
    ({'goals': [[0, -1e300], [0, 0]]}, 'goals[0] must be >= -100000'),
    ({'dt': 1e-9}, 'steps; a run is at most'),
    ({'time_limit': 1e12}, 'time_limit must be <= 86400'),
    ({'generator': 'circle_swap', 'starts': None, 'goals': None, 'n_agents': None,
      'params': {'n': 10 ** 6, 'radius': 100.0}}, 'params.n is 1000000; a scenario has at most 4096'),
    ({'generator': 'circle_swap', 'starts': None, 'goals': None, 'n_agents': None,
      'params': {'n': 4, 'radius': 100.0, 'phse': 1}}, "unknown key 'phse' (did you mean 'phase'?)"),
    ({'agent_raduis': 10}, "unknown key 'agent_raduis' (did you mean 'agent_radius'?)"),
    ({'max_speed': float('nan')}, 'max_speed must be a finite number'),
    ({'n_agents': 2.5}, 'n_agents must be an integer'),
])
def test_bench_scenarios_refuse_out_of_range_sizes_and_typos(change, words):
    entry = {k: v for k, v in dict(PAIR, **change).items() if v is not None}
    with pytest.raises(ScenarioError) as info:
        parse_scenarios({'version': 1, 'scenarios': [entry]})
    assert words in str(info.value) and "'pair'" in str(info.value)


def test_bench_reads_yaml_exponents_as_numbers_and_refuses_huge_coordinates(tmp_path, capsys):
    path = bench_file(tmp_path, PAIR)
    path.write_text(path.read_text().replace('defaults: {}', 'defaults: {dt: 2e-2, goal_tolerance: 1E1}'))
    scenario, = load_scenarios(path)
    assert scenario.dt == 0.02 and scenario.goal_tolerance == 10.0
    assert load_yaml('a: 1e-2\nb: 5E3\nc: 1.5\nd: 12\ne: 1e\n', 'x') == {'a': 0.01, 'b': 5000.0, 'c': 1.5, 'd': 12,
                                                                       'e': '1e'}
    far = bench_file(tmp_path, dict(PAIR, starts=[[1e300, 0], [200, 0]]))
    code, out, err = toio_nav(capsys, 'bench', '--scenarios', far, '--planner', 'orca_kr', '--no-progress')
    assert code == 2 and 'starts[0] must be <= 100000' in err and 'clearance' not in out
    path.write_text('scenarios: ' + '[' * 3000 + ']' * 3000 + '\n')
    with pytest.raises(ScenarioError, match='nested'):
        load_scenarios(path)


def test_bags_with_a_list_for_their_parameters_or_broken_metadata_are_refused(tmp_path, capsys):
    bag = tmp_path / 'bag'
    shutil.copytree(BAG, bag)
    meta = bag / 'metadata.yaml'
    text = meta.read_text()
    key = "toio_navigator.navigator_parameters: '"
    meta.write_text(text.replace(key + '{', key + '[{', 1).replace("}'\n", "}]'\n", 1))
    code, _, err = toio_nav(capsys, 'replay', bag)
    assert code == 2 and 'must be a JSON object {name: value}, got a list' in err and str(bag) in err
    code, _, err = toio_nav(capsys, 'render', bag, '--out', tmp_path / 'x.png')
    assert code == 2 and 'got a list' in err
    meta.write_bytes(b'\xff\xfe' + text.encode())
    code, _, err = toio_nav(capsys, 'replay', bag)
    assert code == 2 and 'not UTF-8' in err and 'metadata.yaml' in err
    meta.write_text('rosbag2_bagfile_information: [1, 2]\n')
    code, _, err = toio_nav(capsys, 'replay', bag)
    assert code == 2 and 'rosbag2_bagfile_information' in err
    code, _, err = toio_nav(capsys, 'replay', BAG, '--set', 'rate_hz=2e1')     # YAML 2e1 is a number here too
    assert code in (0, 1) and 'expected a float' not in err


def test_render_out_naming_a_directory_or_an_unwritable_place(tmp_path, capsys):
    code, _, err = toio_nav(capsys, 'render', BAG, '--out', tmp_path / 'dir.png')
    assert code == 0
    (tmp_path / 'taken.png').mkdir()
    code, _, err = toio_nav(capsys, 'render', BAG, '--out', tmp_path / 'taken.png')
    assert code == 2 and 'is a directory' in err
    (tmp_path / 'file').write_text('x')
    code, _, err = toio_nav(capsys, 'render', BAG, '--out', tmp_path / 'file' / 'x.png')
    assert code == 2 and 'not a directory' in err


def test_the_shared_loader_names_source_line_and_rule():
    with pytest.raises(InputError, match=r'src is not valid JSON: Expecting value \(line 2, column 11\)'):
        load_json('{"a":\n  1, "b": }', 'src')
    assert load_json('[1e400, -1e400, 1' + '0' * 400 + ']', 'src')[0] == float('inf')
    with pytest.raises(InputError, match=r'src: invalid YAML: .*line 2'):
        load_yaml('a: [1\nb: 2', 'src')
