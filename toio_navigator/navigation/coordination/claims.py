"""Where every cube is allowed to go, and how far it may go now without ever meeting another cube.

Each cube holds a *claim*: its current edge [position, u] and, once decided, its next edge [u, w] (u and w are
vertices of the coordination graph). Every edge gets a sequence number when it is created. An edge that was
allowed to come close to other cubes' edges (a cube following another through the space the other is leaving)
carries *gates*: the (cube, edge, distance) it must wait for. A cube moves along its claim only as far as every
point it passes keeps that distance (normally the pair distance) from the remaining part of every edge its own
edge waits for.

Why this can neither collide nor dead-lock (the rules the decisions in ``pibt`` keep):
* an edge may pass close to another cube's edge only if it waits for it, and never ends close to where that cube
  stops (its last vertex), so the wait always ends when the other cube has moved on;
* an edge waits only for edges created before it, except that a cube pushing another one out of its way waits
  for the pushed cube's new edge, which itself never waits for its pushers. The wait-for relation between edges
  therefore has no cycle, and the cube holding the oldest edge can always move.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.navigation.coordination.geometry import point_segment_distance, polyline_length

NO_EDGE = 0


class Claims:
    """The claims of N cubes: vertices u (current target) and w (next target, or none), their edge numbers and
    gates. ``pos`` is refreshed every tick from the measured positions."""

    def __init__(self, pos: np.ndarray, nodes: np.ndarray) -> None:
        n = len(pos)
        self.pos = np.array(pos, float)
        self.u_node = np.array(nodes, np.int64)
        self.u = self.pos.copy()
        self.origin = self.pos.copy()          # where the current edge started (its direction of travel)
        self.w_node = np.full(n, -1, np.int64)
        self.w = self.pos.copy()
        self.seq_cur = np.zeros(n, np.int64)
        self.seq_next = np.zeros(n, np.int64)
        self.gates_cur: list[list[tuple[int, int, float]]] = [[] for _ in range(n)]
        self.gates_next: list[list[tuple[int, int, float]]] = [[] for _ in range(n)]
        self._counter = 0
        for i in range(n):
            self.seq_cur[i] = self.new_seq()

    @property
    def n(self) -> int:
        return len(self.pos)

    def new_seq(self) -> int:
        self._counter += 1
        return self._counter

    def has_next(self) -> np.ndarray:
        return self.w_node >= 0

    def final(self) -> np.ndarray:
        """Where each cube stops if nothing else is decided: w if it has a next edge, else u."""
        return np.where(self.has_next()[:, None], self.w, self.u)

    def polylines(self) -> np.ndarray:
        """(N, 3, 2): position, u, w (w = u without a next edge)."""
        return np.stack([self.pos, self.u, self.final()], axis=1)

    def set_next(self, i: int, node: int, xy: np.ndarray, gates: list[tuple[int, int, float]]) -> int:
        seq = self.new_seq()
        self.w_node[i] = node
        self.w[i] = xy
        self.seq_next[i] = seq
        self.gates_next[i] = list(gates)
        return seq

    def clear_next(self, i: int) -> None:
        self.w_node[i] = -1
        self.w[i] = self.u[i]
        self.seq_next[i] = NO_EDGE
        self.gates_next[i] = []

    def restart(self, i: int, node: int, xy: np.ndarray) -> None:
        """Drop cube i's claim and start again from vertex ``node`` at ``xy`` (no gates)."""
        self.u_node[i] = node
        self.u[i] = xy
        self.origin[i] = self.pos[i]
        self.clear_next(i)
        self.seq_cur[i] = self.new_seq()
        self.gates_cur[i] = []

    def sharp_turn(self) -> np.ndarray:
        """Cubes whose next edge turns back by more than 90 degrees at u: they must reach u before turning."""
        out, way = self.w - self.u, self.u - self.origin
        scale = np.hypot(*out.T) * np.hypot(*way.T)
        return self.has_next() & (np.einsum('nd,nd->n', out, way) < -1e-6 * scale)

    def advance(self, pos: np.ndarray, arrive_tol: float, track_tol: np.ndarray | float = 0.0) -> None:
        """New measured positions; a cube within ``arrive_tol`` of u, or beyond u (in its direction of travel)
        and within ``track_tol`` of its next edge, has finished its current edge: the next edge becomes
        current."""
        self.pos = np.array(pos, float)
        near = np.hypot(*(self.pos - self.u).T) <= arrive_tol
        ahead, way = self.pos - self.u, self.u - self.origin
        scale = np.hypot(*ahead.T) * np.hypot(*way.T)
        beyond = np.einsum('nd,nd->n', ahead, way) >= -1e-6 * scale      # a right-angle turn counts as beyond
        beside = point_segment_distance(self.pos, self.u, self.w) <= np.maximum(arrive_tol, track_tol)
        done = self.has_next() & (near | (beyond & beside & ~self.sharp_turn()))
        for i in np.nonzero(done)[0]:
            self.origin[i] = self.u[i]
            self.u_node[i], self.u[i] = self.w_node[i], self.w[i]
            self.seq_cur[i] = self.seq_next[i]
            self.gates_cur[i] = self.gates_next[i]
            self.clear_next(i)
        # an edge that is finished no longer holds anyone back
        for i in range(self.n):
            for gates in (self.gates_cur[i], self.gates_next[i]):
                if gates:
                    gates[:] = [g for g in gates if g[1] in (self.seq_cur[g[0]], self.seq_next[g[0]])]

    def edge_segment(self, j: int, seq: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The part of edge ``seq`` of cube j still ahead of it, or None when that edge is finished."""
        if seq == self.seq_cur[j]:
            return self.pos[j], self.u[j]
        if seq == self.seq_next[j] and seq != NO_EDGE:
            return self.u[j], self.w[j]
        return None

    def free_length(self, horizon: np.ndarray, step: float = 1.0) -> np.ndarray:
        """How far (arc length, N,) each cube may move along its claim now: up to ``horizon`` (N,) and the end of
        its claim, and only through points that keep each gate's distance from the remaining part of the edge
        that gate waits for."""
        n = self.n
        lines = self.polylines()
        total = polyline_length(lines)
        limit = np.minimum(total, horizon)
        gated = [i for i in range(n) if self.gates_cur[i] or self.gates_next[i]]
        if not gated:
            return limit
        rows = np.array(gated)
        count = int(np.ceil(float(limit[rows].max(initial=0.0)) / step)) + 1
        first = np.hypot(*(lines[rows, 1] - lines[rows, 0]).T)                        # length of the current edge
        grid = np.minimum(np.arange(count)[None, :] * step, limit[rows, None])
        s = np.sort(np.concatenate([grid, np.minimum(first, limit[rows])[:, None]], axis=1), axis=1)  # (R, S)
        count += 1
        on_next = s > first[:, None] + 1e-9
        a = np.where(on_next[..., None], lines[rows, 1][:, None], lines[rows, 0][:, None])
        b = np.where(on_next[..., None], lines[rows, 2][:, None], lines[rows, 1][:, None])
        along = np.where(on_next, s - first[:, None], s)
        seg = b - a
        seg_len = np.maximum(np.hypot(seg[..., 0], seg[..., 1]), 1e-12)
        points = a + seg * (np.minimum(along, seg_len) / seg_len)[..., None]            # (R, S, 2)
        k_max = max(max(len(self.gates_cur[i]), len(self.gates_next[i])) for i in gated)
        far = np.array([1e9, 1e9])
        g0 = np.tile(far, (len(rows), 2, k_max, 1))
        g1 = g0.copy()
        need = np.zeros((len(rows), 2, k_max))
        for r, i in enumerate(gated):
            for which, gates in enumerate((self.gates_cur[i], self.gates_next[i])):
                for k, (j, seq, distance) in enumerate(gates):
                    part = self.edge_segment(j, seq)
                    if part is not None:
                        g0[r, which, k], g1[r, which, k] = part
                        need[r, which, k] = distance
        # a pair already closer than wanted may move, but never closer than it is at the start of the edge
        starts = np.stack([lines[rows, 0], lines[rows, 1]], axis=1)[:, :, None, :]     # (R, 2, 1, 2): pos, u
        now = point_segment_distance(starts, g0, g1)                                   # (R, 2, K)
        need = np.minimum(need, now - 0.01)
        which = on_next.astype(int)                                                    # (R, S)
        r_idx = np.arange(len(rows))[:, None]
        a0, a1, dneed = g0[r_idx, which], g1[r_idx, which], need[r_idx, which]        # (R, S, K, 2)
        d = point_segment_distance(points[:, :, None, :], a0, a1)
        bad = (d < dneed - 0.1).any(axis=2)   # (R, S); 0.1 u of slack keeps an end at exactly dneed reachable
        first_bad = np.where(bad.any(axis=1), bad.argmax(axis=1), count)
        reach = np.where(first_bad == 0, 0.0, s[np.arange(len(rows)), np.maximum(first_bad - 1, 0)])
        reach = np.where(first_bad >= count, limit[rows], reach)
        out = limit.copy()
        out[rows] = reach
        return out

    def waits(self) -> dict[int, list[int]]:
        """Which cubes each cube's claim currently waits for (for diagnostics)."""
        return {i: sorted({g[0] for g in self.gates_cur[i] + self.gates_next[i]})
                for i in range(self.n) if self.gates_cur[i] or self.gates_next[i]}
