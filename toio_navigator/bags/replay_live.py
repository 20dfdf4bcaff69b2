"""``toio-nav replay --live``: the recorded inputs published on real topics, at the recorded pace, into a running
navigator, and the NavResults it publishes compared with the recorded ones within tolerances.

Each NavResult says which state of its cube it was built on (``state_stamp``), so a live one is compared with the
recorded ones built on the same recorded state, give or take one, while pursuing the same goal: a busy machine
delays the replay and the navigator (both by most of a second under two CPU burners), which shifts every output
in time but not what it answers. Only a match within a margin is possible: the live navigator sees the other
cubes' states at other instants.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.bags.recording import ReplayError, read_recording, ros_time_ns, service_goals
from toio_navigator.bags.replay import FLOAT_FIELDS, Divergence, ReplayReport
from toio_navigator.msg import CubeState, NavGoal, NavResult

#: live mode: the navigator sees the states at slightly different times than in the recording, so its outputs
#: can only match within a margin (mat units for waypoints, motor units for speeds and wheels)
LIVE_TOLERANCES = {'waypoint_x': 10.0, 'waypoint_y': 10.0, 'speed_limit': 10.0, 'speed_ratio': 0.2, 'left': 15,
                   'right': 15}
LIVE_FIELDS = ('goal_id', 'active', 'waypoint_x', 'waypoint_y', 'speed_limit', 'speed_ratio')


def replay_live(bag: Path, tolerances: dict | None = None, rate: float = 1.0, wait_s: float = 10.0,
                subscribers: int = 1, on_start: Callable[[], None] | None = None) -> ReplayReport:
    """Publish the bag's states and goals (restamped with the current time, at the recorded pace ÷ ``rate``) to a
    running navigator and compare the NavResults it publishes with the recorded ones: each recorded tick against
    the live ones built on the same state (see :func:`compare_live`), within LIVE_TOLERANCES (or ``tolerances``).
    Publishing starts once every state and goal topic has ``subscribers`` subscribers (the navigator, and e.g. a
    recorder that must get every goal): discovery matches topics one by one, so a matched state topic does not
    mean the goal topic is matched too. ``on_start`` is called just before the first message is published (to
    time something against the replay: the wait for subscribers may take seconds on a busy machine)."""
    rec = read_recording(bag)
    tol = {**LIVE_TOLERANCES, **(tolerances or {})}
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('toio_nav_replay', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    live: dict[str, list] = {c: [] for c in rec.cubes}
    published: dict[tuple[str, int], int] = {}    # (cube, stamp a state was given) -> its recorded stamp
    state_pubs = {c: node.create_publisher(CubeState, f'/{c}/state', qos_profile_sensor_data) for c in rec.cubes}
    goal_pubs = {c: node.create_publisher(NavGoal, f'/{c}/goal', 10) for c in rec.cubes}
    started = [0.0]
    behind, sent = 0.0, []                    # the replay's own lag; (time, cube, goal_id) of each goal sent
    for c in rec.cubes:
        node.create_subscription(NavResult, f'/{c}/nav_result',
                                 lambda m, c=c: live[c].append((time.monotonic() - started[0], m)), 10)
    try:
        deadline = time.monotonic() + wait_s
        pubs = [*state_pubs.values(), *goal_pubs.values()]
        while any(p.get_subscription_count() < subscribers for p in pubs):
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() > deadline:
                short = next(p.topic_name for p in pubs if p.get_subscription_count() < subscribers)
                raise ReplayError(f'{short} has fewer than {subscribers} subscriber(s) after {wait_s:.0f} s: start a '
                                  f'navigator with these cubes ({", ".join(rec.cubes)}) and nothing else driving '
                                  'them')
        goals = list(rec.goals) + service_goals(rec)         # service goals: rebuilt from the NavResults
        events = [(s.stamp_ns, 0, s) for s in rec.states] + [(g.bag_ns, 1, g) for g in goals]
        events.sort(key=lambda e: (e[0], e[1]))
        t0 = rec.start_ns
        if on_start is not None:
            on_start()
        started[0] = time.monotonic()
        for ns, kind, item in events:
            due = (ns - t0) / 1e9 / rate
            while time.monotonic() - started[0] < due:
                executor.spin_once(timeout_sec=max(0.0, min(0.005, due - (time.monotonic() - started[0]))))
            behind = max(behind, time.monotonic() - started[0] - due)
            if kind == 0:
                msg = CubeState(cube=item.cube, x=item.x, y=item.y, theta=item.theta, on_mat=item.on_mat,
                                link_state=item.link_state)
                msg.header.stamp = node.get_clock().now().to_msg()
                msg.header.frame_id = 'mat'
                published[(item.cube, ros_time_ns(msg.header.stamp))] = item.stamp_ns
                state_pubs[item.cube].publish(msg)
            else:
                sent.append((time.monotonic() - started[0], item.cube, item.goal_id))
                goal_pubs[item.cube].publish(NavGoal(goal_id=item.goal_id, cube=item.msg_cube, x=item.x, y=item.y,
                                                     direction=item.direction, max_speed=item.max_speed,
                                                     tolerance=item.tolerance))
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.02)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    report = compare_live(rec, live, tol, published)
    report.notes.append(f'the replay published up to {behind:.2f} s behind the recorded pace')
    for at, cube, goal_id in sent:
        seen = next((t for t, m in live[cube] if t >= at and m.goal_id == goal_id), None)
        report.notes.append(f'goal {goal_id} of {cube}, sent at {at:.2f} s: ' + (
            f'in its NavResults {seen - at:.2f} s later' if seen is not None else 'never in its NavResults'))
    return report


def state_order(rec) -> dict[tuple[str, int], int]:
    """(cube, recorded stamp) -> the state's place in that cube's recorded sequence."""
    order: dict[tuple[str, int], int] = {}
    counts: dict[str, int] = {}
    for s in sorted(rec.states, key=lambda s: s.stamp_ns):
        if (s.cube, s.stamp_ns) not in order:
            order[(s.cube, s.stamp_ns)] = counts[s.cube] = counts.get(s.cube, -1) + 1
    return order


def compare_live(rec, live: dict, tol: dict, published: dict[tuple[str, int], int], reach: int = 1) -> ReplayReport:
    """Each recorded NavResult against the live ones of the same cube and goal built on the same recorded state,
    or on one up to ``reach`` states before or after it (the two navigators tick at other instants, so they pick
    neighbouring states). ``live``: cube -> [(seconds since the start, NavResult)] as received; ``published``:
    (cube, stamp the replay gave a state) -> the stamp it was recorded with."""
    report = ReplayReport(rec.path)
    report.notes.append('live mode: outputs compared within ' + ', '.join(f'{k} {v:g}' for k, v in tol.items()
                                                                         if k in LIVE_FIELDS))
    for c in rec.cubes:
        if not live.get(c):
            report.notes.append(f'the navigator published no /{c}/nav_result')
    order = state_order(rec)
    firsts = [min((s.stamp_ns for s in rec.states if s.cube == c), default=None) for c in rec.cubes]
    ready = max((f for f in firsts if f is not None), default=0) + 200_000_000   # the navigator has every cube
    # the live navigator may get its first states later than the recorded one did (states are best effort, and a
    # busy machine drops some while discovery settles): until it has published a NavResult built on a state of
    # every cube, its outputs answer other inputs than the recorded ones (a cube without a state is far away)
    seen = [min((at for at, m in live.get(c) or [] if ros_time_ns(m.state_stamp)), default=math.inf)
            for c, first in zip(rec.cubes, firsts) if first is not None]
    live_ready = max(seen, default=0.0)
    by_state: dict[tuple[str, int], list] = {}
    pursued = {(c, m.goal_id) for c, got in live.items() for _, m in got}
    for c, got in live.items():
        for at, m in got:
            k = order.get((c, published.get((c, ros_time_ns(m.state_stamp)))))
            if at >= live_ready and k is not None:
                by_state.setdefault((c, k), []).append(m)
    skipped, unmatched = 0, 0
    for tick in rec.ticks:
        t = (tick.stamp_ns - rec.start_ns) / 1e9
        if tick.stamp_ns < ready:
            skipped += 1
            continue
        counted = False
        for cube, recorded in tick.results.items():
            k = order.get((cube, recorded['state_stamp_ns']))
            neighbours = [] if k is None else [m for j in range(k - reach, k + reach + 1)
                                               for m in by_state.get((cube, j), [])]
            near = [m for m in neighbours if m.goal_id == recorded['goal_id']]
            # a goal that reached the live navigator late leaves states it answered with the previous goal; one
            # it never pursued is a divergence on every tick that shows it
            if not near and (not neighbours or (cube, recorded['goal_id']) in pursued):
                unmatched += 1
                continue
            near = near or neighbours
            counted = True
            report.compared['nav_result'] += 1
            bad = []
            for f in LIVE_FIELDS:
                a = recorded[f]
                if f in FLOAT_FIELDS:
                    ok = any(abs(a - getattr(m, f)) <= tol.get(f, 0) for m in near)
                else:
                    ok = any(a == getattr(m, f) for m in near)
                if not ok:
                    bad.append(Divergence(t, tick.stamp_ns, f'/{cube}/nav_result', f, a, getattr(near[0], f)))
            report.diverged['nav_result'] += bool(bad)
            report.divergences += bad[:max(0, 20 - len(report.divergences))]
        report.ticks += counted
    if skipped:
        report.notes.append(f'{skipped} leading ticks not compared: the navigator had no state of some cube yet')
    if unmatched:
        report.notes.append(f'{unmatched} recorded NavResults had no live one built on a neighbouring state with '
                            'the same goal')
    return report
