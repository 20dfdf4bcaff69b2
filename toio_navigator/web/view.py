"""What the web console shows, as plain data: every cube (pose, link, battery, goal, waypoint, how its goal is
going), the contacts, the navigator's mat, planner and mode, and the arena explorer's belief, state and fastest path.

A :class:`ViewState` changes only through events, ``(method, args)`` pairs that :mod:`toio_navigator.web.feed` makes
from messages, applied with :meth:`ViewState.feed` at a time ``t`` in seconds (the arrival time when live, the bag
time in a replay), and is read with :meth:`ViewState.snapshot`, a JSON-ready dict for the page at a time ``now`` on
the same clock. Nothing here reads a clock, so a replay shows what the live page showed at that moment.
Positions are mat units (x right, y down), headings radians clockwise; the snapshot gives distances in mm.
"""
from __future__ import annotations

import collections
import copy
import math
import threading
from dataclasses import dataclass, field

from toio_navigator.arena.geometry import ARENA_COLS, ARENA_ROWS, GOAL_CENTRE, START_CENTRE
from toio_navigator.settings.navigator import PARAMS as NAVIGATOR_PARAMS
from toio_navigator.units import METRES_PER_UNIT, UNITS_PER_S_PER_MOTOR_UNIT

LINK_NAMES = ('disconnected', 'connecting', 'connected', 'reconnecting', 'failed')
LINK_CONNECTED = 2
TOWARDS, AWAY, STOP = 0, 1, 2
ARENA_STATUS = ('IDLE', 'EXPLORING', 'RETURNING', 'IMAGE_HUNT', 'FASTEST_PATH', 'DONE', 'TERMINATED', 'ERROR')
MODES = NAVIGATOR_PARAMS['mode'].choices
PLANNERS = NAVIGATOR_PARAMS['planner'].choices
#: a refusal shows in its cube's status line this long (or until the cube gets a new goal), s
REFUSAL_SHOWN_S = 10.0
#: contacts are drawn this long after they happen, s
CONTACT_SHOWN_S = 3.0
#: time constant of the approach speed behind the ETA, s
APPROACH_TAU_S = 1.0
NOTES_KEPT = 8
#: the arena's place on the mat until the explorer or its map says (origin x, y of its top-left corner, cell size)
DEFAULT_MAPPING = (100.0, 50.0, 20.0)


def _num(v: float, digits: int = 1):
    """A float for JSON: rounded, None for NaN / infinite (JSON has neither)."""
    return round(float(v), digits) if v is not None and math.isfinite(v) else None


def _mm(units: float):
    return _num(units * METRES_PER_UNIT * 1000.0)


@dataclass
class CubeView:
    name: str
    x: float = math.nan
    y: float = math.nan
    theta: float = math.nan
    on_mat: bool = False
    battery: int | None = None
    link: int | None = None
    link_detail: str = ''
    seen_t: float | None = None             # time of the last state
    goal: tuple[float, float, int] | None = None    # the navigator's accepted goal: x, y, direction
    goal_id: int = 0
    goal_speed: float = 0.0                 # its speed cap, motor units (0 = the navigator's)
    active: bool = False
    reached: bool = False
    collision: bool = False
    waypoint: tuple[float, float] | None = None
    approach: float = 0.0                   # smoothed approach speed to the goal, mat units/s
    last_distance: tuple[float, float] | None = None   # (t, distance) the approach was last measured from
    refusal: tuple[float, str] | None = None           # (t, reason) of the last refused command for this cube

    def distance(self) -> float:
        if self.goal is None or self.goal[2] == STOP or not math.isfinite(self.x):
            return math.nan
        return math.hypot(self.goal[0] - self.x, self.goal[1] - self.y)


@dataclass
class ArenaView:
    cols: int = ARENA_COLS
    rows: int = ARENA_ROWS
    mapping: tuple[float, float, float] | None = None   # origin_x, origin_y (top-left corner, mat), cell size
    cells: str = 'u' * (ARENA_COLS * ARENA_ROWS)   # row y=0 first: 'u' unexplored, 'f' free, 'o' obstacle
    mdf: tuple[str, str] = ('', '')
    robot: tuple[int, int, str] | None = None
    status: str = ''
    text: str = ''
    explored: int = 0
    moves: int = 0
    images: list = field(default_factory=list)     # [id, x, y, face]
    path: list = field(default_factory=list)       # robot centre cells (x, y, heading) of the fastest path
    waypoint: tuple[int, int] | None = None
    seen_t: float | None = None


@dataclass
class NavigatorView:
    mode: str = ''
    planner: str = ''
    mat_rect: tuple[float, float, float, float] = (45.0, 45.0, 455.0, 455.0)
    border: tuple[float, ...] = ()
    walls: tuple[float, ...] = ()
    max_speed: float = 50.0
    tolerance: float = 20.0
    parameters_known: bool = False
    online: bool = False


