"""Bags: record format, offline replay through the navigator, the pytest helper, the replay CLI.

Two kinds of bags: the fixtures in test/data/bags (recorded from the simulator over DDS by make_fixtures.py; if
the navigator's behaviour changes on purpose, re-record them) and synthetic bags written here by a closed loop of
the current SwarmController and a kinematic model, so the replay mechanics are tested whatever the navigator does.
"""
from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.highlevel import AnyReader

from support.closed_loop_bag import OURS, ros_time, write_closed_loop_bag
from toio_navigator.bags import replay_cli
from toio_navigator.bags.record import BagWriter, our_msg_dir, typestore
from toio_navigator.bags.recording import (
    PARAMETERS_KEY,
    ReplayError,
    bag_custom_data,
    read_recording,
    service_goals,
)
from toio_navigator.bags.replay import replay_bag
from toio_navigator.bags.testing import assert_replays, bags_in

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / 'test' / 'data' / 'bags'




@pytest.fixture(scope='module')
def loop_bag(tmp_path_factory) -> Path:
    return write_closed_loop_bag(tmp_path_factory.mktemp('bags') / 'loop')


def _copy_bag(src: Path, dst: Path, edit) -> None:
    """Copy a bag (with its navigator parameters) through ``edit(topic, index, msg)``: ``index`` counts the
    messages of that topic from 0; the message it returns is written, None drops it."""
    seen: dict[str, int] = {}
    with AnyReader([src]) as reader, BagWriter(dst, 'mcap', typestore()) as out:
        out.set_custom_data(PARAMETERS_KEY, bag_custom_data(src)[PARAMETERS_KEY])
        for conn, ns, raw in reader.messages():
            index = seen[conn.topic] = seen.get(conn.topic, -1) + 1
            msg = edit(conn.topic, index, reader.deserialize(raw, conn.msgtype))
            if msg is not None:
                out.write_message(conn.topic, conn.msgtype, ns, msg)


def _edit_nav_result(src: Path, dst: Path, tick_index: int, cube: str, field: str, value) -> None:
    """Copy a bag, changing one field of one recorded NavResult (the tick_index-th of that cube)."""
    def edit(topic, index, msg):
        if topic == f'/{cube}/nav_result' and index == tick_index:
            setattr(msg, field, value)
        return msg
    _copy_bag(src, dst, edit)


# ------------------------------------------------------------------------------------------------ replay

def test_a_closed_loop_bag_replays_with_zero_divergence(loop_bag):
    report = assert_replays(loop_bag)
    assert report.ticks >= 45 and report.compared["motor_cmd"] > 40       # 50 ticks less a 150 ms warm-up
    assert report.compared['nav_result'] == 2 * report.ticks


def test_one_changed_recorded_value_is_named_as_the_first_divergence(loop_bag, tmp_path):
    rec = read_recording(loop_bag)
    tick = rec.ticks[20]
    recorded = tick.results['cube2']['waypoint_y']
    edited = tmp_path / 'edited'
    _edit_nav_result(loop_bag, edited, 20, 'cube2', 'waypoint_y', recorded + 3.0)
    report = replay_bag(edited)
    first = report.first
    assert first is not None
    assert (first.topic, first.field, first.stamp_ns) == ('/cube2/nav_result', 'waypoint_y', tick.stamp_ns)
    assert first.recorded == pytest.approx(recorded + 3.0) and first.replayed == pytest.approx(recorded)
    assert report.diverged['nav_result'] == 1          # only that message: the replay resyncs and goes on


@pytest.mark.parametrize('override', [{'avoid.margin': 30.0}, {'max_speed': 60.0}, {'rotate_time_ms': 300.0}])
def test_changing_one_navigator_parameter_fails_the_replay_naming_the_message(loop_bag, override):
    with pytest.raises(AssertionError) as err:
        assert_replays(loop_bag, overrides=override)
    text = str(err.value)
    assert 'first divergence at t=' in text
    assert '/cube1/' in text or '/cube2/' in text
    assert 'recorded' in text and 'replayed' in text


