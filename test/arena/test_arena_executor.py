"""The arena executor (arena/executor.py) without ROS: a scripted cube answers its requests, the time is given, so
every step, retry and refusal is deterministic and the whole exploration runs in well under a second."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from toio_navigator.arena import executor as ex
from toio_navigator.arena.executor import (
    ArenaExecutor,
    GoalRequest,
    LogLine,
    Mode,
    PathReport,
    Report,
    StopCube,
    TurnRequest,
)
from toio_navigator.arena.fastest_path import actions_to_commands, fastest_path
from toio_navigator.arena.geometry import Pose
from toio_navigator.arena.layout import load_layout
from toio_navigator.settings.arena_explorer import ArenaNodeSettings
from toio_navigator.sim.arena_run import run_exploration
from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'
TICK = 0.02


class ScriptedCube:
    """The navigator, the driver and the IR sensors of one cube: goals are reached in one tick, turns end on the
    asked heading; ``answer_goals``/``finish_turns``/``lift`` and friends script the failures."""

    def __init__(self, run: ArenaExecutor, layout, start_xy: tuple[float, float] | None = None) -> None:
        self.run, self.mapping = run, run.settings.mapping
        self.x, self.y, self.theta = self.mapping.pose_to_mat(layout.start)
        if start_xy is not None:
            self.x, self.y = start_xy
        self.sensors = VirtualIrSensors(layout.obstacles)
        self.now, self.clock_ns = 100.0, 5_000_000_000
        self.goal, self.goal_id, self.arrived, self.turns = None, 0, False, []
        self.answer_goals: bool | str | None = True    # None: the navigator never answers, 'stops': only STOPs
        self.refuse_reason = ''
        self.turn_outcome = (True, '0: reached')
        self.overshoot_next = False
        self.frozen = False                            # the cube stops moving (stops short of goals)
        self.send_state = True
        self.on_mat = True
        self.log: list[tuple] = []                     # ('goal', x, y) / ('stop',) / ('turn', theta) / ('cancel',)
        self.reports: list[Report] = []
        self.outputs: list = []
        self.asked: list[tuple[float, int, tuple | None]] = []   # (when, goal id, point) of the awaited requests
        self._answers: list[tuple[int, bool | None, str]] = []

    def carry_out(self) -> None:
        for out in self.run.take_outputs():
            self.outputs.append(out)
            if isinstance(out, GoalRequest):
                self._goal(out.goal_id, out.point)
            elif isinstance(out, StopCube):
                if out.cancel_turn:
                    self.log.append(('cancel',))
                    self.turns = []
                self._goal(out.goal_id, None, answer=False)
            elif isinstance(out, TurnRequest):
                self.turns.append(out)
                self.log.append(('turn', out.theta))
            elif isinstance(out, Report):
                self.reports.append(out)

    def _goal(self, goal_id: int, point, answer: bool = True) -> None:
        if answer:
            self.asked.append((self.now, goal_id, point))
        if answer and (self.answer_goals is True or (self.answer_goals == 'stops' and point is None)):
            refused = bool(self.refuse_reason) and point is not None
            self._answers.append((goal_id, not refused, self.refuse_reason if refused else ''))
        if point is None:
            self.goal, self.goal_id = None, 0
            self.log.append(('stop',))
        else:
            self.goal, self.goal_id, self.arrived = point, goal_id, False
            self.log.append(('goal', *point))

    def step(self) -> None:
        """One tick: the world moves, the cube's nodes publish, the executor ticks and is obeyed."""
        self.now += TICK
        self.clock_ns += int(TICK * 1e9)
        if self.goal is not None and not self.arrived and not self.frozen:
            x, y = self.goal
            if self.overshoot_next:          # ends a cell too far, "reached" all the same
                self.overshoot_next = False
                d = math.hypot(x - self.x, y - self.y)
                x, y = x + (x - self.x) / d * 20.0, y + (y - self.y) / d * 20.0
            self.x, self.y, self.arrived = x, y, True
        for turn in self.turns:
            reached, why = self.turn_outcome
            if reached:
                self.theta = turn.theta
            self.run.on_turn_result(turn.goal_id, reached, why)
        self.turns = []
        for answer in self._answers:
            self.run.on_goal_answer(*answer)
        self._answers = []
        if self.send_state:
            self.run.on_cube_state(self.now, self.x, self.y, self.theta, self.on_mat)
        pose = self.mapping.mat_to_pose(self.x, self.y, self.theta)
        self.run.on_ir(self.now, self.sensors.read_ranges(pose), self.clock_ns)
        self.run.on_nav_result(self.now, self.goal_id, self.goal is not None and not self.arrived,
                               self.goal is not None and self.arrived)
        self.run.tick(self.now, self.clock_ns)
        self.carry_out()

    def until(self, done, ticks: int = 30000) -> None:
        for _ in range(ticks):
            self.step()
            if done():
                return
        raise AssertionError(f'not finished: {self.run.mode}, {self.run.text}')

    def cell(self) -> tuple[int, int]:
        return self.mapping.mat_to_cell(self.x, self.y)


