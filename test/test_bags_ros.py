"""Bags over DDS: `toio-nav record` next to a running navigator fed by `toio-nav replay --live`, and the bag it
records replays offline through the core. Needs rclpy and the built messages."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from toio_navigator.bags.replay import PARAMETERS_KEY, bag_custom_data, read_recording  # noqa: E402
from toio_navigator.bags.testing import assert_replays  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / 'test' / 'data' / 'bags' / 'cross2_sqlite3'


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', *args], env=dict(env, PYTHONPATH=str(REPO)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    return proc.stdout.read() if proc.stdout else ''


def test_record_a_live_replay_and_replay_the_recording_offline(child_env, ros_domain, tmp_path, monkeypatch):
    from toio_navigator.bags.replay_cli import replay_live

    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    nav = _start(['toio_navigator.nodes.navigator', '--ros-args', '--params-file', str(REPO / 'config' /
                  'navigator.yaml'), '-p', 'cubes:=[cube1, cube2]'], child_env)
    out = tmp_path / 'live'
    topics = [f'/{c}/{k}' for c in ('cube1', 'cube2') for k in ('state', 'goal', 'nav_result', 'motor_cmd')]
    rec = _start(['toio_navigator.cli', 'record', *topics, '-o', str(out), '-s', 'mcap'], child_env)
    try:
        time.sleep(3.0)                       # the recorder subscribes and reads the navigator's parameters
        report = replay_live(FIXTURE, rate=1.0, wait_s=60.0)
    finally:
        rec_log = _stop(rec)
        _stop(nav)
    assert report.compared['nav_result'] > 50, report.summary()
    # live timing differs from the recording, so only a loose agreement is expected: most ticks within tolerance
    assert report.diverged['nav_result'] < report.compared['nav_result'] / 4, report.summary()
    assert (out / 'metadata.yaml').is_file(), rec_log
    params = json.loads(bag_custom_data(out)[PARAMETERS_KEY])
    assert params['cubes'] == ['cube1', 'cube2'] and params['max_speed'] > 0
    recording = read_recording(out)
    assert len(recording.goals) == 2 and len(recording.ticks) > 50
    result = assert_replays(out)              # the fresh recording replays offline through the core
    assert result.ticks > 50