class ViewState:
    """The console's view of ``cubes``; ``stale_s`` / ``lost_s``: a cube's state older than this is stale / lost.
    :meth:`feed` and :meth:`snapshot` may be called from different threads."""

    def __init__(self, cubes, stale_s: float = 0.5, lost_s: float = 3.0) -> None:
        self.cubes = {c: CubeView(c) for c in cubes}
        self.stale_s, self.lost_s = float(stale_s), float(lost_s)
        self.nav = NavigatorView()
        self.arena: ArenaView | None = None
        self.contacts: collections.deque = collections.deque(maxlen=64)     # (t, a, b, x, y)
        self.contact_count = 0
        self.notes: collections.deque = collections.deque(maxlen=NOTES_KEPT)   # (t, ok, text)
        self.lock = threading.RLock()

    def __deepcopy__(self, memo):
        """A copy with a lock of its own (a replay keeps copies as key frames)."""
        new = ViewState.__new__(ViewState)
        for key, value in self.__dict__.items():
            setattr(new, key, threading.RLock() if key == 'lock' else copy.deepcopy(value, memo))
        return new

    # ------------------------------------------------------------------------------------------------ events
    def feed(self, t: float, events) -> None:
        """Apply ``events`` ((method, args) pairs, e.g. from :func:`toio_navigator.web.feed.events`) at time ``t``."""
        with self.lock:
            for method, args in events:
                getattr(self, 'on_' + method)(t, *args)

    def on_cube_state(self, t, cube, x, y, theta, on_mat, battery, link) -> None:
        c = self.cubes.get(cube)
        if c is None:
            return
        c.x, c.y, c.theta, c.on_mat, c.battery, c.link, c.seen_t = x, y, theta, on_mat, battery, link, t
        d = c.distance()
        if not (c.active and math.isfinite(d)):
            c.last_distance, c.approach = None, 0.0
        elif c.last_distance is None:
            c.last_distance = (t, d)
        elif t - c.last_distance[0] >= 0.1:
            t0, d0 = c.last_distance
            rate = (d0 - d) / (t - t0)
            alpha = 1.0 - math.exp(-(t - t0) / APPROACH_TAU_S)
            c.approach += alpha * (rate - c.approach)
            c.last_distance = (t, d)

    def on_link_state(self, t, cube, state, detail) -> None:
        c = self.cubes.get(cube)
        if c is not None:
            c.link, c.link_detail = state, detail

    def on_nav_result(self, t, cube, goal_id, active, reached, collision, waypoint, goal, goal_speed, mode,
                      planner) -> None:
        c = self.cubes.get(cube)
        if c is None:
            return
        if goal != c.goal or goal_id != c.goal_id:
            c.last_distance, c.approach = None, 0.0
            if c.refusal is not None and c.refusal[0] < t:
                c.refusal = None           # a goal that came after the refusal
        c.goal_id, c.active, c.reached, c.collision = goal_id, active, reached, collision
        c.waypoint, c.goal, c.goal_speed = waypoint, goal, goal_speed
        self.nav.mode, self.nav.planner, self.nav.online = mode or self.nav.mode, planner or self.nav.planner, True

    def on_contact(self, t, a, b, x, y, count) -> None:
        self.contacts.append((t, a, b, x, y))
        self.contact_count = max(self.contact_count + 1, count)

    def on_navigator_parameters(self, t, values: dict) -> None:
        n = self.nav
        for key in ('mode', 'planner'):
            if isinstance(values.get(key), str):
                setattr(n, key, values[key])
        for key, size in (('mat_rect', 4), ('border', 5), ('walls', 5)):
            v = values.get(key)
            if isinstance(v, (list, tuple)) and all(isinstance(f, (int, float)) for f in v) and len(v) % size == 0:
                setattr(n, key, tuple(float(f) for f in v))
        for key in ('max_speed', 'tolerance'):
            if isinstance(values.get(key), (int, float)) and not isinstance(values[key], bool):
                setattr(n, key, float(values[key]))
        n.parameters_known = True

    def on_navigator_online(self, t, online: bool) -> None:
        self.nav.online = online
        if not online:
            self.nav.parameters_known = False

    def _arena(self, t) -> ArenaView:
        if self.arena is None:
            self.arena = ArenaView()
        self.arena.seen_t = t
        return self.arena

    def on_arena_map(self, t, cells: str, cols: int, rows: int, mapping) -> None:
        a = self._arena(t)
        a.cells, a.cols, a.rows, a.mapping = cells, cols, rows, mapping

    def on_arena_state(self, t, mdf, robot, status, text, explored, moves, images) -> None:
        a = self._arena(t)
        a.mdf, a.robot, a.status, a.text, a.explored, a.moves, a.images = mdf, robot, status, text, explored, moves, \
            images

    def on_arena_path(self, t, points) -> None:
        """The fastest path's robot centres (mat x, y, heading letter) -> arena cells."""
        a = self._arena(t)
        ox, oy, cell = a.mapping or DEFAULT_MAPPING
        a.path = [(math.floor((x - ox) / cell), math.floor(a.rows - (y - oy) / cell), h) for x, y, h in points]

    def on_arena_waypoint(self, t, waypoint) -> None:
        self._arena(t).waypoint = waypoint

    def on_arena_parameters(self, t, waypoint, mapping) -> None:
        """The explorer's parameters: its waypoint and where the arena lies on the mat (before any map)."""
        a = self._arena(t)
        a.waypoint = waypoint
        if a.mapping is None:
            a.mapping = mapping

    def on_note(self, t, ok: bool, text: str, cube: str = '', reason: str = '') -> None:
        """A command's answer; a refusal for ``cube`` also shows in its status line (``reason``, else ``text``)."""
        self.notes.append((t, ok, text))
        if not ok and cube in self.cubes:
            self.cubes[cube].refusal = (t, reason or text)

    # ------------------------------------------------------------------------------------------------ reading
    def health(self, c: CubeView, now: float) -> str:
        if c.seen_t is None:
            return 'unseen'
        age = now - c.seen_t
        if age > self.lost_s:
            return 'lost'
        if c.link is not None and c.link != LINK_CONNECTED:
            return 'link ' + (LINK_NAMES[c.link] if 0 <= c.link < len(LINK_NAMES) else str(c.link))
        if age > self.stale_s:
            return 'stale'
        return 'ok' if c.on_mat else 'off the mat'

    def goal_status(self, c: CubeView, now: float) -> str:
        if c.refusal is not None and now - c.refusal[0] <= REFUSAL_SHOWN_S:
            return 'refused: ' + c.refusal[1]
        if c.goal is None:
            return 'no goal'
        if c.goal[2] == STOP:
            return 'stopped'
        if c.goal[2] == AWAY:
            return 'fleeing'
        if c.reached:
            return 'reached'
        return 'moving' if c.active else 'holding'

    def eta(self, c: CubeView) -> float:
        """Seconds to the goal at the recent approach speed, never slower than a fifth of the goal's speed cap nor
        faster than the cap; 0 when reached, NaN without a goal being pursued."""
        if c.reached:
            return 0.0
        d = c.distance()
        if not (c.active and c.goal is not None and c.goal[2] == TOWARDS and math.isfinite(d)):
            return math.nan
        cap = (c.goal_speed if c.goal_speed > 0 else self.nav.max_speed) * UNITS_PER_S_PER_MOTOR_UNIT
        speed = min(max(c.approach, 0.2 * cap), cap)
        return max(0.0, d - self.nav.tolerance) / speed if speed > 0 else math.nan

    def _cube_json(self, c: CubeView, now: float) -> dict:
        return {
            'name': c.name, 'x': _num(c.x), 'y': _num(c.y), 'theta': _num(c.theta, 3), 'on_mat': c.on_mat,
            'battery': c.battery, 'link': LINK_NAMES[c.link] if c.link is not None and 0 <= c.link < 5 else None,
            'link_detail': c.link_detail, 'health': self.health(c, now),
            'age': _num(now - c.seen_t, 2) if c.seen_t is not None else None,
            'goal': None if c.goal is None else [_num(c.goal[0]), _num(c.goal[1]), ('towards', 'away', 'stop')[
                c.goal[2]] if 0 <= c.goal[2] <= 2 else str(c.goal[2])],
            'waypoint': None if c.waypoint is None or not c.active else [_num(c.waypoint[0]), _num(c.waypoint[1])],
            'status': self.goal_status(c, now), 'distance_mm': _mm(c.distance()), 'eta_s': _num(self.eta(c)),
            'collision': c.collision,
        }

    def _arena_json(self) -> dict | None:
        a = self.arena
        if a is None:
            return None
        return {
            'cols': a.cols, 'rows': a.rows, 'mapping': None if a.mapping is None else [_num(v, 3) for v in a.mapping],
            'cells': a.cells, 'mdf': list(a.mdf), 'robot': None if a.robot is None else list(a.robot),
            'status': a.status, 'text': a.text, 'explored': a.explored, 'moves': a.moves,
            'images': [list(i) for i in a.images], 'path': [list(p) for p in a.path],
            'waypoint': None if a.waypoint is None else list(a.waypoint),
            'start': list(START_CENTRE), 'goal': list(GOAL_CENTRE),
        }

    def snapshot(self, now: float) -> dict:
        """Everything the page draws, at time ``now`` (JSON-ready: lists, numbers, strings, None)."""
        with self.lock:
            n = self.nav
            return {
                'type': 'view', 't': _num(now, 3),
                'navigator': {'mode': n.mode, 'planner': n.planner, 'mat_rect': list(n.mat_rect),
                              'border': list(n.border), 'walls': list(n.walls), 'online': n.online,
                              'parameters_known': n.parameters_known, 'modes': list(MODES),
                              'planners': list(PLANNERS)},
                'cubes': [self._cube_json(c, now) for c in self.cubes.values()],
                'contacts': {'count': self.contact_count,
                             'recent': [[_num(now - t, 2), a, b, _num(x), _num(y)] for t, a, b, x, y in self.contacts
                                        if 0 <= now - t <= CONTACT_SHOWN_S]},
                'arena': self._arena_json(),
                'notes': [[_num(t, 3), ok, text] for t, ok, text in self.notes],
            }
