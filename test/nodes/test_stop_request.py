"""A stop signal always stops the loop that waits for it, whenever it comes (no ROS).

Before: the handler set a ``threading.Event`` that the main loop waited on. Python runs a handler in the main
thread between two bytecodes, sometimes while that thread holds the event's lock inside ``Event.wait``; the
handler then waited for that lock forever. On a busy machine a Ctrl-C'd bringup hung that way, and a second
signal could not help: it too waits for the main thread.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

from toio_navigator.lifecycle import StopRequest

#: a stop signal every 0.2 ms into a loop that waits 10 us at a time: thousands of signals, each at a random
#: point of the wait (the lock-taking handler hung within a few hundred)
HAMMER = '''
import os, signal, time
from toio_navigator.lifecycle import StopRequest
# the timer's handler first: a SIGALRM before it would end the process (a busy host can delay the next line)
signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
stopped, t0 = 0, time.monotonic()
while time.monotonic() - t0 < 1.0:
    stop = StopRequest().install()
    signal.setitimer(signal.ITIMER_REAL, 0.0002)
    while not stop.wait(0.00001):
        pass
    stop.restore()
    stopped += 1
print(stopped)
'''


def test_a_signal_at_any_point_of_a_wait_stops_the_loop():
    proc = subprocess.Popen([sys.executable, '-c', HAMMER], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()         # SIGKILL: a hung handler would swallow SIGTERM like the SIGINT before it
        proc.communicate()
        raise AssertionError('a stop signal left the waiting loop hung') from None
    assert proc.returncode == 0 and int(out) > 100, out


def test_the_first_signal_is_kept_and_set_from_another_thread_wakes_a_wait():
    stop = StopRequest().install()
    try:
        assert not stop and stop.wait(0.01) is False
        signal.raise_signal(signal.SIGHUP)
        signal.raise_signal(signal.SIGTERM)
        assert stop and stop.name == 'SIGHUP' and stop.wait(10.0)
    finally:
        stop.restore()
    other = StopRequest()
    threading.Timer(0.05, other.set).start()
    start = time.monotonic()
    assert other.wait(30.0) and other.name == '' and time.monotonic() - start < 25.0


def test_a_node_ctrl_c_d_again_while_it_stops_exits_cleanly():
    """Under `ros2 launch` a Ctrl-C reaches every node twice (the terminal's and the launch's SIGINT). A second
    SIGINT that came after the node gave the signals back turned its clean exit into a KeyboardInterrupt
    traceback (exit -2). SIGINT every 5 ms from the first one until the node has exited: still a clean exit."""
    from conftest import next_domain_id, ros_env  # noqa: PLC0415 (the ROS environment only here)
    node = subprocess.Popen([sys.executable, '-m', 'toio_navigator.nodes.navigator', '--ros-args', '-p',
                             'cubes:=[cube1]'], env=ros_env(next_domain_id()), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert 'navigator: 1 cubes' in node.stdout.readline()
        while node.poll() is None:
            node.send_signal(signal.SIGINT)
            time.sleep(0.005)
        out = node.stdout.read()
    finally:
        if node.poll() is None:
            node.kill()
    assert node.returncode == 0 and 'Traceback' not in out, out
