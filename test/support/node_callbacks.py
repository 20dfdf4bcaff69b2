"""A node's ROS callbacks run in-process, found by the names the node declared (its topics, services, timers):
what an executor does with a message or a request, without DDS, so a rig can step a node in lock-step with a
fake world and still goes through the node's ROS interface, not its method names."""
from __future__ import annotations


def deliver(node, topic: str, msg) -> None:
    """Hand ``msg`` to the node's subscription on ``topic`` (a relative name resolves in the node's namespace)."""
    name = node.resolve_topic_name(topic)
    found = [s.callback for s in node.subscriptions if s.topic_name == name]
    if len(found) != 1:
        raise LookupError(f'{node.get_name()} has {len(found)} subscriptions on {name}')
    found[0](msg)


def call(node, service: str, request, response):
    """The node's answer to ``request`` on ``service``, as its executor would get it."""
    name = node.resolve_service_name(service)
    found = [s.callback for s in node.services if node.resolve_service_name(s.srv_name) == name]
    if len(found) != 1:
        raise LookupError(f'{node.get_name()} has {len(found)} services named {name}')
    return found[0](request, response)


def fire_timers(node) -> None:
    """Run the callback of every timer of the node once, as if each had just expired."""
    for timer in list(node.timers):
        timer.callback()
