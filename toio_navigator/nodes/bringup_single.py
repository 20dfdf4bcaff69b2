"""``toio-nav bringup --single``: every node of the bringup in this process, on one executor.

The only part of the bringup that needs rclpy: ``--processes`` (the default) and ``--dry-run`` start without it.
"""
from __future__ import annotations

import importlib
import sys
import time

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException

from toio_navigator.launching.supervisor import ros_args
from toio_navigator.lifecycle import REFUSED, StopRequest
from toio_navigator.nodes.spin import make_executor


def run_single(nodes, param_files, extra=None, duration: float | None = None) -> int:
    """Every node in this process on one executor (the navigator's: spin.make_executor); stopped like a node
    process (run_node): the executor first, then each node in reverse order (the simulator last), then ROS."""
    stop = StopRequest().install()
    context = rclpy.Context()
    created, executor = [], None
    try:
        rclpy.init(args=ros_args(param_files, '', extra), context=context)   # own context: no rclpy handlers
        for spec, ns in nodes:
            cls = getattr(importlib.import_module(spec.module), spec.node_class)
            kwargs = {'context': context}
            if ns:
                kwargs['namespace'] = ns
            try:
                created.append(cls(**kwargs))
            except (ValueError, ParameterException) as exc:
                print(f'bringup: {ns}/{spec.executable}: {exc}', file=sys.stderr)
                return REFUSED
            if stop:
                return 0
        executor = make_executor(context)
        for node in created:
            executor.add_node(node)
        deadline = None if duration is None else time.monotonic() + duration
        try:
            while not stop and context.ok() and (deadline is None or time.monotonic() < deadline):
                executor.spin_once(timeout_sec=0.1)
        except ExternalShutdownException:
            pass
    finally:
        if executor is not None:
            executor.shutdown()
        for node in reversed(created):
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        stop.restore(exiting=True)
    return 0
