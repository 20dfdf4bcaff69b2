"""Property tests per file format: a valid file with fields deleted, retyped, set to NaN / inf / huge / negative
values, extra keys, or its bytes truncated or flipped gives either a correct result or a non-zero exit with a
message, never a traceback. The CLIs run in this process (cli.main), so every example takes milliseconds."""
from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.closed_loop_bag import write_closed_loop_bag
from toio_navigator import cli
from toio_navigator.bags.recording import ReplayError, stored_parameters
from toio_navigator.bags.replay import settings_from_parameters
from toio_navigator.bench.scenarios import ScenarioError, load_scenarios

REPO = Path(__file__).resolve().parents[2]
ARENA = REPO / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'
CASE = sorted((REPO / 'test' / 'data' / 'conformance' / 'cases').glob('*.json'))[0]
SCENARIOS = yaml.safe_load((REPO / 'toio_navigator' / 'data' / 'scenarios.yaml').read_text())
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                derandomize=True)

# values a mutation puts in place of a field: wrong types, non-finite, huge, negative, empty
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=5), st.integers(-10, 10), st.sampled_from(
        [-1, 0, 10 ** 400, -10 ** 30, 1e308, -1e308, 1e300, 1e-320, math.nan, math.inf, -math.inf, 0.5, 2 ** 63]),
    st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def mutated(draw, doc):
    """``doc`` with one random change at a random place: delete a key / item, replace a value, add a key."""
    doc = copy.deepcopy(doc)
    node, path = doc, []
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        if not isinstance(node[key], (dict, list)):
            break
        node, path = node[key], path + [key]
    if not isinstance(node, (dict, list)) or not node:
        return doc
    key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
    action = draw(st.sampled_from(['delete', 'replace', 'replace', 'add']))
    if action == 'delete':
        del node[key]
    elif action == 'replace':
        node[key] = draw(ODD_VALUES)
    elif isinstance(node, dict):
        node[draw(st.sampled_from(['extra', 'centre ', 'Start', 'n_agent']))] = draw(ODD_VALUES)
    else:
        node.append(draw(ODD_VALUES))
    return doc


def as_bytes(draw, doc, dump) -> bytes:
    """The document as bytes, sometimes truncated or with one byte changed."""
    data = dump(doc).encode('utf-8')
    how = draw(st.sampled_from(['whole', 'whole', 'truncate', 'flip']))
    if how == 'truncate' and data:
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif how == 'flip' and data:
        i = draw(st.integers(0, len(data) - 1))
        data = data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
    return data


def run_cli(capsys, *args) -> tuple[int, str]:
    """`toio-nav ARGS` in-process: any exception escaping fails the property; a non-zero exit needs a message
    (on stderr, or for replay's exit 1 the divergence report on stdout)."""
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    assert 'Traceback' not in out.err
    if code != 0:
        assert (out.err if code != 1 or args[0] != 'replay' else out.out).strip(), f'exit {code} without a message'
    return code, out.err


def _json_dump(doc) -> str:
    return json.dumps(doc, allow_nan=True, default=str)


@FAST
@given(data=st.data())
def test_mutated_layouts_give_a_route_or_a_message(tmp_path_factory, capsys, data):
    tmp = tmp_path_factory.mktemp('layout')
    doc = data.draw(mutated(json.loads(ARENA.read_text())))
    (tmp / 'layout.json').write_bytes(as_bytes(data.draw, doc, _json_dump))
    code, _ = run_cli(capsys, 'fastest-path', '--arena', tmp / 'layout.json', '--out', tmp / 'path.json')
    if code == 0:
        result = json.loads((tmp / 'path.json').read_text())
        assert result['found'] is False or len(result['poses']) == len(result['actions']) + 1


@FAST
@given(data=st.data())
def test_mutated_conformance_scenarios_give_a_result_or_a_message(tmp_path_factory, capsys, data):
    tmp = tmp_path_factory.mktemp('query')
    doc = data.draw(mutated(json.loads(CASE.read_text())))
    (tmp / 'scenario.json').write_bytes(as_bytes(data.draw, doc, _json_dump))
    code, _ = run_cli(capsys, 'query', tmp / 'scenario.json', tmp / 'result.json')
    if code == 0:
        result = json.loads((tmp / 'result.json').read_text())['result']
        assert all(math.isfinite(result[k][a]) for k in ('waypoint', 'avoidVector') for a in 'xy')


@FAST
@given(data=st.data())
def test_mutated_bench_files_load_or_say_what_is_wrong(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp('bench')
    doc = dict(SCENARIOS, scenarios=SCENARIOS['scenarios'][:1] + SCENARIOS['scenarios'][-2:])
    doc = data.draw(mutated(doc))
    (tmp / 'scenarios.yaml').write_bytes(as_bytes(data.draw, doc, lambda d: yaml.safe_dump(d, allow_unicode=True)))
    try:
        scenarios = load_scenarios(tmp / 'scenarios.yaml')
    except ScenarioError as exc:
        assert str(exc)
        return
    for s in scenarios:       # what loads can run: finite, on a sane scale, a bounded number of steps
        assert s.starts.shape == s.goals.shape == (s.n_agents, 2) and abs(s.starts).max() <= 1e5
        assert 0 < s.dt <= 1 and s.n_steps <= 1_000_000 and math.isfinite(s.time_limit)


@pytest.fixture(scope='module')
def small_bag(tmp_path_factory) -> Path:
    return write_closed_loop_bag(tmp_path_factory.mktemp('bag') / 'loop', ticks=8)


@FAST
@given(data=st.data())
def test_mutated_stored_parameters_configure_a_navigator_or_say_why_not(tmp_path_factory, small_bag, data):
    tmp = tmp_path_factory.mktemp('params') / 'bag'
    shutil.copytree(small_bag, tmp)
    meta = tmp / 'metadata.yaml'
    info = yaml.safe_load(meta.read_text())
    custom = info['rosbag2_bagfile_information']['custom_data']
    key = next(iter(custom))
    params = data.draw(mutated({'params': dict(json.loads(custom[key]), rate_hz=20.0, mode='AVOID',
                                               **{'avoid.margin': 22.0, 'mat_rect': [45, 45, 455, 455]})}))
    custom[key] = _json_dump(params.get('params', params))
    meta.write_text(yaml.safe_dump(info))
    try:
        parameters = stored_parameters(tmp)
        settings_from_parameters(parameters, ['cube1', 'cube2'])
    except ReplayError as exc:
        assert str(exc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(data=st.data())
def test_damaged_bag_bytes_replay_render_and_repair_or_say_what_is_wrong(tmp_path_factory, capsys, small_bag,
                                                                          data):
    tmp = tmp_path_factory.mktemp('damaged')
    raw = next(small_bag.glob('*.mcap')).read_bytes()
    cut = data.draw(st.integers(0, len(raw)))
    damaged = bytearray(raw[:cut])
    if damaged and data.draw(st.booleans()):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] ^= data.draw(st.integers(1, 255))
    bag = tmp / 'loop.mcap'
    bag.write_bytes(bytes(damaged))
    code, err = run_cli(capsys, 'replay', bag)
    assert code in (0, 1, 2)
    if cut < len(raw):
        assert code == 2
    run_cli(capsys, 'render', bag, '--out', tmp / 'x.png')
    code, err = run_cli(capsys, 'repair', bag)
    if code == 0:                    # what was recovered replays as far as it goes (or says why it cannot)
        run_cli(capsys, 'replay', tmp / 'loop_repaired')
