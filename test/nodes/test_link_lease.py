"""The simulated BLE link's view of a peer's DDS liveliness (nodes/qos.Lease): a lease that ran out counts as a
lost peer only once it stayed out for the grace, so a process a busy host did not run for a moment keeps its link,
and a dead one is still noticed. Fed with the events rclpy delivers, on a clock the test moves."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip('rclpy')

from toio_navigator.nodes.qos import LINK_GRACE_S, Lease  # noqa: E402

RAN_OUT = SimpleNamespace(alive_count=0, not_alive_count=1, alive_count_change=-1, not_alive_count_change=1)
ALIVE = SimpleNamespace(alive_count=1, not_alive_count=0, alive_count_change=1, not_alive_count_change=-1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_lease_regained_within_the_grace_is_never_lost_and_one_that_stays_out_is():
    clock = Clock()
    lease = Lease(clock=clock)
    lease.on_event(RAN_OUT)                 # the peer was not run for LINK_LEASE_S / 3
    clock.now += LINK_GRACE_S * 0.9
    assert not lease.lost()
    lease.on_event(ALIVE)                   # it ran again: its middleware asserts the lease at once
    clock.now += 10.0
    assert not lease.lost()
    lease.on_event(RAN_OUT)                 # dead this time
    clock.now += LINK_GRACE_S
    assert lease.lost()


def test_a_frame_from_the_peer_proves_it_alive_and_a_second_event_does_not_restart_the_grace():
    clock = Clock()
    lease = Lease(clock=clock)
    lease.on_event(RAN_OUT)
    clock.now += LINK_GRACE_S / 2
    lease.on_event(RAN_OUT)                 # another writer of the same peer: the first lapse still counts
    clock.now += LINK_GRACE_S / 2
    assert lease.lost()
    lease.heard()
    assert not lease.lost()

