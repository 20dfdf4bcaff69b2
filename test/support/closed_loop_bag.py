"""Synthetic bags for the replay tests: a closed loop of the current SwarmController and a kinematic model
writes every state, goal, result and command as the navigator node would publish them."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from toio_navigator.bags.record import BagWriter, typestore
from toio_navigator.bags.recording import PARAMETERS_KEY
from toio_navigator.control.controller import SwarmController, stamp_seconds
from toio_navigator.control.navigator_settings import NavigatorSettings

OURS = ('CubeState', 'NavGoal', 'NavResult', 'MotorCommand')


def ros_time(store, ns: int):
    return store.types['builtin_interfaces/msg/Time'](sec=ns // 10**9, nanosec=ns % 10**9)


def _header(store, ns: int):
    return store.types['std_msgs/msg/Header'](stamp=ros_time(store, ns), frame_id='mat')


def _state_copy(state) -> dict:
    """NavResult's copy of the state its tick used, as the navigator node fills it."""
    x, y, theta, on_mat, link = state if state is not None else (math.nan, math.nan, math.nan, False, 0)
    return dict(state_x=x, state_y=y, state_theta=theta, state_on_mat=on_mat, state_link_state=link)


def write_closed_loop_bag(path: Path, storage: str = 'mcap', ticks: int = 50, goal_tick: int = 3,
                          starts=((120.0, 250.0, 0.0), (380.0, 252.0, math.pi)), goals=None, with_goals=True) -> Path:
    """Two cubes swapping places: the current controller decides, a kinematic model moves the cubes, and every
    state, goal, result and command goes into a bag exactly as the node would publish them. States are stamped
    5..15 ms before the tick (varying ages); every 4th tick cube2's new state arrives only after the tick, so
    the navigator used the previous one (the bag has both; only NavResult.state_stamp says which). With
    ``with_goals`` False the goals come through the service (no /goal message; the NavResults show them)."""
    store = typestore()
    t = 'toio_navigator/msg/'
    CubeState, NavGoal, NavResult, MotorCommand = (store.types[t + n] for n in OURS)
    cubes = ('cube1', 'cube2')
    ctrl = SwarmController(NavigatorSettings(cubes=cubes), clock=lambda: math.nan)   # always given `now`
    pose = np.array(starts, dtype=float)
    goals = dict(zip(cubes, goals or ((380.0, 250.0), (120.0, 250.0))))
    base = 1_700_000_000_000_000_000
    dt_ns = 50_000_000
    hp = ctrl.handle
    wheels = np.zeros((2, 2))
    with BagWriter(path, storage, store) as bag:
        # what `toio-nav record` stores: the navigator's parameters (here: the defaults for these cubes)
        bag.set_custom_data(PARAMETERS_KEY, json.dumps({'cubes': list(cubes)}))
        for k in range(ticks):
            tick_ns = base + k * dt_ns
            for i, c in enumerate(cubes):
                stamp = tick_ns - (5 + (3 * k + 7 * i) % 11) * 1_000_000
                late = i == 1 and k % 4 == 2 and k > 0
                msg = CubeState(header=_header(store, stamp), cube=c, x=float(pose[i, 0]), y=float(pose[i, 1]),
                                theta=float(pose[i, 2]), on_mat=True, standard_id=0, battery=90, button=False,
                                flat=True, collision=False, double_tap=False, posture=1, shake=0, speed_left=0.0,
                                speed_right=0.0, link_state=2, firmware_version='2.4.0')
                bag.write_message(f'/{c}/state', t + 'CubeState', tick_ns + 2_000_000 if late else stamp + 1_000_000,
                                  msg)
                if not late:
                    ctrl.update_state(c, float(pose[i, 0]), float(pose[i, 1]), float(pose[i, 2]), True, 2, stamp)
            if k == goal_tick:
                for i, c in enumerate(cubes):
                    g = NavGoal(goal_id=7 + i, cube=c, x=goals[c][0], y=goals[c][1], direction=0, max_speed=0.0,
                                tolerance=0.0)
                    if with_goals:
                        bag.write_message(f'/{c}/goal', t + 'NavGoal', tick_ns - 20_000_000, g)
                    ctrl.set_goal(c, 7 + i, goals[c][0], goals[c][1], 0, 0.0, 0.0, msg_cube=c)
            for i, cmd in enumerate(ctrl.step(stamp_seconds(tick_ns))):
                if cmd.motor is not None:
                    bag.write_message(f'/{cmd.cube}/motor_cmd', t + 'MotorCommand', tick_ns + 1_000_000,
                                      MotorCommand(header=_header(store, tick_ns), left=cmd.motor[0],
                                                   right=cmd.motor[1], duration_ms=cmd.motor[2]))
                    wheels[i] = cmd.motor[:2]
                g = cmd.goal
                r = NavResult(header=_header(store, tick_ns), cube=cmd.cube, goal_id=cmd.goal_id, active=cmd.active,
                              waypoint_x=cmd.waypoint[0], waypoint_y=cmd.waypoint[1], speed_limit=cmd.speed_limit,
                              speed_ratio=cmd.speed_ratio, collision=cmd.collision, reached=cmd.reached,
                              mode='AVOID', planner='hlavoid', state_stamp=ros_time(store, cmd.state_stamp_ns),
                              goal_x=g.x if g else math.nan, goal_y=g.y if g else math.nan,
                              direction=g.direction if g else 2, max_speed=g.max_speed if g else 0.0,
                              tolerance=g.tolerance if g else 0.0, tick=k, **_state_copy(cmd.state))
                bag.write_message(f'/{cmd.cube}/nav_result', t + 'NavResult', tick_ns + 1_500_000, r)
            v = 0.5 * (wheels[:, 0] + wheels[:, 1]) * hp.k          # drive 50 ms with the new commands
            w = (wheels[:, 0] - wheels[:, 1]) * hp.k / hp.wheel_track
            pose[:, 2] += w * 0.05
            pose[:, 0] += v * np.cos(pose[:, 2]) * 0.05
            pose[:, 1] += v * np.sin(pose[:, 2]) * 0.05
            pose[:, 2] = (pose[:, 2] + math.pi) % (2 * math.pi) - math.pi
    return path
