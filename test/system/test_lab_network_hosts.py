"""The lab network itself (test/support/lab_network.py): hosts on one bridge inside namespaces of their own, nothing in
the machine's own network, and nothing left behind, even when the process that built the lab was killed."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.lab_network import LabNetwork, namespaces, pids_in, remove_orphans, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f'no lab network on this machine: {REASON}')
SUPPORT = Path(__file__).resolve().parents[1] / 'support'


def ip(*args: str) -> str:
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=True).stdout


def wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_hosts_are_joined_by_a_bridge_of_their_own_and_everything_goes_away():
    own_links = ip('-o', 'link')
    with LabNetwork(('a', 'b')) as lab, LabNetwork(('a', 'b')) as other:
        assert lab.tag != other.tag                       # two labs at once never share a name
        ours = [n for n in namespaces() if n.startswith(lab.tag)]
        assert sorted(ours) == sorted(lab.ns(h) for h in ('a', 'b', 'switch'))
        for host in ('a', 'b'):
            links = ip('-n', lab.ns(host), '-o', 'addr')
            assert f'inet {lab.address(host)}/24' in links
            assert '<LOOPBACK,UP,' in ip('-n', lab.ns(host), 'link', 'show', 'lo')
        ports = ip('-n', lab.ns('switch'), '-o', 'link', 'show', 'master', 'br0')
        assert 'port-a' in ports and 'port-b' in ports
        lab.set_link('b', up=False)
        assert 'state DOWN' in ip('-n', lab.ns('switch'), 'link', 'show', 'port-b')
        lab.set_link('b', up=True)
        sleeper = lab.start('a', ['sleep', '60'], lab.env(1))
        assert wait_for(lambda: sleeper.pid in pids_in(lab.ns('a')))
        assert ip('-o', 'link') == own_links              # nothing was added to the machine's own network
    assert sleeper.poll() is not None
    assert not [n for n in namespaces() if n.startswith((lab.tag, other.tag))]
    assert ip('-o', 'link') == own_links


def test_a_lab_whose_creator_was_killed_is_removed_by_the_next_one():
    creator = subprocess.Popen(
        [sys.executable, '-c', 'import sys, time; sys.path.insert(0, sys.argv[1]); '
                               'from lab_network import LabNetwork; lab = LabNetwork(("a",)).create(); '
                               'lab.start("a", ["sleep", "60"], lab.env(1)); print(lab.tag, flush=True); '
                               'time.sleep(60)', str(SUPPORT)],
        stdout=subprocess.PIPE, text=True)
    tag = creator.stdout.readline().strip()
    assert tag and wait_for(lambda: pids_in(f'{tag}-a'))
    creator.send_signal(signal.SIGKILL)
    creator.wait()
    # its process inside the lab died with it (parent-death signal); the namespaces stay until the next lab
    assert wait_for(lambda: not pids_in(f'{tag}-a'))
    assert f'{tag}-a' in namespaces()
    assert f'{tag}-a' in remove_orphans() and f'{tag}-switch' not in namespaces()
