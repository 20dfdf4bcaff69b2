"""The arena_explorer node: one cube explores a virtual 15x20 arena drawn on the mat, then runs the fastest path.

The node translates between ROS and :class:`toio_navigator.arena.executor.ArenaExecutor`, the state machine that
carries out the explorer's commands with the cube (docs/arena.md §8.1): forward moves and dashes are goals of the
navigator (``navigator/set_goal``, done on ``<cube>/nav_result``), 90-degree turns the driver's
``<cube>/move_to_pose`` (the cube's own target control, absolute heading), every move is checked against the
cube's reported pose (``<cube>/state``) and corrected before the readings of ``<cube>/ir`` answer the command.

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

import sys
import time
from dataclasses import replace

from nav_msgs.msg import OccupancyGrid, Path
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from rclpy.task import Future
from rclpy.time import Time
from std_srvs.srv import Trigger

from toio_navigator import units
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
from toio_navigator.arena.explorer import ArenaExplorer
from toio_navigator.arena.geometry import HEADING_LETTERS, Pose
from toio_navigator.arena.layout import LayoutError, load_layout
from toio_navigator.msg import (
    ArenaImage,
    ArenaState,
    CubeState,
    IrRanges,
    MoveToPose,
    MoveToPoseResult,
    NavGoal,
    NavResult,
)
from toio_navigator.nodes import conversions
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import LATCHED, STATE_QOS
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.arena_explorer import PARAMS, parse_waypoint, settings_from_values
from toio_navigator.settings.spec import SettingError
from toio_navigator.sim.ir_sensors import VirtualCamera
from toio_navigator.srv import SetGoal, SetWaypoint

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


class ArenaExplorerNode(LeanNode):
    def __init__(self, **kwargs) -> None:
        super().__init__('arena_explorer', **kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        self.settings = settings_from_values(self.parameters.values)
        s, cube = self.settings, self.settings.cube
        camera = self._load_camera(s.camera_layout) if s.explorer.image_mode and s.camera_layout else None
        self.arena = ArenaExecutor(s, None if camera is None else
                                   lambda pose: [(c.id, c.bound) for c in camera.capture_all(pose)])
        self.goal_calls: dict[int, Future] = {}     # navigator/set_goal requests awaiting their answer, by goal id
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
        self.arena.on_cube_state(time.monotonic(), msg.x, msg.y, msg.theta, msg.on_mat)

    def _on_ir(self, msg: IrRanges) -> None:
        self.arena.on_ir(time.monotonic(), msg.ranges, Time.from_msg(msg.header.stamp).nanoseconds)

    def _on_nav(self, msg: NavResult) -> None:
        self.arena.on_nav_result(time.monotonic(), msg.goal_id, msg.active, msg.reached)

    def _on_move_result(self, msg: MoveToPoseResult) -> None:
        self.arena.on_turn_result(msg.goal_id, msg.result == MoveToPoseResult.REACHED, f'{msg.result}: {msg.text}')

    def _apply_parameters(self, values: dict, _changed: set[str]) -> None:
        """``waypoint`` (the only run-time parameter): applies to the next fastest path."""
        waypoint = parse_waypoint(values['waypoint'])
        self.settings = self.arena.settings = replace(self.settings, waypoint=waypoint)
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
        blocked = self.arena.known_obstacles_under(waypoint)
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
        when = ('the next fastest path (the running one keeps its route)' if self.arena.mode == Mode.FASTEST_PATH
                else 'the next fastest path')
        response.message = (f'waypoint ({waypoint[0]},{waypoint[1]}) for {when}' if waypoint is not None
                            else f'no waypoint for {when}')
        return response

    def _missing_peers(self) -> str:
        """'' when the navigator and the driver's move_to_pose are there; else what is missing."""
        if not self.set_goal.service_is_ready():
            return 'the navigator (navigator/set_goal) is not available'
        if self.move_pub.get_subscription_count() == 0:
            return f'nobody subscribes to {self.settings.cube}/move_to_pose (is the cube_driver running?)'
        return ''

    def _srv_start_exploration(self, _request, response):
        response.success, response.message = self.arena.start_exploration(time.monotonic(), self._missing_peers())
        self._carry_out()
        return response

    def _srv_start_fastest_path(self, _request, response):
        response.success, response.message = self.arena.start_fastest_path(time.monotonic(), self._missing_peers())
        self._carry_out()
        return response

    def _srv_terminate(self, _request, response):
        response.success, response.message = self.arena.terminate(time.monotonic())
        self._carry_out()
        return response

    # ---------------------------------------------------------------------------------------------- the loop
    def _tick(self) -> None:
        for goal_id, future in list(self.goal_calls.items()):
            if future.done():
                del self.goal_calls[goal_id]
                answer = future.result()
                self.arena.on_goal_answer(goal_id, None if answer is None else answer.accepted,
                                          '' if answer is None else answer.reason)
        self.arena.tick(time.monotonic(), self.get_clock().now().nanoseconds)
        self._carry_out()

    def _carry_out(self) -> None:
        """Do what the executor asked for, in order."""
        for out in self.arena.take_outputs():
            match out:
                case GoalRequest():
                    self._send_goal(out)
                case TurnRequest():
                    self.move_pub.publish(MoveToPose(
                        goal_id=out.goal_id, x=out.x, y=out.y, theta=out.theta, angle_mode=MoveToPose.ANGLE_SHORTEST,
                        movement_type=MoveToPose.MOVE_ROTATE_FIRST, max_speed=out.max_speed, speed_profile=0,
                        timeout_s=out.timeout_s))
                case StopCube():
                    if out.cancel_turn and self.cancel_move.service_is_ready():
                        self.cancel_move.call_async(Trigger.Request())
                    if self.set_goal.service_is_ready():
                        self._send_goal(GoalRequest(out.goal_id, None), answer_wanted=False)
                case Report():
                    self._publish(out)
                case PathReport():
                    poses = out.route.poses if out.route.found else []
                    self.path_pub.publish(conversions.route_path(poses, self.settings.mapping, self._stamp()))
                # one call site per severity and throttling: rclpy's logger keeps both per call site
                case LogLine(level='error'):
                    self.get_logger().error(out.text)
                case LogLine(level='warning', throttle_s=0.0):
                    self.get_logger().warning(out.text)
                case LogLine(level='warning'):
                    self.get_logger().warning(out.text, throttle_duration_sec=out.throttle_s)
                case LogLine():
                    self.get_logger().info(out.text)

    def _send_goal(self, request: GoalRequest, answer_wanted: bool = True) -> None:
        goal = NavGoal(goal_id=request.goal_id, cube=self.settings.cube, direction=NavGoal.STOP)
        if request.point is not None:
            goal.direction, (goal.x, goal.y) = NavGoal.TOWARDS, request.point
            goal.max_speed, goal.tolerance = request.max_speed, request.tolerance
        future = self.set_goal.call_async(SetGoal.Request(goal=goal))
        if answer_wanted:
            self.goal_calls[request.goal_id] = future

    def destroy_node(self) -> None:
        """An explorer that stops mid-run tells the navigator to stop its cube (and cancels the cube's own
        move) before it goes; the run ends there."""
        if self.arena.busy:
            self.arena.terminate(time.monotonic())
            self._carry_out()
        super().destroy_node()

    def _stamp(self):
        return self.get_clock().now().to_msg()

    def _publish(self, report: Report) -> None:
        stamp = self._stamp()
        explorer = self.arena.explorer
        if report.grid:
            b = explorer.belief
            self.map_pub.publish(conversions.occupancy_grid(b.explored, b.obstacle, self.settings.mapping, stamp))
        self.state_pub.publish(arena_state(explorer, report.pose, report.status, report.text, report.moves, stamp))


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator arena_explorer [--ros-args ...]``. Exit 2 on bad parameters."""
    return run_node('arena_explorer', ArenaExplorerNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
