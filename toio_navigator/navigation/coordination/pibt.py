"""One round of priority inheritance with backtracking (PIBT, Okumura et al., IJCAI 2019) over the claims.

Cubes that are (nearly) at their current vertex decide their next edge, highest priority first. A cube takes the
best of its candidate vertices (nearest to its goal along its route; staying is a candidate for a cube nobody
pushes). When a candidate edge comes too close to a cube that has not decided yet, that cube is *pushed*: it must
decide first, with the pusher's priority, and move somewhere that leaves the pusher's edge free; if it cannot,
the pusher tries its next candidate. This is how a dead-lock is resolved: the cube with the higher priority
goes, the others yield or back off into free space. Cubes that are moving along an edge cannot be pushed; a
candidate may follow them only into space they are leaving (see ``claims`` for the rules that keep this safe).

Geometry is continuous: two cubes conflict when their claims come closer than radius_i + radius_j + margin, so
the same code handles lattice vertices, goals and start points that are off the lattice.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from toio_navigator.navigation.coordination.claims import Claims
from toio_navigator.navigation.coordination.geometry import point_segment_distance, segment_distance

FREE, DECIDING, FIXED = 0, 1, 2

#: candidates(i) -> (nodes (C,), points (C, 2), is_stay (C,) bool), best first
CandidateSource = Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]


class PibtRound:
    """Decides the next edge of every cube whose ``status`` is FREE; FIXED cubes (moving, inactive) only
    constrain. ``near`` lists, per cube, the cubes close enough to matter."""

    def __init__(self, claims: Claims, radius: np.ndarray, margin: float, status: np.ndarray,
                 near: list[np.ndarray], candidates: CandidateSource, parked: np.ndarray | None = None,
                 goals: tuple[np.ndarray, np.ndarray] | None = None, stalled: np.ndarray | None = None) -> None:
        self.claims = claims
        self.radius = radius
        self.margin = margin
        self.status = status.copy()
        self.near = near
        self.candidates = candidates
        self.chain: list[int] = []
        self.pushes = 0
        self.parked = np.zeros(len(status), bool) if parked is None else parked
        self.goal_node, self.goal_xy = goals if goals is not None else (np.full(len(status), -1), None)
        self.stalled = np.zeros(len(status), bool) if stalled is None else stalled
        self.pushed_parked: set[tuple[int, int]] = set()   # (pusher at the root of the chain, cube off its goal)

    def run(self, order: np.ndarray) -> None:
        for i in order:
            if self.status[i] == FREE:
                self.decide(int(i))

    def decide(self, i: int) -> bool:
        """Give cube i a next edge (or keep it where it is); False when it was pushed and could not yield."""
        c = self.claims
        self.status[i] = DECIDING
        pushed = bool(self.chain)
        nodes, points, stay = self.candidates(i)
        others = self.near[i]
        need = self.need(i, others)
        geo = self._geometry(i, points, others)
        asked: set[int] = set()
        for k in range(len(nodes)):
            if stay[k]:
                if pushed:
                    continue
                self.status[i] = FIXED
                return True
            verdict = self._judge(i, k, geo, others, self._goal_need(i, int(nodes[k]), others, need))
            if verdict is None:
                continue
            gates, to_push = verdict
            c.set_next(i, int(nodes[k]), points[k], gates)
            ok = True
            self.chain.append(i)
            for j in to_push:
                if self.status[j] == FREE:
                    self.pushes += 1
                    if self.parked[j]:
                        self.pushed_parked.add((self.chain[0], j))
                    if not self.decide(j):
                        # it could not yield to this edge. When the cube that started this chain has made no
                        # progress for a while (a dead-lock, e.g. two cubes facing each other in a one-lane
                        # corridor), its next candidate may ask it again, once; otherwise it stays (asking
                        # again and again is how a final packing churns)
                        if j not in asked and self.stalled[self.chain[0]]:
                            asked.add(j)
                            self.status[j] = FREE
                        ok = False
                        break
                elif not self._may_follow(i, j):     # decided meanwhile (by an earlier push): judge it again
                    ok = False
                    break
            self.chain.pop()
            if ok:
                self.status[i] = FIXED
                if pushed:
                    self._ancestors_wait_for(i)
                return True
            c.clear_next(i)
            geo = self._geometry(i, points, others)   # pushed cubes moved: look again
        self.status[i] = FIXED
        return False

    def _goal_need(self, i: int, node: int, others, need) -> np.ndarray:
        """Two goals may be closer than the pair distance (but apart enough for the bodies): an edge onto i's goal
        needs from a cube that ends on its own goal only the distance between the two goals."""
        if self.goal_xy is None or node != self.goal_node[i]:
            return need
        c = self.claims
        final = np.where(c.w_node[others] >= 0, c.w_node[others], c.u_node[others])
        on_goal = final == self.goal_node[others]
        apart = np.hypot(*(self.goal_xy[others] - self.goal_xy[i]).T) - 0.01
        floor = self.radius[i] + self.radius[others]
        return np.where(on_goal, np.minimum(need, np.maximum(apart, floor)), need)

    def need(self, i: int, others) -> np.ndarray:
        """The distance claims of i and ``others`` must keep: r_i + r_j + margin, or the distance the two cubes
        are apart now if that is less (a pair that is already closer may move, but never closer)."""
        c = self.claims
        wanted = self.radius[i] + self.radius[others] + self.margin
        now = np.hypot(*(c.pos[others] - c.pos[i]).T) - 0.01
        # less a hair: neighbouring lattice vertices lie exactly the pair distance apart, and rounding must not
        # turn that into a conflict
        return np.minimum(wanted, now) - 1e-6

    def _geometry(self, i, points, others):
        """Distances (C, J) from each candidate edge u_i -> point to the others' claims: current edge, next
        edge, final vertex, vertex u; and from each candidate's end to the others' next edges. One fused call."""
        c = self.claims
        m = len(others)
        has_next = c.w_node[others] >= 0
        pj, uj = c.pos[others], c.u[others]
        fj = np.where(has_next[:, None], c.w[others], uj)
        wj = np.where(has_next[:, None], c.w[others], np.nan)
        # rows: candidate edges, then candidate end points; columns: cur edge, next edge, final, u
        a0 = np.concatenate([np.broadcast_to(c.u[i], points.shape), points])[:, None, :]
        a1 = np.concatenate([points, points])[:, None, :]
        b0 = np.concatenate([pj, uj, fj, uj])[None]
        b1 = np.concatenate([uj, wj, fj, uj])[None]
        d = segment_distance(a0, a1, b0, b1)
        d = np.where(np.isnan(d), np.inf, d)
        k = len(points)
        edge, end = d[:k], d[k:]
        return edge[:, :m], edge[:, m:2 * m], edge[:, 2 * m:3 * m], edge[:, 3 * m:], end[:, m:2 * m]

    def _judge(self, i, k, geo, others, need):
        """None if candidate k is not allowed, else (gates of the new edge, cubes to push)."""
        c = self.claims
        d_cur, d_next, d_final, d_u, d_end_to_next = (g[k] for g in geo)
        conflict = (d_cur < need) | (d_next < need)
        gates: list[tuple[int, int, float]] = []
        to_push: list[int] = []
        for m in np.nonzero(conflict)[0]:
            j = int(others[m])
            st = self.status[j]
            if st == FREE:
                to_push.append(j)
            elif st == DECIDING:
                # an ancestor: never pass where it waits for us, and end clear of its new edge (it waits for us)
                if d_u[m] < need[m] or d_end_to_next[m] < need[m]:
                    return None
                if d_cur[m] < need[m]:
                    gates.append((j, int(c.seq_cur[j]), float(need[m])))
            else:
                # a cube on its way (or decided this round): follow it only into space it is leaving
                if d_final[m] < need[m]:
                    return None
                if d_cur[m] < need[m]:
                    gates.append((j, int(c.seq_cur[j]), float(need[m])))
                if d_next[m] < need[m]:
                    gates.append((j, int(c.seq_next[j]), float(need[m])))
        return gates, to_push

    def _may_follow(self, i: int, j: int) -> bool:
        """After j decided during i's pushes: is i's new edge still allowed next to j's claim? Adds the gates."""
        c = self.claims
        need = float(self.need(i, np.array([j]))[0])
        a0, a1 = c.u[i], c.w[i]
        if point_segment_distance(c.w[j] if c.w_node[j] >= 0 else c.u[j], a0, a1) < need:
            return False
        for seq, (p, q) in ((c.seq_cur[j], (c.pos[j], c.u[j])), (c.seq_next[j], (c.u[j], c.w[j]))):
            if seq and segment_distance(a0, a1, p, q) < need:
                c.gates_next[i].append((j, int(seq), need))
        return True

    def _ancestors_wait_for(self, child: int) -> None:
        """Every cube up the push chain whose new edge comes close to the child's claim waits for it (the child
        ends clear of their edges, so each wait ends)."""
        c = self.claims
        for a in self.chain:
            need = float(self.need(a, np.array([child]))[0])
            for seq, (p, q) in ((c.seq_cur[child], (c.pos[child], c.u[child])),
                                (c.seq_next[child], (c.u[child], c.w[child]))):
                if seq and segment_distance(c.u[a], c.w[a], p, q) < need:
                    c.gates_next[a].append((child, int(seq), need))