def test_a_lost_nav_result_skips_its_tick_and_keeps_the_commands_in_step(loop_bag, tmp_path):
    lossy = tmp_path / 'lossy'
    # the recorder lost cube1's 21st NavResult; its MotorCommand is in the bag
    _copy_bag(loop_bag, lossy, lambda topic, index, msg: None if (topic, index) == ('/cube1/nav_result', 20) else msg)
    report = assert_replays(lossy)
    assert report.compared['motor_cmd'] > 40
    assert any('1 of 50 ticks lack' in n for n in report.notes)


def _without_tick(bag: Path, out_path: Path, tick: int, edit_after=None) -> None:
    """A copy of ``bag`` that lost every NavResult and MotorCommand of tick ``tick`` (a recorder starved for
    one tick); ``edit_after(msg)`` may change the NavResults of the ticks after it."""
    def edit(topic, _index, msg):
        if topic.endswith(('/nav_result', '/motor_cmd')) and msg.header.stamp.nanosec == (tick * 50_000_000) % 10**9 \
                and msg.header.stamp.sec == 1_700_000_000 + tick // 20:
            return None
        if edit_after is not None and topic.endswith('/nav_result') and msg.tick > tick:
            edit_after(msg)
        return msg
    _copy_bag(bag, out_path, edit)


def test_a_whole_tick_the_bag_lost_is_named_and_what_follows_is_not_a_divergence(loop_bag, tmp_path):
    whole = replay_bag(loop_bag)
    assert whole.ok and whole.lost_ticks == 0 and not whole.explained
    lossy = tmp_path / 'lossy'
    _without_tick(loop_bag, lossy, 30)
    report = replay_bag(lossy)
    assert report.ok and report.lost_ticks == 1, report.summary()
    assert report.ticks == whole.ticks - 1 and report.exact_ticks == 30 - (50 - whole.ticks)   # 50 ticks, a warm-up
    assert any('lost 1 whole ticks' in n for n in report.notes), report.notes
    # a difference after the lost tick is listed, not counted; the same difference before it is a divergence
    edited = tmp_path / 'edited'
    _without_tick(loop_bag, edited, 30, edit_after=lambda msg: setattr(msg, 'speed_ratio', msg.speed_ratio + 1.0))
    report = replay_bag(edited)
    assert report.ok and report.explained and report.explained[0].field == 'speed_ratio', report.summary()
    assert 'after a lost tick (not counted)' in report.summary()
    early = tmp_path / 'early'
    _edit_nav_result(loop_bag, early, 20, 'cube1', 'speed_ratio', 5.0)
    assert not replay_bag(early).ok


def _without_states(bag: Path, out_path: Path, keep_copies: bool) -> None:
    """A copy of ``bag`` that lost every third CubeState (a busy recorder on another host); without
    ``keep_copies`` its NavResults also lack their copy of the state (as recorded by an older navigator)."""
    states = 0

    def edit(topic, _index, msg):
        nonlocal states
        if topic.endswith('/state'):
            states += 1
            if states % 3 == 0:
                return None
        if topic.endswith('/nav_result') and not keep_copies:
            msg.state_x = math.nan
        return msg
    _copy_bag(bag, out_path, edit)


def test_states_the_recorder_lost_are_taken_from_the_nav_results(loop_bag, tmp_path):
    lossy = tmp_path / 'lossy'
    _without_states(loop_bag, lossy, keep_copies=True)
    report = assert_replays(lossy)
    whole = replay_bag(loop_bag)
    assert report.ticks == whole.ticks and report.compared == whole.compared
    assert any('states the bag lost were taken from the copies in the NavResults' in n for n in report.notes)
    # without the copies those ticks cannot be rebuilt: they are named and left out, never guessed
    bare = tmp_path / 'bare'
    _without_states(loop_bag, bare, keep_copies=False)
    report = replay_bag(bare)
    assert report.ticks < whole.ticks
    assert any('the bag lost a state they used' in n for n in report.notes)


