"""Endpoints without rclpy's default event handlers: each one is checked on every wait of a SingleThreadedExecutor
(a four-cube ``bringup --single`` had about 250, half its CPU), so every node of the package is a LeanNode."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from rclpy.event_handler import SubscriptionEventCallbacks  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from toio_navigator.nodes.lean_node import LeanNode  # noqa: E402

NODES_DIR = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'nodes'


def test_a_lean_nodes_endpoints_have_no_handlers_unless_asked_and_a_plain_node_has_two_each(ros):
    lean, plain = LeanNode('lean', context=ros), Node('plain', context=ros)
    try:
        assert lean.create_publisher(String, 'a', 10).event_handlers == []
        assert lean.create_subscription(String, 'a', lambda _: None, 10).event_handlers == []
        asked = lean.create_subscription(String, 'b', lambda _: None, 10, event_callbacks=SubscriptionEventCallbacks(
            liveliness=lambda _: None, use_default_callbacks=False))
        assert len(asked.event_handlers) == 1
        # what rclpy does without it: an incompatible-QoS and an incompatible-type handler per endpoint
        assert len(plain.create_publisher(String, 'a', 10).event_handlers) == 2
        assert len(plain.create_subscription(String, 'a', lambda _: None, 10).event_handlers) == 2
    finally:
        lean.destroy_node()
        plain.destroy_node()


def test_every_node_class_of_the_package_is_a_lean_node():
    bases = {}          # class name -> the names of its bases, for every class in nodes/ and the demo
    for path in [*NODES_DIR.glob('*.py'), NODES_DIR.parent / 'demo_cli.py']:
        for item in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(item, ast.ClassDef):
                bases[item.name] = {b.id for b in item.bases if isinstance(b, ast.Name)}
    assert {n for n, b in bases.items() if 'LeanNode' in b} >= {
        'NavigatorNode', 'CubeDriverNode', 'MatSimNode', 'ArenaExplorerNode', 'VirtualIrNode'}
    assert [n for n, b in bases.items() if 'Node' in b and n != 'LeanNode'] == []
