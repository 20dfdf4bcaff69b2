"""Carrying out an exploration and a fastest path with a real (or simulated) cube, as a state machine without ROS.

:class:`ArenaExecutor` turns the explorer's grid commands (:mod:`toio_navigator.arena.explorer`) and the fastest
path's commands into *steps* a cube can do, and decides each step from what it is told:

* inputs: the cube's pose (:meth:`~ArenaExecutor.on_cube_state`), the six IR ranges (:meth:`~ArenaExecutor.on_ir`),
  the navigator's goal answers and results (:meth:`~ArenaExecutor.on_goal_answer`,
  :meth:`~ArenaExecutor.on_nav_result`), the cube's own move results (:meth:`~ArenaExecutor.on_turn_result`), the
  user's requests (start, terminate) and the time, given to every call that needs it (``now``: monotonic seconds;
  ``clock_ns``: the clock that stamps the IR readings);
* outputs: what the caller must do, collected by :meth:`~ArenaExecutor.take_outputs` in order: navigator goals
  (:class:`GoalRequest`), the cube's own moves (:class:`TurnRequest`), stops (:class:`StopCube`), state and map
  reports (:class:`Report`), the fastest path (:class:`PathReport`) and log lines (:class:`LogLine`).

Each command becomes a few steps (docs/arena.md §8.1 says why): ``goal`` (a navigator goal to a cell), ``release``
(a STOP goal, so the navigator lets go of the cube), ``pose`` (the cube's own turn to an absolute heading),
``check`` (the cube is in the expected cell with the expected heading, else a correction is inserted) and ``sense``
(fresh IR readings, which answer the explorer). A failing step is retried ``retries`` times; then the run stops
with ERROR and the reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Protocol, Sequence

from toio_navigator.arena.explorer import FORWARD, LEFT, PHOTO, RIGHT, SENSE, ArenaExplorer, Command, ExplorerConfig
from toio_navigator.arena.fastest_path import Route, actions_to_commands
from toio_navigator.arena.geometry import Pose, footprint
from toio_navigator.arena.grid import readings_from_ir_ranges

LATERAL_SLACK = 0.25      # cells: how far beside the centre line a forward move may end
RELEASE_GAP_S = 0.12      # after the navigator let go of the cube, before the next command goes out
RELEASE_TIMEOUT_S = 2.0   # the navigator reports the cube inactive within a few of its ticks
STILL_S, STILL_UNITS = 1.0, 1.0   # a cube that moved less than 1 unit in 1 s stands still
FRESH_S = 1.0             # a cube state or IR reading older than this is not "recent" for a start
SERVICE_TIMEOUT_S = 3.0   # navigator/set_goal answers within a tick or two
STALE_S = 2.0             # no cube state for this long while moving: the run stops with ERROR
TURN_TIMEOUT_S = 5.0      # the cube's own timeout of one move_to_pose (a 90-degree turn takes well under 2 s)
TURN_RESULT_SLACK_S = 2.0  # after the cube's own timeout, its result must have arrived
STOP_REPORT_S = 0.6       # after terminate / an error: the cube has stopped by then (command durations <= 250 ms)
START = Pose(1, 1, 0)     # where every exploration and fastest path begins: the start centre, facing north


class Mode(StrEnum):
    """What the executor is doing. Compares equal to its name (``mode == 'DONE'``)."""
    IDLE = 'IDLE'
    EXPLORING = 'EXPLORING'
    FASTEST_PATH = 'FASTEST_PATH'
    DONE = 'DONE'
    TERMINATED = 'TERMINATED'
    ERROR = 'ERROR'


BUSY = (Mode.EXPLORING, Mode.FASTEST_PATH)


class StepKind(StrEnum):
    GOAL = 'goal'          # navigator goal to a cell (forward move, dash, correction)
    RELEASE = 'release'    # navigator STOP goal: it lets go of the cube
    POSE = 'pose'          # the cube's own move_to_pose (a turn, squaring up)
    CHECK = 'check'        # the cube is in the expected cell with the expected heading
    SENSE = 'sense'        # fresh IR readings


class Settings(Protocol):
    """What the executor reads of the node's settings (satisfied by settings.arena_explorer.ArenaNodeSettings)."""
    cube: str
    mapping: object            # an ArenaMatMapping: pose_to_mat, mat_to_cell, mat_to_pose, inside, cell_size
    waypoint: tuple[int, int] | None
    move_speed: float
    turn_speed: int
    goal_tolerance: float
    square_up_deg: float
    settle_s: float
    move_timeout_s: float
    retries: int
    explorer: ExplorerConfig