def settings(**changes) -> ArenaNodeSettings:
    return replace(ArenaNodeSettings(settle_s=0.0, waypoint=(7, 15)), **changes)


def rig(layout_name: str = '02_empty.json', start: bool = True, **changes) -> tuple[ArenaExecutor, ScriptedCube]:
    layout = load_layout(ARENAS / layout_name)
    run = ArenaExecutor(settings(**changes))
    cube = ScriptedCube(run, layout)
    cube.step()
    if start:
        ok, message = run.start_exploration(cube.now)
        assert ok, message
        cube.carry_out()
    return run, cube


@pytest.fixture
def no_release_gap(monkeypatch):
    monkeypatch.setattr(ex, 'RELEASE_GAP_S', 0.0)


def test_an_ideal_cube_explores_like_the_offline_explorer_then_drives_the_optimal_fastest_path(no_release_gap):
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    run, cube = rig('01_sample_arena_1.json')
    cube.until(lambda: run.mode != 'EXPLORING')
    assert run.mode is Mode.DONE, run.text
    offline, _robot = run_exploration(layout)
    explorer = run.explorer
    assert explorer.mdf() == offline.mdf() and explorer.actions == offline.actions
    assert np.array_equal(explorer.belief.obstacle, layout.obstacles) and cube.cell() == (1, 1)
    # a state after every move, then DONE with the final map; the fastest path was announced
    moving = [r for r in cube.reports if r.status in ('EXPLORING', 'RETURNING')]
    assert {r.moves for r in moving} == set(range(explorer.moves + 1))
    assert cube.reports[-1].status == 'DONE' and cube.reports[-1].grid
    assert any(isinstance(o, PathReport) and o.route.found for o in cube.outputs)
    # every turn went to the cube's own control only after the navigator had let go of the cube
    turns = [i for i, entry in enumerate(cube.log) if entry[0] == 'turn']
    assert turns and all(cube.log[i - 1] == ('stop',) for i in turns)
    ok, message = run.start_fastest_path(cube.now)
    assert ok, message
    cube.carry_out()
    cube.until(lambda: run.mode != 'FASTEST_PATH')
    assert run.mode == 'DONE' and cube.cell() == (13, 18), run.text
    assert run.route.cost == fastest_path(layout.obstacles, layout.start, layout.goal, (7, 15)).cost
    assert (7, 15) in [(p.x, p.y) for p in run.route.poses]
    driving = [r.moves for r in cube.reports if r.status == 'FASTEST_PATH']
    assert driving == list(range(len(actions_to_commands(run.route.actions)) + 1)) and run.route_moves == driving[-1]


