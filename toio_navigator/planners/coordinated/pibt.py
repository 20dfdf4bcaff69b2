"""One step of priority inheritance with backtracking (PIBT, Okumura et al., IJCAI 2019) on the coordination graph.

Cubes decide their next vertex in priority order. A cube takes the best of its candidates (nearest to its target
by route; standing still is a candidate too); when its move conflicts with a cube that has not decided yet, that
cube is *pushed*: it decides first, with the pusher's priority, and must leave what the pusher needs; when it
cannot, the pusher tries its next candidate. So a higher-priority cube goes and the others yield or back off.

The moves of one step are carried out by real cubes one after another where they interact (a cube enters space
another one leaves only after it has left it). The order is the order in which the cubes *finished* deciding: a
pushed cube finishes before its pusher. Two rules keep that order consistent, so it never asks for a cycle:
a cube never moves into space an unfinished cube up its push chain is leaving (that would be a rotation), and a
finished cube never has to wait for one that decides later. Cubes whose next vertex is fixed beforehand (by the
search above) count as finished first; :meth:`Pibt.step` checks every close pair at the end.
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.coordinated.graph import AFTER, BEFORE, EITHER, FREE, INVALID, CoordinationGraph

TURN_COST = 0.05     # route-length penalty (in spacings) per unit of (1 - cos) of a turn: fewer turns on ties


class Pibt:
    """PIBT steps on one graph; ``tiebreak`` (N,) small per-cube numbers that break exact ties."""

    def __init__(self, graph: CoordinationGraph, tiebreak: np.ndarray) -> None:
        self.g = graph
        self.tiebreak = [float(t) for t in tiebreak]
        self.turn_cost = TURN_COST * graph.lattice.spacing
        self.keep_right = 0.0          # route-length bonus per unit of a step to the right of the way to the target
        # a move that turns from the way the cube came by more than this (cosine below it) is no candidate: a real
        # cube turns on the spot, so it stands a step first (then it may go any way); None: cubes turn as they go
        self.turn_limit: float | None = None
        self._cands: dict[tuple[int, int, int], list[int]] = {}
        self.ops = 0                   # cubes looked at (deterministic work)

    def step(self, q_now: list[int], order: list[int], fixed: list[tuple[int, int]],
             heading: list[int]) -> tuple[list[int], list[int]] | None:
        """The next configuration from ``q_now`` and the rank of every cube in it (the order in which their
        moves are carried out where they interact), or None when the fixed moves cannot be completed.
        ``heading`` (per cube, the vertex it came from or -1) makes cubes keep their direction on ties and, with
        ``turn_limit``, keeps them from turning sharper than that without standing a step first."""
        n = len(q_now)
        self.q_now, self.heading = q_now, heading
        self.q_next = [-1] * n
        self.rank = [-1] * n
        self.done = 0
        self.occ_now = {x: i for i, x in enumerate(q_now)}
        self.occ_next: dict[int, int] = {}
        for i, x in fixed:
            if x in self.occ_next:
                return None
            self._finish(i, x)
        self.chain: list[int] = []
        self.in_chain: set[int] = set()
        for i in order:
            if self.q_next[i] < 0:
                self.decide(i)
        if not self.valid():
            return None
        return self.q_next, self.rank

    def _finish(self, i: int, x: int) -> None:
        self.q_next[i] = x
        self.occ_next[x] = i
        self.rank[i] = self.done
        self.done += 1

    # --------------------------------------------------------------------------------------------------
    def candidates(self, i: int, u: int) -> list[int]:
        key = (i, u, self.heading[i])
        hit = self._cands.get(key)
        if hit is not None:
            return hit
        g = self.g
        pts = g.points
        came = self.heading[i]
        scored = [(g.route(i, u) - 1e-3, 0.0, u)]
        aim = pts[g.target[i]] - pts[u]
        aim_len = math.hypot(*aim)
        right = np.array([-aim[1], aim[0]]) / aim_len if aim_len > 1e-9 else np.zeros(2)
        for x in g.neighbours(i, u):
            cost = g.route(i, x) - self.keep_right * float((pts[x] - pts[u]) @ right)
            cos_turn = g.turn_cosine(came, u, x)
            if self.turn_limit is not None and cos_turn < self.turn_limit:
                continue
            cost += self.turn_cost * (1.0 - cos_turn)
            scored.append((cost, self.tiebreak[i] * ((x * 2654435761) % 1000003) * 1e-9, x))
        out = [x for c, _t, x in sorted(scored) if math.isfinite(c) or x == u]
        self._cands[key] = out
        return out

    def decide(self, i: int) -> bool:
        """Give cube i its next vertex; False when it was pushed and could not leave (it then stands)."""
        u = self.q_now[i]
        pushed = bool(self.chain)
        self.chain.append(i)
        self.in_chain.add(i)
        for x in self.candidates(i, u):
            if pushed and x == u:
                continue
            to_push = self._judge(i, u, x)
            if to_push is None:
                continue
            self.q_next[i] = x
            self.occ_next[x] = i
            ok = True
            for k in to_push:
                if self.q_next[k] >= 0:           # decided meanwhile, by an earlier push of this move
                    if not self._compatible(i, u, x, k):
                        ok = False
                        break
                elif not self.decide(k):
                    ok = False
                    break
            if ok:
                self.chain.pop()
                self.in_chain.discard(i)
                self.q_next[i] = -1
                self._finish(i, x)
                return True
            if self.occ_next.get(x) == i:
                del self.occ_next[x]
            self.q_next[i] = -1
        self.chain.pop()
        self.in_chain.discard(i)
        self._finish(i, u)
        return False

    def _others(self, u: int, x: int, i: int):
        seen = {i}
        around = self.g.around(u, x)
        self.ops += len(around)
        for y in around:
            for k in (self.occ_now.get(y), self.occ_next.get(y)):
                if k is not None and k not in seen:
                    seen.add(k)
                    yield k

    def _judge(self, i: int, u: int, x: int) -> list[int] | None:
        """None if cube i may not move u -> x now; else the undecided cubes it must push out of its way."""
        g = self.g
        to_push = []
        for k in self._others(u, x, i):
            uk = self.q_now[k]
            if self.q_next[k] < 0 and k not in self.in_chain:
                if g.relation(u, x, uk, uk) != FREE:
                    to_push.append(k)
                continue
            rel = g.relation(u, x, uk, self.q_next[k] if self.q_next[k] >= 0 else uk)
            if rel == FREE:
                continue
            if rel == INVALID:
                return None
            if k in self.in_chain:
                if rel & AFTER or rel == EITHER:  # it would wait for a cube up its own push chain
                    return None
            elif rel & BEFORE:                     # a finished cube would wait for this one
                return None
        return to_push

    def _compatible(self, i: int, u: int, x: int, k: int) -> bool:
        rel = self.g.relation(u, x, self.q_now[k], self.q_next[k])
        return rel != INVALID and not rel & BEFORE

    def valid(self) -> bool:
        """Every close pair is compatible with the ranks (the later cube may wait for the earlier one only)."""
        g = self.g
        for i, (u, x) in enumerate(zip(self.q_now, self.q_next)):
            for k in self._others(u, x, i):
                rel = g.relation(u, x, self.q_now[k], self.q_next[k])
                if rel == INVALID:
                    return False
                if rel == FREE:
                    continue
                later = self.rank[i] > self.rank[k]
                if (rel & BEFORE and later) or (rel & AFTER and not later):
                    return False
        return True