# ------------------------------------------------------------------------------------------------ outputs

@dataclass(frozen=True)
class GoalRequest:
    """A goal for the navigator: to ``point`` (mat units), or STOP when ``point`` is None."""
    goal_id: int
    point: tuple[float, float] | None
    max_speed: float = 0.0
    tolerance: float = 0.0


@dataclass(frozen=True)
class TurnRequest:
    """The cube's own move to a mat pose (absolute heading ``theta``, radians clockwise from mat +x)."""
    goal_id: int
    x: float
    y: float
    theta: float
    max_speed: int
    timeout_s: float


@dataclass(frozen=True)
class StopCube:
    """Stop the cube now: a STOP goal to the navigator, and cancel the cube's own move when ``cancel_turn``."""
    goal_id: int
    cancel_turn: bool


@dataclass(frozen=True)
class Report:
    """Publish the state (robot pose, status name, text, moves) and, when ``grid``, the map of the belief."""
    pose: Pose
    status: str
    text: str
    moves: int
    grid: bool


@dataclass(frozen=True)
class PathReport:
    route: Route


@dataclass(frozen=True)
class LogLine:
    level: str           # info, warning, error
    text: str
    throttle_s: float = 0.0


Output = GoalRequest | TurnRequest | StopCube | Report | PathReport | LogLine


# ------------------------------------------------------------------------------------------------ inputs kept

@dataclass(frozen=True)
class CubeSeen:
    when: float
    x: float
    y: float
    theta: float
    on_mat: bool


@dataclass(frozen=True)
class IrSeen:
    when: float
    ranges: tuple[int, ...]
    stamp_ns: int


@dataclass(frozen=True)
class NavSeen:
    when: float
    goal_id: int
    active: bool
    reached: bool


@dataclass
class Step:
    """One thing the cube must do; advanced on every tick until done."""
    kind: StepKind
    pose: Pose | None = None       # the cell pose the step is about
    attempts: int = 0
    started: float = -math.inf
    stamp_ns: int = 0              # clock_ns when the step started (sensor stamps must be later)
    sent: float = -math.inf        # when this attempt's request went out (-inf: not yet)
    goal_id: int = 0
    answer: tuple[bool | None, str] | None = None   # the navigator's answer to this attempt's goal request
    released: float | None = None  # release: when the navigator first reported the cube inactive


class StepFailed(RuntimeError):
    pass


