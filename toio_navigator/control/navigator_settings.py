"""The controller's settings: everything :class:`~toio_navigator.control.controller.SwarmController` needs besides
the reference parameter dataclasses, with the rules between them (:meth:`NavigatorSettings.check`).

Defaults are the tuned behaviour of config/navigator.yaml where the controller differs from the reference on
purpose (``border_stop``, ``saturation``, the dead-lock breaker); ``contact_guard`` is off here and on in that file.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.planners import PLANNERS
from toio_navigator.units import BODY_RADIUS, MOTOR_MAX

MODES = ('AVOID', 'BOIDS', 'BOIDS_AVOID')
HLAVOID = 'hlavoid'
SATURATIONS = ('keep_rotation', 'reference')
POSITIVE = ('rate_hz', 'stale_timeout_s', 'max_speed', 'tolerance', 'rotate_time_ms', 'body_radius')
NON_NEGATIVE = ('stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s', 'contact_gap',
                'contact_guard_latency_s', 'contact_guard_write_gap_s', 'plan_time_s')
DURATIONS_MS = ('command_duration_ms', 'stop_duration_ms')


def planner_names() -> list[str]:
    """The planners the controller runs: the reference HLAvoid first, then the registry's."""
    return [HLAVOID] + sorted(set(PLANNERS) - {HLAVOID})


