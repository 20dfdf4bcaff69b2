"""Virtual sensors of the arena robot (docs/arena.md §3): six IR rangers and the left camera.

The sensors read the hidden ground truth (an obstacle grid, usually from a layout file); the explorer only ever
sees their readings. ``ArenaMatMapping`` places the arena grid on a toio mat so that a cube's mat pose (mat units,
y down, clockwise radians) becomes a robot cell pose and back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.arena.geometry import (
    ARENA_COLS,
    ARENA_ROWS,
    EAST,
    NORTH,
    SIX_SENSORS,
    SOUTH,
    WEST,
    Pose,
    SensorMount,
    inside,
)
from toio_navigator.arena.grid import IR_NOTHING_IN_RANGE

#: the Arduino caps its cell counts at 9 (§3.1)
MAX_READING = 9
BOUND_LEFT, BOUND_CENTRE, BOUND_RIGHT = 'LEFT', 'CENTRE', 'RIGHT'
NO_IMAGE = -1


class VirtualIrSensors:
    """Six readings for a robot pose: cells from each sensor's own cell to the first obstacle or arena wall.

    ``noise`` is the probability that a reading is off by one cell (up or down, never below 1); the noise is
    drawn from a generator seeded with ``seed`` so runs repeat exactly.
    """

    def __init__(self, obstacles: np.ndarray, sensors: tuple[SensorMount, ...] = SIX_SENSORS,
                 max_reading: int = MAX_READING, noise: float = 0.0, seed: int | None = 0):
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f'sensor noise must be a probability 0..1, got {noise}')
        if max_reading < 1:
            raise ValueError(f'max_reading must be >= 1, got {max_reading}')
        self.obstacles = np.asarray(obstacles, dtype=bool)
        self.sensors, self.max_reading, self.noise = sensors, int(max_reading), float(noise)
        self._rng = np.random.default_rng(seed)

    def blocked(self, x: int, y: int) -> bool:
        rows, cols = self.obstacles.shape
        return not inside(x, y, cols, rows) or bool(self.obstacles[y, x])

    def hit_distance(self, pose: Pose, mount: SensorMount) -> int | None:
        """Cells to the first obstacle or wall along the sensor's ray, None when nothing within max_reading."""
        for k, (x, y) in enumerate(mount.ray(pose, self.max_reading), start=1):
            if self.blocked(x, y):
                return k
        return None

    def _noisy(self, value: int) -> int:
        if self.noise > 0.0 and self._rng.random() < self.noise:
            return int(min(self.max_reading, max(1, value + self._rng.choice((-1, 1)))))
        return value

    def read(self, pose: Pose) -> tuple[int, ...]:
        """Arduino-style readings: cells to the first obstacle, capped at ``max_reading`` (= nothing nearer)."""
        values = []
        for mount in self.sensors:
            hit = self.hit_distance(pose, mount)
            values.append(self._noisy(self.max_reading if hit is None else hit))
        return tuple(values)

    def read_ranges(self, pose: Pose) -> tuple[int, ...]:
        """Readings in the IrRanges message convention: 1..max_reading to a hit, 0 = nothing within range."""
        values = []
        for mount in self.sensors:
            hit = self.hit_distance(pose, mount)
            values.append(IR_NOTHING_IN_RANGE if hit is None else self._noisy(hit))
        return tuple(values)


@dataclass(frozen=True)
class CardSighting:
    id: int
    bound: str  # LEFT / CENTRE / RIGHT: where the card is in the picture


class VirtualCamera:
    """The camera looks out of the robot's left side at the three cells touching the footprint there.

    It reports the cards stuck on the face of such a cell that points back at the robot; the robot's front is on
    the right of the picture, so the front-left cell is RIGHT, the left-centre cell CENTRE, the rear-left LEFT.
    ``capture`` gives one sighting (the centre wins, like a one-answer recogniser), ``capture_all`` every card.
    """

    def __init__(self, cards):
        self.cards = {(c.x, c.y, c.face): c.id for c in cards}

    def capture_all(self, pose: Pose) -> list[CardSighting]:
        facing_robot = (pose.heading + 1) % 4  # the robot's right = the direction from the left cells back to it
        seen = []
        for front, bound in ((0, BOUND_CENTRE), (-1, BOUND_LEFT), (1, BOUND_RIGHT)):
            x, y = pose.cell(front, 2)
            card = self.cards.get((x, y, facing_robot))
            if card is not None:
                seen.append(CardSighting(card, bound))
        return seen

    def capture(self, pose: Pose) -> CardSighting:
        seen = self.capture_all(pose)
        return seen[0] if seen else CardSighting(NO_IMAGE, BOUND_CENTRE)


@dataclass(frozen=True)
class ArenaMatMapping:
    """The arena grid drawn on a toio mat. ``origin`` is the mat point (units) of the arena's top-left corner
    (cell x=0, y=rows-1), ``cell_size`` the side of one cell in mat units. Mat y grows downward, arena y upward.

    Default: 20-unit cells (about 27 mm, a 3x3 footprint is wider than a cube) centred on the 410x410 sumo mat.
    """
    origin_x: float = 100.0
    origin_y: float = 50.0
    cell_size: float = 20.0
    cols: int = ARENA_COLS
    rows: int = ARENA_ROWS

    def __post_init__(self):
        if not self.cell_size > 0:
            raise ValueError(f'cell_size must be > 0 mat units, got {self.cell_size}')

    # mat heading (clockwise from +x) of each arena heading: N is mat -y
    _MAT_ANGLE = {NORTH: -math.pi / 2, EAST: 0.0, SOUTH: math.pi / 2, WEST: math.pi}

    def cell_to_mat(self, x: float, y: float) -> tuple[float, float]:
        """Centre of cell (x, y) in mat units."""
        return self.origin_x + (x + 0.5) * self.cell_size, self.origin_y + (self.rows - 0.5 - y) * self.cell_size

    def pose_to_mat(self, pose: Pose) -> tuple[float, float, float]:
        mx, my = self.cell_to_mat(pose.x, pose.y)
        return mx, my, self._MAT_ANGLE[pose.heading]

    def mat_to_cell(self, mat_x: float, mat_y: float) -> tuple[int, int]:
        """The cell containing a mat point (may be outside the arena: check with ``inside``)."""
        return (int(math.floor((mat_x - self.origin_x) / self.cell_size)),
                int(math.floor(self.rows - (mat_y - self.origin_y) / self.cell_size)))

    @staticmethod
    def mat_heading(theta: float) -> int:
        """Nearest arena heading (0..3 = N, E, S, W) of a clockwise mat angle in radians."""
        quarter = int(round(theta / (math.pi / 2))) % 4  # 0 = mat +x = E, 1 = mat +y = S, ...
        return (quarter + 1) % 4

    def mat_to_pose(self, mat_x: float, mat_y: float, theta: float) -> Pose:
        x, y = self.mat_to_cell(mat_x, mat_y)
        return Pose(x, y, self.mat_heading(theta))

    def inside(self, mat_x: float, mat_y: float) -> bool:
        return inside(*self.mat_to_cell(mat_x, mat_y), self.cols, self.rows)


def read_at_mat_pose(sensors: VirtualIrSensors, mapping: ArenaMatMapping, mat_x: float, mat_y: float,
                     theta: float) -> tuple[int, ...]:
    """The six readings of a cube standing at a mat pose on a virtual arena."""
    return sensors.read(mapping.mat_to_pose(mat_x, mat_y, theta))
