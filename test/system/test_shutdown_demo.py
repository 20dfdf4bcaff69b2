"""`toio-nav demo` stopped while its cubes drive (SIGTERM, as a service manager or `timeout` sends it): it says
it was stopped and exits 130, its recorder finalises the bag, no process of it is left, every cube got a stop, and
no log shows a traceback, a [FATAL], an invalid context or a lost exception."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from support.lifecycle_probe import CORNERS, Probe, bad_lines, descendants, describe, wait_gone, write_cubes  # noqa: E402

NAMES = [f'cube{i + 1}' for i in range(len(CORNERS))]


def test_sigterm_stops_a_driving_demo_in_order(tmp_path, child_env, ros_domain, monkeypatch):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    files = write_cubes(tmp_path / 'cubes.yaml', CORNERS)
    out = tmp_path / 'out'
    log = tmp_path / 'demo.log'
    with open(log, 'w') as f:
        proc = subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'demo', '--out', str(out),
                                 '--navigator-topics', '--stagger', '0', '--params-file', str(files[0]),
                                 '--params-file', str(files[1])], env=child_env, stdout=f, stderr=subprocess.STDOUT)
    probe = Probe(NAMES)
    try:
        probe.spin_until(lambda: probe.moved == set(NAMES), 120.0, 'every cube to drive', log)
        processes = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130, log.read_text()[-3000:]
        left = wait_gone(processes, 10.0)
        assert left == set(), f'processes outlived the demo: {describe(left)}'
        assert probe.last_writes() == {c: (0, 0) for c in NAMES}, 'a driver left without stopping its cube'
    finally:
        if proc.poll() is None:
            proc.kill()
        probe.close()
    text = log.read_text()
    # "at t = 3.2 s", or, when the cubes drove before the navigator's answer to the last goal reached the demo (a
    # busy host), "while waiting for the navigator to accept cube4's goal"
    assert 'toio-nav demo: stopped by SIGTERM ' in text and '; every node was stopped' in text, text[-3000:]
    record = (out / 'logs' / 'record.log').read_text()
    assert 'after SIGTERM, finalised in' in record and (out / 'bag' / 'metadata.yaml').is_file()
    for path in [log] + sorted((out / 'logs').glob('*.log')):
        assert bad_lines(path.read_text(errors='replace')) == [], path
