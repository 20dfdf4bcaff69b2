"""The optimal fastest path (docs/arena.md §5): Dijkstra over (x, y, heading, waypoint-visited).

Cost model: ``F`` forward one cell costs 1, ``L``/``R`` (90 degrees in place) cost ``turn_cost`` (P, default 2),
optional ``B`` (reverse one cell, keeping the heading) costs 1. A state is valid when the 3x3 footprint of its
centre is inside the arena and free. The waypoint flag turns on when the centre is on the waypoint, so the
waypoint is visited with any heading and the arrival heading carries over to the second leg. Dijkstra with
non-negative edge costs over this exact state space returns a minimum-cost route, so the cost is optimal.

Costs are added exactly: the turn cost P (a float) is the fraction turn_units / unit (``as_integer_ratio``), so
every route cost is an integer number of 1/unit and Dijkstra works on Python integers. No P overflows (a
``1e308`` turn still finds the route that turns least) and no forward move is lost in rounding next to a large P.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from toio_navigator.arena.geometry import DX, DY, GOAL_CENTRE, Pose, left_of, right_of

DEFAULT_TURN_COST = 2.0


@dataclass(frozen=True)
class Route:
    found: bool
    cost: int | float | None = None       # exact: an int when integral (however large), else the nearest float
    actions: str = ''
    poses: list[Pose] = field(default_factory=list)

    @property
    def cost_value(self):
        """The cost as an int when it is integral (JSON friendly), else a float; None when not found."""
        if self.cost is None or isinstance(self.cost, int):
            return self.cost
        return int(self.cost) if self.cost.is_integer() else float(self.cost)


def valid_centres(blocked: np.ndarray) -> np.ndarray:
    """Bool [y, x]: the 3x3 footprint around the cell is inside the arena and contains no blocked cell."""
    blocked = np.asarray(blocked, dtype=bool)
    rows, cols = blocked.shape
    valid = np.zeros((rows, cols), dtype=bool)
    if rows < 3 or cols < 3:
        return valid
    free = ~blocked
    core = np.ones((rows - 2, cols - 2), dtype=bool)
    for dy in range(3):
        for dx in range(3):
            core &= free[dy:dy + rows - 2, dx:dx + cols - 2]
    valid[1:-1, 1:-1] = core
    return valid


def _check_turn_cost(turn_cost: float) -> float:
    turn_cost = float(turn_cost)
    if not np.isfinite(turn_cost) or turn_cost < 0:
        raise ValueError(f'turn cost must be a finite number >= 0, got {turn_cost}')
    return turn_cost


def plan_route(valid: np.ndarray, start: Pose, targets: np.ndarray, waypoint: tuple[int, int] | None = None,
               turn_cost: float = DEFAULT_TURN_COST, allow_reverse: bool = False) -> Route:
    """Cheapest route from ``start`` to any pose with ``targets[heading, y, x]`` true (after the waypoint).

    ``valid`` is the bool [y, x] grid of usable robot centres.
    """
    turn_units, unit = _check_turn_cost(turn_cost).as_integer_ratio()
    rows, cols = valid.shape

    def ok(x: int, y: int) -> bool:
        return 0 <= x < cols and 0 <= y < rows and bool(valid[y, x])

    if not ok(start.x, start.y) or (waypoint is not None and not ok(*waypoint)):
        return Route(False)
    wx, wy = waypoint if waypoint is not None else (None, None)
    first = (start.x, start.y, start.heading, waypoint is None or (start.x, start.y) == waypoint)
    best = {first: 0}
    parent: dict = {}
    heap = [(0, 0, first)]
    tie = 1
    while heap:
        cost, _, state = heapq.heappop(heap)
        if cost > best[state]:
            continue
        x, y, h, done = state
        if done and targets[h, y, x]:
            return _unwind(state, parent, _exact(cost, unit))
        moves = [('L', x, y, left_of(h), turn_units), ('R', x, y, right_of(h), turn_units),
                 ('F', x + DX[h], y + DY[h], h, unit)]
        if allow_reverse:
            moves.append(('B', x - DX[h], y - DY[h], h, unit))
        for action, nx, ny, nh, step in moves:
            if action in 'FB' and not ok(nx, ny):
                continue
            nxt = (nx, ny, nh, done or (nx == wx and ny == wy))
            new_cost = cost + step
            if nxt not in best or new_cost < best[nxt]:
                best[nxt] = new_cost
                parent[nxt] = (state, action)
                heapq.heappush(heap, (new_cost, tie, nxt))
                tie += 1
    return Route(False)


def _exact(units: int, unit: int) -> int | float:
    """units / unit as an int when it divides, else the correctly rounded float (never large: a fractional P is
    below 2**52, and a route has a few thousand moves)."""
    whole, rest = divmod(units, unit)
    return whole if rest == 0 else units / unit


def _unwind(state, parent, cost: int | float) -> Route:
    actions, poses = [], [Pose(state[0], state[1], state[2])]
    while state in parent:
        state, action = parent[state]
        actions.append(action)
        poses.append(Pose(state[0], state[1], state[2]))
    return Route(True, cost, ''.join(reversed(actions)), list(reversed(poses)))


def fastest_path(obstacles: np.ndarray, start: Pose = Pose(1, 1, 0), goal: tuple[int, int] = GOAL_CENTRE,
                 waypoint: tuple[int, int] | None = None, turn_cost: float = DEFAULT_TURN_COST,
                 allow_reverse: bool = False) -> Route:
    """Optimal start -> waypoint -> goal route on an obstacle grid [y, x] (treat unexplored cells as obstacles)."""
    valid = valid_centres(obstacles)
    rows, cols = valid.shape
    targets = np.zeros((4, rows, cols), dtype=bool)
    gx, gy = goal
    if 0 <= gx < cols and 0 <= gy < rows:
        targets[:, gy, gx] = True
    return plan_route(valid, start, targets, waypoint, turn_cost, allow_reverse)


def route_cost(actions: str, turn_cost: float = DEFAULT_TURN_COST) -> int | float:
    """The exact cost of an action string (as :func:`plan_route` counts it)."""
    turn_units, unit = _check_turn_cost(turn_cost).as_integer_ratio()
    turns = sum(1 for a in actions if a in 'LR')
    return _exact(turns * turn_units + (len(actions) - turns) * unit, unit)


def actions_to_commands(actions: str) -> list[str]:
    """Merge runs of F into one multi-cell move (``F3``); turns stay single: 'FFFRFF' -> ['F3', 'R', 'F2']."""
    out: list[str] = []
    for a in actions:
        if a == 'F' and out and out[-1].startswith('F'):
            out[-1] = f'F{int(out[-1][1:]) + 1}'
        else:
            out.append('F1' if a == 'F' else a)
    return out
