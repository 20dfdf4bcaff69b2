"""`coordinated`: a planner for the whole swarm at once, so that it does not dead-lock (docs/planners.md).

Layers, each in ``navigation/coordination``:
* global (``lattice``): the mat as a square lattice whose vertices are one pair distance apart; vertices and edges
  that a cube cannot use (walls, disc obstacles, stopped cubes) are left out, and a route field per goal gives
  every vertex its route length to that goal, so cubes go around obstacles and out of U-shaped traps;
* coordination (``pibt``): cubes that reach a vertex choose the next one, highest priority first, pushing
  lower-priority cubes out of the way (priority inheritance with backtracking); a cube's priority grows with the
  time since it last stood on its goal; a cube without progress may ask again, and one that keeps pushing the
  same cube off its goal routes around the cubes on their goals;
* execution (``claims``): a cube drives along its claimed edges only as far as the cubes it waits for have freed
  the space, which keeps every pair apart and every wait finite whatever the timing;
* driving (``driving``): the velocity on ideal discs; for real cubes the waypoint and speed limit CubeHandle
  follows, and the checks that stop a cube before it touches another.

Cubes start and end off the lattice: their start point and their goal are extra vertices joined to the lattice
vertices they can reach in a straight line. ``state.latency`` > 0 (the navigator's controller) means real cubes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.navigation.coordination.claims import Claims
from toio_navigator.navigation.coordination.driving import (
    coasting,
    corner_allowance,
    near_speed,
    overlapping,
    real_cube_speed,
    stop_unsafe,
    waypoints,
)
from toio_navigator.navigation.coordination.geometry import point_segment_distance, polyline_point
from toio_navigator.navigation.coordination.lattice import Lattice, segments_clear
from toio_navigator.navigation.coordination.pibt import FIXED, FREE, PibtRound
from toio_navigator.navigation.planner import PlannerOutput, SwarmState
from toio_navigator.navigation.planners.common import pairs_within


@dataclass
class CoordinatedParams:
    # ideal discs (state.latency == 0) follow their claims exactly:
    margin: float = 3.0           # u kept between two cubes' claims beyond r_i + r_j (also the lattice spacing)
    arrive_tol: float = 0.5       # u: an edge is finished when the cube is this close to its end
    # real cubes (state.latency > 0) lag, overshoot, cut corners and are measured with noise:
    loop_margin: float = 8.0      # u, the margin for them
    loop_arrive_tol: float = 6.0  # u, the arrival tolerance for them (CubeHandle stops within 8 u of a target)
    lead_factor: float = 1.5      # the cube travels on for lead_factor * latency before a command takes effect
    stop_time: float = 0.35       # s: ... and then on that command (its duration, the motor lag, damping)
    wall_margin: float = 1.0      # u kept from walls beyond the radius (lattice vertices and edges) ...
    loop_wall_margin: float = 6.0  # u ... and for real cubes
    keep_right: float = 0.25      # route-length bonus per unit of sideways step to the right (lane choice)
    lookahead: float = 80.0       # u: waypoint distance along the claim, for CubeHandle followers
    pad: float = 6.0              # lattice spacings of free space around cubes and goals (when unbounded)
    goal_tolerance: float = 5.0   # u: a cube this close to its goal counts as there (its priority resets)
    detour_after: int = 2         # times a cube pushed the same cube off its goal before it looks for a way round
    stall_time: float = 1.0       # s without progress after which a cube counts as dead-locked
    safety_gap: float = 0.1       # u: the velocity check stops steps that end closer than touching + this
    loop_safety_gap: float = 4.0  # u: ... and for real cubes, whose reported positions are late and noisy
    near_full: float = 20.0       # u of gap to the nearest cube ahead for full speed (real cubes) ...
    near_stop: float = 2.0        # u ... down to near_min * vmax at this gap or less
    near_min: float = 0.2
    corner_cut: float = 5.0       # u: a waypoint round a corner makes a cube in a crowd cut it by at most this
    corner_cut_max: float = 20.0  # u: ... and a cube with room to spare by at most this
    turn_time: float = 0.3        # s a cube needs to change heading (CubeHandle's 250 ms + motor lag)
    handle_reach: float = 8.0     # u: CubeHandle's move-to-target stops this close to its waypoint
    creep_speed: float = 30.0     # u/s: the least speed given to a real cube that still has room ...
    creep_room: float = 2.0       # u ... beyond what it covers before a stop takes effect


class CoordinatedPlanner:
    """The LocalPlanner interface over lattice + PIBT + claims (module docstring)."""
    name = 'coordinated'
    resolves_deadlocks = True     # the controller's side-step breaker must leave its cubes alone

    def __init__(self, params: CoordinatedParams | None = None, **overrides) -> None:
        self.params = params or CoordinatedParams(**overrides)
        self.reset(0)

    def reset(self, n: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self._tiebreak = rng.random(n)
        self._jitter_salt = int(rng.integers(1, 2 ** 31))
        self._age = np.zeros(n)
        self._was_active = np.zeros(n, bool)
        self._commanded: list[np.ndarray] = []      # commanded speeds of the last ticks (closed loop)
        self._cut = np.zeros(n)                     # how far each cube may stray from its claim (closed loop)
        self._bumps: dict[tuple[int, int], int] = {}  # (i, j): how often i pushed j off its goal
        self._best_h = np.full(n, np.inf)           # each cube's shortest route length to its goal so far
        self._since_progress = np.zeros(n)          # s since that last shrank
        self._detours: dict[int, np.ndarray] = {}   # route fields that go around cubes standing on their goals
        self.lattice: Lattice | None = None
        self.claims: Claims | None = None
        self._walls_key: bytes | None = None
        self._goals = np.full((n, 2), np.nan)
        self._blocked_key: bytes | None = None
        self.pushes = 0

    # ------------------------------------------------------------------------------------------------ one tick
    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
        n = state.n
        if len(self._age) != n:
            self.reset(n)
        pos = np.asarray(state.pos, float)
        radius = np.asarray(state.radius, float)
        vmax = np.asarray(state.max_speed, float)
        active = np.asarray(state.active, bool)
        if not active.any():
            zero = np.zeros((n, 2))
            return PlannerOutput(velocity=zero, waypoint=pos.copy(), speed_limit=np.zeros(n),
                                 collision=np.zeros(n, bool))
        closed_loop = state.latency > 0.0
        margin = p.loop_margin if closed_loop else p.margin
        lead = p.lead_factor * state.latency if closed_loop else 0.0
        stop = p.stop_time if closed_loop else dt
        commit = lead + stop                      # s of travel a cube is committed to once it moves
        self._prepare(state, margin, p.loop_wall_margin if closed_loop else p.wall_margin)
        claims = self.claims
        claims.advance(pos, p.loop_arrive_tol if closed_loop else p.arrive_tol, self._cut + p.loop_arrive_tol)
        self._hold_inactive(active, radius, margin)
        self._was_active = active.copy()
        at_goal = np.hypot(*(pos - self._goals).T) <= p.goal_tolerance
        for i in [i for i in self._detours if at_goal[i]]:
            del self._detours[i]                   # the detour did its job
        self._age = np.where(at_goal | ~active, 0.0, self._age + dt)
        priority = self._age + 0.5 * dt * self._tiebreak
        remaining = np.hypot(*(pos - claims.u).T)
        deciding = active & ~claims.has_next() & (remaining <= vmax * commit + 1e-6)
        status = np.where(deciding, FREE, FIXED)
        q, other, dist = self._pairs(radius, margin, vmax * commit)
        parked = active & at_goal & (claims.u_node == self.lattice.size + np.arange(n))
        stalled = self._stalled(at_goal | ~active, dt)
        rnd = PibtRound(claims, radius, margin, status, self._near(q, other, dist, radius), self._candidates,
                        parked, (self.lattice.size + np.arange(n), self._goals), stalled)
        order = np.argsort(-priority, kind='stable')
        rnd.run(order[deciding[order]])
        self.pushes += rnd.pushes
        self._detour(rnd.pushed_parked, parked, radius, margin)
        # move along the claim as far as it is free
        lines = claims.polylines()
        free = np.where(active, claims.free_length(vmax * commit + p.lookahead), 0.0)
        step_len = np.minimum(free, vmax * dt)
        # a cube that turns back at u stops there first (so its finished edge is really left behind)
        step_len = np.where(claims.sharp_turn(), np.minimum(step_len, remaining), step_len)
        velocity = np.where(active[:, None], (polyline_point(lines, step_len) - pos) / dt, 0.0)
        planned = np.where(active[:, None], polyline_point(lines, np.minimum(free, vmax * commit)), pos)
        pairs = (q, other, dist)
        keep = stop_unsafe(pos, planned, radius, p.safety_gap, pairs)
        final = claims.u_node == self.lattice.size + np.arange(n)
        if closed_loop:
            # a cube that strays off its claim (latency, a turn taken wide) is stopped before its heading
            # carries it into another one within the time it is committed
            moving = self._speed_bound(np.hypot(*np.asarray(state.vel, float).T), max(lead, dt), dt)
            ahead = np.where(active[:, None], coasting(pos, state.heading, moving, commit), pos)
            keep &= stop_unsafe(pos, ahead, radius, p.loop_safety_gap, pairs)
            self._cut = corner_allowance(lines, radius, margin, pairs, self.lattice.walls, p)
            near = near_speed(pos, state.heading, radius, vmax, pairs, p)
            speed = real_cube_speed(claims, free, remaining, self._cut, vmax, commit, lead, near, p)
        else:
            self._cut = np.zeros(n)
            speed = np.clip(free / commit, 0.0, vmax)
        waypoint = np.where(active[:, None], waypoints(claims, lines, free, remaining, self._cut, final, p), pos)
        velocity = np.where(keep[:, None], velocity, 0.0)
        speed_limit = np.where(active & keep, speed, 0.0)
        self.last = dict(free=free, keep=keep, speed=speed, cut=self._cut, deciding=deciding)
        return PlannerOutput(velocity=velocity, waypoint=waypoint, speed_limit=speed_limit,
                             collision=overlapping(radius, pairs, n))

    def _speed_bound(self, commanded: np.ndarray, window: float, dt: float) -> np.ndarray:
        """Each cube's speed over the next ``window`` seconds, before a command sent now takes effect: the mean
        of the speeds commanded within the last ``window`` (those commands are still on their way)."""
        self._commanded.append(commanded)
        del self._commanded[:-max(1, int(math.ceil(window / dt)))]
        return np.mean(np.stack(self._commanded), axis=0)

    def waits(self) -> dict[int, list[int]]:
        """Which cubes each cube currently waits for (diagnostics: who blocks whom)."""
        return {} if self.claims is None else self.claims.waits()

    # ------------------------------------------------------------------------------------------------ set-up
    def _prepare(self, state: SwarmState, margin: float, wall_margin: float) -> None:
        """(Re)build the lattice when the walls, the radii or the area change; refresh goals and blocked
        vertices (stopped cubes) and the route fields that depend on them."""
        p = self.params
        active = np.asarray(state.active, bool)
        radius = np.asarray(state.radius, float)
        walls = np.asarray(state.walls, float).reshape(-1, 5)
        typical = radius[active] if active.any() else radius
        r_typ = float(typical[0]) if np.all(typical == typical[0]) else float(np.median(typical))
        spacing = 2.0 * r_typ + margin
        key = walls.tobytes() + np.float64(spacing).tobytes() + np.float64(wall_margin).tobytes()
        # the area the lattice must cover: active cubes and their goals (a stopped cube far away, e.g. one never
        # seen yet, does not matter), clipped to the usable area when it is known
        wanted = np.vstack([state.pos[active], np.asarray(state.goal)[active]])
        if state.bounds is not None:
            x0, y0, x1, y1 = state.bounds
            inside = np.all((state.pos >= [x0, y0]) & (state.pos <= [x1, y1]), axis=1)
            wanted = np.clip(np.vstack([wanted, state.pos[inside]]), [x0, y0], [x1, y1])
        if len(wanted) == 0:
            wanted = np.asarray(state.pos, float)
        if self.lattice is None or key != self._walls_key or not self._covers(wanted, spacing):
            lo = wanted.min(axis=0) - p.pad * spacing
            hi = wanted.max(axis=0) + p.pad * spacing
            if state.bounds is not None:
                lo, hi = np.maximum(lo, state.bounds[:2]), np.minimum(hi, state.bounds[2:])
            self._area = (lo, hi, state.bounds is not None)
            self.lattice = Lattice.build((*lo, *hi), spacing, walls, r_typ + wall_margin)
            self._walls_key = key
            v = self.lattice.size
            self.claims = Claims(state.pos, v + state.n + np.arange(state.n))
            self._was_active = np.ones(state.n, bool)      # every claim starts where its cube is now
            self._float = np.array(state.pos, float)
            self._goals = np.full((state.n, 2), np.nan)
            self._blocked_key = None
            self._field = None
            self._blocked = np.zeros(v, bool)
            self._detours.clear()                          # they index the old lattice
            self._goal_adj: list[frozenset] = [frozenset()] * state.n     # vertices joined to each goal
            self._float_adj = [self._attach(i, self._float[i]) for i in range(state.n)]
        lat = self.lattice
        inactive = ~active
        blocked_key = np.round(state.pos[inactive], 0).tobytes() + inactive.tobytes()
        if blocked_key != self._blocked_key:
            self._blocked_key = blocked_key
            self._blocked = np.zeros(lat.size, bool)
            for j in np.nonzero(inactive)[0]:
                reach = radius[j] + r_typ + margin
                self._blocked |= np.hypot(*(lat.points - state.pos[j]).T) < reach
            self._goals[:] = np.nan                          # every goal's field depends on the blocked set
        goals = np.asarray(state.goal, float)
        changed = active & ~np.all(np.isclose(goals, self._goals), axis=1)
        if changed.any():
            self._goals[changed] = goals[changed]
            routed = len(lat.walls) > 0 or self._blocked.any()
            if routed and self._field is None:
                self._field = np.full((state.n, lat.size), np.inf)
            if not routed:
                self._field = None
            rows = np.nonzero(changed)[0]
            self._best_h[rows] = np.inf
            for i in rows:
                self._detours.pop(int(i), None)
                idx, _d = lat.attach(self._goals[i], self._blocked)
                self._goal_adj[i] = frozenset(int(k) for k in idx)
            if self._field is not None:
                self._field[rows] = lat.route_fields(self._goals[rows], self._blocked)

    def _stalled(self, settled: np.ndarray, dt: float) -> np.ndarray:
        """Dead-lock detection by progress: cubes whose route length to their goal (at their current vertex)
        has not shrunk by a unit for ``stall_time`` seconds."""
        c, v = self.claims, self.lattice.size
        idx = np.minimum(c.u_node, v - 1)
        h = np.hypot(*(c.u - self._goals).T)                  # off the lattice, and in open space
        if self._field is not None:
            h = np.where(c.u_node < v, self._field[np.arange(c.n), idx], h)
        for i, field in self._detours.items():
            if c.u_node[i] < v:
                h[i] = field[idx[i]]
        h = np.where(c.u_node == v + np.arange(c.n), 0.0, np.where(np.isfinite(h), h, np.inf))
        better = settled | (h < self._best_h - 1.0)
        self._best_h = np.where(better, h, self._best_h)
        self._since_progress = np.where(better, 0.0, self._since_progress + dt)
        return self._since_progress >= self.params.stall_time

    def _detour(self, pushers: set[tuple[int, int]], parked: np.ndarray, radius: np.ndarray, margin: float) -> None:
        """Dead-lock by pushing: a cube that keeps pushing cubes off their goals (in a one-lane corridor it
        would push them out, reach its goal, and then be pushed out by them in turn, for ever) gets a route
        that treats the cubes standing on their goals as walls, when one exists: it goes around them."""
        p = self.params
        lat = self.lattice
        for i, j in pushers:
            self._bumps[(i, j)] = self._bumps.get((i, j), 0) + 1
            if self._bumps[(i, j)] < p.detour_after:
                continue
            # cubes parked next to i's own goal are its neighbours at the end: pushing them is how the final
            # packing forms, going round them is no way to get there
            others = np.nonzero(parked)[0]
            near_goal = np.hypot(*(self._goals[others] - self._goals[i]).T) < 2.0 * lat.spacing
            others = others[(others != i) & ~near_goal]
            blocked = self._blocked.copy()
            for j in others:
                blocked |= np.hypot(*(lat.points - self._goals[j]).T) < radius[i] + radius[j] + margin
            field = lat.route_fields(self._goals[i][None], blocked)[0]
            if np.isfinite(field[min(int(self.claims.u_node[i]), lat.size - 1)]) or self.claims.u_node[i] >= lat.size:
                self._detours[int(i)] = np.where(blocked, np.inf, field)

    def _covers(self, points: np.ndarray, spacing: float) -> bool:
        """Does the lattice's area hold ``points`` (with a spacing to spare unless the area is the bounds)?"""
        lo, hi, bounded = self._area
        spare = 0.0 if bounded else spacing
        return bool(np.all(points >= lo + spare - 1e-9) and np.all(points <= hi - spare + 1e-9))

    def _attach(self, i: int, point: np.ndarray) -> np.ndarray:
        idx, _d = self.lattice.attach(point, self._blocked)
        return idx

    def _hold_inactive(self, active: np.ndarray, radius: np.ndarray, margin: float) -> None:
        """A stopped cube's claim shrinks to the point where it stands (cubes waiting for it keep waiting
        there). A cube that becomes active starts afresh from where it is then, and so do the cubes whose claims
        its position now contradicts (a cube seen for the first time can stand on another one's planned way)."""
        c = self.claims
        v = self.lattice.size
        for i in np.nonzero(~active)[0]:
            c.clear_next(i)
            c.u_node[i] = v + c.n + i
            c.u[i] = c.origin[i] = c.pos[i]
            self._refloat(i)
        woke = np.nonzero(active & ~self._was_active)[0]
        if woke.size:
            for i in self._entangled(woke, active, radius, margin):
                c.restart(i, v + c.n + i, c.pos[i])
                self._refloat(i, force=True)

    def _refloat(self, i: int, force: bool = False) -> None:
        """Cube i's start vertex (its own position) and the lattice vertices it can reach from there."""
        if force or np.hypot(*(self._float[i] - self.claims.pos[i])) > 1e-6:
            self._float[i] = self.claims.pos[i]
            self._float_adj[i] = self._attach(i, self.claims.pos[i])

    def _entangled(self, seeds: np.ndarray, active: np.ndarray, radius: np.ndarray, margin: float) -> list[int]:
        """``seeds`` and the active cubes whose claims come within the pair distance of a seed's position, and,
        in turn, every cube whose claim waits for one of those (its wait would otherwise end too early)."""
        c = self.claims
        lines = c.polylines()
        out = {int(i) for i in seeds}
        pts = c.pos[seeds]
        for k in np.nonzero(active)[0]:
            if int(k) in out:
                continue
            d = point_segment_distance(pts[:, None, :], lines[k, :-1][None], lines[k, 1:][None]).min(axis=1)
            if np.any(d < radius[k] + radius[seeds] + margin):
                out.add(int(k))
        grown = True
        while grown:
            grown = False
            for k in np.nonzero(active)[0]:
                if int(k) not in out and any(g[0] in out for g in c.gates_cur[k] + c.gates_next[k]):
                    out.add(int(k))
                    grown = True
        return sorted(out)

    def _pairs(self, radius: np.ndarray, margin: float, step_reach: np.ndarray):
        """All pairs (i, j, distance) close enough for a new edge of i to reach j's claim (which also covers
        the velocity check and the overlap test), sorted by i."""
        c = self.claims
        extent = np.hypot(*(c.pos - c.u).T) + np.hypot(*(c.u - c.w).T)
        extent = np.maximum(extent, step_reach)
        longest_edge = 4.0 * self.lattice.spacing
        cutoff = 2.0 * float(radius.max()) + margin + 2.0 * float(extent.max()) + longest_edge
        q, other, dist = pairs_within(c.pos, cutoff)
        order = np.argsort(q, kind='stable')
        return q[order], other[order], dist[order]

    def _near(self, q, other, dist, radius) -> list[np.ndarray]:
        """Per cube, the cubes whose claims a new edge of its could reach."""
        bounds = np.searchsorted(q, np.arange(self.claims.n + 1))
        return [other[bounds[i]:bounds[i + 1]] for i in range(self.claims.n)]

    # ------------------------------------------------------------------------------------------------ graph
    def _candidates(self, i: int):
        """Next vertices of cube i, best first: (nodes, points, is_stay)."""
        c, lat, p = self.claims, self.lattice, self.params
        v, n = lat.size, c.n
        u = int(c.u_node[i])
        goal = v + i
        if u < v:
            nbr = lat.neighbours[u]
            nodes = nbr[nbr >= 0]
            if u in self._goal_adj[i]:
                nodes = np.append(nodes, goal)
        elif u == goal:
            nodes = np.array(sorted(self._goal_adj[i]), np.int64)
        else:
            nodes = self._float_adj[i]
            g = self._goals[i]
            if (np.hypot(*(g - self._float[i])) <= 1.5 * lat.spacing
                    and segments_clear(self._float[i][None], g[None], lat.walls, lat.clearance, lat.spacing / 4)[0]):
                nodes = np.append(nodes, goal)
        lattice_nodes = np.minimum(nodes, v - 1)
        nodes = nodes[(nodes >= v) | ~self._blocked[lattice_nodes]]
        points = self._points(i, nodes)
        key = self._route(i, nodes) + 1e-3 * np.hypot(*(points - c.u[i]).T) + self._jitter(i, nodes)
        # keep right: among equally good vertices prefer the one on the right of the way to the goal, so cubes
        # meeting head-on take different lanes (mat frame: y down, so right of (dx, dy) is (-dy, dx))
        way = self._goals[i] - c.u[i]
        right = np.array([-way[1], way[0]]) / max(float(np.hypot(*way)), 1e-9)
        key = key - p.keep_right * ((points - c.u[i]) @ right)
        stay_key = self._route(i, np.array([u]))[0] if u < v + n else ((key.min() if key.size else 0.0) + lat.spacing)
        nodes = np.append(nodes, u)
        points = np.vstack([points, c.u[i][None]])
        key = np.append(key, stay_key)
        is_stay = np.zeros(len(nodes), bool)
        is_stay[-1] = True
        order = np.argsort(key, kind='stable')
        return nodes[order], points[order], is_stay[order]

    def _points(self, i: int, nodes: np.ndarray) -> np.ndarray:
        lat = self.lattice
        v = lat.size
        out = lat.points[np.minimum(nodes, v - 1)].copy()
        out[nodes == v + i] = self._goals[i]
        out[nodes >= v + self.claims.n] = self._float[i]
        return out

    def _route(self, i: int, nodes: np.ndarray) -> np.ndarray:
        """Route length from each node to cube i's goal (0 at the goal)."""
        lat = self.lattice
        v = lat.size
        on_lattice = nodes < v
        idx = np.minimum(nodes, v - 1)
        if i in self._detours:
            h = self._detours[i][idx]
        elif self._field is not None:
            h = self._field[i, idx]
        else:
            h = np.hypot(*(lat.points[idx] - self._goals[i]).T)
        return np.where(on_lattice, h, np.where(nodes == v + i, 0.0, math.inf))

    def _jitter(self, i: int, nodes: np.ndarray) -> np.ndarray:
        """A tiny deterministic per (cube, vertex) tie-break, so equal routes do not all pick the same side."""
        h = (nodes.astype(np.int64) * 2654435761 + (i + 1) * self._jitter_salt) % 1000003
        return 1e-9 * h
