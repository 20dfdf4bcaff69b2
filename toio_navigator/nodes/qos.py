"""The QoS profiles of the package's own topics, defined once (sensor streams use rclpy's qos_profile_sensor_data)."""
from __future__ import annotations

import time

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

#: the simulated BLE link's DDS liveliness lease: asserted by the middleware's own thread, every 2/3 of the lease
#: (rmw_fastrtps), so it runs out LINK_LEASE_S / 3 after a process at the other end stops running, dead or only
#: starved. Without a lease DDS notices a dead participant only after its discovery lease (about 20 s).
LINK_LEASE_S = 0.6
#: a lease that ran out counts as a lost peer only if it is not regained within this long: a starved process
#: (a busy host can keep one from running for well over LINK_LEASE_S / 3; its lease comes back the moment it runs)
#: keeps its link, a dead one is noticed LINK_LEASE_S + LINK_GRACE_S after its death at the latest
LINK_GRACE_S = 0.9

#: a latched topic: a late subscriber (rviz, the demo) still gets the last value
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: arena/state: latched and deep enough that a subscriber keeps up with the MDF after every move
STATE_QOS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: the simulated BLE link (and mat_sim/contacts): reliable and deep enough that a burst of notifications
#: (settings replay, 10 cubes) is not dropped; liveliness with a lease of LINK_LEASE_S
BLE_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                     liveliness=LivelinessPolicy.AUTOMATIC, liveliness_lease_duration=Duration(seconds=LINK_LEASE_S))
#: /tf as tf2's broadcasters offer it (reliable, volatile, deep enough for a burst of transforms)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /tf_static: latched, so rviz2 started later still gets the static frames
TF_STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Lease:
    """A peer's DDS liveliness as a link acts on it: :meth:`lost` only once its lease ran out and was not regained
    (an "alive" event, or a frame from it) within ``grace_s``. Fed from the subscription's liveliness events."""

    def __init__(self, grace_s: float = LINK_GRACE_S, clock=time.monotonic) -> None:
        self.grace_s, self.clock = grace_s, clock
        self.lapsed_at: float | None = None      # when the lease ran out (None: it holds)

    def on_event(self, info) -> None:
        """A liveliness-changed event of the subscription (rclpy's QoSLivelinessChangedInfo)."""
        if info.alive_count > 0:
            self.lapsed_at = None
        elif info.not_alive_count_change > 0 and self.lapsed_at is None:
            self.lapsed_at = self.clock()

    def heard(self) -> None:
        """A frame from the peer: it lives."""
        self.lapsed_at = None

    def lost(self) -> bool:
        return self.lapsed_at is not None and self.clock() - self.lapsed_at >= self.grace_s
