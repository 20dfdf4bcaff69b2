"""The web_console node as `ros2 run` starts it: bad parameters and a taken port stop it at start-up with the reason
(exit 2, as every node), and serving the lab network is said out loud."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')


def start(env, *params: str) -> subprocess.Popen:
    args = [sys.executable, '-m', 'toio_navigator.nodes.web_console', '--ros-args', '-p', 'cubes:=[cube1]']
    for p in params:
        args += ['-p', p]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_bad_parameter_or_a_taken_port_stops_it_with_the_reason(child_env):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        procs = [start(child_env, 'lost_s:=0.2'), start(child_env, f'port:={port}'), start(child_env, 'port:=70000')]
        out = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [2, 2, 2], out
    assert 'web_console: parameter lost_s: must be greater than stale_s (0.5), got 0.2' in out[0]
    assert f'parameter port: cannot serve on 127.0.0.1:{port}: it is in use' in out[1]
    assert 'parameter port: must be an integer 0..65535, got 70000' in out[2]


def test_serving_the_lab_network_says_so(child_env, tmp_path):
    address = tmp_path / 'address.txt'
    proc = start(child_env, 'lab_network:=true', 'port:=0', f'address_file:={address}')
    try:
        deadline = time.monotonic() + 60.0
        while not address.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert address.read_text().startswith('http://127.0.0.1:')
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, out
    assert 'web console: serving the lab network on every interface' in out
    assert 'anyone who reaches this machine can open the page and send goals' in out
