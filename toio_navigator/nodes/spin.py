"""The one ``main()`` of every node module: start ROS, build the node, spin until Ctrl-C / SIGTERM, shut down.

    def main(args=None) -> int:
        return run_node('mat_sim', MatSimNode, errors=(MatSimError, ParameterException), args=args)

Exit codes: 0 after a normal stop, 2 if ROS cannot start or the node refuses its parameters (the error, one
line, on stderr, prefixed with the node's name; no traceback).
"""
from __future__ import annotations

import sys
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor


def run_node(name: str, factory: Callable[[], object], errors: tuple[type[BaseException], ...] = (ValueError,),
             args: list[str] | None = None, executor: Callable[[], object] | None = None,
             error_prefix: str = '') -> int:
    """Run one node in its own executor (``executor()``; default a SingleThreadedExecutor) until shutdown.

    ``factory()`` builds the node after rclpy.init; any of ``errors`` it raises is a bad configuration
    (``<name>: <error_prefix><error>`` on stderr, exit 2). The loop spins once per 0.1 s at most while the
    context is ok, so the shutdown rclpy's SIGINT/SIGTERM handler requests always ends it (a blocking spin()
    of some executors does not return on it)."""
    try:
        rclpy.init(args=args)
    except Exception as exc:   # rclpy raises its own types for bad --ros-args, a second init, ...
        print(f'{name}: cannot start ROS: {exc}', file=sys.stderr)
        return 2
    node = None
    try:
        try:
            node = factory()
        except errors as exc:
            print(f'{name}: {error_prefix}{exc}', file=sys.stderr)
            return 2
        except KeyboardInterrupt:   # Ctrl-C while the node was still starting: a stop, not a crash
            return 0
        spinner = executor() if executor is not None else SingleThreadedExecutor()
        spinner.add_node(node)
        try:
            while rclpy.ok():
                spinner.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        except RuntimeError:        # a signal landing inside rclpy's take; only a real error if ROS is still up
            if rclpy.ok():
                raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
