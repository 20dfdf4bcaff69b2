"""The navigator node: every cube's state in, one swarm step per tick, waypoints and motor commands out.

Topics (names relative, each cube's in its namespace ``/<cube>``):
  in   ``<cube>/state`` CubeState, ``<cube>/goal`` NavGoal, ``<cube>/goal_pose`` PoseStamped (metres, REP 103)
  out  ``<cube>/nav_result`` NavResult, ``<cube>/motor_cmd`` MotorCommand, ``navigator/markers`` MarkerArray,
       ``/tf`` (``mat`` -> ``<cube>/base_link``, one TFMessage per tick), ``/tf_static`` (``map`` -> ``mat``)
Services: ``navigator/set_goal`` (SetGoal: accepted + reason), ``navigator/goal_status`` (GoalStatus).
Actions: ``<cube>/navigate_to_pose`` (NavigateToPose: feedback, result with a reason, cancel stops the cube).
Every goal, whichever way it comes, pre-empts the cube's previous one (:mod:`toio_navigator.nodes.goal_action`).

This module only translates: ROS parameters <-> :class:`NavigatorSettings` and the core's parameter dataclasses
(:mod:`toio_navigator.settings.navigator`, no rclpy), messages <-> :class:`~toio_navigator.control.controller.
SwarmController` calls (no rclpy there either). Each tick is stamped once on the ROS clock; the controller steps
at that stamp with the states' own header stamps, and every NavResult carries the tick stamp, the stamp of the
state used and the goal pursued, so a bag of the inputs and NavResults replays the tick exactly
(toio_navigator.bags.replay).
"""
from __future__ import annotations

import math
import sys
import time

from rclpy.duration import Duration
from rclpy.qos import qos_profile_sensor_data
from visualization_msgs.msg import MarkerArray

from toio_navigator.control.controller import SwarmController, stamp_seconds
from toio_navigator.control.goals import STOP
from toio_navigator.msg import CubeState, MotorCommand, NavGoal, NavResult
from toio_navigator.nodes.goal_action import GOAL_TOPIC, SET_GOAL, GoalInterfaces
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.markers import navigator_markers
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.spin import run_node
from toio_navigator.nodes.tf_broadcast import TfBroadcaster
from toio_navigator.settings.navigator import PARAMS, navigator_config
from toio_navigator.srv import GoalStatus, SetGoal
from toio_navigator.units import FRAME_ID

#: how long a stopping navigator keeps its motor_cmd writers for the drivers to take its stops (at most)
STOP_FLUSH_S = 0.5


