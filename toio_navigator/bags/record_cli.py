"""`toio-nav record`: record live topics into a rosbag2 (mcap by default, sqlite3 on request).

The stand-in for ``ros2 bag record`` on a machine without rosbag2. Our own message types are embedded in the bag
(rosbags writes each connection's full ``.msg`` definition and its RIHS01 type hash), so ``ros2 bag info`` and
``ros2 bag play`` on a lab machine read it without our package. The recording node runs alone in its executor, so
no other work delays the subscriptions (a busy executor makes a recorder drop messages).

If a navigator node is running, its parameters are stored in the bag's ``custom_data`` (key
:data:`PARAMETERS_KEY`, JSON), so ``toio-nav replay`` rebuilds the same navigator without a YAML file.
"""
from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import math
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import rclpy
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from toio_navigator.bags.record import FLUSH_PERIOD_S, STORAGES, BagError, BagWriter
from toio_navigator.lifecycle import STOP_REPORT_S, StopRequest

PARAMETERS_KEY = 'toio_navigator.navigator_parameters'   # custom_data key: JSON {name: value}
NAVIGATOR_NODE = '/navigator'
#: messages of one topic a subscription's callback writes at most in one go (the one it was called with, then what
#: was queued behind it): the topics take turns
TAKE_BATCH = 50
DRAIN_CAP_S = 10.0    # a recorder still behind after this long on a stop gives up the rest (and says so)
#: on a stop, the topics that have not given a message published after it count as having nothing more once
#: nothing was written for this long, over at least DRAIN_QUIET_POLLS polls of the executor: a recorder seconds
#: behind on a loaded machine may find nothing ready in a few quick polls (its process was not run) while the
#: messages published before the stop are still coming
DRAIN_QUIET_S = 0.5
DRAIN_QUIET_POLLS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('topics', nargs='*', metavar='TOPIC',
                        help='topics to record (relative names get a leading /); none = every topic')
    parser.add_argument('-o', '--out', type=Path, default=None,
                        help='bag directory to create (default bags/run_<UTC time>)')
    parser.add_argument('-s', '--storage', choices=STORAGES, default='mcap', help='storage plugin (default mcap)')
    parser.add_argument('--exclude', action='append', default=[], metavar='TOPIC', help='do not record TOPIC')
    parser.add_argument('--include-hidden-topics', action='store_true',
                        help='with no TOPIC given, also record hidden topics (a name part starting with "_", such '
                             'as action feedback and status)')
    parser.add_argument('-d', '--duration', type=float, default=None,
                        help='stop after this many seconds (default: until Ctrl-C)')
    parser.add_argument('--navigator', default=NAVIGATOR_NODE,
                        help='node whose parameters are stored in the bag (default /navigator; "" = none)')


def default_out() -> Path:
    return Path('bags') / datetime.now(timezone.utc).strftime('run_%Y%m%d_%H%M%S')


class ParameterGrabber:
    """Reads every parameter of node ``target`` once it answers (asynchronously: the recording never waits), and
    stores them in the bag's custom_data. ``poll`` is called from a timer until it has them."""

    def __init__(self, node, writer: BagWriter, target: str) -> None:
        self.writer, self.target = writer, target
        self.client = AsyncParameterClient(node, target)
        self.busy = False
        self.parameters: dict | None = None

    def poll(self) -> None:
        if self.parameters is not None or self.busy or not self.client.services_are_ready():
            return
        self.busy = True
        self.client.list_parameters().add_done_callback(self._listed)

    def _listed(self, future) -> None:
        result = future.result()
        if result is None:
            self.busy = False
            return
        names = list(result.result.names)
        self.client.get_parameters(names).add_done_callback(lambda f: self._got(names, f))

    def _got(self, names: list[str], future) -> None:
        self.busy = False
        result = future.result()
        if result is None:
            return
        self.parameters = {n: _storable(parameter_value_to_python(v)) for n, v in zip(names, result.values)}
        try:
            self.writer.set_custom_data(PARAMETERS_KEY, json.dumps(dict(sorted(self.parameters.items()))))
        except BagError:
            self.parameters = None         # the bag closed before the answer came: say so at the end


