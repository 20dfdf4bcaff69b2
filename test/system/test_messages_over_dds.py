"""The real ROS 2 stack: our messages are built, and they cross real DDS between two processes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import next_domain_id

PROBE = Path(__file__).resolve().parents[1] / 'support' / 'pubsub_probe.py'


def test_custom_messages_are_built_with_documented_constants():
    msg = pytest.importorskip('toio_navigator.msg')
    state = msg.CubeState()
    assert state.link_state == msg.CubeState.LINK_DISCONNECTED
    assert msg.NavGoal.AWAY == 1 and msg.NavGoal.STOP == 2
    assert len(msg.IrRanges().ranges) == 6
    cmd = msg.MotorCommand(left=-115, right=115, duration_ms=100)
    assert (cmd.left, cmd.right, cmd.duration_ms) == (-115, 115, 100)
    arena = msg.ArenaState(images=[msg.ArenaImage(id=3, x=4, y=5, face='N')])
    assert arena.images[0].face == 'N'


def test_cube_state_crosses_dds_between_two_processes(child_env):
    listener = subprocess.Popen([sys.executable, str(PROBE), 'listen', '10', '30'], env=child_env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    talker = subprocess.Popen([sys.executable, str(PROBE), 'talk', '40'], env=child_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        out, err = listener.communicate(timeout=60)
    finally:
        talker.terminate()
        talker.wait(timeout=10)
    assert listener.returncode == 0, err
    assert out.startswith('ok ')


def test_other_domain_does_not_hear_the_talker(child_env, ros_domain):
    """The isolation the whole suite relies on: a listener on another domain receives nothing."""
    other = dict(child_env, ROS_DOMAIN_ID=str(next_domain_id()))
    listener = subprocess.Popen([sys.executable, str(PROBE), 'listen', '1', '3'], env=other,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    talker = subprocess.Popen([sys.executable, str(PROBE), 'talk', '6'], env=child_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        listener.communicate(timeout=30)
    finally:
        talker.terminate()
        talker.wait(timeout=10)
    assert listener.returncode == 2
