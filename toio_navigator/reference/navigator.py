"""The reference Navigator, docs/navigator.md §1: modes AVOID / BOIDS / BOIDS_AVOID, the to / away queries, NaviResult.

``navigate`` answers B queries at once from arrays (the swarm step and the single query share it); the
:class:`Navigator` class is the object interface of the reference (others with relations, walls, borders) for
one robot, built on ``navigate`` with B = 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from toio_navigator.reference.batch import EgoBatch, PairBatch, empty_pairs
from toio_navigator.reference.boids import boids_force
from toio_navigator.reference.entities import Entity, Wall, border_walls, walls_array
from toio_navigator.reference.hlavoid import AvoidResult, run_away, run_towards
from toio_navigator.reference.params import DOUBLE_MAX, NavigatorParams


class Mode(str, Enum):
    AVOID = 'AVOID'
    BOIDS = 'BOIDS'
    BOIDS_AVOID = 'BOIDS_AVOID'


class Relation(str, Enum):
    NONE = 'NONE'
    BOIDS = 'BOIDS'


class Direction(str, Enum):
    TOWARDS = 'towards'
    AWAY = 'away'


@dataclass
class NaviBatch:
    """Answers for B egos (arrays), the fields of the reference's NaviResult plus HLAvoid diagnostics."""
    waypoint: np.ndarray       # (B, 2) absolute
    avoid_vector: np.ndarray   # (B, 2) relative
    boids_vector: np.ndarray   # (B, 2)
    speed_limit: np.ndarray    # (B,)
    speed_ratio: np.ndarray    # (B,)
    collision: np.ndarray      # (B,) bool
    avoid: AvoidResult | None  # None when HLAvoid did not run (BOIDS towards)


def navigate(egos: EgoBatch, pairs: PairBatch, walls: np.ndarray, params: NavigatorParams, mode: Mode | str,
             direction: Direction | str = Direction.TOWARDS) -> NaviBatch:
    """One Navigator query per ego (§1.4, §1.5). ``pairs`` must be sorted by ego index."""
    mode = Mode(mode)
    direction = Direction(direction)
    b = egos.b
    zeros2 = np.zeros((b, 2))
    ego_pos = np.stack([egos.x, egos.y], axis=1)
    fx = params.fixes
    if direction is Direction.AWAY:
        res = run_away(egos, pairs, walls, params.avoid, fx)
        stay = mode is Mode.BOIDS and not fx.away_in_boids
        wp = ego_pos + (zeros2 if stay else res.vector)
        return NaviBatch(wp, res.vector, zeros2, res.speed_limit, np.ones(b), res.collision, res)
    if mode is Mode.BOIDS:
        f = boids_force(egos, pairs, params.boids, with_target=True, fixes=fx)
        ratio = np.sqrt(f[:, 0] ** 2 + f[:, 1] ** 2) / params.boids_ratio_divisor * params.p_speedratio_boids
        return NaviBatch(ego_pos + f, zeros2, f, np.full(b, DOUBLE_MAX), ratio, np.zeros(b, dtype=bool), None)
    if mode is Mode.BOIDS_AVOID:
        f = boids_force(egos, pairs, params.boids, with_target=False, fixes=fx)
        dx, dy = egos.tx - egos.x, egos.ty - egos.y
        dist = np.sqrt(dx * dx + dy * dy)
        k = params.boidsavoid_surrogate_divisor
        sx = egos.tx + f[:, 0] * dist / k * params.p_surrogate_target
        sy = egos.ty + f[:, 1] * dist / k * params.p_surrogate_target
        zero = np.zeros(b)
        surrogate = EgoBatch(egos.x, egos.y, egos.rad, egos.spd, egos.w, egos.avoid_margin, egos.boids_margin,
                             sx, sy, zero, zero)
        res = run_towards(surrogate, pairs, walls, params.avoid, fx)
        ax, ay = res.vector[:, 0], res.vector[:, 1]
        am = np.sqrt(ax * ax + ay * ay)
        nz = am > 0
        am_safe = np.where(nz, am, 1.0)
        ux, uy = np.where(nz, ax / am_safe, 0.0), np.where(nz, ay / am_safe, 0.0)
        dot = f[:, 0] * ux + f[:, 1] * uy
        ratio = np.maximum(0.0, dot / params.boidsavoid_ratio_divisor * params.p_speedratio_boidsavoid + 1)
        return NaviBatch(ego_pos + res.vector, res.vector, f, res.speed_limit, ratio, res.collision, res)
    res = run_towards(egos, pairs, walls, params.avoid, fx)
    return NaviBatch(ego_pos + res.vector, res.vector, zeros2, res.speed_limit, np.ones(b), res.collision, res)