def test_a_cube_that_ends_in_the_wrong_cell_is_corrected_before_the_reading(no_release_gap):
    run, cube = rig()
    cube.until(lambda: any(e[0] == 'goal' for e in cube.log))
    cube.overshoot_next = True                      # the first forward move ends a cell too far
    cube.until(lambda: run.explorer.moves >= 3)
    goals = [e for e in cube.log if e[0] == 'goal']
    assert goals[0] == goals[1]                     # the same cell centre again: the correction
    assert not run.explorer.belief.obstacle.any()   # no reading was taken from the wrong cell
    assert any(isinstance(o, LogLine) and o.level == 'warning' and 'correcting' in o.text for o in cube.outputs)


@pytest.mark.parametrize('offset, kept', [(3.0, 3.0), (-4.0, -4.0), (7.0, 5.0), (-9.0, -5.0)])
def test_a_forward_move_keeps_the_cubes_sideways_offset_up_to_a_quarter_cell(offset, kept):
    run, cube = rig(start=False)
    cube.x += offset                                # east of the start centre (a quarter of a 20-unit cell is 5)
    cube.step()
    assert run.start_exploration(cube.now)[0]
    cube.until(lambda: any(isinstance(o, GoalRequest) and o.point is not None for o in cube.outputs))
    goal = next(o for o in cube.outputs if isinstance(o, GoalRequest) and o.point is not None)
    centre_x, _y = run.settings.mapping.cell_to_mat(1, 1)
    assert run.explorer.pose.heading == 0 and goal.point[0] == pytest.approx(centre_x + kept)
    assert (goal.max_speed, goal.tolerance) == (run.settings.move_speed, run.settings.goal_tolerance)


def test_a_refused_goal_stops_the_run_with_the_navigators_reason():
    run, cube = rig()
    cube.refuse_reason = 'goal (130.0, 400.0) is off the mat'
    cube.until(lambda: run.mode != 'EXPLORING')
    assert run.mode == 'ERROR' and 'the navigator refused the goal: goal (130.0, 400.0) is off the mat' == run.text
    assert cube.reports[-1].status == 'ERROR' and cube.reports[-1].grid
    assert any(isinstance(o, StopCube) for o in cube.outputs)


@pytest.mark.parametrize('silent_on, message, attempt_s', [
    ('all', 'release  failed after 3 attempts: the navigator did not release the cube', ex.RELEASE_TIMEOUT_S),
    ('goals', 'goal to (1,2,N) failed after 3 attempts: navigator/set_goal did not answer within 3 s',
     ex.SERVICE_TIMEOUT_S),
])
def test_a_silent_navigator_is_asked_again_then_the_run_stops_naming_it(no_release_gap, silent_on, message,
                                                                        attempt_s):
    run, cube = rig(retries=2)
    cube.answer_goals = None if silent_on == 'all' else 'stops'
    cube.frozen = True                              # a navigator that does not answer does not steer either
    cube.until(lambda: run.mode != 'EXPLORING')
    assert run.mode == 'ERROR' and run.text == message
    asked = [(when, goal_id) for when, goal_id, point in cube.asked if (point is None) == (silent_on == 'all')]
    assert len(asked) == 3 and len({goal_id for _when, goal_id in asked}) == 3   # a new request (and id) per attempt
    assert cube.now - asked[0][0] == pytest.approx(3 * attempt_s, abs=6 * TICK)   # a retry goes out a tick later
    warnings = [o.text for o in cube.outputs if isinstance(o, LogLine) and o.level == 'warning']
    assert len(warnings) == 2 and all(w.endswith('; retrying') for w in warnings)


def test_an_answer_to_an_abandoned_request_is_ignored():
    run, cube = rig()
    cube.answer_goals = None
    cube.until(lambda: any(isinstance(o, GoalRequest) for o in cube.outputs))
    first = next(o for o in cube.outputs if isinstance(o, GoalRequest))
    cube.until(lambda: sum(isinstance(o, GoalRequest) for o in cube.outputs) == 2)      # retried
    run.on_goal_answer(first.goal_id, False, 'too late')                                # the old call answers
    cube.step()
    assert run.mode == 'EXPLORING'


