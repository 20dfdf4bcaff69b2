"""Driving real cubes along their paths within their limits: a speed that stops in time, a waypoint that steers.

The speed alone decides where a cube stops: whatever the latency, within its limit (until a new command takes
effect the cube goes on at the command it is taken to run; then the new one runs its duration); slower for
corners; below the wheels' dead zone it creeps until it is close to its limit. The waypoint only steers:
``lookahead`` along the path, round a corner no further than cuts it by ``corner_cut`` (a sharp corner: onto it),
and never within CubeHandle's reach (where it would stop by itself). A cube drives backwards when its waypoint
lies behind it (switching only past ``backward_switch``), so a cube pushed out of the way and back does not turn
round twice.

A cube named by the safety layer as standing in the way of one that comes first in the plan (``make_way``) makes
way: back along its path where it ran past its limit, else onto its path, else back along it to where the gates
of its action no longer hold it (docs/planners.md, the invariant).
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.coordinated.execution import Execution, point_at
from toio_navigator.planners.coordinated.lattice import wall_gap
from toio_navigator.planners.coordinated.params import CoordinatedParams, Internal

K = Internal


def angle_off(a: float, b: float) -> float:
    """|a - b| wrapped to [0, pi] (radians; scalars: per cube in a loop, where numpy's overhead would dominate)."""
    return abs((a - b + math.pi) % (2.0 * math.pi) - math.pi)


def beyond_corner(a: float, cos_t: float, cut: float, back: bool = False) -> float:
    """How far past a corner a waypoint may lie so that the straight line to it from a cube ``a`` before the
    corner passes within ``cut`` of the corner (turn with cosine ``cos_t``): the chord misses the corner by
    a b sin(t) / |chord|; the largest b keeping that within cut. A cube turning back (more than 90 degrees) goes
    to the corner first, unless ``back``."""
    if cos_t < 0.0 and not back:
        return 0.0
    sin_t = math.sqrt(max(0.0, 1.0 - cos_t * cos_t))
    den = a * a * sin_t * sin_t - cut * cut
    if den <= 0.0 or sin_t < 1e-9:
        return math.inf
    return max(0.0, a * cut * (cut * cos_t + sin_t * math.sqrt(max(a * a - cut * cut, 0.0))) / den)


class Driver:
    """Speeds and waypoints of the real cubes of one execution, tick after tick (it remembers which cubes drive
    backwards and how fast each turns)."""

    def __init__(self, params: CoordinatedParams, n: int) -> None:
        self.params = params
        self.backward = np.zeros(n, bool)     # which cubes were last told to drive backwards
        self._turn: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # heading, measured at, turn rate
        self.why: list[str] = []              # diagnostics: what holds each cube's speed this tick

    def drives_back(self, bearing: float, heading: float, was_back: bool) -> bool:
        """Does a cube heading ``heading`` drive backwards to a waypoint at ``bearing``: it lies behind it by
        ``backward_switch`` beyond 90 degrees (once driving backwards: until it lies that much ahead of 90)?"""
        switch = K.backward_switch
        return angle_off(bearing, heading) > 0.5 * math.pi + (-switch if was_back else switch)

    def turn_rate(self, idx: np.ndarray, heading: np.ndarray, measured: np.ndarray, n: int) -> np.ndarray:
        """How fast each cube turns (rad/s): its measured heading against the one at least ``turn_baseline``
        earlier (headings come in whole degrees); 0 when its states stopped coming."""
        if self._turn is None or len(self._turn[0]) != n:
            self._turn = (np.zeros(n), np.full(n, -math.inf), np.zeros(n))
        h0, t0, rate = self._turn
        gap = measured - t0[idx]
        fresh = gap >= K.turn_baseline
        turned = (heading - h0[idx] + math.pi) % (2.0 * math.pi) - math.pi
        rate[idx] = np.where(fresh, np.where(gap < 0.5, turned / np.maximum(gap, 1e-6), 0.0), rate[idx])
        h0[idx] = np.where(fresh, heading, h0[idx])
        t0[idx] = np.where(fresh, measured, t0[idx])
        return rate[idx]

    def onto_path(self, pos: np.ndarray, foot: np.ndarray, heading: float, was_back: bool):
        """(waypoint, backwards) that take a cube at ``pos`` straight back to ``foot``, a point of its path: the
        waypoint lies beyond CubeHandle's reach the same way, and it drives backwards when that is nearer."""
        way = foot - pos
        gap = max(float(np.hypot(*way)), 1e-9)
        target = foot + way / gap * max(K.handle_reach, 0.0)
        return target, self.params.backward and self.drives_back(math.atan2(way[1], way[0]), heading, was_back)

    def drive(self, ex: Execution, walls: np.ndarray, distance: float, pos: np.ndarray, heading: np.ndarray,
              later: np.ndarray, limit: np.ndarray, vmax: np.ndarray, react: np.ndarray, running: np.ndarray,
              before: tuple[np.ndarray, float], make_way: set[int]):
        """Speed (u/s), waypoint and whether it drives backwards of each real cube of ``ex`` (rows of the plan):
        ``pos``, ``heading`` where it is and faces, ``later`` where it will face when the next command takes
        effect; ``running`` the command it is taken to run until then, ``before`` (s until then (K,), s the new
        one runs); ``make_way`` the cubes (rows of the plan) to move out of the way."""
        dep = ex.deps
        n = dep.n
        speed = np.zeros(n)
        waypoint = pos.copy()
        back = self.backward[:n].copy()
        self.why = ['end'] * n
        soon, owner = self._soon(ex, pos, limit)
        for k in range(n):
            path, arcs = dep.paths[k], dep.arcs[k]
            s, lim = float(ex.progress[k]), float(limit[k])
            arrived = s >= float(arcs[-1]) - K.goal_reached
            if arrived and float(np.hypot(*(path[-1] - pos[k]))) <= K.settle:
                waypoint[k] = path[-1]          # arrived: it stands, its waypoint on its goal
                continue
            at_end = lim >= float(arcs[-1]) - 1e-6
            free = lim - s - (0.0 if at_end else K.stop_margin)
            v = min(max(float(min((free - running[k] * before[0][k]) / before[1], free / (before[0][k] + before[1]))),
                        0.0), float(vmax[k]))
            self.why[k] = 'free' if v >= vmax[k] - 1e-6 else 'limit'
            foot = path[-1] if arrived else self._make_way(ex, k, pos) if k in make_way and v <= 0.0 else None
            if arrived:
                self.why[k] = 'settle'
            if foot is not None:
                waypoint[k], back[k] = self.onto_path(pos[k], foot, heading[k], back[k])
                way = waypoint[k] - pos[k]
                aligned = angle_off(math.atan2(way[1], way[0]), heading[k] + (math.pi if back[k] else 0.0))
                speed[k] = K.min_speed if aligned <= K.align_stop else 0.0
                continue
            v, target = self._along(k, path, arcs, pos[k], s, lim, v, react[k], running[k], before, soon, owner,
                                    walls, distance)
            waypoint[k] = target
            speed[k], back[k] = self._aligned(k, pos[k], target, heading[k], later[k], v, s, lim, at_end, free,
                                              running[k], before, back[k])
        self.backward[:n] = back
        return speed, waypoint, back

    def _make_way(self, ex: Execution, k: int, pos: np.ndarray) -> np.ndarray | None:
        """Where cube k goes to stand out of the way of a cube that comes first: back along its path where it ran
        past its limit, onto its path where it strayed, else back along it as far as its action's gates want."""
        dep = ex.deps
        path, arcs = dep.paths[k], dep.arcs[k]
        s = float(ex.progress[k])
        depth = Internal.deviation - Internal.stray
        behind = point_at(path, arcs, ex.clear_behind(k, pos, depth))
        if float(np.hypot(*(behind - pos[k]))) > K.goal_reached + K.creep_stop:
            self.why[k] = 'back-off'
            return behind
        if ex.deviation[k] > K.goal_reached + K.creep_stop:
            self.why[k] = 'onto-path'
            return point_at(path, arcs, s)
        return None

    def _soon(self, ex: Execution, pos: np.ndarray, limit: np.ndarray):
        """Where every cube is and may be soon (its measured position and its path up to its limit, every 10 u),
        and whose each point is: to see which corners have room around them."""
        dep = ex.deps
        soon = []
        for k in range(dep.n):
            upto = np.arange(ex.progress[k], max(limit[k], ex.progress[k]) + 10.0, 10.0)
            path, arcs = dep.paths[k], dep.arcs[k]
            pts = np.empty((len(upto) + 1, 2))
            pts[0] = pos[k]
            pts[1:, 0] = np.interp(upto, arcs, path[:, 0])
            pts[1:, 1] = np.interp(upto, arcs, path[:, 1])
            soon.append(pts)
        owner = np.repeat(np.arange(dep.n), [len(pts) for pts in soon])
        return np.concatenate(soon), owner

    def _along(self, k, path, arcs, pos, s, lim, v, react, running, before, soon, owner, walls, distance):
        """(speed, waypoint) of cube k along its path: braking for the next corner within reach as for a limit,
        and a waypoint round it no further than cuts it by ``corner_cut`` (wide, and faster, when nobody is near
        that corner now or soon and the walls are far), never past its limit."""
        p = self.params
        lead, run = before[0][k], before[1]
        reach = s + p.lookahead
        for m in range(int(arcs.searchsorted(s, side='right')), len(arcs) - 1):
            corner = float(arcs[m])
            if corner - s > v * react + p.lookahead:
                break
            into, out = path[m] - path[m - 1], path[m + 1] - path[m]
            cos_t = float(into @ out) / max(float(np.hypot(*into) * np.hypot(*out)), 1e-12)
            if cos_t > 0.999:
                continue
            others = soon[owner != k]
            alone = (others.size == 0 or float(np.hypot(*(others - path[m]).T).min()) > 2.0 * distance) and (
                len(walls) == 0 or float(wall_gap(path[m][None], walls)[0]) > 0.5 * distance + K.corner_cut_wide) \
                and (cos_t >= 0.0 or not p.backward)    # (a cube that can back out of a sharp turn stops there)
            if alone:       # round the corner, however sharp, on an arc
                cut, pass_speed = K.corner_cut_wide, K.corner_speed_wide * (1.0 + cos_t) / 2.0
            else:           # along the path, stopping at a corner sharper than 90 degrees
                cut, pass_speed = K.corner_cut, K.corner_speed * max(cos_t, 0.0)
            if corner < lim:
                room = max(corner - s, 0.0)
                cap = pass_speed + max(0.0, min((room - running * lead) / run, room / (lead + run)))
                if cap < v:
                    v, self.why[k] = cap, 'corner'
            if corner < reach:
                # past the corner no further than the limit: a cube steered round a corner into a stretch it is
                # not granted yet would stand where the cube that goes there first must pass
                beyond = beyond_corner(float(np.hypot(*(path[m] - pos))), cos_t, cut, alone)
                reach = min(reach, corner + min(beyond, max(lim - corner, 0.0)))
            break
        target = point_at(path, arcs, reach)
        gap = float(np.hypot(*(target - pos)))
        far = K.handle_reach + K.steer_gap
        if gap < far:
            # too close to steer by: further out in the same direction (beyond a sharp corner or the end)
            if gap > 1e-6:
                target = pos + (target - pos) * (far / gap)
            elif len(path) > 1:
                m = min(max(1, int(arcs.searchsorted(reach - 1e-6, side='right'))), len(arcs) - 1)
                way = path[m] - path[m - 1]
                target = pos + way / max(float(np.hypot(*way)), 1e-9) * far
        return v, target

    def _aligned(self, k, pos, target, heading, later, v, s, lim, at_end, free, running, before, was_back):
        """(speed, backwards) of cube k towards ``target``: it turns in place before it drives off its path (full
        speed within ``align_full`` of the way to its waypoint, none beyond ``align_stop``, as it faces now and as
        it will face); below the dead zone it creeps where that still stops within its limit."""
        way = target - pos
        bearing = math.atan2(way[1], way[0])
        back = self.drives_back(bearing, heading, was_back) if self.params.backward else was_back
        flip = math.pi if back else 0.0
        factor, later_factor = (min(max((K.align_stop - angle_off(bearing, h)) / (K.align_stop - K.align_full),
                                        0.0), 1.0) for h in (heading + flip, later + flip))
        # a cube still turning from its last command overshoots: as it will be heading, no more than a creep
        factor = min(factor, max(later_factor, K.min_speed / max(v, 1e-9)))
        if factor < 1.0:
            v *= factor
            self.why[k] = 'turning'
        if v <= 0.0:
            return 0.0, back
        if v < K.min_speed:
            lead, run = before[0][k], before[1]
            creep = (lim - s > (K.goal_reached if at_end else K.creep_stop) and running <= K.min_speed + 1.0) \
                or free >= running * lead + K.min_speed * run
            v = K.min_speed if creep else 0.0
            self.why[k] += '-creep' if v else '-stop'
        return v, back
