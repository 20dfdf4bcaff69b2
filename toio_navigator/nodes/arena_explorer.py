"""The arena_explorer node: one cube explores a virtual 15x20 arena drawn on the mat, then runs the fastest path.

The node is a thin shell around :class:`toio_navigator.arena.explorer.ArenaExplorer` (the step machine): it
executes each command with the cube and answers with the six IR readings of ``<cube>/ir``.

* forward moves and dashes: one goal through the navigator (``navigator/set_goal``), done when ``<cube>/nav_result``
  says ``reached`` for that goal id (or the cube stands still inside the target cell). The goal is the target cell's
  centre along the direction of travel but the cube's own sideways position (within a quarter cell), so the cube
  drives straight and arrives square instead of steering onto the centre line;
* 90-degree turns: the driver's ``<cube>/move_to_pose`` (the cube's own target control) to the cell centre with the
  new heading as an *absolute* angle. The navigator only steers to points, so it cannot turn on the spot; open-loop
  wheel commands would turn by an amount that depends on latency and floor; the firmware closes the loop on the
  mat's position code, ends within 4 degrees and, because the angle is absolute, squares the cube up after every
  turn, so heading errors never accumulate (the seed robot's wall calibration, for free). Before a turn the
  navigator is released with a STOP goal, otherwise its hold-at-goal commands would replace the firmware's move;
* after every move the cube's reported pose is checked against the expected cell and heading; a cube off its cell
  or skewed by more than ``square_up_deg`` is corrected (navigator goal to the centre, then move_to_pose) before the
  readings are taken, because readings from the wrong pose would corrupt the map. ``start_exploration`` first brings
  the cube onto the start centre facing north the same way.

The readings come from ``<cube>/ir``: mat_sim's virtual sensors for a simulated cube, the virtual_ir node (virtual
sensors from the cube's reported pose) for a real cube under a virtual arena. The explorer never reads a layout.

Out: ``arena/map`` nav_msgs/OccupancyGrid (the belief: -1 unexplored, 0 free, 100 obstacle; REP 103 metres in frame
``mat``), ``arena/state`` toio_navigator/ArenaState (MDF strings, robot cell, status) after every move,
``arena/fastest_path`` nav_msgs/Path (robot centres, metres). All three are latched (transient local).
Services (std_srvs/Trigger): ``arena_explorer/start_exploration``, ``arena_explorer/start_fastest_path``,
``arena_explorer/terminate``; ``arena_explorer/set_waypoint`` (toio_navigator/SetWaypoint: x, y; -1, -1 = none).
The waypoint is also the parameter ``waypoint`` ([x, y] cell, [-1, -1] = none), changeable at run time
(``ros2 param set /arena_explorer waypoint "[7, 10]"``); the service sets that parameter, so both always agree.
A waypoint must be a valid robot centre (its 3x3 footprint inside the arena) and, through the service, must not put
the footprint on an obstacle already explored; a bad value is refused with the reason and changes nothing. A new
waypoint applies to the next fastest path (a running one keeps its route).
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace

from nav_msgs.msg import OccupancyGrid, Path
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from std_srvs.srv import Trigger

from toio_navigator import units
from toio_navigator.arena.explorer import FORWARD, LEFT, PHOTO, RIGHT, SENSE, ArenaExplorer
from toio_navigator.arena.fastest_path import Route, actions_to_commands
from toio_navigator.arena.geometry import HEADING_LETTERS, Pose, footprint
from toio_navigator.arena.grid import readings_from_ir_ranges
from toio_navigator.arena.layout import LayoutError, load_layout
from toio_navigator.msg import ArenaImage, ArenaState, CubeState, IrRanges, MoveToPose, MoveToPoseResult, NavGoal, \
    NavResult
from toio_navigator.nodes import conversions
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import LATCHED, STATE_QOS
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.arena_explorer import (ArenaNodeError, ArenaNodeSettings,  # noqa: F401 (older imports)
                                                    PARAMS, parse_waypoint, settings_from_values)
from toio_navigator.settings.spec import SettingError
from toio_navigator.sim.ir_sensors import VirtualCamera
from toio_navigator.srv import SetGoal, SetWaypoint

LATERAL_SLACK = 0.25      # cells: how far beside the centre line a forward move may end
RELEASE_GAP_S = 0.12      # after the navigator let go of the cube, before the next command goes out
STILL_S, STILL_UNITS = 1.0, 1.0   # a cube that moved less than 1 unit in 1 s stands still
SERVICE_TIMEOUT_S = 3.0   # navigator/set_goal answers within a tick or two
STALE_S = 2.0             # no cube state for this long while moving: the run stops with ERROR
TURN_TIMEOUT_S = 5.0      # the cube's own timeout of one move_to_pose (a 90-degree turn takes well under 2 s)
STOP_REPORT_S = 0.6       # after terminate / an error: the cube has stopped by then (command durations <= 250 ms)

# ------------------------------------------------------------------------------------------------ messages

STATUS = {'IDLE': ArenaState.IDLE, 'EXPLORING': ArenaState.EXPLORING, 'RETURNING': ArenaState.RETURNING,
          'IMAGE_HUNT': ArenaState.IMAGE_HUNT, 'FASTEST_PATH': ArenaState.FASTEST_PATH, 'DONE': ArenaState.DONE,
          'TERMINATED': ArenaState.TERMINATED, 'ERROR': ArenaState.ERROR}


def arena_state(explorer: ArenaExplorer, pose: Pose, status: str, text: str, moves: int, stamp) -> ArenaState:
    """The ArenaState of an explorer's belief with the robot at ``pose``."""
    part1, part2 = explorer.mdf()
    msg = ArenaState(mdf_part1=part1, mdf_part2=part2, robot_x=pose.x, robot_y=pose.y, heading=pose.letter,
                     explored_count=explorer.explored_count, moves=moves, status=STATUS[status], status_text=text)
    msg.header.stamp, msg.header.frame_id = stamp, units.FRAME_ID
    msg.images = [ArenaImage(id=r.id, x=r.x, y=r.y, face=HEADING_LETTERS[r.face]) for r in explorer.images]
    return msg


