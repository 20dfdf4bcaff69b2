"""Shared test fixtures.

DDS isolation: every test that starts ROS processes gets its own ROS_DOMAIN_ID (from a per-run base, so two test
runs on one machine do not see each other) and localhost-only discovery.
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_DOMAINS = itertools.count()
_DOMAIN_BASE = 100 + (os.getpid() % 13) * 9   # 100..216; each run walks up from its own base


def next_domain_id() -> int:
    return 100 + (_DOMAIN_BASE - 100 + next(_DOMAINS)) % 130


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
def ros_domain() -> int:
    """A fresh DDS domain for this test (also exported to this process for in-process nodes)."""
    return next_domain_id()


@pytest.fixture
def child_env(ros_domain: int) -> dict[str, str]:
    return ros_env(ros_domain)


@pytest.fixture
def ros(ros_domain: int):
    """An rclpy context of its own on this test's DDS domain (in-process nodes), shut down after the test."""
    import rclpy

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


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    config.addinivalue_line('markers', 'ros: needs rclpy and the built messages')
