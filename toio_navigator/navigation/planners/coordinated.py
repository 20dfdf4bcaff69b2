"""`coordinated`: a planner for the whole swarm at once, so that it never dead-locks (docs/planners.md).

Three layers, each in ``navigation/coordination``:
* a global layer (``lattice``): the mat as a square lattice whose vertices are one pair distance apart; vertices
  and edges that a cube cannot use (walls, disc obstacles, stopped cubes) are left out, and a route field per goal
  gives every vertex its route length to that goal, so cubes go around obstacles and out of U-shaped traps
  instead of into them;
* coordination (``pibt``): cubes that reach a vertex choose the next one, highest priority first, pushing
  lower-priority cubes out of the way (priority inheritance with backtracking); a cube's priority grows with the
  time since it last stood on its goal;
* execution (``claims``): a cube drives along its claimed edges only as far as the cubes it waits for have freed
  the space, which keeps every pair apart and every wait finite whatever the timing; a last velocity check stops
  any cube whose next step would bring two cubes closer than touching.

Cubes start and end off the lattice: their start point and their goal are extra vertices joined to the lattice
vertices they can reach in a straight line. The answer is a velocity (ideal discs) and a waypoint along the claim
with a speed limit that lets the cube stop within its free claim after ``reaction_time`` (CubeHandle).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.navigation.coordination.claims import Claims
from toio_navigator.navigation.coordination.geometry import polyline_point
from toio_navigator.navigation.coordination.lattice import Lattice, segments_clear
from toio_navigator.navigation.coordination.pibt import FIXED, FREE, PibtRound
from toio_navigator.navigation.planner import PlannerOutput, SwarmState
from toio_navigator.navigation.planners.common import pairs_within


@dataclass
class CoordinatedParams:
    margin: float = 3.0           # u kept between two cubes' claims beyond r_i + r_j (also the lattice spacing)
    wall_margin: float = 1.0      # u kept from walls beyond the radius (lattice vertices and edges)
    arrive_tol: float = 0.5       # u: an edge is finished when the cube is this close to its end
    reaction_time: float = 0.0    # s until a command takes effect; 0 = the control period (ideal discs)
    lookahead: float = 40.0       # u: waypoint distance along the claim, for CubeHandle followers
    pad: float = 3.0              # lattice spacings of free space around cubes and goals (when unbounded)
    goal_tolerance: float = 5.0   # u: a cube this close to its goal counts as there (its priority resets)
    safety_gap: float = 0.1       # u: the velocity check stops steps that end closer than touching + this


class CoordinatedPlanner:
    """The LocalPlanner interface over lattice + PIBT + claims (module docstring)."""
    name = 'coordinated'

    def __init__(self, params: CoordinatedParams | None = None, **overrides) -> None:
        self.params = params or CoordinatedParams(**overrides)
        self.reset(0)

    def reset(self, n: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self._tiebreak = rng.random(n)
        self._jitter_salt = int(rng.integers(1, 2 ** 31))
        self._age = np.zeros(n)
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
        self._prepare(state)
        claims = self.claims
        claims.advance(pos, p.arrive_tol)
        self._hold_inactive(active)
        at_goal = np.hypot(*(pos - self._goals).T) <= p.goal_tolerance
        self._age = np.where(at_goal | ~active, 0.0, self._age + dt)
        priority = self._age + 0.5 * dt * self._tiebreak
        react = max(dt, p.reaction_time)
        remaining = np.hypot(*(pos - claims.u).T)
        deciding = active & ~claims.has_next() & (remaining <= vmax * react + 1e-6)
        status = np.where(deciding, FREE, FIXED)
        q, other, dist = self._pairs(radius, vmax * react)
        rnd = PibtRound(claims, radius, p.margin, status, self._near(q, other, dist, radius), self._candidates)
        order = np.argsort(-priority, kind='stable')
        rnd.run(order[deciding[order]])
        self.pushes += rnd.pushes
        # move along the claim as far as it is free
        lines = claims.polylines()
        free = claims.free_length(radius, p.margin, np.maximum(vmax * react, p.lookahead))
        free = np.where(active, free, 0.0)
        step_len = np.minimum(free, vmax * dt)
        # a cube that turns back at u stops there first (so its finished edge is really left behind)
        step_len = np.where(claims.sharp_turn(), np.minimum(step_len, remaining), step_len)
        target = polyline_point(lines, step_len)
        velocity = np.where(active[:, None], (target - pos) / dt, 0.0)
        velocity = stop_unsafe(pos, velocity, radius, p.safety_gap, react, (q, other, dist))
        waypoint = np.where(active[:, None], polyline_point(lines, np.minimum(free, p.lookahead)), pos)
        speed_limit = np.where(active & (np.abs(velocity).sum(axis=1) > 0.0), np.minimum(vmax, free / react), 0.0)
        return PlannerOutput(velocity=velocity, waypoint=waypoint, speed_limit=speed_limit,
                             collision=overlapping(radius, (q, other, dist), n))

    def waits(self) -> dict[int, list[int]]:
        """Which cubes each cube currently waits for (diagnostics: who blocks whom)."""
        return {} if self.claims is None else self.claims.waits()

    # ------------------------------------------------------------------------------------------------ set-up
    def _prepare(self, state: SwarmState) -> None:
        """(Re)build the lattice when the walls, the radii or the area change; refresh goals and blocked
        vertices (stopped cubes) and the route fields that depend on them."""
        p = self.params
        active = np.asarray(state.active, bool)
        radius = np.asarray(state.radius, float)
        walls = np.asarray(state.walls, float).reshape(-1, 5)
        typical = radius[active] if active.any() else radius
        r_typ = float(typical[0]) if np.all(typical == typical[0]) else float(np.median(typical))
        spacing = 2.0 * r_typ + p.margin
        key = walls.tobytes() + np.float64(spacing).tobytes()
        wanted = np.vstack([state.pos, np.asarray(state.goal)[active]])
        if state.bounds is not None:
            x0, y0, x1, y1 = state.bounds
            wanted = np.clip(wanted, [x0, y0], [x1, y1])
        if self.lattice is None or key != self._walls_key or not self.lattice.covers(wanted, spacing):
            lo = wanted.min(axis=0) - p.pad * spacing
            hi = wanted.max(axis=0) + p.pad * spacing
            if state.bounds is not None:
                lo, hi = np.maximum(lo, state.bounds[:2]), np.minimum(hi, state.bounds[2:])
            self.lattice = Lattice.build((*lo, *hi), spacing, walls, r_typ + p.wall_margin)
            self._walls_key = key
            v = self.lattice.size
            self.claims = Claims(state.pos, v + state.n + np.arange(state.n))
            self._float = np.array(state.pos, float)
            self._goals = np.full((state.n, 2), np.nan)
            self._blocked_key = None
            self._field = None
            self._goal_adj = np.zeros((state.n, v), bool)
            self._float_adj = [self._attach(i, self._float[i]) for i in range(state.n)]
        lat = self.lattice
        inactive = ~active
        blocked_key = np.round(state.pos[inactive], 0).tobytes() + inactive.tobytes()
        if blocked_key != self._blocked_key:
            self._blocked_key = blocked_key
            self._blocked = np.zeros(lat.size, bool)
            for j in np.nonzero(inactive)[0]:
                reach = radius[j] + r_typ + p.margin
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
            for i in rows:
                self._goal_adj[i] = False
                idx, _d = lat.attach(self._goals[i], self._blocked)
                self._goal_adj[i, idx] = True
            if self._field is not None:
                self._field[rows] = lat.route_fields(self._goals[rows], self._blocked)

    def _attach(self, i: int, point: np.ndarray) -> np.ndarray:
        idx, _d = self.lattice.attach(point, getattr(self, '_blocked', None))
        return idx

    def _hold_inactive(self, active: np.ndarray) -> None:
        """A stopped cube's claim shrinks to the point where it stands (cubes waiting for it keep waiting
        there); when it becomes active again it starts from that point."""
        c = self.claims
        v = self.lattice.size
        for i in np.nonzero(~active)[0]:
            c.clear_next(i)
            c.u_node[i] = v + c.n + i
            c.u[i] = c.origin[i] = c.pos[i]
            if np.hypot(*(self._float[i] - c.pos[i])) > 1e-6:
                self._float[i] = c.pos[i]
                self._float_adj[i] = self._attach(i, c.pos[i])

    def _pairs(self, radius: np.ndarray, step_reach: np.ndarray):
        """All pairs (i, j, distance) close enough for a new edge of i to reach j's claim (which also covers
        the velocity check and the overlap test), sorted by i."""
        c = self.claims
        extent = np.hypot(*(c.pos - c.u).T) + np.hypot(*(c.u - c.w).T)
        extent = np.maximum(extent, step_reach)
        longest_edge = 4.0 * self.lattice.spacing
        cutoff = 2.0 * float(radius.max()) + self.params.margin + 2.0 * float(extent.max()) + longest_edge
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
        c, lat = self.claims, self.lattice
        v, n = lat.size, c.n
        u = int(c.u_node[i])
        goal = v + i
        if u < v:
            nbr = lat.neighbours[u]
            nodes = nbr[nbr >= 0]
            if self._goal_adj[i, u]:
                nodes = np.append(nodes, goal)
        elif u == goal:
            nodes = np.nonzero(self._goal_adj[i])[0]
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
        if self._field is not None:
            h = self._field[i, idx]
        else:
            h = np.hypot(*(lat.points[idx] - self._goals[i]).T)
        return np.where(on_lattice, h, np.where(nodes == v + i, 0.0, math.inf))

    def _jitter(self, i: int, nodes: np.ndarray) -> np.ndarray:
        """A tiny deterministic per (cube, vertex) tie-break, so equal routes do not all pick the same side."""
        h = (nodes.astype(np.int64) * 2654435761 + (i + 1) * self._jitter_salt) % 1000003
        return 1e-9 * h


def stop_unsafe(pos: np.ndarray, velocity: np.ndarray, radius: np.ndarray, gap: float, horizon: float,
                pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """The continuous safety layer: a cube whose motion over ``horizon`` would bring it closer than touching
    (+ ``gap``) to another cube, and closer than it is now, stands still; repeated until no such pair is left.
    A stopped pair cannot get closer, so no contact can start or deepen between planned cubes."""
    n = len(pos)
    q, p, now = pairs
    if q.size == 0:
        return velocity
    velocity = velocity.copy()
    limit = radius[q] + radius[p] + gap
    for _ in range(n):
        nxt = pos + velocity * horizon
        after = np.hypot(*(nxt[q] - nxt[p]).T)
        bad = (after < limit) & (after < now - 1e-9)
        moving = np.abs(velocity[q]).sum(axis=1) > 0.0
        culprits = np.unique(q[bad & moving])
        if culprits.size == 0:
            break
        velocity[culprits] = 0.0
    return velocity


def overlapping(radius: np.ndarray, pairs: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> np.ndarray:
    q, p, d = pairs
    out = np.zeros(n, bool)
    out[q[d < radius[q] + radius[p]]] = True
    return out
