"""Reader of arena layout files (``toio-arena-layout/1``, docs/arena.md §6) with errors that name the problem.

Strict: a key the format does not define (a misspelling such as ``"strat"`` or ``{"center": ...}``) and a value of
the wrong type (``"start": 0``) are refused, never replaced by the default."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toio_navigator.arena.geometry import (
    ARENA_COLS,
    ARENA_ROWS,
    GOAL_CENTRE,
    HEADING_LETTERS,
    START_CENTRE,
    Pose,
    centre_in_range,
    footprint,
    heading_from_letter,
    inside,
)
from toio_navigator.input_files import InputError, TooLarge, known_keys, load_json, read_text, show

LAYOUT_FORMAT = 'toio-arena-layout/1'
IMAGE_ID_RANGE = (1, 15)
LAYOUT_KEYS = ('format', 'name', 'description', 'grid_rows_top_first', 'start', 'goal', 'waypoint', 'images',
               'expected')
START_KEYS = ('centre', 'heading')
GOAL_KEYS = ('centre',)
IMAGE_KEYS = ('x', 'y', 'face', 'id')


class LayoutError(InputError):
    """A layout file that cannot be used; the message names the problem."""


@dataclass(frozen=True)
class ImageCard:
    """An image card stuck on face ``face`` (0..3 = N, E, S, W) of the obstacle cell (x, y)."""
    x: int
    y: int
    face: int
    id: int


@dataclass
class ArenaLayout:
    obstacles: np.ndarray  # bool [y, x], shape (rows, cols)
    start: Pose = Pose(*START_CENTRE, 0)
    goal: tuple[int, int] = GOAL_CENTRE
    waypoint: tuple[int, int] | None = None
    images: tuple[ImageCard, ...] = ()
    name: str = ''
    description: str = ''
    expected: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.obstacles.shape[0]

    @property
    def cols(self) -> int:
        return self.obstacles.shape[1]


def load_layout(path: str | Path, require_free_goal: bool = True) -> ArenaLayout:
    try:
        data = load_json(read_text(path, 'layout'), f'layout {path}')
    except InputError as exc:
        raise LayoutError(str(exc)) from None
    return parse_layout(data, require_free_goal)


def parse_grid(rows_top_first, cols: int = ARENA_COLS, rows: int = ARENA_ROWS) -> np.ndarray:
    """``rows`` strings of ``cols`` characters, top row (y = rows-1) first; ``#`` obstacle, ``.`` free."""
    if not isinstance(rows_top_first, list):
        raise LayoutError('grid_rows_top_first must be a list of strings')
    if len(rows_top_first) != rows:
        raise LayoutError(f'grid_rows_top_first has {len(rows_top_first)} rows, expected {rows}')
    grid = np.zeros((rows, cols), dtype=bool)
    for line_no, line in enumerate(rows_top_first):
        y = rows - 1 - line_no
        if not isinstance(line, str):
            raise LayoutError(f'grid row {line_no} (y={y}) is not a string')
        if len(line) != cols:
            raise LayoutError(f'grid row {line_no} (y={y}) has {len(line)} characters, expected {cols}')
        for x, ch in enumerate(line):
            if ch not in '#.':
                raise LayoutError(f'bad character {ch!r} at grid row {line_no} (y={y}), column {x}: '
                                  f"expected '#' or '.'")
            grid[y, x] = ch == '#'
    return grid


def _cell(value, what: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, (bool, TooLarge)) for v in value)):
        raise LayoutError(f'{what} must be [x, y] with two integers, got {show(value)}')
    return int(value[0]), int(value[1])


def _section(data: dict, key: str, keys: tuple, example: str) -> dict:
    """An optional object member with only ``keys`` ({} when absent)."""
    if key not in data:
        return {}
    spec = data[key]
    if not isinstance(spec, dict):
        raise LayoutError(f'{key} must be an object {example}, got {show(spec)}')
    try:
        known_keys(spec, keys, key)
    except InputError as exc:
        raise LayoutError(str(exc)) from None
    return spec


def _check_centre(grid: np.ndarray, centre: tuple[int, int], what: str) -> None:
    rows, cols = grid.shape
    x, y = centre
    if not centre_in_range(x, y, cols, rows):
        raise LayoutError(f'{what} centre ({x},{y}) is outside 1..{cols - 2} x 1..{rows - 2}: '
                          'the 3x3 robot would leave the arena')
    blocked = [(cx, cy) for cx, cy in footprint(x, y) if grid[cy, cx]]
    if blocked:
        raise LayoutError(f'blocked {what}: obstacle at {blocked[0]} inside the 3x3 footprint of centre ({x},{y})')


