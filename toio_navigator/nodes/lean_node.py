"""The rclpy Node every node and tool of the package builds on: its endpoints get no default event handlers.

rclpy gives each publisher and subscription two event handlers unless told otherwise (a warning on an
incompatible QoS, one on an incompatible type), and each handler is a waitable that rclpy's
SingleThreadedExecutor adds to its wait set, and checks, on every wait. A four-cube ``bringup --single`` has
about 250 of them: with the cubes standing, they took half of the process's CPU (51 % of a core; 25 % without
them), and beside two CPU burners that process fell seconds behind, so its motor commands expired. The recorder,
two per topic it records, paid the same. Such a mismatch is still reported by the other side's tools (rviz2,
``ros2 topic``, rosbag2 warn with their own handlers), and the package's own pairs are tested. Handlers a caller
asks for (a liveliness callback) are kept.
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