def _without_motor_cmd(bag: Path, out_path: Path, topic: str, which, edit=None) -> None:
    """A copy of ``bag`` without the MotorCommands of ``topic`` whose index ``which(index, count)`` says; every
    other MotorCommand (of any cube) goes through ``edit(topic, index, msg)`` when given."""
    with AnyReader([bag]) as reader:
        count = sum(1 for c, _ns, _raw in reader.messages() if c.topic == topic)

    def copy(t, index, msg):
        if t == topic and which(index, count):
            return None
        return edit(t, index, msg) if edit is not None and t.endswith('/motor_cmd') else msg
    _copy_bag(bag, out_path, copy)


def _unstamped(_topic, _index, msg):
    """A MotorCommand as navigators sent them before it carried its tick's stamp."""
    msg.header.stamp.sec = msg.header.stamp.nanosec = 0
    return msg


def test_a_recording_that_ends_before_its_last_commands_still_replays(loop_bag, tmp_path):
    """A recorder killed between a tick's NavResult and its MotorCommand: the missing command at the very end
    is said in a note, not a divergence."""
    for edit in (None, _unstamped):
        cut = tmp_path / f'cut{edit is None}'
        _without_motor_cmd(loop_bag, cut, '/cube1/motor_cmd', lambda i, n: i == n - 1, edit)
        report = assert_replays(cut)
        assert any('1 MotorCommands of the last' in n and 'it ended first' in n for n in report.notes), report.notes


