"""Shared test fixtures.

DDS isolation: every test that starts ROS processes gets its own ROS_DOMAIN_ID (from a per-run base, so two test
runs on one machine do not see each other) and localhost-only discovery.
"""
from __future__ import annotations

import fcntl
import itertools
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from toio_navigator.launching import profiles

REPO = Path(__file__).resolve().parent.parent
# Domain ids are leased across processes: two test runs on one machine (two checkouts, CI beside a developer)
# must never share a domain, or one run's nodes answer the other's. A lease is an flock on a file per id, held
# until this pytest process exits (the kernel drops it even on SIGKILL).
_LEASE_DIR = Path(os.environ.get('TOIO_NAV_DOMAIN_LEASES', '/tmp/toio_nav_domain_leases'))
_DOMAIN_RANGE = range(100, 230)          # Fast DDS computes ports from the id: 0..232 are usable
_LEASES: list = []                       # open lease files, kept for the life of the process
_NEXT = itertools.count((os.getpid() * 7) % len(_DOMAIN_RANGE))


def _lease_domain() -> tuple[int, object]:
    """(domain id, its lease file): an id no other process on this machine holds."""
    _LEASE_DIR.mkdir(parents=True, exist_ok=True)
    for _ in range(len(_DOMAIN_RANGE)):
        domain = _DOMAIN_RANGE[next(_NEXT) % len(_DOMAIN_RANGE)]
        f = open(_LEASE_DIR / f'{domain}.lock', 'a')
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        return domain, f
    raise RuntimeError(f'every ROS domain id in {_DOMAIN_RANGE} is leased by another test run')


def next_domain_id() -> int:
    """A leased DDS domain id, held until this process exits (module-scoped users)."""
    domain, lease = _lease_domain()
    _LEASES.append(lease)
    return domain


def ros_env(domain_id: int) -> dict[str, str]:
    """The environment for a child process that must talk DDS only to this test."""
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = str(domain_id)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env.pop('ROS_LOCALHOST_ONLY', None)
    env['PYTHONUNBUFFERED'] = '1'
    if 'AMENT_PREFIX_PATH' not in env:
        env['AMENT_PREFIX_PATH'] = sys.prefix
    return env


@pytest.fixture
def ros_domain():
    """A fresh DDS domain for this test, leased until the test ends."""
    domain, lease = _lease_domain()
    yield domain
    lease.close()                        # closing the file drops the flock


@pytest.fixture
def child_env(ros_domain: int) -> dict[str, str]:
    return ros_env(ros_domain)


@pytest.fixture
def ros(ros_domain: int):
    """An rclpy context of its own on this test's DDS domain (in-process nodes), shut down after the test."""
    # optional: every test module loads this file, and the core's tests run without ROS
    import rclpy  # noqa: PLC0415 optional, see above

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    yield context
    rclpy.try_shutdown(context=context)


def spin_until(executor, predicate, timeout: float = 10.0) -> bool:
    """Spin ``executor`` until ``predicate()`` holds or ``timeout`` seconds pass; the predicate's last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.02)
    return predicate()


def longest_gap(stamps, t0: float, t1: float) -> float:
    """The longest time within [t0, t1] (seconds) with none of ``stamps``: how long a node that stamps a message
    every few milliseconds (mat_sim's ground truth, the navigator's ticks) was kept from running."""
    inside = sorted(t for t in stamps if t0 <= t <= t1)
    return float(max(b - a for a, b in zip([t0, *inside], [*inside, t1])))


def navigator_setting(name: str):
    """A navigator parameter as the shipped config/navigator.yaml sets it (what every bringup of the tests runs)."""
    return yaml.safe_load((profiles.config_dir() / 'navigator.yaml').read_text())['navigator']['ros__parameters'][name]


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    config.addinivalue_line('markers', 'ros: needs rclpy and the built messages')
