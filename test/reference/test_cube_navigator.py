"""CubeNavigator (registry, update, navi_to/away) closed-loop on a small latency-faithful cube model, and the
LocalPlanner adapter."""
import math

import numpy as np

from toio_navigator.planners.interface import SwarmState
from toio_navigator.planners.reference import HLAvoidPlanner
from toio_navigator.reference.cube_navigator import CubeNavigator
from toio_navigator.reference.navigator import Relation
from toio_navigator.reference.params import Fixes, NavigatorParams
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT as K
from toio_navigator.units import WHEEL_TRACK_UNITS as W


class ToyCube:
    """Unicycle with the simulator's 0.13 s command latency and the firmware's dead zone / duration rules."""

    def __init__(self, x, y, deg):
        self.x, self.y, self.rad = x, y, math.radians(deg)
        self.queue, self.cmd = [], (0, 0, 0.0)

    def send(self, t, command):
        left, right, dur = command.to_firmware(8, 115)
        self.queue.append((t + 0.13, left, right, dur / 1000 if dur else 1e9))

    def step(self, t, dt):
        while self.queue and self.queue[0][0] <= t:
            ta, left, right, dur = self.queue.pop(0)
            self.cmd = (left, right, ta + dur)
        left, right, end = self.cmd
        if t >= end:
            left = right = 0
        self.rad += (left - right) * K / W * dt
        v = (left + right) * K / 2
        self.x += v * math.cos(self.rad) * dt
        self.y += v * math.sin(self.rad) * dt

    def observe(self):
        return round(self.x), round(self.y), math.radians(round(math.degrees(self.rad)) % 360)


def run(cubes, goals, seconds, max_spd=80):
    CubeNavigator.clear_registry()
    navs = [CubeNavigator() for _ in cubes]
    t, dt, closest = 0.0, 0.01, math.inf
    for k in range(int(seconds / dt)):
        if k % 5 == 0:                         # 50 ms control tick: update all, then plan all (docs/navigator.md §1.7)
            for c, n in zip(cubes, navs):
                n.update(*c.observe(), t)
            for c, n, g in zip(cubes, navs, goals):
                mv, _ = n.navi_to_target(*g, max_spd=max_spd)
                c.send(t, n.handle.move_movement(mv, now=t).command)
        for c in cubes:
            c.step(t, dt)
        for i in range(len(cubes)):
            for j in range(i):
                closest = min(closest, math.hypot(cubes[i].x - cubes[j].x, cubes[i].y - cubes[j].y))
        t += dt
    return navs, closest


def test_registry_everyone_sees_everyone():
    CubeNavigator.clear_registry()
    a, b, c = CubeNavigator(), CubeNavigator(), CubeNavigator()
    assert a.others == [b, c] and b.others == [a, c] and c.others == [a, b]
    assert a.relation(b) is Relation.BOIDS
    loner = CubeNavigator(register=False)
    assert loner.others == [] and loner not in a.others
    CubeNavigator.clear_registry()


def test_update_is_throttled_and_copies_observed_or_predicted_state():
    CubeNavigator.clear_registry()
    n = CubeNavigator(use_pred=True, register=False)
    assert n.update(100, 120, 0.5, now=1.0)
    assert not n.update(300, 300, 0.0, now=1.01)            # < 15 ms later: ignored
    assert (n.entity.x, n.entity.y) == (100, 120)
    n.handle.move_raw(80, 80, 1000, now=1.02)
    n.update(100, 120, 0.5, now=1.10)
    assert n.entity.x > 100 and n.entity.spd > 100          # predicted ahead along the heading


def test_reaches_a_target_like_a_to_target1():
    cube = ToyCube(100, 70, 90)
    navs, _ = run([cube], [(250, 250)], 2.5)
    assert math.hypot(cube.x - 250, cube.y - 250) < 10


def test_two_cubes_crossing_both_arrive_without_contact():
    a, b = ToyCube(100, 70, 45), ToyCube(400, 70, 130)        # c_Intersect1v1Lateral
    _, closest = run([a, b], [(380, 380), (120, 380)], 5.0)
    assert math.hypot(a.x - 380, a.y - 380) < 10 and math.hypot(b.x - 120, b.y - 380) < 10
    assert closest > 23.3                                       # body width: never touching


