"""Why a cube driver's stamped motor command arrived late, said only as far as the driver can know it.

A command is late when it arrives after its stamp + duration (it is dropped). That can be a busy host (the
navigator or this driver not run in time), a slow link, or, only between two hosts, clocks that disagree. The
driver tells them apart as far as it can:

* every publisher of ``motor_cmd`` on this host (their DDS endpoint ids carry the host: Fast DDS writes a host id
  into every GUID) -> one clock, so never a clock problem: a busy host or a held-up delivery;
* otherwise the recent commands: when every one of the last :data:`WINDOW` arrived at least :data:`SKEW_FLOOR_S`
  after its stamp, the offset is steady, which is what clocks apart look like (or a link slow all the time);
  when others arrive promptly, this one was held up.

A stamp from the future (further than FUTURE_TOLERANCE_S) always means the clocks disagree.
"""
from __future__ import annotations

import collections

from rclpy.node import Node

#: commands the driver remembers the arrival age of
WINDOW = 50
#: the least age of every recent command at which a steady offset (clocks apart) is suspected
SKEW_FLOOR_S = 0.05
_EPROSIMA = b'\x01\x0f'          # Fast DDS's vendor id, the first two bytes of its GUIDs; the host id follows


def same_host(gid_a: bytes, gid_b: bytes) -> bool | None:
    """Whether two Fast DDS endpoints are on one host (None: not both Fast DDS, cannot tell)."""
    if gid_a[:2] != _EPROSIMA or gid_b[:2] != _EPROSIMA:
        return None
    return gid_a[2:4] == gid_b[2:4]


class LateCommands:
    """The arrival ages of ``node``'s recent commands on ``topic`` and, for a late one, the likely reason."""

    def __init__(self, node: Node, topic: str = 'motor_cmd') -> None:
        self.node, self.topic = node, topic
        self.ages: collections.deque[float] = collections.deque(maxlen=WINDOW)

    def arrived(self, age_s: float) -> None:
        self.ages.append(age_s)

    def senders_on_this_host(self) -> bool | None:
        """True if every publisher of the topic runs on this host (None: cannot tell)."""
        node, topic = self.node, self.node.resolve_topic_name(self.topic)
        ours = [bytes(i.endpoint_gid) for i in node.get_subscriptions_info_by_topic(topic)
                if i.node_name == node.get_name() and i.node_namespace == node.get_namespace()]
        senders = [bytes(i.endpoint_gid) for i in node.get_publishers_info_by_topic(topic)]
        if not ours or not senders:
            return None
        verdicts = [same_host(ours[0], gid) for gid in senders]
        return None if None in verdicts else all(verdicts)

    def reason(self, age_s: float) -> str:
        """Why a command this old on arrival (negative: stamped in the future) was late, in words."""
        if age_s < 0:
            return ("the sender's clock is ahead of this host's: run chrony/NTP on both, or set expire_by_stamp "
                    'false; it runs from its arrival')
        local = self.senders_on_this_host()
        if local:
            return ('the sender runs on this host, so one clock: the host was too busy to send or take it in time, '
                    'or its delivery was held up')
        floor = min(self.ages, default=age_s)
        if len(self.ages) == WINDOW and floor >= SKEW_FLOOR_S:
            return (f'each of the last {WINDOW} commands was at least {floor * 1000.0:.0f} ms old on arrival: the '
                    "sender's clock is behind this host's (run chrony/NTP on both, or set expire_by_stamp false) "
                    'or the link is that slow')
        return (f'others arrived within {floor * 1000.0:.0f} ms of their stamp: a busy host or the link held this '
                'one up')
