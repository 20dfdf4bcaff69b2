"""``toio-nav replay --live``: the recorded inputs published on real topics, at the recorded pace, into a running
navigator, and the NavResults it publishes compared with the recorded ones within tolerances (the live navigator
sees each state at a slightly different time, so only a match within a margin is possible).
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.bags.replay import (
    FLOAT_FIELDS,
    Divergence,
    ReplayError,
    ReplayReport,
    read_recording,
    service_goals,
)
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
    the live NavResult of the same cube nearest in (scaled) time, within LIVE_TOLERANCES (or ``tolerances``).
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
    state_pubs = {c: node.create_publisher(CubeState, f'/{c}/state', qos_profile_sensor_data) for c in rec.cubes}
    goal_pubs = {c: node.create_publisher(NavGoal, f'/{c}/goal', 10) for c in rec.cubes}
    started = [0.0]
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
            if kind == 0:
                msg = CubeState(cube=item.cube, x=item.x, y=item.y, theta=item.theta, on_mat=item.on_mat,
                                link_state=item.link_state)
                msg.header.stamp = node.get_clock().now().to_msg()
                msg.header.frame_id = 'mat'
                state_pubs[item.cube].publish(msg)
            else:
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
    return compare_live(rec, live, tol, rate)


def compare_live(rec, live: dict, tol: dict, rate: float, window_s: float = 0.1) -> ReplayReport:
    """Each recorded NavResult against the live one of the same cube nearest in time (recorded time ÷ rate)."""
    report = ReplayReport(rec.path)
    report.notes.append('live mode: outputs compared within ' + ', '.join(f'{k} {v:g}' for k, v in tol.items()
                                                                         if k in LIVE_FIELDS))
    for c in rec.cubes:
        if not live.get(c):
            report.notes.append(f'the navigator published no /{c}/nav_result')
    firsts = [min((s.stamp_ns for s in rec.states if s.cube == c), default=None) for c in rec.cubes]
    ready = max((f for f in firsts if f is not None), default=0) + 200_000_000   # the navigator has every cube
    # the live navigator may get its first states later than the recorded one did (states are best effort, and a
    # busy machine drops some while discovery settles): until it has published a NavResult built on a state of
    # every cube, its outputs answer other inputs than the recorded ones (a cube without a state is far away)
    seen = [min((at for at, m in live.get(c) or [] if m.state_stamp.sec or m.state_stamp.nanosec), default=math.inf)
            for c, first in zip(rec.cubes, firsts) if first is not None]
    live_ready = max(seen, default=0.0)
    skipped = 0
    for tick in rec.ticks:
        t = (tick.stamp_ns - rec.start_ns) / 1e9
        if tick.stamp_ns < ready or t / rate < live_ready:
            skipped += 1
            continue
        report.ticks += 1
        for cube, recorded in tick.results.items():
            got = live.get(cube) or []
            if not got:
                continue
            times = np.array([g[0] for g in got])
            # the live ticks fall at other instants: any live NavResult within a tick or two may be the match
            near = [got[j][1] for j in np.nonzero(np.abs(times - t / rate) <= window_s)[0]]
            if not near:
                near = [got[int(np.argmin(np.abs(times - t / rate)))][1]]
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
    if skipped:
        report.notes.append(f'{skipped} leading ticks not compared: the navigator had no state of some cube yet')
    return report