@dataclass
class NaviResult:
    """One answer of the Navigator (the reference's NaviResult)."""
    mode: Mode
    waypoint: tuple[float, float]
    avoid_vector: tuple[float, float]
    boids_vector: tuple[float, float]
    speed_limit: float
    speed_ratio: float
    is_collision: bool
    debug: dict = field(default_factory=dict)


def _first(batch: NaviBatch, mode: Mode) -> NaviResult:
    def vec(a):
        return (float(a[0, 0]), float(a[0, 1]))
    debug: dict = {'hlavoidRan': batch.avoid is not None}
    if batch.avoid is not None:
        av = batch.avoid
        debug.update(waypointIndex=int(av.index[0]), scanIsCollision=bool(av.collision[0]),
                     rads=av.rads[0].tolist(), dists=av.dists[0].tolist(), safety=av.safety[0].tolist())
    return NaviResult(mode, vec(batch.waypoint), vec(batch.avoid_vector), vec(batch.boids_vector),
                      float(batch.speed_limit[0]), float(batch.speed_ratio[0]), bool(batch.collision[0]), debug)


class Navigator:
    """Navigator of one robot: its entity, mode, parameters, the others it knows (with relations) and walls."""

    def __init__(self, entity: Entity, mode: Mode | str = Mode.AVOID, params: NavigatorParams | None = None):
        self.entity = entity
        self.mode = Mode(mode)
        self.params = params or NavigatorParams()
        self._others: list[Navigator] = []
        self._relations: dict[int, Relation] = {}
        self._walls: list[Wall] = []

    # ---- others and relations (§1.2)
    @property
    def others(self) -> list['Navigator']:
        return list(self._others)

    def relation(self, other: 'Navigator') -> Relation:
        return self._relations.get(id(other), Relation.NONE)

    def add_other(self, other: 'Navigator', relation: Relation | str = Relation.BOIDS) -> None:
        """Ignored if already known or self; re-adding does not change the relation (reference behaviour)."""
        if other is self or any(o is other for o in self._others):
            return
        self._others.append(other)
        self._relations[id(other)] = Relation(relation)

    def remove_other(self, other: 'Navigator') -> None:
        self._others = [o for o in self._others if o is not other]
        self._relations.pop(id(other), None)

    def clear_others(self) -> None:
        self._others.clear()

    def set_relation(self, other: 'Navigator', relation: Relation | str) -> None:
        if id(other) in self._relations:
            self._relations[id(other)] = Relation(relation)

    # ---- walls (§1.3)
    @property
    def walls(self) -> list[Wall]:
        return list(self._walls)

    def add_wall(self, wall: Wall) -> None:
        if not any(w is wall for w in self._walls):
            self._walls.append(wall)

    def add_walls(self, walls) -> None:
        self._walls.extend(walls)

    def remove_wall(self, wall: Wall) -> None:
        for i, w in enumerate(self._walls):
            if w is wall:
                del self._walls[i]
                return

    def clear_walls(self) -> None:
        self._walls.clear()

    def add_border(self, width: float = 20, x1: float = 40, x2: float = 460, y1: float = 40,
                   y2: float = 460) -> None:
        self._walls.extend(border_walls(width, x1, x2, y1, y2))

    # ---- queries (§1.4, §1.5)
    def get_waypoint_to(self, target) -> NaviResult:
        return self._query(target, Direction.TOWARDS)

    def get_waypoint_away(self, target) -> NaviResult:
        return self._query(target, Direction.AWAY)

    def _query(self, target, direction: Direction) -> NaviResult:
        t = _target_entity(target)
        e = self.entity
        p = self.params
        egos = EgoBatch(*(np.array([v], dtype=float) for v in (
            e.x, e.y, e.rad, e.spd, e.w, p.avoid.margin, p.boids.margin, t.x, t.y, t.vx, t.vy)))
        batch = navigate(egos, self._pairs(), walls_array(self._walls), p, self.mode, direction)
        return _first(batch, self.mode)

    def _pairs(self) -> PairBatch:
        if not self._others:
            return empty_pairs()
        os_ = self._others
        col = {name: np.array([getattr(o.entity, name) for o in os_], dtype=float)
               for name in ('x', 'y', 'vx', 'vy', 'margin')}
        return PairBatch(np.zeros(len(os_), dtype=np.intp), col['x'], col['y'], col['vx'], col['vy'], col['margin'],
                         np.array([o.params.avoid.margin for o in os_], dtype=float),
                         np.array([o.params.boids.margin for o in os_], dtype=float),
                         np.array([self.relation(o) is Relation.BOIDS for o in os_], dtype=bool))


def _target_entity(target) -> Entity:
    """A target given as an Entity, a Navigator (its live entity) or coordinates (margin 0, at rest)."""
    if isinstance(target, Navigator):
        return target.entity
    if isinstance(target, Entity):
        return target
    x, y = target
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError('target position must be finite')
    return Entity(float(x), float(y))
