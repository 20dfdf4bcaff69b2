"""No node outlives its bringup, however the bringup goes: SIGHUP (its terminal closed, an SSH session dropped)
stops it like SIGINT, and after SIGKILL its nodes still stop (each asked the kernel for a signal when its parent
dies), each stopping its cube first.

The simulator runs apart (`toio-nav bringup --only sim`), as the cubes would: the bringup under test holds the
drivers and the navigator (`--only drivers,navigator`). After the signal no process of that bringup is left, each
driver's last write to its cube was a stop, and the simulated cubes stand still.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from support.lifecycle_probe import (  # noqa: E402
    CORNERS,
    Probe,
    bad_lines,
    descendants,
    describe,
    running,
    start_bringup,
    wait_gone,
    write_cubes,
)
from toio_navigator import lifecycle  # noqa: E402

NAMES = [f'cube{i + 1}' for i in range(len(CORNERS))]


@pytest.mark.parametrize('sig', [signal.SIGHUP, signal.SIGKILL], ids=['SIGHUP', 'SIGKILL'])
def test_no_node_outlives_its_bringup_and_every_cube_stops(tmp_path, child_env, ros_domain, monkeypatch, sig):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    files = write_cubes(tmp_path / 'cubes.yaml', CORNERS)
    params = ['--params-file', str(files[0]), '--params-file', str(files[1])]
    sim = start_bringup(['--only', 'sim'] + params, child_env, tmp_path / 'sim.log')
    log = tmp_path / 'bringup.log'
    proc = start_bringup(['--only', 'drivers,navigator'] + params, child_env, log)
    probe = Probe(NAMES)
    try:
        probe.spin_until(probe.ready, 90.0, 'every cube connected and the navigator', log)
        probe.swap()
        probe.spin_until(lambda: probe.moved == set(NAMES), 30.0, 'every cube to drive', log)
        nodes = descendants(proc.pid)
        assert len(nodes) == len(NAMES) + 1            # the drivers and the navigator
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == (0 if sig == signal.SIGHUP else -signal.SIGKILL)
        left = wait_gone(nodes, 20.0)
        assert left == set(), f'nodes left running after {sig.name} to their bringup: {describe(left)}'
        assert probe.last_writes() == {c: (0, 0) for c in NAMES}, 'a driver left without stopping its cube'
        assert probe.largest_move(0.5) < 1e-4, 'a cube still moves'
    finally:
        for p in (proc, sim):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=30)
        probe.close()
    assert bad_lines(log.read_text()) == []
    if sig == signal.SIGHUP:
        assert 'bringup: SIGHUP: every node stopped' in log.read_text()


def test_a_child_whose_supervisor_is_already_gone_stops_at_once():
    """The check right after asking the kernel: a child whose supervisor died before it asked stops at once."""
    env = dict(os.environ, **{lifecycle.PARENT_ENV: '1'})        # not its parent: "its supervisor" is gone
    child = subprocess.run([sys.executable, '-c', 'import time\nfrom toio_navigator.lifecycle import die_with_parent'
                            '\ndie_with_parent()\ntime.sleep(60)'], env=env, timeout=50)
    assert child.returncode == -signal.SIGTERM


ARMED_CHILD = ('import time\nfrom toio_navigator.lifecycle import die_with_parent\ndie_with_parent()\n'
               "print('armed', flush=True)\ntime.sleep(60)")


def test_a_child_started_through_a_prefix_keeps_running_and_dies_with_that_prefix():
    """``ros2 launch --launch-prefix 'xterm -e'`` (or gdb, timeout) puts a process between the launch and its node:
    the node must not take its supervisor for gone, and dies with the process the kernel knows as its parent."""
    env = dict(os.environ, **{lifecycle.PARENT_ENV: str(os.getpid())})
    prefix = subprocess.Popen(['timeout', '120', sys.executable, '-c', ARMED_CHILD], env=env,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert prefix.stdout.readline() == 'armed\n'
        child = next(iter(descendants(prefix.pid)))
        time.sleep(0.5)
        assert running(child), 'the child took its supervisor for gone'
        os.kill(prefix.pid, signal.SIGKILL)
        assert wait_gone({child}, 10.0) == set()
    finally:
        if prefix.poll() is None:
            os.killpg(prefix.pid, signal.SIGKILL)
        prefix.wait(timeout=10)


HANGING_NODE = '''
import time
from rclpy.node import Node
from toio_navigator.nodes.spin import run_node

class Hangs(Node):
    def __init__(self):
        super().__init__('hangs')
        print('ready', flush=True)

    def destroy_node(self):
        print('stopping', flush=True)
        time.sleep(600)                  # as a teardown hung inside Fast DDS

run_node('hangs', Hangs)
'''


def test_a_node_whose_teardown_hangs_exits_by_itself_with_its_stacks_in_its_log(child_env):
    # one cube driver outlived a SIGKILLed bringup: its teardown hung inside Fast DDS 2.14.5 (README, "Stopping"),
    # and nobody was left to kill it
    child = subprocess.Popen([sys.executable, '-c', HANGING_NODE], env=child_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == 'ready\n'
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert 'stopping' in out
    assert child.returncode == 1
    assert 'Thread' in err and 'destroy_node' in err      # where it hung, in its log
