"""`toio-nav demo` end to end (4 cubes, to keep it short): every cube arrives without contact, the summary is
printed, the mcap bag (in place of a previous run's unfinalised one) holds the navigator's topics decodable and
replays with zero divergence, the PNG is written. Plus the bag writer on its own and the demo's refusals."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from rosbags.highlevel import AnyReader  # noqa: E402

from toio_navigator.bags.record import UNFINALISED, BagError, BagWriter  # noqa: E402
from toio_navigator.bags.testing import assert_replays  # noqa: E402
from toio_navigator.demo_cli import Tracker, swap_goals  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402

FOUR = [(100.0, 100.0, 0.785), (400.0, 100.0, 2.356), (400.0, 400.0, -2.356), (100.0, 400.0, -0.785)]


def demo(args, env, timeout=150):
    return subprocess.run([sys.executable, '-m', 'toio_navigator.cli', 'demo'] + args, env=env, text=True,
                          capture_output=True, timeout=timeout)


def test_four_cube_demo_arrives_without_contact_and_leaves_bag_and_picture(tmp_path, child_env):
    cfg = tmp_path / 'four.yaml'
    flat = ', '.join(repr(v) for pose in FOUR for v in pose)
    cfg.write_text('/**:\n  ros__parameters:\n    cubes: [cube1, cube2, cube3, cube4]\n'
                   '/**/cube_driver:\n  ros__parameters:\n    transport: sim\n    id_notify_interval_ms: 20\n'
                   f'mat_sim:\n  ros__parameters:\n    initial_poses: [{flat}]\n    ground_truth_rate_hz: 50.0\n')
    out = tmp_path / 'out'
    # what a previous demo leaves when its recorder is killed before finalising: replaced, not refused
    (out / 'bag').mkdir(parents=True)
    (out / 'bag' / UNFINALISED).write_text('{"storage": "mcap", "custom_data": {}}')
    (out / 'bag' / 'bag.mcap').write_bytes(b'\x89MCAP0\r\n')
    run = demo(['--out', str(out), '--params-file', str(profiles.config_dir() / 'navigator.yaml'),
                '--params-file', str(cfg), '--timeout', '60'], child_env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert 'all reached:       yes (4/4 cubes)' in run.stdout
    assert 'contacts:          0' in run.stdout
    png = out / 'trajectories.png'
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    with AnyReader([out / 'bag']) as reader:
        topics = {c.topic: c for c in reader.connections}
        for name in ('/cube1/state', '/cube1/motor_cmd', '/cube2/nav_result', '/mat_sim/ground_truth',
                     '/cube3/goal'):
            assert name in topics, sorted(topics)
        # hidden topics (an action's feedback and status) are left out, as `ros2 bag record -a` does, and so the
        # summary lists nothing the recorder had to skip
        assert not [t for t in topics if '/_' in t], sorted(topics)
        assert 'recorder:' not in run.stdout, run.stdout[-2000:]
        results = [reader.deserialize(raw, c.msgtype) for c, _t, raw in
                   reader.messages(connections=[topics['/cube2/nav_result']])]
    assert results and results[-1].cube == 'cube2' and results[-1].reached and results[-1].goal_id == 101
    assert all(r.header.frame_id == 'mat' for r in results)
    # the service goal is in the NavResults, so the bag replays exactly through the core
    assert (results[-1].direction, results[-1].goal_x) == (0, pytest.approx(45.0 + 455.0 - FOUR[1][0]))
    report = assert_replays(out / 'bag')
    assert report.ticks > 40


def test_demo_refuses_what_it_cannot_do(tmp_path, child_env):
    run = demo(['--arena', str(tmp_path / 'missing.json'), '--out', str(tmp_path / 'a')], child_env, timeout=30)
    assert run.returncode == 2 and 'missing.json' in run.stderr      # handed to the arena demo, which refuses
    bad = tmp_path / 'bad.yaml'
    bad.write_text('navigator: {ros__parameters: {rate_hz: 5.0}}\n')
    run = demo(['--params-file', str(bad), '--out', str(tmp_path / 'o')], child_env, timeout=30)
    assert run.returncode == 2 and 'no `cubes` list' in run.stderr
    run = demo(['--timeout', '0'], child_env, timeout=30)
    assert run.returncode == 2 and '--timeout' in run.stderr
    (tmp_path / 'o2' / 'bag').mkdir(parents=True)
    (tmp_path / 'o2' / 'bag' / 'precious.txt').write_text('keep me')
    run = demo(['--out', str(tmp_path / 'o2')], child_env, timeout=30)
    assert run.returncode == 2 and 'not overwriting' in run.stderr
    assert (tmp_path / 'o2' / 'bag' / 'precious.txt').exists()


def test_bag_writer_round_trips_our_types(tmp_path):
    with BagWriter(tmp_path / 'bag') as writer:
        store = writer.store
        Header, Time = store.types['std_msgs/msg/Header'], store.types['builtin_interfaces/msg/Time']
        NavGoal, CubeState = store.types['toio_navigator/msg/NavGoal'], store.types['toio_navigator/msg/CubeState']
        writer.write_message('/cube1/goal', 'toio_navigator/msg/NavGoal', 1_000,
                             NavGoal(goal_id=3, cube='cube1', x=1.5, y=2.5, direction=0, max_speed=0.0, tolerance=0.0))
        state = CubeState(header=Header(stamp=Time(sec=1, nanosec=2), frame_id='mat'), cube='cube1', x=10.0,
                          y=20.0, theta=0.5, on_mat=True, standard_id=0, battery=90, button=False, flat=True,
                          collision=False, double_tap=False, posture=1, shake=0, speed_left=0.0, speed_right=0.0,
                          link_state=2, firmware_version='2.4.0')
        writer.write_message('/cube1/state', 'toio_navigator/msg/CubeState', 2_000, state)
        with pytest.raises(BagError, match='unknown message type'):
            writer.add_topic('/x', 'nope_msgs/msg/Nothing')
    with AnyReader([tmp_path / 'bag']) as reader:
        got = {c.topic: reader.deserialize(raw, c.msgtype) for c, _t, raw in reader.messages()}
    assert got['/cube1/goal'].goal_id == 3 and got['/cube1/goal'].y == 2.5
    assert got['/cube1/state'].firmware_version == '2.4.0' and got['/cube1/state'].header.frame_id == 'mat'
    with pytest.raises(BagError, match='already exists'):
        BagWriter(tmp_path / 'bag')
    with pytest.raises(BagError, match='storage'):
        BagWriter(tmp_path / 'other', storage='rosbag1')


def test_swap_goals_mirror_through_the_centre_and_tracker_counts_contacts():
    starts = np.array([[100.0, 70.0], [400.0, 430.0]])
    assert swap_goals(starts, (45.0, 45.0, 455.0, 455.0)).tolist() == [[400.0, 430.0], [100.0, 70.0]]
    t = Tracker(2)
    t.add(0.0, [[0.0, 0.0], [50.0, 0.0]])
    t.add(0.1, [[0.0, 0.0], [20.0, 0.0]])      # touching (closer than two body radii)
    t.add(0.2, [[0.0, 0.0], [24.5, 0.0]])      # within the guard band: the same contact
    t.add(0.3, [[0.0, 0.0], [40.0, 0.0]])
    t.add(0.4, [[0.0, 0.0], [10.0, 0.0]])      # a second contact
    assert t.contacts == 2 and [e[0] for e in t.events] == [0.1, 0.4]
    assert math.isclose(t.min_clearance, 10.0 - t.contact_distance)
    assert t.trajectories().shape == (5, 2, 2)
