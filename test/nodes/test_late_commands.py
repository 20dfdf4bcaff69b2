"""A cube driver blames clocks for a late motor command only where clocks can be to blame: never when the sender
runs on the same host (one clock), between hosts only when every recent command came equally late (a steady
offset), always for a stamp from the future."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from conftest import spin_until  # noqa: E402
from toio_navigator.msg import MotorCommand  # noqa: E402
from toio_navigator.nodes.late_commands import SKEW_FLOOR_S, WINDOW, LateCommands, same_host  # noqa: E402

HOST_A = bytes.fromhex('010f78fd655141390000000000001303')
HOST_A_OTHER_PROCESS = bytes.fromhex('010f78fd665120550000000000001303')
HOST_B = bytes.fromhex('010f1c2a655141390000000000001303')
CYCLONE = bytes.fromhex('0110aa5a' + '00' * 12)


def test_fast_dds_endpoint_ids_tell_the_host_and_other_ids_tell_nothing():
    assert same_host(HOST_A, HOST_A_OTHER_PROCESS) is True
    assert same_host(HOST_A, HOST_B) is False
    assert same_host(HOST_A, CYCLONE) is None


class RemoteSender:
    """The graph as a driver on host A sees it with the navigator on host B."""

    def __init__(self, sender=HOST_B) -> None:
        self.sender = sender

    def resolve_topic_name(self, topic):
        return f'/cube1/{topic}'

    def get_name(self):
        return 'cube_driver'

    def get_namespace(self):
        return '/cube1'

    def get_subscriptions_info_by_topic(self, _topic):
        return [SimpleNamespace(node_name='cube_driver', node_namespace='/cube1', endpoint_gid=HOST_A)]

    def get_publishers_info_by_topic(self, _topic):
        return [SimpleNamespace(endpoint_gid=self.sender)]


def test_between_hosts_only_a_steady_offset_is_taken_for_clocks():
    late = LateCommands(RemoteSender())
    for _ in range(WINDOW - 1):
        late.arrived(0.004)
    late.arrived(0.3)
    assert late.reason(0.3).startswith('others arrived within 4 ms of their stamp: a busy host or the link')
    for _ in range(WINDOW):
        late.arrived(SKEW_FLOOR_S + 0.25)
    assert "the sender's clock is behind this host's (run chrony/NTP on both" in late.reason(0.3)
    assert "the sender's clock is ahead of this host's: run chrony/NTP" in late.reason(-1.5)


def test_a_sender_on_this_host_is_never_blamed_on_clocks(ros):
    """Over DDS: the endpoint ids the driver reads from the graph, for a publisher in this process."""
    node = rclpy.create_node('cube_driver', namespace='/cube1', context=ros)
    sender = rclpy.create_node('navigator', context=ros)
    executor = rclpy.executors.SingleThreadedExecutor(context=ros)
    try:
        node.create_subscription(MotorCommand, 'motor_cmd', lambda _m: None, 10)
        sender.create_publisher(MotorCommand, '/cube1/motor_cmd', 10)
        executor.add_node(node)
        late = LateCommands(node)
        assert spin_until(executor, lambda: late.senders_on_this_host() is not None)
        for _ in range(WINDOW):
            late.arrived(0.4)           # every one late: a starved host, not a clock
        assert late.reason(0.4).startswith('the sender runs on this host, so one clock')
    finally:
        executor.shutdown()
        node.destroy_node()
        sender.destroy_node()
