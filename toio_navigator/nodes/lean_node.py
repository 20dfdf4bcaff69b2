"""The rclpy Node of every node of the package and of the demos: its endpoints get no default event handlers.

rclpy gives each publisher and subscription two event handlers unless told otherwise (a warning on an
incompatible QoS, one on an incompatible type), and each handler is a waitable that rclpy's
SingleThreadedExecutor adds to its wait set, and checks, on every wait. A four-cube ``bringup --single`` has
about 250 of them: they took half of the process's CPU (51 % of a core with the cubes standing, 25 % without
them), and on a loaded machine that process once fell seconds behind, so its motor commands expired. A mismatch
is still reported by the other side's tools (rviz2, ``ros2 topic`` and rosbag2 warn with their own handlers), and
the package's own pairs are tested. Handlers a caller asks for (a liveliness callback) are kept. The recorder
(``toio-nav record``, in bags/, below this folder) asks for none on its subscriptions in the same way.
"""
from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node


class LeanNode(Node):
    """rclpy's Node, with ``use_default_callbacks=False`` where a caller passes no ``event_callbacks``."""

    def create_publisher(self, *args, event_callbacks: PublisherEventCallbacks | None = None, **kwargs):
        if event_callbacks is None:
            event_callbacks = PublisherEventCallbacks(use_default_callbacks=False)
        return super().create_publisher(*args, event_callbacks=event_callbacks, **kwargs)

    def create_subscription(self, *args, event_callbacks: SubscriptionEventCallbacks | None = None, **kwargs):
        if event_callbacks is None:
            event_callbacks = SubscriptionEventCallbacks(use_default_callbacks=False)
        return super().create_subscription(*args, event_callbacks=event_callbacks, **kwargs)