def test_flee_moves_away():
    CubeNavigator.clear_registry()
    n = CubeNavigator(register=False)
    n.update(150, 150, 0.0, now=0.0)
    mv, r = n.navi_away_target(250, 350)
    assert r.speed_ratio == 1 and mv.translate > 0 and not mv.reached


def test_speed_limit_units_fix_caps_in_motor_units():
    # head-on and close, so HLAvoid's speed limit (dot/s) binds: the cube drives move-to-target at that limit
    # as if it were motor units (the reference), or converted to motor units (the fix)
    for fix, to_motor_units in ((False, 1.0), (True, 1.0 / K)):
        CubeNavigator.clear_registry()
        params = NavigatorParams(fixes=Fixes(speed_limit_units=fix))
        cube, other = CubeNavigator(params=params), CubeNavigator(params=params)
        cube.update(200, 250, 0.0, now=0.0)
        other.update(245, 250, math.pi, now=0.0)
        mv, r = cube.navi_to_target(400, 250, max_spd=115)
        speed = r.speed_limit * to_motor_units
        assert speed < 115 and r.speed_ratio == 1
        same = cube.handle.move_to_target(*r.waypoint, max_spd=speed, rotate_time=250, tolerance=8)
        assert (mv.translate, mv.rotate) == (same.translate, same.rotate)


def swarm_state(pos, goals, active=None):
    n = len(pos)
    pos, goals = np.asarray(pos, float), np.asarray(goals, float)
    heading = np.arctan2(goals[:, 1] - pos[:, 1], goals[:, 0] - pos[:, 0])
    return SwarmState(pos, np.zeros((n, 2)), heading, np.full(n, 16.5), goals, np.full(n, 165.0),
                      np.ones(n, bool) if active is None else np.asarray(active))


def test_planner_adapter_outputs_and_inactive_cubes():
    planner = HLAvoidPlanner()
    planner.reset(3)
    out = planner.step(swarm_state([(100, 100), (300, 100), (200, 300)], [(300, 100), (100, 100), (200, 100)],
                                   active=[True, True, False]), 0.05)
    assert out.velocity.shape == (3, 2) and out.waypoint.shape == (3, 2)
    speeds = np.linalg.norm(out.velocity, axis=1)
    assert np.all(speeds <= 165.0 + 1e-9) and speeds[2] == 0 and speeds[0] > 0
    assert planner.name == 'hlavoid' and HLAvoidPlanner(mode='BOIDS_AVOID').name == 'boids_avoid'


def test_planner_head_on_swap_resolves_without_contact():
    planner = HLAvoidPlanner()
    planner.reset(2)
    st = swarm_state([(100, 250), (400, 250)], [(400, 250), (100, 250)])
    closest = math.inf
    for _ in range(200):
        out = planner.step(st, 0.05)
        st.pos = st.pos + out.velocity * 0.05
        st.vel = out.velocity
        moving = np.linalg.norm(out.velocity, axis=1) > 1e-9
        st.heading = np.where(moving, np.arctan2(out.velocity[:, 1], out.velocity[:, 0]), st.heading)
        closest = min(closest, float(np.linalg.norm(st.pos[0] - st.pos[1])))
    assert np.linalg.norm(st.pos - st.goal, axis=1).max() < 10
    assert closest > 33.0


def test_planner_turns_in_place_to_leave_a_symmetric_jam():
    # circle swap of 8: the overlap stop rule sets speed limits of 0; a cube then turns towards its waypoint
    # (as move_to_target does) instead of freezing, and the swarm gets through
    n = 8
    a = 2 * np.pi * np.arange(n) / n
    start = 250 + 150 * np.stack([np.cos(a), np.sin(a)], axis=1)
    st = swarm_state(start, 500 - start)
    planner = HLAvoidPlanner()
    planner.reset(n)
    closest = math.inf
    for _ in range(240):
        out = planner.step(st, 0.05)
        st.pos = st.pos + out.velocity * 0.05
        st.vel = out.velocity
        d = np.linalg.norm(st.pos[:, None] - st.pos[None], axis=-1) + np.eye(n) * 1e9
        closest = min(closest, float(d.min()))
    assert np.linalg.norm(st.pos - st.goal, axis=1).max() < 10
    assert closest > 33.0
