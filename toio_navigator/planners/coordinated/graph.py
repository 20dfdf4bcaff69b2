"""The graph the swarm is planned on: the lattice, plus each cube's start and goal as vertices of its own.

Vertices 0..V-1 are lattice vertices, V + i is cube i's goal and V + N + i its start. A start or goal is joined to
the (up to three) nearest lattice vertices it reaches in a straight line, and to the other one when they are close.

Two cubes conflict when parts of their way come closer than the pair distance D: a cube standing on a vertex is a
point, a cube moving is the segment of its edge. On the lattice alone (spacing * sqrt(3) / 2 >= D) that happens
only at a shared vertex; starts and goals are compared by distance. Starts and goals are given: two starts (or
two goals) may lie closer than D, so between them the distance they have is enough, and a cube leaving its start
(reaching its goal) must not come closer than that to another cube on its start (goal).

:meth:`CoordinationGraph.relation` answers, for two cubes moving at the same step, whether one must move after the
other (it enters space the other leaves), before it (it leaves space the other enters), either, or cannot at all.
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.coordinated.lattice import Lattice

FREE, AFTER, BEFORE, INVALID = 0, 1, 2, 3      # relation flags: AFTER | BEFORE = INVALID
EITHER = 4                                     # the two moves must not overlap in time, in either order
ATTACH = 3                                     # lattice vertices a start or goal is joined to, at most ...
ATTACH_REACH = 1.0                             # ... within this many spacings
EPS = 1e-6


def _point_segment(px, py, ax, ay, bx, by) -> float:
    dx, dy = bx - ax, by - ay
    den = dx * dx + dy * dy
    t = 0.0 if den < 1e-18 else min(1.0, max(0.0, ((px - ax) * dx + (py - ay) * dy) / den))
    ex, ey = px - ax - t * dx, py - ay - t * dy
    return math.sqrt(ex * ex + ey * ey)


def segment_gap(a, b, c, d) -> float:
    """Least distance between segments [a, b] and [c, d] (points as (x, y); a point is a segment a == b)."""
    ax, ay = a
    bx, by = b
    cx, cy = c
    dx, dy = d
    # a proper crossing: each segment's end points lie strictly on both sides of the other's line
    o1 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    o2 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax)
    o3 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx)
    o4 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx)
    if o1 * o2 < 0.0 and o3 * o4 < 0.0:
        return 0.0
    return min(_point_segment(ax, ay, cx, cy, dx, dy), _point_segment(bx, by, cx, cy, dx, dy),
               _point_segment(cx, cy, ax, ay, bx, by), _point_segment(dx, dy, ax, ay, bx, by))


class CoordinationGraph:
    """Lattice + starts + goals of N cubes; static obstacles (stopped cubes) block what comes too close."""

    def __init__(self, lattice: Lattice, starts: np.ndarray, goals: np.ndarray, pair_distance: float,
                 obstacles: np.ndarray | None = None, obstacle_distance: np.ndarray | None = None) -> None:
        self.lattice = lattice
        v, n = lattice.size, len(starts)
        self.V, self.N = v, n
        self.D = float(pair_distance)
        self.points = np.vstack([lattice.points, goals, starts]).astype(float)
        self._xy = [tuple(p) for p in self.points.tolist()]
        obstacles = np.zeros((0, 2)) if obstacles is None else np.asarray(obstacles, float).reshape(-1, 2)
        reach = np.zeros(0) if obstacle_distance is None else np.asarray(obstacle_distance, float)
        self.obstacles, self.obstacle_reach = obstacles, reach
        usable = lattice.free.copy()
        for c, r in zip(obstacles, reach):
            usable &= np.hypot(*(lattice.points - c).T) >= r
        self.usable = usable
        self.lattice_adj = [[int(w) for w in row if w >= 0 and usable[w] and self._edge_ok(x, int(w))]
                            if usable[x] else [] for x, row in enumerate(lattice.neighbours)]
        spacing = lattice.spacing
        self.goal_att, self.start_att = [], []
        self.direct = np.zeros(n, bool)
        self.extra: list[dict[int, list[int]]] = [dict() for _ in range(v)]
        for i in range(n):
            g_ok = self._point_free(goals[i])
            g_att = [int(x) for x in lattice.attach(goals[i], usable, ATTACH_REACH * spacing, ATTACH)] if g_ok else []
            g_att = [x for x in g_att if self._special_edge_ok(x, v + i)]
            s_att = [int(x) for x in lattice.attach(starts[i], usable, ATTACH_REACH * spacing, ATTACH)]
            s_att = [x for x in s_att if self._special_edge_ok(x, v + n + i)]
            self.goal_att.append(g_att)
            self.start_att.append(s_att)
            close = float(np.hypot(*(goals[i] - starts[i]))) <= spacing
            self.direct[i] = g_ok and close and self._direct_ok(i)
            for x in g_att:
                self.extra[x].setdefault(i, []).append(v + i)
            for x in s_att:
                self.extra[x].setdefault(i, []).append(v + n + i)
        self._targets()
        self._neighbourhoods()
        self._cache: dict[tuple[int, int, int, int], int] = {}
        self._conflicts: dict[tuple[int, int, int, int], bool] = {}   # (relation asks for the same pairs often)
        self._turns: dict[tuple[int, int, int], float] = {}             # (the searches ask for the same turns)
        self._around: dict[tuple[int, int], frozenset[int]] = {}          # (and for the same moves' surroundings)
        self._around_list: dict[tuple[int, int], list[int]] = {}

    # ---------------------------------------------------------------------------------------------- building
    def _point_free(self, p) -> bool:
        return all(math.hypot(p[0] - c[0], p[1] - c[1]) >= r for c, r in zip(self.obstacles, self.obstacle_reach))

    def _edge_ok(self, a: int, b: int) -> bool:
        """A lattice edge stays clear of the static obstacles."""
        pa, pb = self._xy[a], self._xy[b]
        return all(segment_gap(pa, pb, c, c) >= r for c, r in zip(self.obstacles.tolist(), self.obstacle_reach))

    def _special_edge_ok(self, a: int, b: int) -> bool:
        """An edge between any two vertices stays clear of the static obstacles (near a start: never closer
        than that start is now)."""
        pa, pb = self._xy[a], self._xy[b]
        first_start = self.V + self.N
        for c, r in zip(self.obstacles.tolist(), self.obstacle_reach):
            need = r
            for x, px in ((a, pa), (b, pb)):
                if x >= first_start:
                    need = min(need, math.hypot(px[0] - c[0], px[1] - c[1]) - EPS)
            if segment_gap(pa, pb, c, c) < need:
                return False
        return True

    def _direct_ok(self, i: int) -> bool:
        a, b = self.points[self.V + self.N + i], self.points[self.V + i]
        return bool(self.lattice.straight_clear(a[None], b[None], a[None])[0]) and \
            self._special_edge_ok(self.V + i, self.V + self.N + i)

    def _targets(self) -> None:
        """Each cube's target vertex (its goal, or the usable lattice vertex nearest to it when the goal is
        blocked or cannot be joined) and its route length from every vertex (``dist``)."""
        v, n, lat = self.V, self.N, self.lattice
        self.target = np.zeros(n, np.int64)
        sources = []
        for i in range(n):
            g = self.points[v + i]
            if self.goal_att[i] or self.direct[i]:
                self.target[i] = v + i
                idx = np.array(self.goal_att[i], np.int64)
                sources.append((idx, np.hypot(*(lat.points[idx] - g).T)))
            else:
                cand = np.nonzero(self.usable)[0]
                best = int(cand[np.argmin(np.hypot(*(lat.points[cand] - g).T))]) if cand.size else 0
                self.target[i] = best
                sources.append((np.array([best]), np.zeros(1)))
        self.dist = lat.route_fields(sources, self.usable) if n else np.zeros((0, v))
        self.dist_goal = np.full(n, math.inf)
        self.dist_start = np.full(n, math.inf)
        for i in range(n):
            g, s = self.points[v + i], self.points[v + n + i]
            if self.target[i] == v + i:
                self.dist_goal[i] = 0.0
            elif self.goal_att[i]:
                self.dist_goal[i] = min(math.hypot(*(g - self.points[x])) + self.dist[i, x] for x in self.goal_att[i])
            via = [math.hypot(*(s - self.points[x])) + self.dist[i, x] for x in self.start_att[i]]
            if self.direct[i]:
                via.append(math.hypot(*(s - g)) + self.dist_goal[i])
            self.dist_start[i] = min(via, default=math.inf)

    def _neighbourhoods(self) -> None:
        """Per vertex, the vertices whose cubes could conflict with a cube on it or on an edge from it: a lattice
        vertex and a start or goal whose own edges are L long conflict only within D + spacing + L, two specials
        within D + L1 + L2 (one long edge of one start must not widen everyone's neighbourhood)."""
        v, n = self.V, self.N
        specials = np.arange(v, v + 2 * n)
        spacing = self.lattice.spacing
        own = np.zeros(2 * n)
        for i in range(n):
            for x in self.goal_att[i]:
                own[i] = max(own[i], math.hypot(*(self.points[x] - self.points[v + i])))
            for x in self.start_att[i]:
                own[n + i] = max(own[n + i], math.hypot(*(self.points[x] - self.points[v + n + i])))
            if self.direct[i]:
                d = math.hypot(*(self.points[v + i] - self.points[v + n + i]))
                own[i], own[n + i] = max(own[i], d), max(own[n + i], d)
        self.longest_edge = max(spacing, float(own.max(initial=0.0)))
        self.near_special: list[list[int]] = [[] for _ in range(v)]
        self.near_of_special: list[list[int]] = []
        if n == 0:
            return
        sp = self.points[specials]
        for s_idx, x in enumerate(specials):
            d_lat = np.hypot(*(self.lattice.points - sp[s_idx]).T)
            lat_near = np.nonzero(d_lat < self.D + spacing + own[s_idx] + EPS)[0]
            for y in lat_near:
                self.near_special[int(y)].append(int(x))
            d_sp = np.hypot(*(sp - sp[s_idx]).T)
            sp_near = specials[(d_sp < self.D + own + own[s_idx] + EPS) & (specials != x)]
            self.near_of_special.append([int(y) for y in lat_near] + [int(y) for y in sp_near])

    # ---------------------------------------------------------------------------------------------- queries
    def is_special(self, x: int) -> bool:
        return x >= self.V

    def owner(self, x: int) -> int:
        """The cube a start or goal belongs to (-1 for a lattice vertex)."""
        return -1 if x < self.V else (x - self.V) % self.N

    def neighbours(self, i: int, x: int) -> list[int]:
        """Vertices cube i can move to from x in one step (x itself not included)."""
        v, n = self.V, self.N
        if x < v:
            return self.lattice_adj[x] + self.extra[x].get(i, [])
        if x == v + i:
            return self.goal_att[i] + ([v + n + i] if self.direct[i] else [])
        return self.start_att[i] + ([v + i] if self.direct[i] else [])

    def route(self, i: int, x: int) -> float:
        """Route length from vertex x to cube i's target."""
        v, n = self.V, self.N
        if x < v:
            return float(self.dist[i, x])
        if x == v + i:
            return float(self.dist_goal[i])
        if x == v + n + i:
            return float(self.dist_start[i])
        return math.inf

    def around(self, u: int, x: int) -> list[int]:
        """Vertices to look at for cubes that may conflict with a cube moving u -> x (u == x: standing); kept, as
        the searches ask for the same moves often."""
        key = (u, x)
        out = self._around_list.get(key)
        if out is None:
            out = [u] if u == x else [u, x]
            for y in out[:]:
                out += self.near_special[y] if y < self.V else self.near_of_special[y - self.V]
            out = self._around_list[key] = list(dict.fromkeys(out))
        return out

    def around_set(self, u: int, x: int) -> frozenset[int]:
        """:meth:`around` as a set, kept: a space-time search intersects it with the vertices the others hold."""
        out = self._around.get((u, x))
        if out is None:
            out = self._around[(u, x)] = frozenset(self.around(u, x))
        return out

    def same_place(self, a: int, b: int) -> bool:
        """Do vertices a and b lie in the same place (a start or goal on a lattice vertex, or on each other)? A move
        between them is no motion: it neither turns a cube nor counts as standing still."""
        (ax, ay), (bx, by) = self._xy[a], self._xy[b]
        return math.hypot(bx - ax, by - ay) <= EPS

    def came_from(self, before: int, here: int, came: int) -> int:
        """The vertex a cube that moved ``before`` -> ``here`` in the last step came from, as turns count it: -1
        if it stood still (then it may set off any way); ``came`` (the one before) if that move was no motion."""
        if before == here:
            return -1
        return came if self.same_place(before, here) else before

    def turn_cosine(self, a: int, b: int, c: int) -> float:
        """The cosine of the turn at b from the move a -> b onto b -> c; 1 (straight on) where either move is no
        motion (:meth:`same_place`) or a is -1 (the cube stood still)."""
        key = (a, b, c)
        out = self._turns.get(key)
        if out is None:
            out = 1.0
            if a >= 0 and not self.same_place(a, b) and not self.same_place(b, c):
                (ax, ay), (bx, by), (cx, cy) = self._xy[a], self._xy[b], self._xy[c]
                ux, uy, wx, wy = bx - ax, by - ay, cx - bx, cy - by
                out = (ux * wx + uy * wy) / (math.hypot(ux, uy) * math.hypot(wx, wy))
            self._turns[key] = out
        return out

    def relaxed_distance(self, a: tuple[int, int], b: tuple[int, int]) -> float:
        """The distance the way a (u, x) of one cube and b of another must keep (less than D between two starts
        or two goals that lie closer)."""
        v, n = self.V, self.N
        need = self.D
        for lo, hi in ((v + n, v + 2 * n), (v, v + n)):           # starts, then goals
            sa = [x for x in a if lo <= x < hi]
            sb = [x for x in b if lo <= x < hi]
            if sa and sb:
                pa, pb = self._xy[sa[0]], self._xy[sb[0]]
                need = min(need, math.hypot(pa[0] - pb[0], pa[1] - pb[1]) - 1e-3)
        return need

    def _conflict(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        key = (*a, *b)
        out = self._conflicts.get(key)
        if out is None:
            xy = self._xy
            p, q, r, s = xy[a[0]], xy[a[1]], xy[b[0]], xy[b[1]]
            # the distance to keep is never more than D: two ways whose boxes lie D apart do not conflict, and
            # most of the pairs a search asks about do (the exact distance takes four point-segment distances)
            apart_x = max(min(r[0], s[0]) - max(p[0], q[0]), min(p[0], q[0]) - max(r[0], s[0]), 0.0)
            apart_y = max(min(r[1], s[1]) - max(p[1], q[1]), min(p[1], q[1]) - max(r[1], s[1]), 0.0)
            if math.hypot(apart_x, apart_y) > self.D + EPS:
                out = False
            else:
                gap = segment_gap(p, q, r, s)
                out = gap < self.D - EPS and gap < self.relaxed_distance(a, b) - EPS
            self._conflicts[key] = out
        return out

    def relation(self, u: int, x: int, uk: int, xk: int) -> int:
        """How cube i moving u -> x relates to cube k moving uk -> xk in the same step (u == x: standing):
        FREE, AFTER (i must wait until k has left what it enters), BEFORE (k must wait for i), EITHER (their
        edges meet, either order) or INVALID."""
        key = (u, x, uk, xk)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        v = self.V
        if u < v and x < v and uk < v and xk < v:
            after = x == uk
            before = xk == u
            out = INVALID if x == xk else (AFTER if after else 0) | (BEFORE if before else 0)
        else:
            seg, seg_k = (u, x), (uk, xk)
            if self._conflict((x, x), (xk, xk)):
                out = INVALID
            else:
                after = self._conflict(seg, (uk, uk)) or self._conflict(seg_k, (x, x))
                before = self._conflict(seg, (xk, xk)) or self._conflict(seg_k, (u, u))
                out = (AFTER if after else 0) | (BEFORE if before else 0)
                if out == FREE and self._conflict(seg, seg_k):
                    out = EITHER
        if out not in (FREE, INVALID) and (u == x or uk == xk):
            out = INVALID                  # one of them stands where the other needs it gone
        self._cache[key] = out
        return out

    def straight_ok(self, a: int, b: int) -> bool:
        """May a cube drive straight from vertex a to vertex b: as far from the walls as the lattice keeps (or
        as its ends are, if closer) and clear of the static obstacles?"""
        pa, pb = self.points[a], self.points[b]
        return bool(self.lattice.straight_clear(pa[None], pb[None], np.vstack([pa, pb]))[0]) and \
            self._special_edge_ok(a, b)

    def straight_ok_from(self, a: int, bs: list[int]) -> np.ndarray:
        """:meth:`straight_ok` from vertex a to each of ``bs``, the walls all at once."""
        ok = self.lattice.straight_clear_from(self.points[a], self.points[np.array(bs, np.int64)].reshape(-1, 2))
        if len(self.obstacles):
            ok &= np.array([self._special_edge_ok(a, b) for b in bs], bool)
        return ok

    def items_conflict(self, a: tuple[int, int], b: tuple[int, int], exact: bool = False) -> tuple[bool, float]:
        """Do the way a (u, x) of one cube and b of another conflict, and the distance they must keep."""
        v = self.V
        if not exact and a[0] < v and a[1] < v and b[0] < v and b[1] < v:
            return bool(set(a) & set(b)), self.D      # lattice edges (exact: any two vertices, by geometry)
        return self._conflict(a, b), self.relaxed_distance(a, b)
