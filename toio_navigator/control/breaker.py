"""The controller's dead-lock breaker (the reference has none; ``stuck_time_s`` 0 turns it off).

A cube with a goal that has moved less than ``stuck_distance`` for ``stuck_time_s`` far from its goal side-steps
to its right for ``sidestep_time_s`` (then left, then right, ...): symmetric encounters where HLAvoid keeps
choosing a waypoint too short to move. While the breaker is engaged, a waypoint inside the handle's own reached
radius is moved out of it (:meth:`DeadlockBreaker.out_of_reach`): move-to-target stops there, so a cube whose
planner keeps handing it such a waypoint would get 0/0 every tick and never move again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.reference.params import CubeHandleParams

ESCAPE_SPEED = 20.0         # motor units (~41 units/s): the breaker's crawl out of an HLAvoid overlap


def overlap_escape(p: np.ndarray, others: np.ndarray, reach: np.ndarray, walls: np.ndarray, wall_add: float,
                   lookahead: float, prefer: np.ndarray, directions: int = 16) -> np.ndarray:
    """Unit vector of the way out of overlaps for a cube at ``p``: of ``directions`` evenly spread headings, the
    one whose point ``lookahead`` away lies least deep inside the discs (centres ``others``, radii ``reach``)
    and wall bands (rows x1, y1, x2, y2, margin; half-width margin + ``wall_add``), summed; among equally good
    ones the closest to ``prefer``. Looking ahead (rather than down the local slope) finds the way out of a
    pocket where the pushes of two cubes and a wall cancel or change sides after a few units."""
    a = np.arange(directions) * (2 * math.pi / directions)
    u = np.column_stack([np.cos(a), np.sin(a)])
    q = p + lookahead * u                                                         # (D, 2)
    depth = np.maximum(reach[None, :] - np.hypot(*(q[:, None, :] - others[None, :, :]).transpose(2, 0, 1)),
                       0.0).sum(axis=1)
    for x1, y1, x2, y2, m in walls:
        w0, ab = np.array([x1, y1]), np.array([x2 - x1, y2 - y1])
        t = np.clip((q - w0) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0)
        depth += np.maximum(m + wall_add - np.hypot(*(q - (w0 + t[:, None] * ab)).T), 0.0)
    best = depth <= depth.min() + 1e-6
    k = int(np.argmax(np.where(best, u @ prefer, -np.inf)))
    return u[k]


@dataclass(frozen=True)
class Overlaps:
    """What HLAvoid counts as an overlap: two cubes within both their avoid ``margin`` (N,), a cube within a wall's
    band (``walls`` rows x1, y1, x2, y2, margin)."""
    margin: np.ndarray
    walls: np.ndarray


class DeadlockBreaker:
    """The breaker's memory of N cubes: where each last made progress, its side-step, its way out of an overlap."""

    def __init__(self, cubes: int) -> None:
        self.anchor = np.full((cubes, 2), np.nan)      # where the cube was when it last made progress
        self.anchor_time = np.zeros(cubes)
        self.sidestep_until = np.full(cubes, -np.inf)
        self.sidestep_goal = np.zeros((cubes, 2))
        self.sidestep_sign = np.ones(cubes)            # +1 = to the right of the goal direction (mat y down)
        self.sidesteps = np.zeros(cubes, dtype=int)
        self.escaping = np.zeros(cubes, dtype=bool)    # the breaker drives it out of an HLAvoid overlap ...
        self.escape_dir = np.zeros((cubes, 2))         # ... this way

    def targets(self, now: float, pos: np.ndarray, goal: np.ndarray, moving: np.ndarray, settings: NavigatorSettings,
                handle: CubeHandleParams) -> tuple[np.ndarray, np.ndarray]:
        """(targets for this tick, breaker engaged). The target is the cube's goal, or a side-step target for a
        ``moving`` cube that has stopped making progress far from its goal. The breaker is engaged for a cube that
        has made no progress for ``stuck_time_s`` (wherever it is) or is side-stepping."""
        s = settings
        fresh = ~moving | ~np.isfinite(self.anchor[:, 0]) | \
            (np.hypot(*(pos - self.anchor).T) > s.stuck_distance)
        self.anchor[fresh] = pos[fresh]
        self.anchor_time[fresh] = now
        no_progress = moving & (s.stuck_time_s > 0) & (now - self.anchor_time >= s.stuck_time_s)
        far = np.hypot(*(goal - pos).T) > max(s.tolerance, s.sidestep_distance)
        stuck = no_progress & far & (now >= self.sidestep_until)
        for i in np.nonzero(stuck)[0]:
            d = goal[i] - pos[i]
            d = d / max(float(np.hypot(*d)), 1e-9)
            right = np.array([-d[1], d[0]])          # 90° clockwise on the mat (y down) = the cube's right
            self.sidestep_goal[i] = pos[i] + self.sidestep_sign[i] * s.sidestep_distance * right
            self.sidestep_until[i] = now + s.sidestep_time_s
            self.sidestep_sign[i] *= -1.0
            self.sidesteps[i] += 1
            self.anchor_time[i] = now + s.sidestep_time_s
        stepping = moving & (now < self.sidestep_until)
        (x0, x1), (y0, y1) = handle.border_x, handle.border_y     # never side-step off the mat
        target = np.column_stack([np.clip(self.sidestep_goal[:, 0], x0, x1), np.clip(self.sidestep_goal[:, 1], y0, y1)])
        return np.where(stepping[:, None], target, goal), no_progress | stepping

    def out_of_reach(self, pos: np.ndarray, waypoint: np.ndarray, target: np.ndarray, engaged: np.ndarray,
                     collision: np.ndarray, settings: NavigatorSettings, overlaps: Overlaps | None) -> np.ndarray:
        """The waypoints with each one inside the handle's own reached radius (``handle_tolerance``) of a cube
        with the breaker ``engaged`` moved out to ``handle_tolerance + stuck_distance``. HLAvoid in its collision
        state returns an escape waypoint a few units away whatever the goal is (the demo's 80 s stall): for
        HLAvoid (``overlaps`` given) a cube in ``collision`` is moved away from what it overlaps
        (:func:`overlap_escape`) and marked ``escaping`` (driven at no less than ESCAPE_SPEED: its stop rule
        holds a cube that heads into an overlap at 0 there, and in a pocket between a wall and two cubes every
        heading does); any other along the planner's own direction, or towards ``target`` when it gives none,
        under the planner's speed limit. Sets :attr:`escaping`."""
        s = settings
        d = waypoint - pos
        dist = np.hypot(d[:, 0], d[:, 1])
        short = engaged & (dist <= s.handle_tolerance)
        escaping = np.zeros(len(pos), dtype=bool)
        if not short.any():
            self.escaping = escaping
            return waypoint
        t = target - pos
        t_dist = np.hypot(t[:, 0], t[:, 1])
        direction = np.where((dist > 1e-6)[:, None], d / np.maximum(dist, 1e-9)[:, None],
                             t / np.maximum(t_dist, 1e-9)[:, None])
        if overlaps is not None:
            margin = overlaps.margin                    # each cube's avoid margin, as planned
            for i in np.nonzero(short & collision)[0]:
                if not self.escaping[i]:                # a way out is chosen once and kept until it is out
                    others = np.arange(len(pos)) != i   # HLAvoid: two cubes overlap within both avoid margins
                    self.escape_dir[i] = overlap_escape(pos[i], pos[others], margin[i] + margin[others],
                                                        overlaps.walls, margin[i], s.sidestep_distance,
                                                        t[i] / max(t_dist[i], 1e-9))
                direction[i], escaping[i] = self.escape_dir[i], True
        pushed = pos + direction * (s.handle_tolerance + s.stuck_distance)
        self.escaping = escaping
        return np.where(short[:, None], pushed, waypoint)