@pytest.mark.parametrize('failure, message', [
    ('silent', 'no cube1/state for 2 s: the cube_driver stopped or lost its cube'),
    ('lifted', 'cube1 left the mat (position ID missed)'),
])
def test_a_cube_that_stops_reporting_or_leaves_the_mat_ends_the_run_at_once(no_release_gap, failure, message):
    run, cube = rig()
    cube.until(lambda: run.explorer.moves >= 2)
    if failure == 'silent':
        cube.send_state = False
    else:
        cube.on_mat = False
    cube.until(lambda: run.mode != 'EXPLORING', ticks=200)
    assert run.mode == 'ERROR' and run.text == message
    assert any(isinstance(o, StopCube) for o in cube.outputs)


def test_a_failed_turn_is_retried_then_reported_with_the_cubes_reason(no_release_gap):
    run, cube = rig(retries=1)
    cube.turn_outcome = (False, '1: timeout')
    cube.until(lambda: run.mode != 'EXPLORING')
    assert run.mode == 'ERROR'
    assert run.text.startswith('pose to (') and run.text.endswith('failed after 2 attempts: move_to_pose ended with '
                                                                    '1: timeout')
    assert sum(1 for e in cube.log if e[0] == 'turn') >= 2


def test_a_cube_that_stops_inside_the_target_cell_short_of_the_tolerance_counts_as_arrived(no_release_gap):
    run, cube = rig()
    cube.until(lambda: any(e[0] == 'goal' for e in cube.log))
    goal = next(o for o in cube.outputs if isinstance(o, GoalRequest) and o.point is not None)
    target = run.settings.mapping.mat_to_cell(*goal.point)
    cube.frozen = True
    cube.x, cube.y = goal.point[0], goal.point[1] + 7.0       # in the cell, 7 units short: never "reached"
    assert run.settings.mapping.mat_to_cell(cube.x, cube.y) == target
    started = cube.now
    moves = run.explorer.moves
    cube.until(lambda: run.explorer.moves > moves)
    assert cube.now - started >= ex.STILL_S and run.mode == 'EXPLORING'


def test_readings_older_than_the_check_are_not_used():
    run, cube = rig(start=False, settle_s=0.1)
    run.start_exploration(cube.now)
    cube.carry_out()
    run.steps = [ex.Step(ex.StepKind.SENSE)]
    run.on_ir(cube.now, (1, 2, 0, 0, 3, 3), cube.clock_ns)
    run.tick(cube.now + TICK, cube.clock_ns + 10)                 # the step starts after that reading
    assert run.steps and run.readings is None
    run.on_ir(cube.now + 2 * TICK, (1, 2, 0, 0, 3, 3), cube.clock_ns - 1)   # arrived later, stamped earlier
    run.tick(cube.now + 2 * TICK, cube.clock_ns + 20)
    assert run.steps and run.readings is None
    run.on_ir(cube.now + 3 * TICK, (1, 2, 0, -1, 3, 3), cube.clock_ns + 30)  # fresh, but one sensor has no reading
    run.tick(cube.now + 3 * TICK, cube.clock_ns + 30)
    assert run.steps and run.readings is None
    run.on_ir(cube.now + 4 * TICK, (1, 2, 0, 0, 3, 3), cube.clock_ns + 40)
    run.tick(cube.now + 4 * TICK, cube.clock_ns + 40)
    assert run.readings == (1, 2, 0, 0, 3, 3)


def test_a_turn_goes_out_only_a_release_gap_after_the_navigator_let_go():
    run, cube = rig(start=False)
    t = cube.now
    assert run.start_exploration(t)[0]
    run.take_outputs()
    run.steps = [ex.Step(ex.StepKind.RELEASE), ex.Step(ex.StepKind.POSE, Pose(1, 1, 1))]
    run.tick(t, 0)
    stop = run.take_outputs()[0]
    assert isinstance(stop, GoalRequest) and stop.point is None
    run.on_goal_answer(stop.goal_id, True)
    run.on_nav_result(t + 0.02, 0, active=False, reached=False)     # the navigator let go at t + 0.02
    for later in (0.02, 0.06, 0.02 + ex.RELEASE_GAP_S - 0.01):
        run.on_cube_state(t + later, cube.x, cube.y, cube.theta, True)
        run.tick(t + later, 0)
        assert run.take_outputs() == [], later
    run.tick(t + 0.02 + ex.RELEASE_GAP_S, 0)
    turn = run.take_outputs()
    assert len(turn) == 1 and isinstance(turn[0], TurnRequest)
    assert turn[0].theta == 0.0 and turn[0].timeout_s == ex.TURN_TIMEOUT_S     # east: mat angle 0


