"""The explorer's belief about the arena: per-cell scores from IR readings (docs/arena.md §3.2, the seed's rules).

A cell becomes *explored* when it receives any score; it is an *obstacle* while its running score is > 0.
Cells the robot body has covered, and the start and goal zones, are pinned free and never scored again
(the seed gives them -1000; pinning is the same thing without the magic number). Cells outside the arena
behave like walls and are never stored.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.arena import mdf
from toio_navigator.arena.geometry import ARENA_COLS, ARENA_ROWS, SIX_SENSORS, Pose, SensorMount, footprint, inside

#: the IrRanges message convention (msg/IrRanges.msg): 0 = nothing within range, -1 = no reading
IR_NOTHING_IN_RANGE = 0
IR_NO_READING = -1
_FAR = 1000  # a reading beyond every clamp: "nothing within range" for the score rules


def readings_from_ir_ranges(ranges) -> tuple[int, ...]:
    """IrRanges values -> readings for ``apply_readings``: 0 becomes "far", -1 (no reading) becomes 0 (ignored)."""
    return tuple(_FAR if int(v) == IR_NOTHING_IN_RANGE else max(int(v), 0) for v in ranges)


@dataclass(frozen=True)
class ScoreRules:
    """The seed's grid-score weights and the reading clamps of the PC side (§3.1, §3.2)."""
    short_hit: int = 3        # short sensor reading 1: the touching cell is an obstacle
    short_clear: int = -3     # short sensor reading > 1: the touching cell is free
    long_hit: int = 1         # long sensor reading k <= long_range: the cell at distance k
    long_clear: int = -1      # long sensor: every cell before the reading
    short_max_reading: int = 2  # readings are clamped to 0..max; 0 means "no reading" and is ignored
    long_max_reading: int = 6
    long_range: int = 5       # a long reading above this means "nothing within long_range cells"

    def __post_init__(self):
        for name, sign in (('short_hit', 1), ('long_hit', 1), ('short_clear', -1), ('long_clear', -1)):
            if getattr(self, name) * sign <= 0:
                raise ValueError(f'score rule {name} must be {"> 0" if sign > 0 else "< 0"}, got {getattr(self, name)}')
        if self.short_max_reading < 2:
            raise ValueError(f'short_max_reading must be >= 2 (1 = hit, more = free), got {self.short_max_reading}')
        if not 1 <= self.long_range < self.long_max_reading:
            raise ValueError(f'need 1 <= long_range < long_max_reading, got {self.long_range} and '
                             f'{self.long_max_reading}')

    def sensor_range(self, mount: SensorMount) -> int:
        """How many cells along its ray a sensor can ever score."""
        return self.long_range if mount.long_range else 1


class ArenaBelief:
    """Scores, explored and scanned flags over the arena grid, arrays indexed [y, x]."""

    def __init__(self, cols: int = ARENA_COLS, rows: int = ARENA_ROWS, rules: ScoreRules = ScoreRules()):
        self.cols, self.rows, self.rules = cols, rows, rules
        self.score = np.zeros((rows, cols), dtype=np.int64)
        self.explored = np.zeros((rows, cols), dtype=bool)
        self.pinned_free = np.zeros((rows, cols), dtype=bool)
        self.scanned = np.zeros((rows, cols), dtype=bool)
        self.version = 0  # bumped whenever explored/obstacle flags may have changed

    # --- queries ------------------------------------------------------------------------------------------
    @property
    def obstacle(self) -> np.ndarray:
        return self.explored & (self.score > 0) & ~self.pinned_free

    @property
    def known_free(self) -> np.ndarray:
        return self.explored & ~self.obstacle

    def inside(self, x: int, y: int) -> bool:
        return inside(x, y, self.cols, self.rows)

    def is_obstacle(self, x: int, y: int) -> bool:
        """True for obstacle cells and for everything outside the arena (walls)."""
        if not self.inside(x, y):
            return True
        return bool(self.explored[y, x] and self.score[y, x] > 0 and not self.pinned_free[y, x])

    def is_explored(self, x: int, y: int) -> bool:
        return not self.inside(x, y) or bool(self.explored[y, x])

    def is_known_free(self, x: int, y: int) -> bool:
        return self.inside(x, y) and bool(self.explored[y, x]) and not self.is_obstacle(x, y)

    def mdf(self) -> tuple[str, str]:
        return mdf.encode(self.explored, self.obstacle)

    # --- updates ------------------------------------------------------------------------------------------
    def pin_free(self, cells) -> None:
        for x, y in cells:
            if self.inside(x, y) and not (self.pinned_free[y, x] and self.explored[y, x]):
                self.pinned_free[y, x] = True
                self.explored[y, x] = True
                self.version += 1

    def mark_zone(self, centre: tuple[int, int]) -> None:
        """A start/goal zone: explored and free from the beginning, never scored."""
        self.pin_free(footprint(*centre))

    def mark_body(self, pose: Pose) -> None:
        self.pin_free(footprint(pose.x, pose.y))

    def _add(self, x: int, y: int, value: int) -> None:
        if not self.inside(x, y) or self.pinned_free[y, x]:
            return
        before = (self.explored[y, x], self.score[y, x] > 0)
        self.score[y, x] += value
        self.explored[y, x] = True
        if before != (True, self.score[y, x] > 0):
            self.version += 1

    def apply_readings(self, pose: Pose, readings, sensors: tuple[SensorMount, ...] = SIX_SENSORS) -> None:
        """Score the cells seen by each sensor.

        ``readings`` are cells to the first obstacle (1 = touching the footprint); values at or above a clamp
        mean "nothing nearer"; 0 and negative values mean "no reading" and are ignored (the seed's PC side).
        Messages in the IrRanges convention go through ``readings_from_ir_ranges`` first.
        """
        if len(readings) != len(sensors):
            raise ValueError(f'expected {len(sensors)} readings, got {len(readings)}')
        r = self.rules
        for mount, raw in zip(sensors, readings):
            reading = int(raw)
            if mount.long_range:
                k = min(max(reading, 0), r.long_max_reading)
                if k == 0:
                    continue
                ray = mount.ray(pose, min(k, r.long_range))
                for x, y in ray[:k - 1]:
                    self._add(x, y, r.long_clear)
                if k <= r.long_range:
                    self._add(*ray[k - 1], r.long_hit)
            else:
                k = min(max(reading, 0), r.short_max_reading)
                if k == 0:
                    continue
                (x, y), = mount.ray(pose, 1)
                self._add(x, y, r.short_hit if k == 1 else r.short_clear)

    def mark_scanned(self, cells) -> None:
        for x, y in cells:
            if self.inside(x, y) and self.is_obstacle(x, y):
                self.scanned[y, x] = True
