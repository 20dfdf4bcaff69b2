"""A bringup stops cleanly while its cubes drive: SIGINT / SIGTERM in both executors and in --single mode.

`toio-nav bringup` runs the whole simulated system (mat_sim, a driver per cube, the navigator) as a user runs it;
four cubes are sent across the mat; while they drive the bringup gets the signal. Then: it exits 0, no node is
left, every driver's last write to its cube was a stop (motor 0/0, seen on the cube's simulated BLE link) and in
--processes mode mat_sim was still there to take it (it saw each driver leave), and no log (the output of every
node and the ROS log files) shows a traceback, a [FATAL], an invalid context or a lost exception.
"""
from __future__ import annotations

import signal

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from support.lifecycle_probe import (  # noqa: E402
    CORNERS,
    Probe,
    bad_lines,
    descendants,
    describe,
    start_bringup,
    wait_gone,
    write_cubes,
)

NAMES = [f'cube{i + 1}' for i in range(len(CORNERS))]


def test_the_log_scan_finds_each_sign_of_an_unclean_stop():
    clean = '[INFO] [1.0] [navigator]: goal 1 for cube1: TOWARDS (400.0, 430.0)\nbringup: SIGTERM: every node stopped'
    assert bad_lines(clean) == []
    for seen in ("[FATAL] [1.2] [navigator]: Exception in 'subscriptions' callback:",
                 'Failed to publish: publisher\'s context is invalid, at /project/src/rcl/publisher.c:423',
                 'Traceback (most recent call last):',
                 'The following exception was never retrieved: cannot use Destroyable',
                 'RuntimeError: Unable to convert call argument'):
        assert bad_lines(clean + '\n' + seen) == [seen]


@pytest.mark.parametrize('how, sig, executor', [
    ('--processes', signal.SIGTERM, 'events'),
    ('--processes', signal.SIGINT, 'single'),
    ('--single', signal.SIGTERM, 'events'),
    ('--single', signal.SIGINT, 'single'),
], ids=['processes-SIGTERM-events', 'processes-SIGINT-single', 'single-SIGTERM-events', 'single-SIGINT-single'])
def test_a_signal_stops_a_driving_bringup_cleanly_and_every_cube_gets_a_stop(tmp_path, child_env, ros_domain,
                                                                             monkeypatch, how, sig, executor):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    env = dict(child_env, TOIO_NAV_EXECUTOR=executor, ROS_LOG_DIR=str(tmp_path / 'ros_log'))
    files = write_cubes(tmp_path / 'cubes.yaml', CORNERS)
    log = tmp_path / 'bringup.log'
    proc = start_bringup([how, '--params-file', str(files[0]), '--params-file', str(files[1])], env, log)
    probe = Probe(NAMES)
    try:
        probe.spin_until(probe.ready, 90.0, 'every cube connected and the navigator', log)
        probe.swap()
        probe.spin_until(lambda: probe.moved == set(NAMES), 30.0, 'every cube to drive', log)
        nodes = descendants(proc.pid)
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
        left = wait_gone(nodes, 10.0)
        assert left == set(), f'node processes outlived the bringup: {describe(left)}'
        assert probe.last_writes() == {c: (0, 0) for c in NAMES}, 'a driver left without stopping its cube'
    finally:
        if proc.poll() is None:
            proc.kill()
        probe.close()
    text = log.read_text()
    assert f'bringup: {signal.Signals(sig).name}: every node stopped' in text or how == '--single'
    if how == '--processes':        # the simulator stops last: it was there when each driver left
        assert all(f'{c}: driver went away (it left)' in text for c in NAMES), text[-3000:]
    logs = [log] + sorted((tmp_path / 'ros_log').rglob('*.log'))
    for path in logs:
        assert bad_lines(path.read_text(errors='replace')) == [], f'{path}:\n' + '\n'.join(
            bad_lines(path.read_text(errors='replace')))