class ArenaExecutor:
    """One cube's exploration and fastest path, step by step (see the module docstring)."""

    def __init__(self, settings: Settings, photograph: Callable[[Pose], list[tuple[int, str]]] | None = None):
        self.settings = settings
        self.photograph = photograph     # the camera: (image id, bound) pairs seen from a pose; None = no camera
        self.explorer: ArenaExplorer | None = None
        self.mode = Mode.IDLE
        self.text = 'waiting for arena_explorer/start_exploration'
        self.pose = START                # where the cube is (cells), as far as the executor knows
        self.route: Route | None = None
        self.route_commands: list[str] = []
        self.route_moves = 0
        self.steps: list[Step] = []
        self.command: Command | str | None = None   # the explorer command (or fastest-path command) being done
        self.readings: tuple[int, ...] | None = None
        self.cube: CubeSeen | None = None
        self.ir: IrSeen | None = None
        self.nav: NavSeen | None = None
        self.turn_results: dict[int, tuple[bool, str]] = {}
        self._ids = 0
        self._still_at = (math.nan, math.nan, math.inf)   # where and since when the cube stands still
        self._final_report: float | None = None          # when to report the pose the cube stopped on
        self._out: list[Output] = []

    # ---------------------------------------------------------------------------------------------- inputs
    def on_cube_state(self, now: float, x: float, y: float, theta: float, on_mat: bool) -> None:
        if self.cube is None or math.hypot(x - self._still_at[0], y - self._still_at[1]) > STILL_UNITS:
            self._still_at = (x, y, now)     # moved: restart the stillness clock here
        self.cube = CubeSeen(now, x, y, theta, on_mat)

    def on_ir(self, now: float, ranges: Sequence[int], stamp_ns: int) -> None:
        self.ir = IrSeen(now, tuple(int(v) for v in ranges), stamp_ns)

    def on_nav_result(self, now: float, goal_id: int, active: bool, reached: bool) -> None:
        self.nav = NavSeen(now, goal_id, active, reached)

    def on_turn_result(self, goal_id: int, reached: bool, why: str) -> None:
        self.turn_results[goal_id] = (reached, why)

    def on_goal_answer(self, goal_id: int, accepted: bool | None, reason: str = '') -> None:
        """The navigator's answer to a goal request (None: the call gave no answer). Answers to requests that are
        no longer awaited (a retried attempt, a stop) are dropped."""
        if self.steps and self.steps[0].goal_id == goal_id and self.steps[0].sent > -math.inf:
            self.steps[0].answer = (accepted, reason)

    def take_outputs(self) -> list[Output]:
        """What to do, in order, since the last call."""
        out, self._out = self._out, []
        return out

    # ---------------------------------------------------------------------------------------------- requests
    @property
    def busy(self) -> bool:
        return self.mode in BUSY

    def missing_inputs(self, now: float) -> str:
        """'' when a recent on-mat cube state and IR readings are there; else what is missing."""
        cube = self.settings.cube
        if self.cube is None or now - self.cube.when > FRESH_S:
            return f'no recent {cube}/state (is the cube_driver running?)'
        if not self.cube.on_mat:
            return f'{cube} is not on the mat'
        if self.ir is None or now - self.ir.when > FRESH_S:
            return f'no recent {cube}/ir (is mat_sim running with an arena_layout?)'
        return ''

    def start_exploration(self, now: float, missing_peers: str = '') -> tuple[bool, str]:
        """A new exploration from the start centre; refused while busy or when an input or a peer
        (``missing_peers``: what the caller found missing) is not there."""
        missing = self.missing_inputs(now) or missing_peers
        if self.busy or missing:
            return False, f'already {self.mode.lower()}' if self.busy else missing
        self.explorer = ArenaExplorer(self.settings.explorer, start=START)
        self.route, self.command = None, None
        self.mode, self.text = Mode.EXPLORING, 'exploring'
        self.pose = START
        self.steps = [Step(StepKind.RELEASE), Step(StepKind.CHECK, START)]   # stand on the start, facing north
        self._report(grid=True)
        self._log('info', 'exploration started')
        return True, 'exploration started'

    def start_fastest_path(self, now: float, missing_peers: str = '') -> tuple[bool, str]:
        """Drive the fastest path (via the waypoint of the settings) on the explored map, from the start centre."""
        if self.busy:
            return False, f'already {self.mode.lower()}'
        if self.explorer is None:
            return False, 'nothing explored yet: call arena_explorer/start_exploration first'
        missing = self.missing_inputs(now) or missing_peers
        if missing:
            return False, missing
        start = self.explorer.start
        if (self.pose.x, self.pose.y) != (start.x, start.y):
            return False, (f'the robot is at ({self.pose.x},{self.pose.y}), not on the start centre '
                           f'({start.x},{start.y}); a finished exploration ends there')
        waypoint = self.settings.waypoint
        route = self.route = self.explorer.fastest_path(waypoint)
        self._out.append(PathReport(route))
        if not route.found:
            self.text = f'no path from the start via waypoint {waypoint} to the goal on the explored map'
            self._report()
            return False, self.text
        self.route_commands = actions_to_commands(route.actions)
        self.route_moves, self.command = 0, None
        self.mode = Mode.FASTEST_PATH
        self.text = f'fastest path: cost {route.cost_value}, {" ".join(self.route_commands)}'
        self.steps = [Step(StepKind.RELEASE), Step(StepKind.CHECK, start)]   # turn to the start heading first
        self.pose = start
        self._log('info', self.text)
        self._report()
        return True, self.text

    def terminate(self, now: float) -> tuple[bool, str]:
        if not self.busy:
            return False, f'nothing to terminate ({self.mode.lower()})'
        if self.explorer is not None and self.mode == Mode.EXPLORING:
            self.explorer.terminate()
        self._stop_cube(now)
        self.mode, self.text = Mode.TERMINATED, 'terminated by arena_explorer/terminate'
        self._report(grid=True)
        self._log('info', 'terminated')
        return True, 'terminated'

    def known_obstacles_under(self, waypoint: tuple[int, int] | None) -> list[tuple[int, int]]:
        """Explored obstacle cells under a robot centred on ``waypoint`` (none before any exploration)."""
        if waypoint is None or self.explorer is None:
            return []
        b = self.explorer.belief
        return [(x, y) for x, y in footprint(*waypoint) if b.explored[y, x] and b.obstacle[y, x]]

    # ---------------------------------------------------------------------------------------------- the loop
    def tick(self, now: float, clock_ns: int) -> None:
        """Advance the steps as far as the inputs allow; start the next command when they are all done."""
        if self._final_report is not None and now >= self._final_report:
            self._final_report = None
            self._report_where_it_stopped()
        if not self.busy:
            return
        try:
            self._check_cube(now)
            while self.steps and self._poll(self.steps[0], now, clock_ns):
                self.steps.pop(0)
            if not self.steps:
                self._next_command(now)
        except StepFailed as exc:
            self._stop_cube(now)
            self.mode, self.text = Mode.ERROR, str(exc)
            self._log('error', f'{self.mode}: {exc}')
            self._report(grid=True)

    def _next_command(self, now: float) -> None:
        """The current command has been carried out: report it, then start the next one."""
        if self.mode == Mode.EXPLORING:
            self._explore_next(now)
        else:
            self._route_next(now)

    def _explore_next(self, now: float) -> None:
        ex = self.explorer
        if self.command is not None:
            if self.command.kind == PHOTO:
                ex.on_photo(self.photograph(self.pose) if self.photograph else [])
            else:
                ex.on_moved(readings_from_ir_ranges(self.readings))
            self.pose = ex.pose
            self._report(grid=True)
        cmd = self.command = ex.next_move()
        if cmd is None:
            self._finish_exploration(now)
            return
        if cmd.kind == PHOTO:
            if self.photograph is None:
                self._log('warning', 'image mode without camera_layout: the photo sees nothing', throttle_s=30.0)
            return   # answered on the next tick, nothing moves
        self.steps = self._motion_steps(cmd.kind, cmd.cells) + [Step(StepKind.SENSE)]

    def _finish_exploration(self, now: float) -> None:
        ex = self.explorer
        self._stop_cube(now)
        self.mode = Mode.TERMINATED if ex.status == 'TERMINATED' else Mode.DONE
        route = self.route = ex.fastest_path(self.settings.waypoint)
        self._out.append(PathReport(route))
        self.text = (f'exploration {self.mode.lower()}: {ex.explored_count} cells explored, {ex.moves} moves, '
                     f'{"back on the start" if ex.returned_to_start else "NOT back on the start"}; fastest path '
                     + (f'cost {route.cost_value}' if route.found else 'none'))
        self._log('info', self.text)
        self._report(grid=True)

    def _route_next(self, now: float) -> None:
        if self.command is not None:
            self.route_moves += 1
            self._report()
        if not self.route_commands:
            self.command = None
            self._stop_cube(now)
            at_goal = (self.pose.x, self.pose.y) == self.explorer.goal
            self.mode = Mode.DONE if at_goal else Mode.ERROR
            self.text = (f'fastest path done: {self.route_moves} moves, cost {self.route.cost_value}'
                         if at_goal else f'fastest path ended at ({self.pose.x},{self.pose.y}), not on the goal')
            self._log('info', self.text)
            self._report()
            return
        self.command = self.route_commands.pop(0)
        kind, cells = self.command[0], int(self.command[1:] or 1)
        self.steps = self._motion_steps(kind, cells)

    def _motion_steps(self, kind: str, cells: int) -> list[Step]:
        """The steps of one grid command from the current pose; updates that pose to the command's end."""
        if kind == SENSE:
            return []
        if kind == FORWARD:
            self.pose = self.pose.forward(cells)
            # the navigator keeps holding the cube on the reached goal while it is checked and sensed; a turn or a
            # correction releases it first
            return [Step(StepKind.GOAL, self.pose), Step(StepKind.CHECK, self.pose)]
        if kind in (LEFT, RIGHT):
            self.pose = self.pose.turned_left() if kind == LEFT else self.pose.turned_right()
            return [Step(StepKind.RELEASE), Step(StepKind.POSE, self.pose), Step(StepKind.CHECK, self.pose)]
        raise StepFailed(f'unknown command {kind!r}')

    def _check_cube(self, now: float) -> None:
        """Fail at once (instead of after every retry) when the cube's pose stops coming or it left the mat."""
        cube = self.settings.cube
        age = math.inf if self.cube is None else now - self.cube.when
        if age > STALE_S:
            raise StepFailed(f'no {cube}/state for {STALE_S:g} s: the cube_driver stopped or lost its cube')
        if not self.cube.on_mat:
            raise StepFailed(f'{cube} left the mat (position ID missed)')

    # ---------------------------------------------------------------------------------------------- steps
    def _poll(self, step: Step, now: float, clock_ns: int) -> bool:
        """Advance one step; True when it is done. Raises StepFailed when it cannot be done."""
        if step.started == -math.inf:
            step.started, step.stamp_ns = now, clock_ns
        return self._POLLS[step.kind](self, step, now)

    def _next_id(self) -> int:
        self._ids = self._ids % 0xFFFFFFF0 + 1
        return self._ids

    def _retry(self, step: Step, why: str) -> None:
        step.attempts += 1
        if step.attempts > self.settings.retries:
            raise StepFailed(f'{step.kind} {_describe(step.pose)} failed after {step.attempts} attempts: {why}')
        self._log('warning', f'{step.kind} {_describe(step.pose)}: {why}; retrying')
        step.sent, step.goal_id, step.answer = -math.inf, 0, None

    def _send_goal(self, step: Step, now: float, stop: bool = False) -> None:
        step.goal_id, step.sent, step.answer = self._next_id(), now, None
        if stop:
            self._out.append(GoalRequest(step.goal_id, None))
        else:
            self._out.append(GoalRequest(step.goal_id, self._goal_point(step.pose),
                                         float(self.settings.move_speed), float(self.settings.goal_tolerance)))

    def _goal_point(self, pose: Pose) -> tuple[float, float]:
        """The mat point of a forward move to ``pose``: the cell centre along the direction of travel, but the cube's
        own sideways position (within LATERAL_SLACK of a cell): the cube drives straight instead of steering onto
        the centre line and arriving skewed; sideways offsets never add up beyond the slack."""
        mapping = self.settings.mapping
        mx, my, _theta = mapping.pose_to_mat(pose)
        if self.cube is None:
            return mx, my
        slack = LATERAL_SLACK * mapping.cell_size
        if pose.heading in (0, 2):      # north / south run along mat y: keep the cube's x
            return min(max(self.cube.x, mx - slack), mx + slack), my
        return mx, min(max(self.cube.y, my - slack), my + slack)

    def _accepted(self, step: Step, now: float) -> bool:
        """The navigator accepted this attempt's goal (raises when it refused; retries when it stays silent)."""
        if step.sent == -math.inf:
            return False
        if step.answer is None:
            if now - step.sent > SERVICE_TIMEOUT_S:
                self._retry(step, f'navigator/set_goal did not answer within {SERVICE_TIMEOUT_S:g} s')
            return False
        accepted, reason = step.answer
        if accepted is None:
            raise StepFailed('navigator/set_goal gave no answer')
        if not accepted:
            raise StepFailed(f'the navigator refused the goal: {reason}')
        return True

    def _poll_goal(self, step: Step, now: float) -> bool:
        if step.sent == -math.inf:
            self._send_goal(step, now)
            return False
        if self._accepted(step, now) and self.nav is not None:
            nav = self.nav
            if nav.when > step.sent and nav.goal_id == step.goal_id and nav.reached:
                return True
        if self._standing_in(step.pose, now):
            return True   # stopped inside the target cell short of the tolerance: the check squares it up
        if step.sent > -math.inf and now - step.sent > self.settings.move_timeout_s:   # (-inf: just retried)
            self._retry(step, f'not reached within {self.settings.move_timeout_s:g} s')
        return False

    def _standing_in(self, pose: Pose, now: float) -> bool:
        """The cube has stood still for STILL_S inside the cell of ``pose``."""
        x, y, since = self._still_at
        return now - since >= STILL_S and self.settings.mapping.mat_to_cell(x, y) == (pose.x, pose.y)

    def _poll_release(self, step: Step, now: float) -> bool:
        """STOP goal: the navigator forgets the goal and stops sending wheel commands to this cube."""
        if step.sent == -math.inf:
            self._send_goal(step, now, stop=True)
            return False
        if self._accepted(step, now) and self.nav is not None:
            if self.nav.when > step.sent and not self.nav.active:
                # the navigator publishes its one stop command in the tick that first reports the cube inactive,
                # on another topic: wait a little, so that stop reaches the driver before a following
                # move_to_pose (the driver would let the later of the two replace the other)
                step.released = self.nav.when if step.released is None else step.released
                return now - step.released >= RELEASE_GAP_S
        if step.sent > -math.inf and now - step.sent > RELEASE_TIMEOUT_S:
            self._retry(step, 'the navigator did not release the cube')
        return False

    def _poll_pose(self, step: Step, now: float) -> bool:
        if step.sent == -math.inf:
            step.goal_id, step.sent = self._next_id(), now
            mx, my, theta = self.settings.mapping.pose_to_mat(step.pose)
            self._out.append(TurnRequest(step.goal_id, mx, my, theta, self.settings.turn_speed, TURN_TIMEOUT_S))
            return False
        result = self.turn_results.pop(step.goal_id, None)
        if result is not None:
            reached, why = result
            if reached:
                return True
            self._retry(step, f'move_to_pose ended with {why}')
        elif now - step.sent > TURN_TIMEOUT_S + TURN_RESULT_SLACK_S:
            self._retry(step, 'no move_to_pose result')
        return False

    def _poll_check(self, step: Step, now: float) -> bool:
        """The cube stands in the expected cell with the expected heading; else insert a correction."""
        s = self.settings
        if self.cube is None or self.cube.when < step.started + s.settle_s:
            if now - step.started > s.move_timeout_s:
                raise StepFailed(f'no {s.cube}/state')
            return False
        if not self.cube.on_mat:
            raise StepFailed(f'{s.cube} left the mat')
        cell = s.mapping.mat_to_cell(self.cube.x, self.cube.y)
        _mx, _my, want = s.mapping.pose_to_mat(step.pose)
        error = math.degrees(abs((self.cube.theta - want + math.pi) % (2 * math.pi) - math.pi))
        if cell == (step.pose.x, step.pose.y) and error <= s.square_up_deg:
            return True
        self._retry(step, f'the cube is in cell {cell} heading off by {error:.0f} deg; correcting')
        fix = [Step(StepKind.GOAL, step.pose)] if cell != (step.pose.x, step.pose.y) else []
        self.steps[1:1] = fix + [Step(StepKind.RELEASE), Step(StepKind.POSE, step.pose),
                                 Step(StepKind.CHECK, step.pose, attempts=step.attempts)]
        return True

    def _poll_sense(self, step: Step, now: float) -> bool:
        ir = self.ir
        if ir is not None and ir.when > step.started:    # the check before it waited for the settling
            # taken after the check passed (the IR source stamps with the same clock); a clock that disagrees is
            # outvoted by a reading that arrived a settling time later
            fresh = ir.stamp_ns >= step.stamp_ns or ir.when >= step.started + self.settings.settle_s
            if fresh and all(v >= 0 for v in ir.ranges):
                self.readings = ir.ranges
                return True
        if now - step.started > self.settings.move_timeout_s:
            raise StepFailed(f'no valid {self.settings.cube}/ir readings (is the cube inside the arena?)')
        return False

    _POLLS = {StepKind.GOAL: _poll_goal, StepKind.RELEASE: _poll_release, StepKind.POSE: _poll_pose,
              StepKind.CHECK: _poll_check, StepKind.SENSE: _poll_sense}

    # ---------------------------------------------------------------------------------------------- outputs
    def _report_where_it_stopped(self) -> None:
        """After a terminate or an error the cube may have stopped between the cells of its last command: report
        the cell it really stands on (and plan from there), once it has had time to stop."""
        if self.cube is None or self.explorer is None:
            return
        mapping = self.settings.mapping
        if self.cube.on_mat and mapping.inside(self.cube.x, self.cube.y):
            self.pose = mapping.mat_to_pose(self.cube.x, self.cube.y, self.cube.theta)
            self._report()

    def _stop_cube(self, now: float) -> None:
        if self.busy and self.steps:
            self._final_report = now + STOP_REPORT_S
        cancel_turn = bool(self.steps) and self.steps[0].kind == StepKind.POSE   # its own move would go on
        self.steps = []
        self._out.append(StopCube(self._next_id(), cancel_turn))

    def _report(self, grid: bool = False) -> None:
        if self.explorer is None:
            return
        status = self.explorer.status if self.mode == Mode.EXPLORING else str(self.mode)
        moves = self.route_moves if self.mode == Mode.FASTEST_PATH else self.explorer.moves
        self._out.append(Report(self.pose, status, self.text, moves, grid))

    def _log(self, level: str, text: str, throttle_s: float = 0.0) -> None:
        self._out.append(LogLine(level, text, throttle_s))


def _describe(pose: Pose | None) -> str:
    return '' if pose is None else f'to ({pose.x},{pose.y},{pose.letter})'