class NavigatorNode(LeanNode):
    """The navigator (rclpy must be initialised). Raises ValueError naming the parameter for bad parameters."""

    def __init__(self, **kwargs) -> None:
        super().__init__('navigator', **kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        config = navigator_config(self.parameters.values)          # SettingError names a bad parameter
        settings = config.settings
        # the controller's own clock (goal status only) is the ROS clock of the tick stamps; so is the goals'
        clock = lambda: stamp_seconds(self.get_clock().now().nanoseconds)  # noqa: E731
        self.controller = SwarmController(settings, config.params, config.handle, clock=clock, realtime=True)
        self.goals = GoalInterfaces(self, self.controller, config.goals, config.frames, clock)
        self.frames = config.frames
        self.tf = TfBroadcaster(self, config.frames.frame_id, config.frames.map_frame) \
            if config.frames.publish_tf else None
        self.markers_every = config.markers_every
        self.tick_on_fresh = config.tick_on_fresh_states
        self.ticks = 0
        self.last_tick = -math.inf
        self.fresh = set()
        self.was_live: set[str] = set()     # cubes that have been live (only they can go stale)
        self.stale: set[str] = set()        # ... and are stale now (reported once)
        self.cmd_pubs, self.result_pubs = {}, {}
        for cube in settings.cubes:
            self.create_subscription(CubeState, f'{cube}/state', lambda m, c=cube: self._on_state(c, m),
                                     qos_profile_sensor_data)
            self.create_subscription(NavGoal, f'{cube}/goal', lambda m, c=cube: self._on_goal(c, m), 10)
            self.cmd_pubs[cube] = self.create_publisher(MotorCommand, f'{cube}/motor_cmd', 10)
            self.result_pubs[cube] = self.create_publisher(NavResult, f'{cube}/nav_result', 10)
        self.marker_pub = self.create_publisher(MarkerArray, 'navigator/markers', 10)
        self.create_service(SetGoal, 'navigator/set_goal', self._srv_set_goal)
        self.create_service(GoalStatus, 'navigator/goal_status', self._srv_status)
        self.timer = self.create_timer(1.0 / settings.rate_hz, self._on_timer)
        self.parameters.on_change(self._apply_parameters)
        self.get_logger().info(f'navigator: {len(settings.cubes)} cubes {list(settings.cubes)}, mode '
                               f'{settings.mode}, planner {settings.planner}, {settings.rate_hz:g} Hz')

    # ---- parameters
    def _apply_parameters(self, values: dict, changed: set[str]) -> None:
        """A run-time change: the whole configuration is rebuilt by the start-up rules, then put into effect."""
        config = navigator_config(values)
        old_rate = self.controller.settings.rate_hz
        self.controller.reconfigure(config)
        self.markers_every, self.tick_on_fresh = config.markers_every, config.tick_on_fresh_states
        self.goals.set_policy(config.goals)
        if config.settings.rate_hz != old_rate:
            self.timer.cancel()
            self.destroy_timer(self.timer)
            self.timer = self.create_timer(1.0 / config.settings.rate_hz, self._on_timer)

    # ---- inputs
    def _on_state(self, cube: str, msg) -> None:
        # the driver stamps with the host clock, the ticks are on the ROS clock (the same one unless
        # use_sim_time); an unstamped state counts as read on arrival (a bag of it cannot replay exactly)
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if stamp_ns <= 0:
            stamp_ns = self.get_clock().now().nanoseconds
        self.controller.update_state(cube, msg.x, msg.y, msg.theta, msg.on_mat, msg.link_state, stamp_ns)
        if not self.tick_on_fresh:
            return
        self.fresh.add(cube)
        live = self.controller.live()
        waiting = [c for i, c in enumerate(self.controller.settings.cubes) if live[i] and c not in self.fresh]
        # every live cube has reported since the last tick: act now instead of waiting for the timer, so
        # the command leaves within a few ms of the position that caused it (never faster than the rate)
        if not waiting and time.monotonic() - self.last_tick >= 0.8 / self.controller.settings.rate_hz:
            self._tick()

    def _on_goal(self, cube: str, msg) -> None:
        self.goals.apply(cube, msg, GOAL_TOPIC)

    def _srv_set_goal(self, request, response):
        goal = request.goal
        reason = self.goals.apply(goal.cube, goal, SET_GOAL) if goal.cube else 'goal.cube is empty'
        if not goal.cube:
            self.get_logger().warning(f'goal {goal.goal_id} rejected: {reason}')
        response.accepted = not reason
        response.reason = reason
        return response

    def _srv_status(self, request, response):
        st = self.controller.status(request.cube)
        if st is None:
            response.known = False
            response.distance = math.nan
            response.status = f'unknown cube {request.cube!r}'
            return response
        response.known = True
        for k, v in st.items():
            setattr(response, k, v)
        response.status = ('stale' if st['stale'] else 'off the mat' if not st['on_mat'] else
                           'reached' if st['reached'] else 'moving' if st['active'] else 'idle')
        return response

    # ---- ticks
    def _on_timer(self) -> None:
        if time.monotonic() - self.last_tick >= 0.8 / self.controller.settings.rate_hz:
            self._tick()

    def _tick(self) -> None:
        self.last_tick = time.monotonic()
        self.fresh.clear()
        now = self.get_clock().now()
        stamp = now.to_msg()
        s = self.controller.settings
        now_s = stamp_seconds(now.nanoseconds)
        decisions = self.controller.step(now_s)
        for cmd in decisions:          # wheel commands first: they are what the latency budget is about
            if cmd.motor is not None:
                m = MotorCommand(left=cmd.motor[0], right=cmd.motor[1], duration_ms=cmd.motor[2])
                m.header.stamp = stamp     # the driver runs it until stamp + duration at the latest
                self.cmd_pubs[cmd.cube].publish(m)
        self._report_liveness(decisions, now_s)
        for cmd in decisions:
            r = NavResult(cube=cmd.cube, goal_id=cmd.goal_id, active=cmd.active, waypoint_x=cmd.waypoint[0],
                          waypoint_y=cmd.waypoint[1], speed_limit=cmd.speed_limit,
                          speed_ratio=cmd.speed_ratio, collision=cmd.collision, reached=cmd.reached,
                          mode=s.mode, planner=s.planner)
            r.header.stamp = stamp
            r.header.frame_id = FRAME_ID
            r.tick = self.ticks
            r.state_stamp.sec, r.state_stamp.nanosec = divmod(cmd.state_stamp_ns, 1_000_000_000)
            if cmd.state is None:
                r.state_x = r.state_y = r.state_theta = math.nan
            else:
                r.state_x, r.state_y, r.state_theta, r.state_on_mat, r.state_link_state = cmd.state
            g = cmd.goal
            if g is None:
                r.goal_x = r.goal_y = math.nan
                r.direction = STOP
            else:
                r.goal_x, r.goal_y, r.direction = g.x, g.y, g.direction
                r.max_speed, r.tolerance = g.max_speed, g.tolerance
            self.result_pubs[cmd.cube].publish(r)
        self.goals.after_tick(decisions, stamp)
        if self.tf is not None:
            c = self.controller
            self.tf.publish((self.frames.child(cube), *c.pose[i], int(c.stamp_ns[i]))
                            for i, cube in enumerate(s.cubes) if c.stamp_ns[i] > 0)
        self.ticks += 1
        if self.ticks % self.markers_every == 0 and self.marker_pub.get_subscription_count() > 0:
            self.marker_pub.publish(navigator_markers(self.controller, stamp))


    def _report_liveness(self, decisions, now_s: float) -> None:
        """Say once when a cube goes stale (its driver died or hangs, or reports the link down) and once when it
        comes back; a cube that was never live says nothing."""
        c = self.controller
        for cmd in decisions:
            if not cmd.stale:
                if cmd.cube in self.stale:
                    self.stale.discard(cmd.cube)
                    self.get_logger().info(f'{cmd.cube} is back: its states arrive again')
                self.was_live.add(cmd.cube)
            elif cmd.cube in self.was_live and cmd.cube not in self.stale:
                self.stale.add(cmd.cube)
                age = now_s - stamp_seconds(cmd.state_stamp_ns)
                why = ('its driver reports the link down' if not c.link_ok[c.index[cmd.cube]] else
                       f'no state for {age:.1f} s (stale_timeout_s {c.settings.stale_timeout_s:g})')
                self.get_logger().warning(f'{cmd.cube} went stale: {why}; it is stopped and kept as an obstacle')

    # ---- shutdown
    def destroy_node(self) -> None:
        """Stop ticking and tell every cube to stop before the node goes: a navigator that quits leaves no
        cube running out its last command."""
        self.timer.cancel()
        stop_ms = int(self.controller.settings.stop_duration_ms)
        for publisher in self.cmd_pubs.values():
            publisher.publish(MotorCommand(left=0, right=0, duration_ms=stop_ms))
        # the writers stay while the drivers take the stops: destroyed at once, a stop still on its way was lost
        # and the cube ran out its last command (a navigator killed with its launch, the drivers living on)
        deadline = time.monotonic() + STOP_FLUSH_S
        for publisher in self.cmd_pubs.values():
            publisher.wait_for_all_acked(Duration(seconds=max(0.0, deadline - time.monotonic())))
        self.goals.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """`ros2 run toio_navigator navigator [--ros-args ...]`. Exit 2 on bad parameters."""
    return run_node('navigator', NavigatorNode, errors=(ValueError,), args=args)


if __name__ == '__main__':
    sys.exit(main())