@dataclass
class NavigatorSettings:
    """Everything the controller needs besides the reference parameter dataclasses."""
    cubes: tuple[str, ...] = ()
    rate_hz: float = 20.0
    mode: str = 'AVOID'
    planner: str = HLAVOID
    stale_timeout_s: float = 0.5
    mat_rect: tuple[float, float, float, float] = (45.0, 45.0, 455.0, 455.0)   # x_min, y_min, x_max, y_max
    walls: tuple[float, ...] = ()             # x1, y1, x2, y2, margin per wall (navigator walls, mat units)
    border: tuple[float, ...] = ()            # width, x1, x2, y1, y2: the reference's add_border; () = none
    max_speed: float = 70.0                   # motor units, navi_to_target default
    tolerance: float = 20.0                   # goal "reached" radius, mat units (navi_to_target default)
    handle_tolerance: float = 8.0             # move_to_target's own reached radius (hard-coded 8 in the reference)
    rotate_time_ms: float = 250.0             # move_to_target's rotateTime; also the command duration
    stop_duration_ms: int = 100               # duration of a stop command
    command_duration_ms: int = 250            # duration carried by every driving command
    use_pred: bool = False                    # navigator entities at the pose predicted after the command lag
    body_radius: float = BODY_RADIUS          # each cube's disc for the registry planners (HLAvoid has margins)
    # dead-lock breaker (docs/navigator.md §6; the reference has none): a cube with a goal that has moved less than
    # stuck_distance in stuck_time_s side-steps to its right for sidestep_time_s (then left, then right, ...),
    # and its waypoint leaves the handle's reach (control/breaker.py)
    stuck_time_s: float = 1.0                 # 0 = no breaker (pure reference behaviour)
    stuck_distance: float = 6.0
    sidestep_distance: float = 40.0
    sidestep_time_s: float = 0.8
    # the wheel shaping options (control/wheels.py): the tuned behaviour by default, the reference's when off
    border_stop: bool = True                  # the border's outward stop; False = no border rule in the handle
    saturation: str = 'keep_rotation'         # or 'reference' (asymmetric truncation, B13)
    # the contact guard (control/guard.py); off here, on in config/navigator.yaml: its bound assumes each command
    # may run its whole duration, which the shipped 150 ms commands at 50 motor units allow near other cubes,
    # the reference's 250 ms at 70 hardly (cubes would crawl wherever they pass)
    contact_guard: bool = False
    contact_gap: float = 3.0                  # clearance the guard keeps beyond touching, mat units
    # a command takes effect this long after it is sent, as far as the guard is concerned: a loaded lab run measured
    # 0.15-0.27 s (10-90 %), median 0.198 (the handle's lag, 0.13 s, is the reference CubeHandle's model)
    contact_guard_latency_s: float = 0.2
    # the drivers write at most one motor command per this long (their min_motor_interval_ms): a command waits for
    # its slot, and one still waiting when the next comes is never written
    contact_guard_write_gap_s: float = 0.045
    # a live navigator's `coordinated` plan (made in a worker thread while the cubes stand) stops improving itself
    # after this long; 0 = no limit. Trials, benchmarks and replays plan within the tick and take no notice
    plan_time_s: float = 10.0

    def check(self) -> None:
        """ValueError naming the first bad setting."""
        self._check_cubes()
        self._check_choices()
        self._check_numbers()
        self._check_geometry()

    def _check_cubes(self) -> None:
        if not self.cubes:
            raise ValueError('cubes: the list of cube names is empty')
        if len(set(self.cubes)) != len(self.cubes):
            raise ValueError(f'cubes: duplicate names in {list(self.cubes)}')
        for c in self.cubes:
            if not c or not c.replace('_', 'a').isalnum() or c[0].isdigit():
                raise ValueError(f'cubes: {c!r} is not a valid ROS name (letters, digits, _; not starting with a '
                                 'digit)')

    def _check_choices(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f'mode: {self.mode!r} is not one of {", ".join(MODES)}')
        if self.planner not in planner_names():
            raise ValueError(f'planner: {self.planner!r} is not one of {", ".join(planner_names())}')

    def _check_numbers(self) -> None:
        for name in POSITIVE:
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f'{name}: must be a finite number > 0, got {v}')
        if self.saturation not in SATURATIONS:
            raise ValueError(f'saturation: {self.saturation!r} is not one of {", ".join(SATURATIONS)}')
        if not (math.isfinite(self.handle_tolerance) and self.handle_tolerance >= 0):
            raise ValueError(f'handle_tolerance: must be a finite number >= 0, got {self.handle_tolerance}')
        if self.tolerance < self.handle_tolerance:
            raise ValueError(f'tolerance: {self.tolerance:g} is below handle_tolerance {self.handle_tolerance:g} '
                             '(move-to-target stops within handle_tolerance, so the goal could never be reached)')
        if self.max_speed > MOTOR_MAX:
            raise ValueError(f'max_speed: must be <= {MOTOR_MAX} motor units, got {self.max_speed}')
        for name in NON_NEGATIVE:
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f'{name}: must be a finite number >= 0, got {v}')
        for name in DURATIONS_MS:
            v = getattr(self, name)
            if not 10 <= v <= 2550:
                raise ValueError(f'{name}: must be within 10..2550 ms, got {v}')

    def _check_geometry(self) -> None:
        r = self.mat_rect
        if len(r) != 4 or not all(math.isfinite(v) for v in r) or not (r[0] < r[2] and r[1] < r[3]):
            raise ValueError(f'mat_rect: need [x_min, y_min, x_max, y_max] with min < max, got {list(r)}')
        if len(self.walls) % 5 or not all(math.isfinite(v) for v in self.walls):
            raise ValueError(f'walls: need finite numbers in groups of 5 (x1, y1, x2, y2, margin), got '
                             f'{len(self.walls)} numbers')
        if self.border and (len(self.border) != 5 or not all(math.isfinite(v) for v in self.border)):
            raise ValueError(f'border: need [] or [width, x1, x2, y1, y2], got {list(self.border)}')

    def wall_rows(self) -> np.ndarray:
        """The walls as rows (x1, y1, x2, y2, margin), the border's four sides included."""
        rows = list(np.asarray(self.walls, dtype=float).reshape(-1, 5))
        if self.border:
            w, x1, x2, y1, y2 = self.border
            rows += [(x1, y1, x1, y2, w), (x2, y1, x2, y2, w), (x1, y1, x2, y1, w), (x1, y2, x2, y2, w)]
        return np.asarray(rows, dtype=float).reshape(-1, 5)