def test_a_command_the_recorder_lost_does_not_shift_the_later_ones(loop_bag, tmp_path):
    """A best-effort recorder on a busy machine lost one MotorCommand in the middle of the run: the tick's stamp
    on every command says which tick each belongs to, so the loss is noted and every later command is still
    compared with its own tick's (a changed one is named)."""
    holed = tmp_path / 'holed'
    _without_motor_cmd(loop_bag, holed, '/cube1/motor_cmd', lambda i, n: i == n // 2)
    report = assert_replays(holed)
    whole = replay_bag(loop_bag)
    assert report.compared['motor_cmd'] == whole.compared['motor_cmd'] - 1
    assert any(n.startswith('1 MotorCommands of compared ticks are not in the bag') for n in report.notes)

    def changed_later(topic, index, msg):
        if topic == '/cube1/motor_cmd' and index == 30:     # after the hole (index n // 2 of the original)
            msg.left += 9
        return msg
    edited = tmp_path / 'edited'
    _without_motor_cmd(loop_bag, edited, '/cube1/motor_cmd', lambda i, n: i == n // 2, changed_later)
    report = replay_bag(edited)
    first = report.first
    assert first.field == 'left' and first.recorded == first.replayed + 9, report.summary()
    # (the next tick may differ too: its recorded command followed the true one) but nothing shifts
    assert report.diverged['motor_cmd'] <= 2, report.summary()
    # a bag from before MotorCommand was stamped replays with its commands matched in order, but there a hole is a
    # divergence (every later command is compared with the next tick's)
    old = tmp_path / 'old'
    _without_motor_cmd(loop_bag, old, '/cube1/motor_cmd', lambda i, n: False, _unstamped)
    assert_replays(old)
    old_holed = tmp_path / 'old_holed'
    _without_motor_cmd(loop_bag, old_holed, '/cube1/motor_cmd', lambda i, n: i == n // 2, _unstamped)
    assert not replay_bag(old_holed).ok


def test_tolerances_forgive_small_differences_only(loop_bag, tmp_path):
    rec = read_recording(loop_bag)
    edited = tmp_path / 'edited'
    _edit_nav_result(loop_bag, edited, 25, 'cube1', 'speed_limit', rec.ticks[25].results['cube1']['speed_limit']
                     + 0.01)
    assert replay_bag(edited).first.field == 'speed_limit'
    assert replay_bag(edited, tolerances={'speed_limit': 0.05}).ok
    assert not replay_bag(edited, tolerances={'speed_limit': 0.005}).ok


def test_goals_sent_through_the_service_replay_from_the_nav_results(loop_bag, tmp_path):
    # `toio-nav demo` sends its goals through navigator/set_goal: no /goal message, the NavResults show them
    bag = write_closed_loop_bag(tmp_path / 'service', starts=((120.0, 250.0, 0.0), (380.0, 300.0, math.pi)),
                                goals=((380.0, 250.0), (120.0, 200.0)), with_goals=False)
    assert not read_recording(bag).goals
    report = assert_replays(bag)
    assert report.compared['motor_cmd'] > 40
    # `replay --live` publishes them as goals: rebuilt from the NavResults, none where the bag has the topic
    assert [(g.cube, g.goal_id, g.x, g.y) for g in service_goals(read_recording(bag))] == \
        [('cube1', 7, 380.0, 250.0), ('cube2', 8, 120.0, 200.0)]
    assert service_goals(read_recording(loop_bag)) == []


def test_the_state_a_tick_used_is_the_one_its_nav_result_names(loop_bag, tmp_path):
    # ticks 2, 6, 10, ...: cube2's newest state arrived after the tick; naming it instead must diverge there
    rec = read_recording(loop_bag)
    k = 10
    used = rec.ticks[k].results['cube2']['state_stamp_ns']
    newer = max(s.stamp_ns for s in rec.states if s.cube == 'cube2' and s.stamp_ns < rec.ticks[k].stamp_ns)
    assert newer > used
    edited = tmp_path / 'edited'
    store = typestore()
    _edit_nav_result(loop_bag, edited, k, 'cube2', 'state_stamp', ros_time(store, newer))
    first = replay_bag(edited).first
    assert first is not None and first.stamp_ns == rec.ticks[k].stamp_ns and first.topic.startswith('/cube2/')


def test_a_changed_goal_in_the_nav_results_is_what_the_replay_pursues(loop_bag, tmp_path):
    rec = read_recording(loop_bag)
    edited = tmp_path / 'edited'
    _edit_nav_result(loop_bag, edited, 30, 'cube1', 'goal_x', rec.ticks[30].results['cube1']['goal_x'] - 100.0)
    first = replay_bag(edited).first
    assert first is not None and first.stamp_ns == rec.ticks[30].stamp_ns and first.topic.startswith('/cube1/')


# ------------------------------------------------------------------------------------------------ fixtures

@pytest.mark.parametrize('bag', bags_in(FIXTURES), ids=lambda p: p.name)
def test_simulator_fixture_bags_replay_through_the_current_navigator(bag):
    """If this fails after an intended navigator change, re-record: test/data/bags/make_fixtures.py."""
    report = assert_replays(bag)
    assert report.ticks > 50


def test_fixture_bags_are_small_and_both_storages_are_present():
    bags = bags_in(FIXTURES)
    storages = set()
    for bag in bags:
        size = sum(f.stat().st_size for f in bag.iterdir())
        assert size < 1_000_000, f'{bag.name} is {size} bytes'
        storages |= {f.suffix for f in bag.iterdir()}
    assert {'.mcap', '.db3'} <= storages


def _rihs01_of_generated(name: str) -> str:
    generated = Path(our_msg_dir()).parent / 'msg' / f'{name}.json'
    if not generated.is_file():
        generated = Path(sys.prefix) / 'share' / 'toio_navigator' / 'msg' / f'{name}.json'
    if not generated.is_file():
        pytest.skip('rosidl-generated type descriptions are not installed')
    hashes = json.loads(generated.read_text())['type_hashes']
    return next(h['hash_string'] for h in hashes if h['type_name'] == f'toio_navigator/msg/{name}')


def test_mcap_bags_open_with_the_mcap_reader_and_embed_our_generated_definitions():
    bag = next(b for b in bags_in(FIXTURES) if any(f.suffix == '.mcap' for f in b.iterdir()))
    store = typestore()
    mcap_file = next(bag.glob('*.mcap'))
    with open(mcap_file, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == 'ros2'
        schemas = {s.name: s for s in reader.get_summary().schemas.values()}
        for name in OURS:
            s = schemas[f'toio_navigator/msg/{name}']
            assert s.encoding == 'ros2msg'
            assert s.data.decode() == store.generate_msgdef(f'toio_navigator/msg/{name}', ros_version=2)[0]
        decoded = [(ch.topic, m) for _s, ch, _raw, m in reader.iter_decoded_messages(topics=['/cube1/state'])]
    with AnyReader([bag]) as r:
        conn = next(c for c in r.connections if c.topic == '/cube1/state')
        ours = [r.deserialize(raw, conn.msgtype) for _c, _t, raw in r.messages(connections=[conn])]
    assert len(decoded) == len(ours) > 10
    assert all(a.x == b.x and a.y == b.y and a.theta == b.theta and a.cube == b.cube
               for (_t, a), b in zip(decoded, ours))
    meta = (bag / 'metadata.yaml').read_text()
    for name in OURS:      # the hash rosbag2 checks equals the one rosidl generated for our .msg
        assert _rihs01_of_generated(name) in meta


def test_sqlite3_bags_open_with_rosbags_and_carry_their_definitions():
    bag = next(b for b in bags_in(FIXTURES) if any(f.suffix == '.db3' for f in b.iterdir()))
    db = sqlite3.connect(next(bag.glob('*.db3')))
    defs = dict(db.execute('select topic_type, encoded_message_definition from message_definitions'))
    db.close()
    store = typestore()
    for name in ('CubeState', 'NavResult', 'MotorCommand'):
        assert defs[f'toio_navigator/msg/{name}'] == \
            store.generate_msgdef(f'toio_navigator/msg/{name}', ros_version=2)[0]
        assert _rihs01_of_generated(name) in (bag / 'metadata.yaml').read_text()
    with AnyReader([bag]) as r:
        n = sum(1 for _ in r.messages())
    assert n > 100


# ------------------------------------------------------------------------------------------------ CLI

def _cli(args, capsys):
    parser = argparse.ArgumentParser()
    replay_cli.add_arguments(parser)
    code = replay_cli.run(parser.parse_args([str(a) for a in args]))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_exit_codes_and_messages(loop_bag, tmp_path, capsys):
    code, out, _ = _cli([loop_bag], capsys)
    assert code == 0 and 'zero divergence' in out
    code, out, _ = _cli([loop_bag, '--set', 'avoid.margin=30'], capsys)
    assert code == 1 and 'first divergence at t=' in out
    code, _, err = _cli([tmp_path / 'nope'], capsys)
    assert code == 2 and 'no such bag' in err
    (tmp_path / 'empty').mkdir()
    code, _, err = _cli([tmp_path / 'empty'], capsys)
    assert code == 2 and 'not a readable rosbag2 bag' in err
    code, _, err = _cli([loop_bag, '--set', 'avoid.marign=30'], capsys)
    assert code == 2 and 'avoid.marign' in err and 'not a navigator parameter' in err
    code, _, err = _cli([loop_bag, '--set', 'max_speed=500'], capsys)
    assert code == 2 and 'max_speed' in err


def test_a_bag_without_navigator_outputs_is_refused_by_name(tmp_path):
    store = typestore()
    with BagWriter(tmp_path / 'twist', 'mcap', store) as bag:
        t = store.types['geometry_msgs/msg/Twist']
        v = store.types['geometry_msgs/msg/Vector3']
        bag.write_message('/cube1/cmd_vel', 'geometry_msgs/msg/Twist', 1,
                          t(linear=v(x=0.1, y=0.0, z=0.0), angular=v(x=0.0, y=0.0, z=0.0)))
    with pytest.raises(ReplayError, match='no /<cube>/nav_result'):
        read_recording(tmp_path / 'twist')


def test_bags_in_lists_bag_directories_and_mcap_files(tmp_path):
    (tmp_path / 'not_a_bag').mkdir()
    (tmp_path / 'run.mcap').write_bytes(b'')
    write_closed_loop_bag(tmp_path / 'loop', ticks=2)
    assert [p.name for p in bags_in(tmp_path)] == ['loop', 'run.mcap']
    with pytest.raises(FileNotFoundError):
        bags_in(tmp_path / 'missing')