def test_starts_are_refused_with_what_is_missing():
    layout = load_layout(ARENAS / '02_empty.json')
    run = ArenaExecutor(settings())
    assert run.start_exploration(0.0) == (False, 'no recent cube1/state (is the cube_driver running?)')
    assert run.start_fastest_path(0.0) == (False, 'nothing explored yet: call arena_explorer/start_exploration '
                                                  'first')
    assert run.terminate(0.0) == (False, 'nothing to terminate (idle)')
    cube = ScriptedCube(run, layout)
    cube.on_mat = False
    cube.step()
    assert run.start_exploration(cube.now) == (False, 'cube1 is not on the mat')
    cube.on_mat = True
    cube.step()
    assert run.start_exploration(cube.now + 1.5) == (False, 'no recent cube1/state (is the cube_driver running?)')
    assert run.start_exploration(cube.now, 'the navigator (navigator/set_goal) is not available') == (
        False, 'the navigator (navigator/set_goal) is not available')
    assert run.start_exploration(cube.now) == (True, 'exploration started')
    assert run.start_exploration(cube.now) == (False, 'already exploring')
    assert run.start_fastest_path(cube.now) == (False, 'already exploring')
    assert run.mode == 'EXPLORING' and run.take_outputs()[0] == Report(Pose(1, 1, 0), 'EXPLORING', 'exploring', 0,
                                                                      True)


def test_terminate_stops_the_cube_and_later_reports_the_cell_it_stopped_on(no_release_gap):
    run, cube = rig()
    cube.until(lambda: run.explorer.moves >= 2 and run.steps and run.steps[0].kind == 'pose'
               and run.steps[0].sent > -math.inf)
    assert run.terminate(cube.now) == (True, 'terminated')
    cube.carry_out()
    assert cube.log[-2:] == [('cancel',), ('stop',)]        # the cube's own turn is cancelled, the navigator released
    assert run.mode == 'TERMINATED' and run.explorer.next_move() is None
    assert cube.reports[-1].status == 'TERMINATED'
    # the cube really stands two cells further: reported once it has had time to stop
    cube.x, cube.y = run.settings.mapping.cell_to_mat(1, 5)
    reports = len(cube.reports)
    cube.until(lambda: len(cube.reports) > reports, ticks=int(ex.STOP_REPORT_S / TICK) + 3)
    assert (cube.reports[-1].pose.x, cube.reports[-1].pose.y) == (1, 5) and run.mode == 'TERMINATED'
    ok, message = run.start_fastest_path(cube.now)
    assert not ok and 'not on the start centre (1,1)' in message


def test_known_obstacles_under_a_waypoint_come_from_the_explored_map_only():
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    run = ArenaExecutor(settings())
    oy, ox = next((int(y), int(x)) for y, x in zip(*np.nonzero(layout.obstacles)) if 1 <= x <= 13 and 1 <= y <= 18)
    assert run.known_obstacles_under((ox, oy)) == []                 # nothing explored yet
    run.explorer, _robot = run_exploration(layout)
    assert (ox, oy) in run.known_obstacles_under((ox, oy))
    assert run.known_obstacles_under(None) == [] and run.known_obstacles_under((1, 1)) == []


def test_mode_compares_with_its_name_and_the_mapping_default_matches_the_sensors():
    assert Mode.FASTEST_PATH == 'FASTEST_PATH' and f'{Mode.ERROR}' == 'ERROR' and Mode.DONE.lower() == 'done'
    assert settings().mapping == ArenaMatMapping()