def _parse_images(items, grid: np.ndarray) -> tuple[ImageCard, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise LayoutError('images must be a list')
    rows, cols = grid.shape
    cards = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise LayoutError(f'images[{i}] must be an object with x, y, face, id')
        try:
            known_keys(item, IMAGE_KEYS, f'images[{i}]')
        except InputError as exc:
            raise LayoutError(str(exc)) from None
        missing = [k for k in ('x', 'y', 'face', 'id') if k not in item]
        if missing:
            raise LayoutError(f'images[{i}] is missing {", ".join(missing)}')
        x, y = _cell([item['x'], item['y']], f'images[{i}] x, y')
        if not inside(x, y, cols, rows):
            raise LayoutError(f'images[{i}] cell ({x},{y}) is outside the arena')
        if not grid[y, x]:
            raise LayoutError(f'images[{i}] cell ({x},{y}) is not an obstacle: cards are stuck on obstacles')
        face = item['face']
        if not isinstance(face, str) or face not in tuple(HEADING_LETTERS):
            raise LayoutError(f'images[{i}] face {face!r} must be one of N, E, S, W')
        image_id = item['id']
        lo, hi = IMAGE_ID_RANGE
        if not isinstance(image_id, int) or isinstance(image_id, (bool, TooLarge)) or not lo <= image_id <= hi:
            raise LayoutError(f'images[{i}] id {image_id!r} must be an integer {lo}..{hi}')
        cards.append(ImageCard(x, y, HEADING_LETTERS.index(face), image_id))
    return tuple(cards)


def parse_layout(data, require_free_goal: bool = True) -> ArenaLayout:
    """Validate a decoded layout. The start footprint must be free. The goal footprint must be free too unless
    ``require_free_goal`` is False (the fastest path then simply finds no route; the explorer needs it free
    because, like every public implementation, it takes the start and goal zones as explored and free)."""
    if not isinstance(data, dict):
        raise LayoutError('layout must be a JSON object')
    if data.get('format') != LAYOUT_FORMAT:
        raise LayoutError(f'format is {show(data.get("format"))}, expected {LAYOUT_FORMAT!r}')
    try:
        known_keys(data, LAYOUT_KEYS, 'layout')
    except InputError as exc:
        raise LayoutError(str(exc)) from None
    if 'grid_rows_top_first' not in data:
        raise LayoutError('layout has no grid_rows_top_first')
    for key in ('name', 'description'):
        if not isinstance(data.get(key, ''), str):
            raise LayoutError(f'{key} must be a string, got {show(data[key])}')
    grid = parse_grid(data['grid_rows_top_first'])
    rows, cols = grid.shape

    start_spec = _section(data, 'start', START_KEYS, '{"centre": [x, y], "heading": "N"}')
    sx, sy = _cell(start_spec.get('centre', list(START_CENTRE)), 'start centre')
    try:
        heading = heading_from_letter(start_spec.get('heading', 'N'))
    except ValueError as exc:
        raise LayoutError(f'start {exc}') from None
    _check_centre(grid, (sx, sy), 'start')

    goal_spec = _section(data, 'goal', GOAL_KEYS, '{"centre": [x, y]}')
    goal = _cell(goal_spec.get('centre', list(GOAL_CENTRE)), 'goal centre')
    if require_free_goal:
        _check_centre(grid, goal, 'goal')
    elif not centre_in_range(*goal, cols, rows):
        raise LayoutError(f'goal centre {goal} is outside 1..{cols - 2} x 1..{rows - 2}: '
                          'the 3x3 robot would leave the arena')

    waypoint = None
    if data.get('waypoint') is not None:
        waypoint = _cell(data['waypoint'], 'waypoint')
        if not inside(*waypoint, cols, rows):
            raise LayoutError(f'waypoint {waypoint} is outside the arena (0..{cols - 1} x 0..{rows - 1})')

    expected = data.get('expected', {})
    if not isinstance(expected, dict):
        raise LayoutError(f'expected must be an object (values the author computed), got {show(expected)}')
    return ArenaLayout(obstacles=grid, start=Pose(sx, sy, heading), goal=goal, waypoint=waypoint,
                       images=_parse_images(data.get('images'), grid), name=data.get('name', ''),
                       description=data.get('description', ''), expected=expected)


def grid_to_rows(grid: np.ndarray) -> list[str]:
    """A bool grid [y, x] as strings of 0/1, top row first (the result files' convention)."""
    return [''.join('1' if v else '0' for v in grid[y]) for y in range(grid.shape[0] - 1, -1, -1)]