class TopicRecorder:
    """Record live topics of a ROS graph into a :class:`BagWriter` through an rclpy ``node``.

    ``topics`` None = every topic discovered (re-checked by :meth:`discover`, e.g. from a timer) except hidden
    ones (a name part starting with ``_``, such as an action's feedback and status topics), as ``ros2 bag record
    -a`` does, unless ``include_hidden``; otherwise only those names. Topics whose type the typestore does not
    know are skipped and listed in ``skipped``.
    """

    def __init__(self, node, writer: BagWriter, topics: Iterable[str] | None = None,
                 exclude: Iterable[str] = (), include_hidden: bool = False) -> None:
        self.node = node
        self.writer = writer
        self.only = None if topics is None else {self._absolute(t) for t in topics}
        self.exclude = {self._absolute(t) for t in exclude}
        self.include_hidden = include_hidden
        self.skipped: dict[str, str] = {}
        self.newest_source_ns: dict[str, int] = {}    # per topic: when the newest written message was published
        self.closed_to_new = False                    # stopping: no new subscription
        self._subs: dict[str, object] = {}

    def _absolute(self, topic: str) -> str:
        return topic if topic.startswith('/') else '/' + topic

    def discover(self) -> int:
        """Subscribe to newly seen topics; returns how many topics are being recorded."""
        # best effort matches reliable, best-effort and latched publishers alike; deep enough for bursts. Not
        # reliable even where the publishers are: one sample lost on a busy host then holds back every later one
        # until DDS repairs it (seconds), and a recorder stopped meanwhile loses the run's last seconds
        qos = QoSProfile(depth=200, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
        # and no event handlers: a best-effort volatile reader is compatible with every writer, and rclpy's two
        # default handlers per topic would be checked on every wait of the executor (nodes/lean_node.py)
        events = SubscriptionEventCallbacks(use_default_callbacks=False)
        if self.closed_to_new:
            return len(self._subs)
        for name, types in self.node.get_topic_names_and_types():
            if name in self._subs or name in self.skipped or name in self.exclude:
                continue
            if self.only is not None and name not in self.only:
                continue
            if self.only is None and not self.include_hidden and any(p.startswith('_') for p in name.split('/')):
                continue
            msgtype = types[0]
            if not self.writer.knows(msgtype):
                self.skipped[name] = f'type {msgtype} unknown to the bag'
                continue
            pkg, kind, cls_name = msgtype.split('/')
            try:
                cls = getattr(importlib.import_module(f'{pkg}.{kind}'), cls_name)
            except (ImportError, AttributeError) as exc:
                self.skipped[name] = f'type {msgtype} not importable: {exc}'
                continue
            self.writer.add_topic(name, msgtype)
            self._subs[name] = self.node.create_subscription(
                cls, name, lambda raw, info, n=name: self._write(n, raw, info), qos, raw=True, event_callbacks=events)
        return len(self._subs)

    def _write(self, topic: str, raw: bytes, info) -> None:
        """Write a message the executor took, then what else the topic has queued, up to :data:`TAKE_BATCH`: a
        recorder behind on a loaded machine catches up at a fraction of the executor's cost per message (three
        quarters of a message's CPU here; the 4-cube demo's recorder, beside a loaded test run, was still
        draining ten topics 10 s after its stop and gave the rest up)."""
        clock = self.node.get_clock()
        sub = self._subs.get(topic)
        for left in range(TAKE_BATCH, -1, -1):
            self.writer.write(topic, clock.now().nanoseconds, raw)
            self.newest_source_ns[topic] = info['source_timestamp']
            if not left or sub is None:
                break
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
            if taken is None:
                break
            raw, info = taken

    def drop_caught_up(self, stop_ns: int) -> bool:
        """Stop listening to every topic that has given a message published at or after ``stop_ns`` (system
        clock, as DDS source timestamps are): what it published before the stop is in the bag (or was lost by
        DDS). From now on no topic is added. True once no topic is left. (The states of cubes still running
        would otherwise keep a drain busy for ever while a quiet topic, a goal sent once, holds it open. Kept
        subscribed, a loaded recorder's drain took every cube's states too, and ran out of time.)"""
        self.closed_to_new = True
        for topic in [t for t in self._subs if self.newest_source_ns.get(t, 0) >= stop_ns]:
            self.node.destroy_subscription(self._subs.pop(topic))
        return not self._subs

    def stop(self) -> None:
        for sub in self._subs.values():
            self.node.destroy_subscription(sub)
        self._subs.clear()


def _storable(value):
    """JSON-friendly parameter value (arrays come back as array.array / numpy)."""
    if isinstance(value, (list, tuple)) or hasattr(value, 'tolist'):
        return [v for v in (value.tolist() if hasattr(value, 'tolist') else value)]
    return value


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and not (args.duration > 0 and math.isfinite(args.duration)):
        print('toio-nav record: --duration must be > 0 (a finite number of seconds)', file=sys.stderr)
        return 2
    out = args.out or default_out()
    stop = StopRequest()
    stop.install()           # first: a signal during the slow start-up below must stop us cleanly too
    try:
        return _record(args, out, stop)
    finally:
        stop.restore()


def _drain(executor, recorder: TopicRecorder, writer: BagWriter, context) -> bool:
    """Write what was published before the stop: a recorder seconds behind on a loaded host still records the
    last result a demo waited for. Takes messages until every topic has given one published after the stop
    (each such topic is then left alone), or until the rest have been quiet (:data:`DRAIN_QUIET_S`: topics gone
    quiet, a goal sent once); False if :data:`DRAIN_CAP_S` ran out first."""
    stop_ns = time.time_ns()
    until = time.monotonic() + DRAIN_CAP_S
    written, last_write, polls = sum(writer.counts.values()), time.monotonic(), 0
    while context.ok() and not recorder.drop_caught_up(stop_ns):
        if time.monotonic() >= until:
            return False
        executor.spin_once(timeout_sec=0.05)
        count = sum(writer.counts.values())
        if count != written:
            written, last_write, polls = count, time.monotonic(), 0
            continue
        polls += 1
        if polls >= DRAIN_QUIET_POLLS and time.monotonic() - last_write >= DRAIN_QUIET_S:
            break
    return True


def _record(args: argparse.Namespace, out: Path, stop: StopRequest) -> int:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        writer = BagWriter(out, args.storage)
    except (BagError, OSError) as exc:
        print(f'toio-nav record: {exc}', file=sys.stderr)
        return 2
    started = time.monotonic()
    recorder = grabber = None
    context = node = executor = None
    try:
        context = rclpy.Context()
        # our own context: rclpy installs no signal handler of its own (ours above stay in charge)
        rclpy.init(context=context)
        node = Node('toio_nav_record', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        recorder = TopicRecorder(node, writer, args.topics or None, exclude=args.exclude,
                                 include_hidden=args.include_hidden_topics)
        recorder.discover()
        node.create_timer(0.5, recorder.discover)
        grabber = ParameterGrabber(node, writer, args.navigator) if args.navigator else None
        if grabber is not None:
            node.create_timer(1.0, grabber.poll)
            grabber.poll()
        print(f'toio-nav record: recording {"every topic" if not args.topics else ", ".join(args.topics)} '
              f'into {out} ({args.storage}); Ctrl-C to stop', flush=True)
        deadline = None if args.duration is None else started + args.duration
        flushed = time.monotonic()
        while not stop and context.ok() and (deadline is None or time.monotonic() < deadline):
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() - flushed >= FLUSH_PERIOD_S:
                writer.flush()
                flushed = time.monotonic()
        # a recorder still draining when its supervisor's patience (the demo's 15 s) is nearly over writes every
        # thread's stack to stderr, its log, to say where it hangs (one was killed once, its log silent)
        faulthandler.dump_traceback_later(DRAIN_CAP_S + STOP_REPORT_S, exit=False)
        if not _drain(executor, recorder, writer, context):
            print(f'toio-nav record: still behind {DRAIN_CAP_S:.0f} s after the stop: the last messages published '
                  'before it are not in the bag', file=sys.stderr)
    except ExternalShutdownException:
        pass
    finally:
        faulthandler.cancel_dump_traceback_later()     # (the drain is over; finalising is slow but not stuck)
        writer.close()                     # first: a DDS teardown that hangs below (README, "Stopping") keeps it
        finalised = time.monotonic()
        faulthandler.dump_traceback_later(STOP_REPORT_S, exit=True)   # and then it exits by itself
        if recorder is not None:
            recorder.stop()
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        if context is not None:
            rclpy.try_shutdown(context=context)
        faulthandler.cancel_dump_traceback_later()
    total = sum(writer.counts.values())
    how = f' after {stop.name}, finalised in {finalised - stop.at:.2f} s' if stop else ''
    print(f'toio-nav record: wrote {total} messages on {sum(1 for n in writer.counts.values() if n)} topics in '
          f'{time.monotonic() - started:.1f} s -> {out}{how}', flush=True)
    if grabber is not None and grabber.parameters is None:
        print(f'toio-nav record: {args.navigator} never answered: its parameters are not in the bag (replay will '
              'use --params-file or config/navigator.yaml)', file=sys.stderr)
    for name, reason in sorted(recorder.skipped.items()):
        print(f'  skipped {name}: {reason}', file=sys.stderr)
    if args.topics:
        missing = sorted({t if t.startswith('/') else '/' + t for t in args.topics} - set(writer.counts))
        if missing:
            print(f'toio-nav record: never seen: {", ".join(missing)}', file=sys.stderr)
    return 0
