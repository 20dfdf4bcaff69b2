"""CubeNavigator: a Navigator bound to a CubeHandle (docs/navigator.md §1.6, §1.2 registry).

``update`` feeds the handle with an observation and copies its observed (or, with ``use_pred``, its
predicted-after-lag) state into the navigator's entity; ``navi_to_target`` / ``navi_away_target`` ask the
Navigator for a waypoint and turn it into the handle's move-to-target movement, driving at
min(speedLimit, maxSpd · speedRatio) as the reference does (that mixes units, B2; ``Fixes.speed_limit_units``
converts the limit to motor units first). Execute the returned movement with ``handle.move_movement``.

Like the reference, new cube navigators join a registry and see every earlier one (relation BOIDS) and are seen
by them; ``CubeNavigator.clear_registry()`` forgets it (pass ``register=False`` to stay out of it).
"""
from __future__ import annotations

import math
from typing import ClassVar

from toio_navigator.reference.cube_handle import CubeHandle, Movement
from toio_navigator.reference.entities import Entity
from toio_navigator.reference.navigator import Mode, Navigator, NaviResult
from toio_navigator.reference.params import CubeHandleParams, NavigatorParams


class CubeNavigator(Navigator):
    registry: ClassVar[list['CubeNavigator']] = []
    #: the reference skips updates closer than 15 ms to the previous accepted one
    update_throttle_s: float = 0.015

    def __init__(self, handle: CubeHandle | None = None, mode: Mode | str = Mode.AVOID,
                 params: NavigatorParams | None = None, handle_params: CubeHandleParams | None = None,
                 use_pred: bool = False, margin: float = 16.0, register: bool = True):
        super().__init__(Entity(0.0, 0.0, margin=margin), mode, params)
        self.handle = handle or CubeHandle(handle_params)
        self.use_pred = use_pred
        self._last_update: float | None = None
        if register:
            for other in CubeNavigator.registry:
                other.add_other(self)
                self.add_other(other)
            CubeNavigator.registry.append(self)

    @classmethod
    def clear_registry(cls) -> None:
        cls.registry.clear()

    def update(self, x: float, y: float, rad: float, now: float, use_pred: bool | None = None) -> bool:
        """Observe the cube (mat units, rad, seconds). Returns False when throttled (no change)."""
        if self._last_update is not None and now - self._last_update < self.update_throttle_s:
            return False
        self._last_update = now
        self.handle.update(x, y, rad, now)
        self._copy_state(self.use_pred if use_pred is None else use_pred)
        return True

    def _copy_state(self, pred: bool) -> None:
        h, e = self.handle, self.entity
        if pred:
            e.x, e.y, e.rad, e.spdL, e.spdR = h.xPred, h.yPred, h.radPred, h.spdPredL, h.spdPredR
            e.spd, e.w = h.spdPred, h.wPred
            e.vx, e.vy = h.vPred
        else:
            e.x, e.y, e.rad, e.spdL, e.spdR = h.x, h.y, h.rad, h.spdL, h.spdR
            e.spd, e.w = h.spd, h.w
            e.vx, e.vy = h.v

    def _drive_speed(self, r: NaviResult, max_spd: float) -> float:
        limit = r.speed_limit
        if self.params.fixes.speed_limit_units:
            limit = limit / self.handle.p.k
        return min(limit, max_spd * r.speed_ratio)

    def navi_to_target(self, x: float, y: float, max_spd: float = 70, rotate_time: int = 250,
                       tolerance: float = 20) -> tuple[Movement, NaviResult]:
        """Movement towards (x, y) avoiding the others; reached only within ``tolerance`` of the goal."""
        r = self.get_waypoint_to((x, y))
        mv = self.handle.move_to_target(*r.waypoint, max_spd=self._drive_speed(r, max_spd),
                                        rotate_time=rotate_time, tolerance=8)
        mv.reached = mv.reached and math.hypot(self.entity.x - x, self.entity.y - y) <= tolerance
        return mv, r

    def navi_away_target(self, x: float, y: float, max_spd: float = 70,
                         rotate_time: int = 250) -> tuple[Movement, NaviResult]:
        """Movement fleeing (x, y); there is no notion of reached (B25)."""
        r = self.get_waypoint_away((x, y))
        mv = self.handle.move_to_target(*r.waypoint, max_spd=self._drive_speed(r, max_spd),
                                        rotate_time=rotate_time, tolerance=8)
        return mv, r
