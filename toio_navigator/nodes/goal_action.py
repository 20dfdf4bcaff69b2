"""The navigator's goal interfaces for ROS users: ``<cube>/goal_pose`` and the ``<cube>/navigate_to_pose`` action,
and the one path every goal takes into the controller (so any newer goal pre-empts the older one).

  in      ``<cube>/goal_pose`` geometry_msgs/PoseStamped (metres, REP 103, frame ``frame_id`` or ``map_frame`` or
          ""; rviz2's "2D Goal Pose" tool sends one): that cube's goal, in the navigator like any other
  action  ``<cube>/navigate_to_pose`` toio_navigator/action/NavigateToPose: feedback every tick (pose, distance,
          estimated time), a result with an outcome and a reason; cancelling stops the cube

A goal that can never succeed (off the mat, another frame, not a finite position, a tolerance the cube cannot
meet) is refused before it reaches the controller, with the reason in the goal's own frame and unit (metres):
the action server REJECTS it in its goal callback (the client sees "Goal was rejected", the navigator's log says
why), a goal_pose is dropped with a warning.

The goal bookkeeping (pre-emption, progress, failure rules, outcomes) is the ROS-free
:class:`~toio_navigator.control.goals.GoalBook`; this module only turns messages into its calls and its
results into messages. Goals are positions: the controller steers cubes to points, so a pose's orientation is not
followed (docs/goals.md).

Threads: the action server's callbacks run on the navigator's executor (EventsExecutor or SingleThreadedExecutor:
one thread, or a MultiThreadedExecutor in ``bringup --single``). Its execute callback is a coroutine that only
waits for the goal's end, which a tick (or the goal that pre-empts it) decides.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.task import Future

from toio_navigator.action import NavigateToPose
from toio_navigator.control import goals as core
from toio_navigator.control.controller import SwarmController
from toio_navigator.control.goals import AWAY, STOP, TOWARDS
from toio_navigator.msg import NavGoal
from toio_navigator.nodes import conversions
from toio_navigator.settings.navigator import Frames
from toio_navigator.units import MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT, mat_to_ros_xy

_TEXT = {TOWARDS: 'TOWARDS', AWAY: 'AWAY', STOP: 'STOP'}
#: where a goal came from (log lines, pre-emption reasons)
GOAL_TOPIC, SET_GOAL, GOAL_POSE, ACTION = 'the goal topic', 'navigator/set_goal', 'goal_pose', 'the action'


@dataclass
class _ActionGoal:
    """An accepted action goal: its cube and handle, and the future its execute callback waits on."""
    cube: str
    handle: object
    done: Future
    ended: core.Ended | None = None


class GoalInterfaces:
    """goal_pose and navigate_to_pose for every cube of ``controller``, on ``node``; :meth:`apply` is how the
    node's own goal topic and service set goals too."""

    def __init__(self, node: Node, controller: SwarmController, policy: core.GoalPolicy, frames: Frames,
                 clock) -> None:
        self.node, self.controller, self.frames, self.clock = node, controller, frames, clock
        self.book = core.GoalBook(tuple(controller.settings.cubes), policy)
        self.lock = threading.RLock()          # a MultiThreadedExecutor may run a tick beside an action callback
        self._actions: dict[bytes, _ActionGoal] = {}       # goal uuid -> its goal (goal handles do not hash)
        self._told_orientation = False
        self._servers: list[ActionServer] = []
        for cube in controller.settings.cubes:
            node.create_subscription(PoseStamped, f'{cube}/goal_pose', lambda m, c=cube: self._on_goal_pose(c, m), 10)
            self._servers.append(ActionServer(
                _OwnClock(node), NavigateToPose, f'{cube}/navigate_to_pose', self._execute,
                goal_callback=lambda request, c=cube: self._on_goal_request(c, request),
                handle_accepted_callback=lambda handle, c=cube: self._on_accepted(c, handle),
                cancel_callback=self._on_cancel))

    def destroy(self) -> None:
        """Destroy the action servers; the node's destroy_node calls this first. Node.destroy_node does not destroy
        action servers, and each one holds the node's rcl handle: left alive, they kept the node and its DDS
        participant until the interpreter's final garbage collection, after rclpy was shut down."""
        while self._servers:
            self._servers.pop().destroy()

    # ---------------------------------------------------------------------------------------- every goal
    def apply(self, cube: str, goal, source: str, owner: object = None, give_up: bool = False) -> str:
        """Give the controller ``goal`` (a NavGoal) for ``cube`` from ``source``; '' or the reason it refused.
        An accepted goal pre-empts the cube's previous one, whatever interface that came from."""
        log = self.node.get_logger()
        with self.lock:
            reason = self.controller.set_goal(cube, goal.goal_id, goal.x, goal.y, goal.direction, goal.max_speed,
                                              goal.tolerance, msg_cube=goal.cube)
            if reason:
                log.warning(f'goal {goal.goal_id} for {cube!r} rejected: {reason} (from {source})')
                return reason
            log.info(f'goal {goal.goal_id} for {cube} from {source}: ' + (
                'STOP' if goal.direction == STOP else f'{_TEXT.get(goal.direction)} ({goal.x:.1f}, {goal.y:.1f})'))
            tracked = None
            if goal.direction == TOWARDS:
                speed = goal.max_speed if goal.max_speed > 0 else self.controller.settings.max_speed
                tracked = core.TrackedGoal(cube, int(goal.goal_id), source, float(goal.x), float(goal.y),
                                           speed * UNITS_PER_S_PER_MOTOR_UNIT, self.clock(), give_up, owner)
            by = f'a STOP from {source}' if goal.direction == STOP else f'a newer goal from {source}'
            ended = self.book.replace(cube, tracked, self.clock(), by=by)
            if ended is not None:
                self._ended(ended, stop=False)
            return ''

    def after_tick(self, decisions, stamp) -> None:
        """Follow every goal after a controller tick (``decisions``: its CubeCommands; ``stamp``: the tick's
        ROS time): cancels asked for, feedback, goals that ended."""
        now = self.clock()
        c = self.controller
        with self.lock:
            for entry in list(self._actions.values()):
                if entry.ended is None and entry.handle.is_cancel_requested:
                    ended = self.book.cancel(entry.cube, entry.handle, now)
                    if ended is not None:
                        self._ended(ended, stop=True)
            for cmd in decisions:
                i = c.index[cmd.cube]
                x, y, theta = (float(v) for v in c.pose[i])
                result = self.book.update(cmd.cube, now, x, y, cmd.reached, cmd.stale, cmd.on_mat)
                if isinstance(result, core.Ended):
                    self._ended(result, stop=result.outcome != core.REACHED)
                elif result is not None and result.goal.source == ACTION:
                    self._feedback(result, x, y, theta, stamp)

    def set_policy(self, policy: core.GoalPolicy) -> None:
        with self.lock:
            policy.check()
            self.book.policy = policy

    # ---------------------------------------------------------------------------------------- goal_pose
    def _on_goal_pose(self, cube: str, msg: PoseStamped) -> None:
        with self.lock:
            goal, reason = self._goal_from_pose(cube, msg, 0.0, 0.0)
            if reason:
                self.node.get_logger().warning(f'goal_pose for {cube} refused: {reason}')
                return
            if not self._told_orientation:
                self._told_orientation = True
                self.node.get_logger().info('goal_pose: the position is followed, the orientation is not (the '
                                            'navigator steers cubes to points; docs/goals.md)')
            self.apply(cube, goal, GOAL_POSE, give_up=True)

    def _goal_from_pose(self, cube: str, pose: PoseStamped, max_speed: float, tolerance_m: float):
        """(NavGoal in mat units, '') or (None, the reason a pose cannot be a goal, in metres)."""
        reason = self._pose_problem(cube, pose, max_speed, tolerance_m)
        if reason:
            return None, reason
        x, y, _theta = conversions.mat_pose_from_pose(pose.pose)
        tolerance = conversions.mat_length(tolerance_m) if tolerance_m > 0 else self.book.policy.pose_tolerance
        goal = NavGoal(goal_id=self.book.next_goal_id(), cube=cube, x=x, y=y, direction=TOWARDS,
                       max_speed=float(max_speed), tolerance=tolerance)
        return goal, ''

    def _pose_problem(self, cube: str, pose: PoseStamped, max_speed: float, tolerance_m: float) -> str:
        """Why a pose goal can never succeed, in its frame's terms (metres, REP 103); '' if it can."""
        frame = pose.header.frame_id
        if not self.frames.accepts(frame):
            known = ' or '.join(repr(f) for f in (self.frames.frame_id, self.frames.map_frame) if f)
            return f'frame {frame!r} is not the frame of {cube}/pose ({known}); no transform is applied'
        x, y = pose.pose.position.x, pose.pose.position.y
        if not (math.isfinite(x) and math.isfinite(y)):
            return f'position ({x}, {y}) is not finite'
        s = self.controller.settings
        x0, y_top = mat_to_ros_xy(s.mat_rect[0], s.mat_rect[1])       # mat y runs down: its top is ROS y max
        x1, y_bottom = mat_to_ros_xy(s.mat_rect[2], s.mat_rect[3])
        if not (x0 <= x <= x1 and y_bottom <= y <= y_top):
            return (f'position ({x:.3f}, {y:.3f}) m in frame {frame or self.frames.frame_id!r} is off the mat: x '
                    f'{x0:.3f}..{x1:.3f} m, y {y_bottom:.3f}..{y_top:.3f} m')
        if not (math.isfinite(max_speed) and 0 <= max_speed <= MOTOR_MAX):
            return f'max_speed {max_speed} is not within 0..{MOTOR_MAX} motor units (0: the navigator\'s max_speed)'
        if not (math.isfinite(tolerance_m) and tolerance_m >= 0):
            return f'tolerance {tolerance_m} m is not a finite number >= 0'
        least = conversions.metres(s.handle_tolerance)
        if 0 < tolerance_m < least:
            return (f'tolerance {tolerance_m:g} m is below {least:.4f} m, the radius within which the cube stops '
                    '(handle_tolerance): it could never count as reached (0: the default)')
        return ''

    # ---------------------------------------------------------------------------------------- the action
    def _on_goal_request(self, cube: str, request) -> GoalResponse:
        """The goal callback: a goal that can never succeed is rejected here, before it is accepted."""
        with self.lock:
            reason = self._pose_problem(cube, request.pose, request.max_speed, request.tolerance)
        if reason:
            self.node.get_logger().warning(f'{cube}/navigate_to_pose: goal rejected: {reason}')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_accepted(self, cube: str, handle) -> None:
        request = handle.request
        entry = _ActionGoal(cube, handle, Future())
        with self.lock:
            self._actions[_key(handle)] = entry
            goal, reason = self._goal_from_pose(cube, request.pose, request.max_speed, request.tolerance)
            if goal is not None:
                reason = self.apply(cube, goal, ACTION, owner=handle, give_up=True)
            elif reason:
                self.node.get_logger().warning(f'action goal for {cube} rejected: {reason}')
            if reason:
                self._resolve(entry, core.Ended(core.TrackedGoal(cube, 0, ACTION, math.nan, math.nan, 1.0,
                                                                 self.clock(), True, handle),
                                                core.REJECTED, reason, math.nan, 0.0))
        handle.execute()

    def _on_cancel(self, handle) -> CancelResponse:
        with self.lock:
            entry = self._actions.get(_key(handle))
            return CancelResponse.ACCEPT if entry is not None and entry.ended is None else CancelResponse.REJECT

    async def _execute(self, handle):
        entry = self._actions[_key(handle)]
        ended: core.Ended = await entry.done
        with self.lock:
            del self._actions[_key(handle)]
        if ended.outcome == core.REACHED:
            handle.succeed()
        elif ended.outcome == core.CANCELLED:
            handle.canceled()
        else:
            handle.abort()
        return NavigateToPose.Result(outcome=ended.outcome, reason=ended.reason,
                                     distance_remaining=conversions.metres(ended.distance),
                                     navigation_time=conversions.duration(ended.elapsed))

    def _feedback(self, progress: core.Progress, x: float, y: float, theta: float, stamp) -> None:
        fb = NavigateToPose.Feedback(distance_remaining=conversions.metres(progress.distance),
                                     estimated_time_remaining=conversions.duration(progress.eta_s),
                                     navigation_time=conversions.duration(progress.elapsed))
        if math.isfinite(x):
            fb.current_pose = conversions.pose_stamped(x, y, theta, stamp, self.frames.frame_id)
        progress.goal.owner.publish_feedback(fb)

    # ---------------------------------------------------------------------------------------- endings
    def _ended(self, ended: core.Ended, stop: bool) -> None:
        """A goal ended: a failed or cancelled one stops its cube (it must not resume the goal later); the
        interface it came from learns how it ended."""
        g = ended.goal
        if stop:
            self.controller.set_goal(g.cube, g.goal_id, 0.0, 0.0, STOP, 0.0, 0.0)
        text = f'goal {g.goal_id} for {g.cube} from {g.source}: {ended.name}' + (
            f' ({ended.reason})' if ended.reason else '')
        if ended.outcome == core.REACHED:
            self.node.get_logger().info(text)
        else:
            self.node.get_logger().warning(text)
        entry = self._actions.get(_key(g.owner)) if g.source == ACTION else None
        if entry is not None:
            self._resolve(entry, ended)

    @staticmethod
    def _resolve(entry: _ActionGoal, ended: core.Ended) -> None:
        if entry.ended is None:
            entry.ended = ended
            entry.done.set_result(ended)


def _key(handle) -> bytes:
    return bytes(handle.goal_id.uuid)


class _OwnClock:
    """The node as one action server sees it, with a ROS clock of its own. Each rcl action server runs a timer on
    its clock (expiring old results), and the EventsExecutor warns "the number of timers associated with this
    clock is large" from 8 timers on one clock: an 8-cube navigator's servers and tick timer warned at start and
    on every rate_hz change, though scanning nine timers costs nothing. The server's clock only stamps goals and
    expires results after 15 minutes; it reads the system time even under use_sim_time."""

    def __init__(self, node: Node) -> None:
        self._node, self._clock = node, Clock(clock_type=ClockType.ROS_TIME)

    def get_clock(self) -> Clock:
        return self._clock

    def __getattr__(self, name: str):
        return getattr(self._node, name)
