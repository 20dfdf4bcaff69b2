"""The one ``main()`` of every node module: start ROS, build the node, spin until asked to stop, stop in order.

    def main(args=None) -> int:
        return run_node('mat_sim', MatSimNode, errors=(MatSimError, ParameterException), args=args)

Stopping: SIGINT, SIGTERM and SIGHUP only ask for a stop (:class:`toio_navigator.lifecycle.StopRequest`;
rclpy's own handlers are not installed, they would invalidate the context while callbacks still run). The
loop then stops the executor (no callback runs any more), destroys the node -- each node's ``destroy_node``
stops what it drives first, e.g. the cube driver sends its cube a stop -- and only then shuts ROS down. A node
started by a supervisor (bringup, demo) also stops when the supervisor dies (:func:`die_with_parent`).

Exit codes: 0 after a normal stop, 2 if ROS cannot start or the node refuses its parameters (the error, one
line, on stderr, prefixed with the node's name; no traceback). A supervisor reads 2 as "refused at start-up".
"""
from __future__ import annotations

import faulthandler
import os
import sys
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from toio_navigator.lifecycle import REFUSED, STOP_REPORT_S, StopRequest, die_with_parent

try:    # rclpy's EventsExecutor is experimental in Jazzy and may be missing from other builds
    from rclpy.experimental import EventsExecutor
except ImportError:
    EventsExecutor = None


def make_executor(context=None):
    """The executor of every node and of a --single bringup: rclpy's EventsExecutor where it exists (Jazzy:
    rclpy.experimental), whose dispatch is much cheaper than the SingleThreadedExecutor's wait-set rebuild (which
    dominates the state -> command path at 10 cubes, and took half the CPU of an 8-cube bringup's drivers and
    simulator). TOIO_NAV_EXECUTOR=single selects the SingleThreadedExecutor. Both run every callback inside
    spin_once, so nothing runs once the loop has left."""
    if EventsExecutor is not None and os.environ.get('TOIO_NAV_EXECUTOR', 'events') != 'single':
        return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


def run_node(name: str, factory: Callable[[], object], errors: tuple[type[BaseException], ...] = (ValueError,),
             args: list[str] | None = None, error_prefix: str = '') -> int:
    """Run one node on an executor of its own (:func:`make_executor`'s) until a stop.

    ``factory()`` builds the node after rclpy.init; any of ``errors`` it raises is a bad configuration
    (``<name>: <error_prefix><error>`` on stderr, exit 2). The loop spins at most 0.1 s at a time, so a stop
    request is seen within that."""
    stop = StopRequest().install()      # first: a signal during the slow start-up must stop us cleanly too
    die_with_parent()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:   # rclpy raises its own types for bad --ros-args, a second init, ...
        print(f'{name}: cannot start ROS: {exc}', file=sys.stderr)
        return REFUSED
    node = spinner = None
    try:
        try:
            node = factory()
        except errors as exc:
            print(f'{name}: {error_prefix}{exc}', file=sys.stderr)
            return REFUSED
        spinner = make_executor()
        spinner.add_node(node)
        try:
            while not stop and rclpy.ok():
                spinner.spin_once(timeout_sec=0.1)
        except ExternalShutdownException:
            pass
    finally:
        # still alive after STOP_REPORT_S: every thread's stack to stderr (the node's log) and exit (status 1)
        faulthandler.dump_traceback_later(STOP_REPORT_S, exit=True)
        if spinner is not None:
            spinner.shutdown()          # no callback runs after this; the context is still valid
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        stop.restore(exiting=True)
    return 0