# ------------------------------------------------------------------------------------------------ motion steps

@dataclass
class Step:
    """One thing the cube must do; polled on the node's timer until done."""
    kind: str                      # goal, release, pose, check, sense
    pose: Pose | None = None       # the cell pose the step is about
    started: float = -math.inf
    sent: float = -math.inf        # when the request went out
    goal_id: int = 0
    attempts: int = 0
    future: object = None
    released: float | None = None  # release: when the navigator first reported the cube inactive
    stamp_ns: int = 0              # ROS time the step started (sensor stamps must be later)


class StepFailed(RuntimeError):
    pass


class ArenaExplorerNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__('arena_explorer', **kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        self.settings = settings_from_values(self.parameters.values)
        s, cube = self.settings, self.settings.cube
        self.camera = self._load_camera(s.camera_layout) if s.explorer.image_mode and s.camera_layout else None
        self.explorer: ArenaExplorer | None = None
        self.mode = 'IDLE'           # IDLE, EXPLORING, FASTEST_PATH, DONE, TERMINATED, ERROR
        self.text = 'waiting for arena_explorer/start_exploration'
        self.pose = Pose(1, 1, 0)    # where the cube is (cells), as far as the node knows
        self.route: Route | None = None
        self.route_commands: list[str] = []
        self.route_moves = 0
        self.steps: list[Step] = []
        self.readings = None
        self.command = None          # the explorer command (or fastest-path command) being executed
        self._ids = 0
        self._still_at = (math.nan, math.nan, math.inf)   # where and since when the cube stands still
        self._final_report: float | None = None   # when to publish the pose the cube stopped on
        self.cube_state: tuple[float, CubeState] | None = None
        self.ir: tuple[float, IrRanges] | None = None
        self.nav: tuple[float, NavResult] | None = None
        self.move_results: dict[int, MoveToPoseResult] = {}
        self.create_subscription(CubeState, f'{cube}/state', self._on_state, qos_profile_sensor_data)
        self.create_subscription(IrRanges, f'{cube}/ir', self._on_ir, 10)
        self.create_subscription(NavResult, f'{cube}/nav_result', self._on_nav, 10)
        self.create_subscription(MoveToPoseResult, f'{cube}/move_to_pose/result', self._on_move_result, 10)
        self.move_pub = self.create_publisher(MoveToPose, f'{cube}/move_to_pose', 10)
        self.set_goal = self.create_client(SetGoal, 'navigator/set_goal')
        self.cancel_move = self.create_client(Trigger, f'{cube}/move_to_pose/cancel')
        self.map_pub = self.create_publisher(OccupancyGrid, 'arena/map', LATCHED)
        self.state_pub = self.create_publisher(ArenaState, 'arena/state', STATE_QOS)
        self.path_pub = self.create_publisher(Path, 'arena/fastest_path', LATCHED)
        self.create_service(Trigger, 'arena_explorer/start_exploration', self._srv_start_exploration)
        self.create_service(Trigger, 'arena_explorer/start_fastest_path', self._srv_start_fastest_path)
        self.create_service(Trigger, 'arena_explorer/terminate', self._srv_terminate)
        self.create_service(SetWaypoint, 'arena_explorer/set_waypoint', self._srv_set_waypoint)
        self.parameters.on_change(self._apply_parameters)
        self.create_timer(0.02, self._tick)
        self.get_logger().info(f'arena_explorer: cube {cube}, {s.mapping.cell_size:g}-unit cells from mat '
                               f'({s.mapping.origin_x:g}, {s.mapping.origin_y:g}), waypoint {s.waypoint}')

    @staticmethod
    def _load_camera(path: str) -> VirtualCamera:
        try:
            return VirtualCamera(load_layout(path).images)
        except LayoutError as exc:
            raise SettingError('camera_layout', str(exc)) from None

    # ---------------------------------------------------------------------------------------------- inputs
    def _on_state(self, msg: CubeState) -> None:
        now = time.monotonic()
        if self.cube_state is None or math.hypot(msg.x - self._still_at[0], msg.y - self._still_at[1]) > STILL_UNITS:
            self._still_at = (msg.x, msg.y, now)     # moved: restart the stillness clock here
        self.cube_state = (now, msg)

    def _on_ir(self, msg: IrRanges) -> None:
        self.ir = (time.monotonic(), msg)

    def _on_nav(self, msg: NavResult) -> None:
        self.nav = (time.monotonic(), msg)

    def _on_move_result(self, msg: MoveToPoseResult) -> None:
        self.move_results[msg.goal_id] = msg

    def _apply_parameters(self, values: dict, _changed: set[str]) -> None:
        """``waypoint`` (the only run-time parameter): applies to the next fastest path."""
        waypoint = parse_waypoint(values['waypoint'])
        self.settings = replace(self.settings, waypoint=waypoint)
        self.get_logger().info(f'waypoint set to {waypoint}')

    # ---------------------------------------------------------------------------------------------- services
    def _srv_set_waypoint(self, request, response):
        """Validate, then set through the ``waypoint`` parameter (its callback applies it): one source of truth."""
        wanted = [int(request.x), int(request.y)]
        try:
            waypoint = parse_waypoint(wanted)
        except SettingError as exc:
            response.success, response.message = False, str(exc).replace('parameter waypoint: ', '')
            return response
        blocked = self._known_obstacles_under(waypoint)
        if blocked:
            response.success = False
            response.message = (f'cell ({waypoint[0]},{waypoint[1]}) is not a valid robot centre: the explored map has '
                                f'an obstacle under its footprint at {", ".join(f"({x},{y})" for x, y in blocked)}')
            return response
        result = self.set_parameters([Parameter('waypoint', value=wanted)])[0]
        if not result.successful:
            response.success, response.message = False, result.reason
            return response
        response.success = True
        when = ('the next fastest path (the running one keeps its route)' if self.mode == 'FASTEST_PATH'
                else 'the next fastest path')
        response.message = (f'waypoint ({waypoint[0]},{waypoint[1]}) for {when}' if waypoint is not None
                            else f'no waypoint for {when}')
        return response

    def _known_obstacles_under(self, waypoint: tuple[int, int] | None) -> list[tuple[int, int]]:
        """Explored obstacle cells under a robot centred on ``waypoint`` (none before any exploration)."""
        if waypoint is None or self.explorer is None:
            return []
        b = self.explorer.belief
        return [(x, y) for x, y in footprint(*waypoint) if b.explored[y, x] and b.obstacle[y, x]]

    def _ready(self) -> str:
        """'' when the cube, its driver, the navigator and the IR sensors are all there; else what is missing."""
        now = time.monotonic()
        cube = self.settings.cube
        if self.cube_state is None or now - self.cube_state[0] > 1.0:
            return f'no recent {cube}/state (is the cube_driver running?)'
        if not self.cube_state[1].on_mat:
            return f'{cube} is not on the mat'
        if self.ir is None or now - self.ir[0] > 1.0:
            return f'no recent {cube}/ir (is mat_sim running with an arena_layout?)'
        if not self.set_goal.service_is_ready():
            return 'the navigator (navigator/set_goal) is not available'
        if self.move_pub.get_subscription_count() == 0:
            return f'nobody subscribes to {cube}/move_to_pose (is the cube_driver running?)'
        return ''

    def _busy(self) -> bool:
        return self.mode in ('EXPLORING', 'FASTEST_PATH')

    def _srv_start_exploration(self, _request, response):
        missing = self._ready()
        if self._busy() or missing:
            response.success = False
            response.message = f'already {self.mode.lower()}' if self._busy() else missing
            return response
        start = Pose(1, 1, 0)
        self.explorer = ArenaExplorer(self.settings.explorer, start=start)
        self.route, self.command = None, None
        self.mode, self.text = 'EXPLORING', 'exploring'
        self.pose = start
        self.steps = [Step('release'), Step('check', start)]   # stand on the start centre, facing the start heading
        self._publish(state=True, grid=True)
        response.success, response.message = True, 'exploration started'
        self.get_logger().info('exploration started')
        return response

    def _srv_start_fastest_path(self, _request, response):
        ok, message = self._start_fastest_path()
        response.success, response.message = ok, message
        return response

    def _start_fastest_path(self) -> tuple[bool, str]:
        if self._busy():
            return False, f'already {self.mode.lower()}'
        if self.explorer is None:
            return False, 'nothing explored yet: call arena_explorer/start_exploration first'
        missing = self._ready()
        if missing:
            return False, missing
        start = self.explorer.start
        if (self.pose.x, self.pose.y) != (start.x, start.y):
            return False, (f'the robot is at ({self.pose.x},{self.pose.y}), not on the start centre '
                           f'({start.x},{start.y}); a finished exploration ends there')
        route = self.explorer.fastest_path(self.settings.waypoint)
        self.route = route
        self._publish_path(route)
        if not route.found:
            self.text = f'no path from the start via waypoint {self.settings.waypoint} to the goal on the explored map'
            self._publish(state=True)
            return False, self.text
        self.route_commands = actions_to_commands(route.actions)
        self.route_moves, self.command = 0, None
        self.mode = 'FASTEST_PATH'
        self.text = f'fastest path: cost {route.cost_value}, {" ".join(self.route_commands)}'
        self.steps = [Step('release'), Step('check', start)]   # the WJ robot also turns to the start heading first
        self.pose = start
        self.get_logger().info(self.text)
        self._publish(state=True)
        return True, self.text

    def _srv_terminate(self, _request, response):
        if not self._busy():
            response.success, response.message = False, f'nothing to terminate ({self.mode.lower()})'
            return response
        if self.explorer is not None and self.mode == 'EXPLORING':
            self.explorer.terminate()
        self._stop_cube()
        self.mode, self.text = 'TERMINATED', 'terminated by arena_explorer/terminate'
        self._publish(state=True, grid=True)
        response.success, response.message = True, 'terminated'
        self.get_logger().info('terminated')
        return response

    # ---------------------------------------------------------------------------------------------- the loop
    def _tick(self) -> None:
        if self._final_report is not None and time.monotonic() >= self._final_report:
            self._final_report = None
            self._report_where_it_stopped()
        if not self._busy():
            return
        try:
            self._check_cube()
            while self.steps and self._poll(self.steps[0]):
                self.steps.pop(0)
            if not self.steps:
                self._next_command()
        except StepFailed as exc:
            self._stop_cube()
            self.mode, self.text = 'ERROR', str(exc)
            self.get_logger().error(f'{self.mode}: {exc}')
            self._publish(state=True, grid=True)

    def _next_command(self) -> None:
        """The current command has been carried out: report it, then start the next one."""
        if self.mode == 'EXPLORING':
            self._explore_next()
        else:
            self._route_next()

    def _explore_next(self) -> None:
        ex = self.explorer
        cmd = self.command
        if cmd is not None:
            if cmd.kind == PHOTO:
                ex.on_photo([(c.id, c.bound) for c in self.camera.capture_all(self.pose)] if self.camera else [])
            else:
                ex.on_moved(readings_from_ir_ranges(self.readings.ranges))
            self.pose = ex.pose
            self._publish(state=True, grid=True)
        cmd = self.command = ex.next_move()
        if cmd is None:
            self._finish_exploration()
            return
        if cmd.kind == PHOTO:
            if self.camera is None:
                self.get_logger().warning('image mode without camera_layout: the photo sees nothing',
                                          throttle_duration_sec=30.0)
            return   # answered on the next tick, nothing moves
        self.steps = self._motion_steps(cmd.kind, cmd.cells) + [Step('sense')]

    def _finish_exploration(self) -> None:
        ex = self.explorer
        self._stop_cube()
        self.mode = 'TERMINATED' if ex.status == 'TERMINATED' else 'DONE'
        route = ex.fastest_path(self.settings.waypoint)
        self.route = route
        self._publish_path(route)
        self.text = (f'exploration {self.mode.lower()}: {ex.explored_count} cells explored, {ex.moves} moves, '
                     f'{"back on the start" if ex.returned_to_start else "NOT back on the start"}; fastest path '
                     + (f'cost {route.cost_value}' if route.found else 'none'))
        self.get_logger().info(self.text)
        self._publish(state=True, grid=True)

    def _route_next(self) -> None:
        if self.command is not None:
            self.route_moves += 1
            self._publish(state=True)
        if not self.route_commands:
            self.command = None
            self._stop_cube()
            goal = self.explorer.goal
            at_goal = (self.pose.x, self.pose.y) == goal
            self.mode = 'DONE' if at_goal else 'ERROR'
            self.text = (f'fastest path done: {self.route_moves} moves, cost {self.route.cost_value}'
                         if at_goal else f'fastest path ended at ({self.pose.x},{self.pose.y}), not on the goal')
            self.get_logger().info(self.text)
            self._publish(state=True)
            return
        self.command = self.route_commands.pop(0)
        kind, cells = self.command[0], int(self.command[1:] or 1)
        self.steps = self._motion_steps(kind, cells)

    def _motion_steps(self, kind: str, cells: int) -> list[Step]:
        """The steps of one grid command from the node's current pose; updates that pose to the command's end."""
        if kind == SENSE:
            return []
        if kind == FORWARD:
            self.pose = self.pose.forward(cells)
            # the navigator keeps holding the cube on the reached goal while it is checked and sensed; a turn or a
            # correction releases it first
            return [Step('goal', self.pose), Step('check', self.pose)]
        if kind in (LEFT, RIGHT):
            self.pose = self.pose.turned_left() if kind == LEFT else self.pose.turned_right()
            return [Step('release'), Step('pose', self.pose), Step('check', self.pose)]
        raise StepFailed(f'unknown command {kind!r}')

    def _check_cube(self) -> None:
        """Fail at once (instead of after every retry) when the cube's pose stops coming or it left the mat."""
        cube = self.settings.cube
        age = math.inf if self.cube_state is None else time.monotonic() - self.cube_state[0]
        if age > STALE_S:
            raise StepFailed(f'no {cube}/state for {STALE_S:g} s: the cube_driver stopped or lost its cube')
        if not self.cube_state[1].on_mat:
            raise StepFailed(f'{cube} left the mat (position ID missed)')

    # ---------------------------------------------------------------------------------------------- steps
    def _poll(self, step: Step) -> bool:
        """Advance one step; True when it is done. Raises StepFailed when it cannot be done."""
        now = time.monotonic()
        if step.started == -math.inf:
            step.started = now
            step.stamp_ns = self.get_clock().now().nanoseconds
        return getattr(self, f'_poll_{step.kind}')(step, now)

    def _next_id(self) -> int:
        self._ids = self._ids % 0xFFFFFFF0 + 1
        return self._ids

    def _retry(self, step: Step, why: str) -> None:
        step.attempts += 1
        if step.attempts > self.settings.retries:
            raise StepFailed(f'{step.kind} {self._describe(step.pose)} failed after {step.attempts} attempts: {why}')
        self.get_logger().warning(f'{step.kind} {self._describe(step.pose)}: {why}; retrying')
        step.sent, step.future = -math.inf, None

    @staticmethod
    def _describe(pose: Pose | None) -> str:
        return '' if pose is None else f'to ({pose.x},{pose.y},{pose.letter})'

    def _send_goal(self, step: Step, direction: int, now: float) -> None:
        step.goal_id = self._next_id()
        goal = NavGoal(goal_id=step.goal_id, cube=self.settings.cube, direction=direction)
        if direction == NavGoal.TOWARDS:
            goal.x, goal.y = self._goal_point(step.pose)
            goal.max_speed = float(self.settings.move_speed)
            goal.tolerance = float(self.settings.goal_tolerance)
        step.future = self.set_goal.call_async(SetGoal.Request(goal=goal))
        step.sent = now

    def _goal_point(self, pose: Pose) -> tuple[float, float]:
        """The mat point of a forward move to ``pose``: the cell centre along the direction of travel, but the cube's
        own sideways position (within LATERAL_SLACK of a cell): the cube drives straight instead of steering onto
        the centre line and arriving skewed; sideways offsets never add up beyond the slack."""
        mapping = self.settings.mapping
        mx, my, _theta = mapping.pose_to_mat(pose)
        if self.cube_state is None:
            return mx, my
        slack = LATERAL_SLACK * mapping.cell_size
        cx, cy = self.cube_state[1].x, self.cube_state[1].y
        if pose.heading in (0, 2):      # north / south run along mat y: keep the cube's x
            return min(max(cx, mx - slack), mx + slack), my
        return mx, min(max(cy, my - slack), my + slack)

    def _accepted(self, step: Step) -> bool:
        """The navigator answered the goal request (raises when it refused; retries when it stays silent)."""
        if step.future is None:
            return False
        if not step.future.done():
            if time.monotonic() - step.sent > SERVICE_TIMEOUT_S:
                self._retry(step, f'navigator/set_goal did not answer within {SERVICE_TIMEOUT_S:g} s')
            return False
        result = step.future.result()
        if result is None:
            raise StepFailed('navigator/set_goal gave no answer')
        if not result.accepted:
            raise StepFailed(f'the navigator refused the goal: {result.reason}')
        return True

    def _poll_goal(self, step: Step, now: float) -> bool:
        if step.future is None:
            self._send_goal(step, NavGoal.TOWARDS, now)
            return False
        if self._accepted(step) and self.nav is not None:
            when, msg = self.nav
            if when > step.sent and msg.goal_id == step.goal_id and msg.reached:
                return True
        if self._standing_in(step.pose, now):
            return True   # stopped inside the target cell short of the tolerance: the check squares it up
        if step.future is not None and now - step.sent > self.settings.move_timeout_s:   # (None: just retried)
            self._retry(step, f'not reached within {self.settings.move_timeout_s:g} s')
        return False

    def _standing_in(self, pose: Pose, now: float) -> bool:
        """The cube has stood still for STILL_S inside the cell of ``pose``."""
        x, y, since = self._still_at
        return now - since >= STILL_S and self.settings.mapping.mat_to_cell(x, y) == (pose.x, pose.y)

    def _poll_release(self, step: Step, now: float) -> bool:
        """STOP goal: the navigator forgets the goal and stops sending wheel commands to this cube."""
        if step.future is None:
            self._send_goal(step, NavGoal.STOP, now)
            return False
        if self._accepted(step) and self.nav is not None:
            when, msg = self.nav
            if when > step.sent and not msg.active:
                # the navigator publishes its one stop command in the tick that first reports the cube inactive,
                # on another topic: wait a little, so that stop reaches the driver before a following
                # move_to_pose (the driver would let the later of the two replace the other)
                step.released = when if step.released is None else step.released
                return now - step.released >= RELEASE_GAP_S
        if step.future is not None and now - step.sent > 2.0:
            self._retry(step, 'the navigator did not release the cube')
        return False

    def _poll_pose(self, step: Step, now: float) -> bool:
        if step.sent == -math.inf:
            step.goal_id = self._next_id()
            mx, my, theta = self.settings.mapping.pose_to_mat(step.pose)
            self.move_pub.publish(MoveToPose(goal_id=step.goal_id, x=mx, y=my, theta=theta,
                                             angle_mode=MoveToPose.ANGLE_SHORTEST,
                                             movement_type=MoveToPose.MOVE_ROTATE_FIRST,
                                             max_speed=self.settings.turn_speed, speed_profile=0,
                                             timeout_s=TURN_TIMEOUT_S))
            step.sent = now
            return False
        result = self.move_results.pop(step.goal_id, None)
        if result is not None:
            if result.result == MoveToPoseResult.REACHED:
                return True
            self._retry(step, f'move_to_pose ended with {result.result}: {result.text}')
        elif now - step.sent > TURN_TIMEOUT_S + 2.0:
            self._retry(step, 'no move_to_pose result')
        return False

    def _poll_check(self, step: Step, now: float) -> bool:
        """The cube stands in the expected cell with the expected heading; else insert a correction."""
        if self.cube_state is None or self.cube_state[0] < step.started + self.settings.settle_s:
            if now - step.started > self.settings.move_timeout_s:
                raise StepFailed(f'no {self.settings.cube}/state')
            return False
        msg = self.cube_state[1]
        if not msg.on_mat:
            raise StepFailed(f'{self.settings.cube} left the mat')
        mapping = self.settings.mapping
        cell = mapping.mat_to_cell(msg.x, msg.y)
        _mx, _my, want = mapping.pose_to_mat(step.pose)
        error = math.degrees(abs((msg.theta - want + math.pi) % (2 * math.pi) - math.pi))
        if cell == (step.pose.x, step.pose.y) and error <= self.settings.square_up_deg:
            return True
        self._retry(step, f'the cube is in cell {cell} heading off by {error:.0f} deg; correcting')
        fix = [Step('goal', step.pose)] if cell != (step.pose.x, step.pose.y) else []
        self.steps[1:1] = fix + [Step('release'), Step('pose', step.pose), Step('check', step.pose,
                                                                                  attempts=step.attempts)]
        return True

    def _poll_sense(self, step: Step, now: float) -> bool:
        if self.ir is not None and self.ir[0] > step.started:    # the check before it waited for the settling
            stamp = self.ir[1].header.stamp
            # taken after the check passed (mat_sim stamps with the same clock); a clock that disagrees is
            # outvoted by a message that arrived a settling time later
            fresh = stamp.sec * 1_000_000_000 + stamp.nanosec >= step.stamp_ns or \
                self.ir[0] >= step.started + self.settings.settle_s
            if fresh and all(v >= 0 for v in self.ir[1].ranges):
                self.readings = self.ir[1]
                return True
        if now - step.started > self.settings.move_timeout_s:
            raise StepFailed(f'no valid {self.settings.cube}/ir readings (is the cube inside the arena?)')
        return False

    # ---------------------------------------------------------------------------------------------- output
    def _report_where_it_stopped(self) -> None:
        """After a terminate or an error the cube may have stopped between the cells of its last command: report
        the cell it really stands on (and plan from there), once it has had time to stop."""
        if self.cube_state is None or self.explorer is None:
            return
        msg = self.cube_state[1]
        mapping = self.settings.mapping
        if msg.on_mat and mapping.inside(msg.x, msg.y):
            self.pose = mapping.mat_to_pose(msg.x, msg.y, msg.theta)
            self._publish(state=True)

    def _stop_cube(self) -> None:
        if self.mode in ('EXPLORING', 'FASTEST_PATH') and self.steps:
            self._final_report = time.monotonic() + STOP_REPORT_S
        if self.steps and self.steps[0].kind == 'pose' and self.cancel_move.service_is_ready():
            self.cancel_move.call_async(Trigger.Request())     # the cube's own move would go on otherwise
        self.steps = []
        if self.set_goal.service_is_ready():
            self.set_goal.call_async(SetGoal.Request(goal=NavGoal(goal_id=self._next_id(), cube=self.settings.cube,
                                                                  direction=NavGoal.STOP)))

    def destroy_node(self) -> None:
        """An explorer that stops mid-run tells the navigator to stop its cube (and cancels the cube's own
        move) before it goes; the run ends there."""
        if self._busy():
            self._stop_cube()
        super().destroy_node()

    def _publish(self, state: bool = False, grid: bool = False) -> None:
        if self.explorer is None:
            return
        stamp = self.get_clock().now().to_msg()
        if grid:
            b = self.explorer.belief
            self.map_pub.publish(conversions.occupancy_grid(b.explored, b.obstacle, self.settings.mapping, stamp))
        if state:
            status = self.explorer.status if self.mode == 'EXPLORING' else self.mode
            moves = self.explorer.moves if self.mode != 'FASTEST_PATH' else self.route_moves
            self.state_pub.publish(arena_state(self.explorer, self.pose, status, self.text, moves, stamp))

    def _publish_path(self, route: Route) -> None:
        self.path_pub.publish(conversions.route_path(route.poses if route.found else [], self.settings.mapping,
                                         self.get_clock().now().to_msg()))


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator arena_explorer [--ros-args ...]``. Exit 2 on bad parameters."""
    return run_node('arena_explorer', ArenaExplorerNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
