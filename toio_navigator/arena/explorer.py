"""The arena explorer as a step machine: it decides one command at a time from sensor readings only.

Protocol (the same in the offline simulation and under the ROS node)::

    while (cmd := explorer.next_move()) is not None:
        if cmd.kind == PHOTO:   explorer.on_photo([(image_id, bound), ...])  # from the camera
        else:                   explorer.on_moved(six_readings, moved)    # after executing S / F / L / R

``S`` asks for readings without moving (the first command), ``F`` with ``cells`` > 1 is a dash.

Behaviour (docs/arena.md §4):
1. *hug*: left-wall hugging on the belief (unexplored counts as free for the left check): turn left if the
   previous command was not a left turn and the left is open; else go forward (a dash when the seed's break
   checks allow it); else turn right. The hug ends when the centre is back on the start after leaving it.
   In image mode an unscanned obstacle just right of the footprint (heading N/S, fewer than ``max_images``
   found) starts a *reverse hug*: turn 180, hug until back on that spot, turn 180 and carry on.
2. *cover* (``complete_coverage``): visit, by optimal routes over known-free cells, every pose whose sensors
   would still reach an unexplored cell; the hug alone misses what hides behind islands. In image mode
   (``hunt_images``) also every pose that would photograph an obstacle face no photo has shown yet.
3. *return*: the optimal route back to the start centre. A detected loop or ``max_moves`` ends a phase early.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.arena.coverage import photo_targets, sensing_targets
from toio_navigator.arena.fastest_path import Route, fastest_path, plan_route, valid_centres
from toio_navigator.arena.geometry import ARENA_COLS, ARENA_ROWS, GOAL_CENTRE, NORTH, SOUTH, Pose, footprint, right_of
from toio_navigator.arena.grid import ArenaBelief, ScoreRules

SENSE, FORWARD, LEFT, RIGHT, PHOTO = 'S', 'F', 'L', 'R', 'P'
HUG, COVER, RETURN, DONE = 'hug', 'cover', 'return', 'done'
BOUND_SHIFT = {'LEFT': -1, 'CENTRE': 0, 'RIGHT': 1}  # image bound position -> cells towards the robot's front


@dataclass(frozen=True)
class Command:
    kind: str      # S, F, L, R or P
    cells: int = 1  # for F: cells of the dash


@dataclass(frozen=True)
class ImageRecord:
    id: int
    x: int
    y: int
    face: int  # 0..3 = N, E, S, W: the obstacle face the card is on


@dataclass(frozen=True)
class ExplorerConfig:
    rules: ScoreRules = ScoreRules()
    image_mode: bool = False
    max_images: int = 5
    reverse_hug_headings: tuple[int, ...] = (NORTH, SOUTH)
    dash: bool = True
    dash_max_extra_north: int = 3   # extra cells of a dash heading north (the seed robot's limit)
    dash_max_extra: int = 5         # extra cells of a dash in the other headings
    dash_right_check: int = 5       # the right-centre ray must be explored this far for a dash to pass
    complete_coverage: bool = True
    hunt_images: bool = True        # image mode: the cover phase also visits unphotographed obstacle faces
    return_to_start: bool = True
    turn_cost: float = 2.0          # for the cover / return routes
    max_moves: int = 5000
    cols: int = ARENA_COLS
    rows: int = ARENA_ROWS

    def __post_init__(self):
        for name in ('max_images', 'dash_max_extra_north', 'dash_max_extra', 'dash_right_check'):
            if int(getattr(self, name)) < 0:
                raise ValueError(f'explorer parameter {name} must be >= 0, got {getattr(self, name)}')
        if self.max_moves < 1:
            raise ValueError(f'explorer parameter max_moves must be >= 1, got {self.max_moves}')
        if not self.turn_cost >= 0 or self.turn_cost == float('inf'):
            raise ValueError(f'explorer parameter turn_cost must be a finite number >= 0, got {self.turn_cost}')
        if self.cols < 3 or self.rows < 3:
            raise ValueError(f'the arena must be at least 3x3 cells, got {self.cols}x{self.rows}')
        if any(h not in (0, 1, 2, 3) for h in self.reverse_hug_headings):
            raise ValueError('reverse_hug_headings must be headings 0..3 (N, E, S, W), '
                             f'got {self.reverse_hug_headings}')


class ProtocolError(RuntimeError):
    """The caller answered a command with the wrong call (e.g. on_moved for a photo)."""


@dataclass
class _Reverse:
    spot: tuple[int, int]
    saved_prev: str | None
    left_spot: bool = False


class ArenaExplorer:
    def __init__(self, config: ExplorerConfig = ExplorerConfig(), start: Pose = Pose(1, 1, NORTH),
                 goal: tuple[int, int] = GOAL_CENTRE):
        self.config, self.start, self.goal = config, start, goal
        self.belief = ArenaBelief(config.cols, config.rows, config.rules)
        self.belief.mark_zone((start.x, start.y))
        self.belief.mark_zone(goal)
        self.pose = start
        self.phase = HUG
        self.actions: list[str] = []   # F/L/R letters, a dash of k cells is k F
        self.moves = 0                 # motion commands sent (a dash counts once)
        self.images: list[ImageRecord] = []
        self._sensed = False
        self._terminated = False
        self._pending: Command | None = None
        self._queue: list[Command] = []
        self._after_queue = None
        self._prev: str | None = None
        self._left_start = False
        self._reverse: _Reverse | None = None
        self._reverse_tried: set[tuple[int, int]] = set()
        self._photographed = np.zeros((4, config.rows, config.cols), dtype=bool)  # [heading, y, x]
        self._viewed_faces = np.zeros((4, config.rows, config.cols), dtype=bool)  # [face, y, x] seen in a photo
        self._photo_wanted = False
        self._seen: set = set()
        self._seen_version = -1

    # --- public step API ---------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.phase == DONE

    @property
    def returned_to_start(self) -> bool:
        return (self.pose.x, self.pose.y) == (self.start.x, self.start.y)

    @property
    def status(self) -> str:
        """The ArenaState status name: EXPLORING, IMAGE_HUNT, RETURNING, DONE or TERMINATED."""
        if self.phase == DONE:
            return 'TERMINATED' if self._terminated else 'DONE'
        if self.phase == RETURN:
            return 'RETURNING'
        return 'IMAGE_HUNT' if self._reverse is not None else 'EXPLORING'

    @property
    def explored_count(self) -> int:
        return int(self.belief.explored.sum())

    def mdf(self) -> tuple[str, str]:
        return self.belief.mdf()

    def fastest_path(self, waypoint: tuple[int, int] | None = None, turn_cost: float | None = None) -> Route:
        """The optimal start -> waypoint -> goal route on the explored map (unexplored cells count as obstacles)."""
        b = self.belief
        return fastest_path(b.obstacle | ~b.explored, self.start, self.goal, waypoint,
                            self.config.turn_cost if turn_cost is None else turn_cost)

    def terminate(self) -> None:
        """Stop now (the seed's TERMINATE): next_move() returns None from here on."""
        self.phase, self._pending, self._terminated = DONE, None, True

    def next_move(self) -> Command | None:
        """The next command, or None when exploration has finished. Repeats the pending command until answered."""
        if self.phase == DONE:
            return None
        if self._pending is None:
            self._pending = self._choose()
        return self._pending

    def on_moved(self, readings, cells_moved: int | None = None) -> None:
        """Answer to S/F/L/R: the six readings at the new pose; ``cells_moved`` if a move fell short."""
        cmd = self._pending
        if cmd is None or cmd.kind == PHOTO:
            raise ProtocolError(f'on_moved() without a pending motion command (pending: {cmd})')
        self._pending = None
        if cmd.kind == FORWARD:
            moved = cmd.cells if cells_moved is None else max(0, min(int(cells_moved), cmd.cells))
            self.pose = self.pose.forward(moved)
            self.actions.extend(FORWARD * cmd.cells)
        elif cmd.kind in (LEFT, RIGHT):
            self.pose = self.pose.turned_left() if cmd.kind == LEFT else self.pose.turned_right()
            self.actions.append(cmd.kind)
        if cmd.kind != SENSE:
            self.moves += 1
            self._prev = cmd.kind
        self._sensed = True
        self.belief.mark_body(self.pose)
        self.belief.apply_readings(self.pose, readings)
        self.belief.mark_scanned(self._left_cells(self.pose))
        if self.phase == HUG and self._reverse is None and (self.pose.x, self.pose.y) != (self.start.x, self.start.y):
            self._left_start = True
        if self._reverse is not None and (self.pose.x, self.pose.y) != self._reverse.spot:
            self._reverse.left_spot = True
        self._photo_wanted = self.config.image_mode and self._photo_spot(self.pose)
        if not self._queue and self._after_queue is not None:
            action, self._after_queue = self._after_queue, None
            action()

    def on_photo(self, detections) -> None:
        """Answer to P: every card the camera recognised, as (image_id, bound) pairs with bound LEFT / CENTRE /
        RIGHT (where the card is in the picture); id -1 entries are dropped, an empty list means none.
        The list is taken as complete: the three faces in view count as resolved."""
        if self._pending is None or self._pending.kind != PHOTO:
            raise ProtocolError(f'on_photo() without a pending photo (pending: {self._pending})')
        found = []
        for image_id, bound in detections:
            if bound not in BOUND_SHIFT:
                raise ValueError(f'bad image bound {bound!r}: expected LEFT, CENTRE or RIGHT')
            if int(image_id) != -1:
                found.append((int(image_id), bound))
        self._pending = None
        p = self.pose
        self._photographed[p.heading, p.y, p.x] = True
        face = right_of(p.heading)
        for x, y in self._left_cells(p):
            if self.belief.inside(x, y):
                self._viewed_faces[face, y, x] = True
        for image_id, bound in found:
            x, y = p.cell(BOUND_SHIFT[bound], 2)
            record = ImageRecord(image_id, x, y, face)
            if record not in self.images:
                self.images.append(record)

    # --- geometry on the belief --------------------------------------------------------------------------
    @staticmethod
    def _left_cells(pose: Pose) -> list[tuple[int, int]]:
        return [pose.cell(f, 2) for f in (1, 0, -1)]

    @staticmethod
    def _front_cells(pose: Pose) -> list[tuple[int, int]]:
        return [pose.cell(2, s) for s in (1, 0, -1)]

    def _left_open(self, pose: Pose) -> bool:
        return not any(self.belief.is_obstacle(x, y) for x, y in self._left_cells(pose))

    def _front_free(self, pose: Pose) -> bool:
        return all(self.belief.is_known_free(x, y) for x, y in self._front_cells(pose))

    def _card_cell(self, x: int, y: int) -> bool:
        """An obstacle cell inside the arena: only those can carry image cards (walls cannot)."""
        return self.belief.inside(x, y) and self.belief.is_obstacle(x, y)

    def _photo_spot(self, pose: Pose) -> bool:
        """An obstacle immediately left: left-centre, or left-front / left-rear when front / back is blocked."""
        b = self.belief
        if self._photographed[pose.heading, pose.y, pose.x]:
            return False
        if self._card_cell(*pose.cell(0, 2)):
            return True
        if self.config.hunt_images and self._want_images() and any(
                self._card_cell(x, y) and not self._viewed_faces[right_of(pose.heading), y, x]
                for x, y in self._left_cells(pose)):
            return True  # the cover phase came here for this face
        front_blocked = any(b.is_obstacle(x, y) for x, y in self._front_cells(pose))
        back_blocked = any(b.is_obstacle(*pose.cell(-2, s)) for s in (-1, 0, 1))
        return ((front_blocked and self._card_cell(*pose.cell(1, 2)))
                or (back_blocked and self._card_cell(*pose.cell(-1, 2))))

    def _want_images(self) -> bool:
        return self.config.image_mode and len({r.id for r in self.images}) < self.config.max_images

    def _reverse_candidate(self, pose: Pose) -> tuple[int, int] | None:
        """The unscanned obstacle just right of the footprint's centre row that would start a reverse hug."""
        c = self.config
        if not self._want_images():
            return None
        if pose.heading not in c.reverse_hug_headings:
            return None
        x, y = pose.cell(0, -2)
        if (not self.belief.is_obstacle(x, y) or not self.belief.inside(x, y) or self.belief.scanned[y, x]
                or (x, y) in self._reverse_tried):
            return None
        return x, y

    # --- decisions ---------------------------------------------------------------------------------------
    def _choose(self) -> Command | None:
        if not self._sensed:
            return Command(SENSE)
        if self._photo_wanted:
            self._photo_wanted = False
            return Command(PHOTO)
        if self._queue:
            return self._queue.pop(0)
        while self.phase != DONE:
            if self.moves >= self.config.max_moves:
                self.phase = DONE
                break
            cmd = {HUG: self._hug_step, COVER: self._cover_step, RETURN: self._return_step}[self.phase]()
            if cmd is not None:
                return cmd
        return None

    def _next_phase(self) -> None:
        if self.phase == HUG and self.config.complete_coverage:
            self.phase = COVER
        elif self.phase in (HUG, COVER) and self.config.return_to_start:
            self.phase = RETURN
        else:
            self.phase = DONE

    def _hug_step(self) -> Command | None:
        here = (self.pose.x, self.pose.y)
        rev = self._reverse
        if rev is not None and rev.left_spot and here == rev.spot:
            # back where the reverse hug started: face the old way again and restore the hug's memory
            self._queue = [Command(RIGHT)]
            self._after_queue = self._finish_reverse
            return Command(RIGHT)
        if rev is None:
            if self._left_start and here == (self.start.x, self.start.y):
                self._next_phase()
                return None
            spot = self._reverse_candidate(self.pose)
            if spot is not None:
                self._reverse_tried.add(spot)
                self._reverse = _Reverse(here, self._prev)
                self._queue = [Command(RIGHT)]
                return Command(RIGHT)
        if self._looping():
            if rev is not None:
                self._reverse = None  # give up this reverse hug; the normal hug carries on from here
                self._seen.clear()
            else:
                self._next_phase()
            return None
        if self._prev != LEFT and self._left_open(self.pose):
            return Command(LEFT)
        if self._front_free(self.pose):
            return Command(FORWARD, self._dash_cells())
        return Command(RIGHT)

    def _finish_reverse(self) -> None:
        if self._reverse is not None:
            self._prev = self._reverse.saved_prev
            self._reverse = None
            self._seen.clear()

    def _looping(self) -> bool:
        """The same decision state twice without any change of the belief: the hug would cycle forever."""
        if self.belief.version != self._seen_version:
            self._seen.clear()
            self._seen_version = self.belief.version
        key = (self.pose, self._prev, self._reverse is not None, self._left_start)
        if key in self._seen:
            return True
        self._seen.add(key)
        return False

    def _dash_cells(self) -> int:
        """The seed's multi-grid move: extend while the next position would teach nothing and change nothing."""
        c, b = self.config, self.belief
        if not c.dash:
            return 1
        limit = 1 + (c.dash_max_extra_north if self.pose.heading == NORTH else c.dash_max_extra)
        stop = self._reverse.spot if self._reverse is not None else (self.start.x, self.start.y)
        p, n = self.pose.forward(1), 1
        while n < limit:
            if (p.x, p.y) == stop:
                break
            if c.image_mode and (self._card_cell(*p.cell(0, 2)) or self._reverse_candidate(p) is not None):
                break
            if any(not b.is_explored(x, y) for x, y in footprint(p.x, p.y) + self._left_cells(p)):
                break
            if self._left_open(p) or not self._front_free(p):
                break
            if not self._right_ray_explored(p):
                break
            p, n = p.forward(1), n + 1
        return n

    def _right_ray_explored(self, pose: Pose) -> bool:
        for k in range(2, 2 + self.config.dash_right_check):
            x, y = pose.cell(0, -k)
            if not self.belief.is_explored(x, y):
                return False
            if self.belief.is_obstacle(x, y):
                return True
        return True

    # --- cover and return: optimal routes over known-free cells ----------------------------------------------
    def _route_command(self, targets: np.ndarray) -> Command | None:
        valid = valid_centres(~self.belief.known_free)
        route = plan_route(valid, self.pose, targets, None, self.config.turn_cost)
        if not route.found or not route.actions:
            return None
        first = route.actions[0]
        if first != FORWARD:
            return Command(first)
        run = len(route.actions) - len(route.actions.lstrip(FORWARD))
        return Command(FORWARD, run if self.config.dash else 1)

    def _cover_step(self) -> Command | None:
        b = self.belief
        targets = sensing_targets(b.known_free, b.explored, self.config.rules)
        if self.config.hunt_images and self._want_images():
            targets |= photo_targets(b.obstacle, self._viewed_faces, self._photographed)
        # the readings taken here already scored what this pose can see; never plan an empty route
        targets[self.pose.heading, self.pose.y, self.pose.x] = False
        cmd = self._route_command(targets) if targets.any() else None
        if cmd is None:
            self._next_phase()
        return cmd

    def _return_step(self) -> Command | None:
        targets = np.zeros((4, self.config.rows, self.config.cols), dtype=bool)
        targets[:, self.start.y, self.start.x] = True
        cmd = self._route_command(targets)
        if cmd is None:
            self.phase = DONE
        return cmd
