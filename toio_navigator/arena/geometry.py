"""Arena geometry: cells, headings, robot poses, the 3x3 footprint and the six-sensor layout.

Conventions (docs/arena.md §1): 15 columns x 20 rows, cell (x, y) with x = column left->right and
y = row bottom->top. Grids are numpy arrays indexed ``[y, x]`` of shape (rows, cols). The robot occupies 3x3
cells named by its centre. Headings are ints 0..3 = N (+y), E (+x), S (-y), W (-x).
"""
from __future__ import annotations

from dataclasses import dataclass

ARENA_COLS = 15
ARENA_ROWS = 20
START_CENTRE = (1, 1)
GOAL_CENTRE = (13, 18)

HEADING_LETTERS = 'NESW'
NORTH, EAST, SOUTH, WEST = 0, 1, 2, 3
DX = (0, 1, 0, -1)
DY = (1, 0, -1, 0)


def heading_from_letter(letter: str) -> int:
    if not isinstance(letter, str) or letter.upper() not in HEADING_LETTERS or len(letter) != 1:
        raise ValueError(f'bad heading {letter!r}: expected one of N, E, S, W')
    return HEADING_LETTERS.index(letter.upper())


def left_of(heading: int) -> int:
    return (heading + 3) % 4


def right_of(heading: int) -> int:
    return (heading + 1) % 4


def body_vector(heading: int, front: int, left: int) -> tuple[int, int]:
    """The cell offset of ``front`` cells ahead and ``left`` cells to the left of a robot with this heading."""
    fx, fy = DX[heading], DY[heading]
    lx, ly = -fy, fx  # the heading rotated 90 degrees counter-clockwise
    return front * fx + left * lx, front * fy + left * ly


def inside(x: int, y: int, cols: int = ARENA_COLS, rows: int = ARENA_ROWS) -> bool:
    return 0 <= x < cols and 0 <= y < rows


def centre_in_range(x: int, y: int, cols: int = ARENA_COLS, rows: int = ARENA_ROWS) -> bool:
    """A robot centre keeps its whole 3x3 footprint inside the arena."""
    return 1 <= x <= cols - 2 and 1 <= y <= rows - 2


def footprint(x: int, y: int) -> list[tuple[int, int]]:
    return [(x + dx, y + dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]


@dataclass(frozen=True)
class Pose:
    """Robot centre cell and heading (0..3 = N, E, S, W)."""
    x: int
    y: int
    heading: int

    @property
    def letter(self) -> str:
        return HEADING_LETTERS[self.heading]

    def forward(self, cells: int = 1) -> 'Pose':
        return Pose(self.x + cells * DX[self.heading], self.y + cells * DY[self.heading], self.heading)

    def turned_left(self) -> 'Pose':
        return Pose(self.x, self.y, left_of(self.heading))

    def turned_right(self) -> 'Pose':
        return Pose(self.x, self.y, right_of(self.heading))

    def cell(self, front: int, left: int) -> tuple[int, int]:
        """The cell ``front`` ahead of and ``left`` to the left of the centre."""
        dx, dy = body_vector(self.heading, front, left)
        return self.x + dx, self.y + dy

    def as_list(self) -> list:
        return [self.x, self.y, self.letter]


# --- the seed's six sensors (§3.1) ---------------------------------------------------------------------------
LOOK_FRONT, LOOK_LEFT, LOOK_RIGHT = 'front', 'left', 'right'


@dataclass(frozen=True)
class SensorMount:
    """One IR sensor: mounted ``front``/``left`` cells from the centre, looking front, left or right."""
    number: int
    front: int
    left: int
    looks: str
    long_range: bool

    def direction(self, heading: int) -> tuple[int, int]:
        if self.looks == LOOK_FRONT:
            return body_vector(heading, 1, 0)
        if self.looks == LOOK_LEFT:
            return body_vector(heading, 0, 1)
        return body_vector(heading, 0, -1)

    def ray(self, pose: Pose, length: int) -> list[tuple[int, int]]:
        """Cells at distance 1..length from the sensor's own cell (distance 1 touches the footprint)."""
        sx, sy = pose.cell(self.front, self.left)
        dx, dy = self.direction(pose.heading)
        return [(sx + k * dx, sy + k * dy) for k in range(1, length + 1)]


SIX_SENSORS: tuple[SensorMount, ...] = (
    SensorMount(1, 1, -1, LOOK_FRONT, False),  # front-right
    SensorMount(2, 1, 0, LOOK_FRONT, False),   # front-centre
    SensorMount(3, 1, 1, LOOK_FRONT, False),   # front-left
    SensorMount(4, 1, 1, LOOK_LEFT, False),    # front-left corner, looking left
    SensorMount(5, -1, 1, LOOK_LEFT, False),   # rear-left corner, looking left
    SensorMount(6, 0, -1, LOOK_RIGHT, True),   # right-centre, long range
)
