"""The navigator node: every cube's state in, one swarm step per tick, waypoints and motor commands out.

Topics (names relative, each cube's in its namespace ``/<cube>``):
  in   ``<cube>/state`` CubeState, ``<cube>/goal`` NavGoal
  out  ``<cube>/nav_result`` NavResult, ``<cube>/motor_cmd`` MotorCommand, ``navigator/markers`` MarkerArray
Services: ``navigator/set_goal`` (SetGoal: accepted + reason), ``navigator/goal_status`` (GoalStatus).

This module only translates: ROS parameters <-> :class:`NavigatorSettings` and the core's parameter dataclasses,
messages <-> :class:`~toio_navigator.navigation.controller.SwarmController` calls (no rclpy there; its
NavigatorSettings and SwarmController are re-exported here for older imports). Each tick is
stamped once on the ROS clock; the controller steps at that stamp with the states' own header stamps, and every
NavResult carries the tick stamp, the stamp of the state used and the goal pursued, so a bag of the inputs and
NavResults replays the tick exactly (toio_navigator.bags.replay).
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import fields, replace

from toio_navigator.navigation.controller import (BODY_RADIUS, STOP, TOWARDS, NavigatorSettings,  # noqa: F401
                                                  SwarmController, stamp_seconds)
from toio_navigator.navigation.params import CubeHandleParams, NavigatorParams
from toio_navigator.units import FRAME_ID, METRES_PER_UNIT, MOTOR_MAX, mat_to_ros_xy, mat_to_ros_yaw, yaw_to_quaternion


# ------------------------------------------------------------------------------------------------ parameters

def _dataclass_params(prefix: str, obj) -> dict[str, object]:
    """{'<prefix>.<field>': value} for the scalar fields of a parameter dataclass."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (bool, int, float)):
            out[f'{prefix}.{f.name}'] = v
    return out


def reference_parameters(params: NavigatorParams, handle: CubeHandleParams) -> dict[str, object]:
    """Every tunable constant of the core as a ROS parameter name -> default."""
    out = {k: v for k, v in _dataclass_params('navigator', params).items()}
    out.update(_dataclass_params('avoid', params.avoid))
    out.update(_dataclass_params('boids', params.boids))
    out.update(_dataclass_params('fixes', params.fixes))
    out.update(_dataclass_params('handle', handle))
    return out


def _coerce(name: str, value, like):
    """``value`` as the type of ``like`` (bool, int or float), or ValueError naming the parameter."""
    try:
        if isinstance(like, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(value, (bool, str, list, tuple, bytes)) or value is None:
            raise TypeError
        if isinstance(like, int):
            if float(value) != int(value):
                raise TypeError
            return int(value)
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f'{name}: expected a {type(like).__name__}, got {value!r}') from None
    if not math.isfinite(value):
        raise ValueError(f'{name}: must be finite, got {value}')
    return value


def coerce_setting(name: str, value):
    """A NavigatorSettings field from a parameter value (ValueError naming the parameter if it cannot be)."""
    like = getattr(NavigatorSettings(), name)
    if name == 'cubes':
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'cubes: expected a list of names, got {value!r}')
        return tuple(value)
    if isinstance(like, tuple):
        if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
            raise ValueError(f'{name}: expected a list of numbers, got {value!r}')
        return tuple(_coerce(name, v, 0.0) for v in value)
    if isinstance(like, str):
        if not isinstance(value, str):
            raise ValueError(f'{name}: expected a string, got {value!r}')
        return value
    return _coerce(name, value, like)


def apply_reference_parameter(params: NavigatorParams, handle: CubeHandleParams, name: str, value):
    """(params, handle) with one ``<group>.<field>`` changed; ValueError for a bad value."""
    group, _, field_name = name.partition('.')
    current = reference_parameters(params, handle)
    if name not in current:
        raise ValueError(f'unknown parameter {name}')
    value = _coerce(name, value, current[name])
    if group == 'navigator':
        return replace(params, **{field_name: value}), handle
    if group == 'avoid':
        return replace(params, avoid=replace(params.avoid, **{field_name: value})), handle
    if group == 'boids':
        return replace(params, boids=replace(params.boids, **{field_name: value})), handle
    if group == 'fixes':
        return replace(params, fixes=replace(params.fixes, **{field_name: bool(value)})), handle
    if group == 'handle':
        if field_name in ('dead_zone', 'max_spd') and not 0 <= value <= MOTOR_MAX:
            raise ValueError(f'{name}: must be within 0..{MOTOR_MAX}, got {value}')
        return params, replace(handle, **{field_name: value})
    raise ValueError(f'unknown parameter {name}')


SETTING_PARAMETERS = ('cubes', 'rate_hz', 'mode', 'planner', 'stale_timeout_s', 'mat_rect', 'walls', 'border',
                      'max_speed', 'tolerance', 'handle_tolerance', 'rotate_time_ms', 'stop_duration_ms',
                      'command_duration_ms', 'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance',
                      'sidestep_time_s', 'border_stop', 'saturation')
RUNTIME_SETTINGS = ('mode', 'planner', 'stale_timeout_s', 'max_speed', 'tolerance', 'handle_tolerance',
                    'rotate_time_ms', 'stop_duration_ms', 'command_duration_ms', 'walls', 'border', 'rate_hz',
                    'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s',
                    'border_stop', 'saturation')


# ------------------------------------------------------------------------------------------------ the node

def _make_node_class():
    """The rclpy node class (built lazily so the controller above imports without ROS)."""
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from visualization_msgs.msg import Marker, MarkerArray

    from toio_navigator.msg import CubeState, MotorCommand, NavGoal, NavResult
    from toio_navigator.srv import GoalStatus, SetGoal

    class NavigatorNode(Node):
        def __init__(self, **kwargs) -> None:
            super().__init__('navigator', **kwargs)
            defaults = NavigatorSettings()
            dyn = ParameterDescriptor(dynamic_typing=True)   # 20 and 20.0 both work in YAML / ros2 param set
            self.declare_parameter('cubes', ['cube1'], ParameterDescriptor(description='cube names (namespaces)'))
            for name in SETTING_PARAMETERS[1:]:
                value = getattr(defaults, name)
                self.declare_parameter(name, [float(v) for v in value] if isinstance(value, tuple) else value, dyn)
            self.declare_parameter('markers_every', 2, dyn)
            self.declare_parameter('tick_on_fresh_states', True)
            params, handle = NavigatorParams(), CubeHandleParams()
            for name, value in reference_parameters(params, handle).items():
                self.declare_parameter(name, value, dyn)
            settings = self._settings_from_parameters()
            for name in reference_parameters(params, handle):
                params, handle = apply_reference_parameter(params, handle, name,
                                                           self.get_parameter(name).value)
            # the controller's own clock (goal status only) is the ROS clock of the tick stamps
            self.controller = SwarmController(settings, params, handle,     # ValueError on bad settings
                                              clock=lambda: stamp_seconds(self.get_clock().now().nanoseconds))
            self.markers_every = max(1, int(self.get_parameter('markers_every').value))
            self.tick_on_fresh = bool(self.get_parameter('tick_on_fresh_states').value)
            self.ticks = 0
            self.last_tick = -math.inf
            self.fresh = set()
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
            self.add_on_set_parameters_callback(self._on_set_parameters)
            self._msgs = (MotorCommand, NavResult, Marker, MarkerArray, SetParametersResult)
            self.get_logger().info(f'navigator: {len(settings.cubes)} cubes {list(settings.cubes)}, mode '
                                   f'{settings.mode}, planner {settings.planner}, {settings.rate_hz:g} Hz')

        # ---- parameters
        def _settings_from_parameters(self) -> NavigatorSettings:
            s = NavigatorSettings()
            for name in SETTING_PARAMETERS:
                setattr(s, name, coerce_setting(name, self.get_parameter(name).value))
            s.check()
            return s

        def _on_set_parameters(self, changes):
            result_cls = self._msgs[4]
            c = self.controller
            settings = replace(c.settings)
            params, handle = c.params, c.handle
            try:
                for p in changes:
                    if p.name in ('cubes', 'mat_rect'):
                        raise ValueError(f'{p.name} is fixed at start-up (restart the navigator to change it)')
                    if p.name in RUNTIME_SETTINGS:
                        setattr(settings, p.name, coerce_setting(p.name, p.value))
                    elif '.' in p.name and p.name.split('.')[0] in ('navigator', 'avoid', 'boids', 'fixes',
                                                                    'handle'):
                        params, handle = apply_reference_parameter(params, handle, p.name, p.value)
                    elif p.name in ('markers_every', 'tick_on_fresh_states'):
                        continue
                settings.check()
            except (ValueError, TypeError) as exc:
                self.get_logger().warning(f'parameter change rejected: {exc}')
                return result_cls(successful=False, reason=str(exc))
            old_rate = c.settings.rate_hz
            if settings.planner != c.settings.planner:
                c.set_planner(settings.planner)
            c.settings = settings
            c.walls = settings.wall_rows()
            c.params, c.handle = params, handle
            for p in changes:
                if p.name == 'markers_every':
                    self.markers_every = max(1, int(p.value))
                elif p.name == 'tick_on_fresh_states':
                    self.tick_on_fresh = bool(p.value)
            if settings.rate_hz != old_rate:
                self.timer.cancel()
                self.destroy_timer(self.timer)
                self.timer = self.create_timer(1.0 / settings.rate_hz, self._on_timer)
            self.get_logger().info('parameters changed: ' + ', '.join(f'{p.name}={p.value}' for p in changes))
            return result_cls(successful=True)

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

        def _apply_goal(self, cube: str, goal) -> str:
            reason = self.controller.set_goal(cube, goal.goal_id, goal.x, goal.y, goal.direction, goal.max_speed,
                                              goal.tolerance, msg_cube=goal.cube)
            if reason:
                self.get_logger().warning(f'goal {goal.goal_id} for {cube!r} rejected: {reason}')
            else:
                self.get_logger().info(f'goal {goal.goal_id} for {cube}: ' + (
                    'STOP' if goal.direction == STOP else
                    f'{"TOWARDS" if goal.direction == TOWARDS else "AWAY"} ({goal.x:.1f}, {goal.y:.1f})'))
            return reason

        def _on_goal(self, cube: str, msg) -> None:
            self._apply_goal(cube, msg)

        def _srv_set_goal(self, request, response):
            goal = request.goal
            reason = self._apply_goal(goal.cube, goal) if goal.cube else 'goal.cube is empty'
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
            MotorCommand, NavResult = self._msgs[0], self._msgs[1]
            self.last_tick = time.monotonic()
            self.fresh.clear()
            now = self.get_clock().now()
            stamp = now.to_msg()
            s = self.controller.settings
            decisions = self.controller.step(stamp_seconds(now.nanoseconds))
            for cmd in decisions:          # wheel commands first: they are what the latency budget is about
                if cmd.motor is not None:
                    self.cmd_pubs[cmd.cube].publish(MotorCommand(left=cmd.motor[0], right=cmd.motor[1],
                                                                 duration_ms=cmd.motor[2]))
            for cmd in decisions:
                r = NavResult(cube=cmd.cube, goal_id=cmd.goal_id, active=cmd.active, waypoint_x=cmd.waypoint[0],
                              waypoint_y=cmd.waypoint[1], speed_limit=cmd.speed_limit,
                              speed_ratio=cmd.speed_ratio, collision=cmd.collision, reached=cmd.reached,
                              mode=s.mode, planner=s.planner)
                r.header.stamp = stamp
                r.header.frame_id = FRAME_ID
                r.state_stamp.sec, r.state_stamp.nanosec = divmod(cmd.state_stamp_ns, 1_000_000_000)
                g = cmd.goal
                if g is None:
                    r.goal_x = r.goal_y = math.nan
                    r.direction = STOP
                else:
                    r.goal_x, r.goal_y, r.direction = g.x, g.y, g.direction
                    r.max_speed, r.tolerance = g.max_speed, g.tolerance
                self.result_pubs[cmd.cube].publish(r)
            self.ticks += 1
            if self.ticks % self.markers_every == 0 and self.marker_pub.get_subscription_count() > 0:
                self.marker_pub.publish(self._markers(stamp))

        def _markers(self, stamp):
            Marker, MarkerArray = self._msgs[2], self._msgs[3]
            c = self.controller
            arr = MarkerArray()
            live = c.live()

            def marker(ns, mid, mtype, rgba, scale=(0.01, 0.01, 0.01)):
                m = Marker(ns=ns, id=mid, type=mtype, action=Marker.ADD)
                m.header.stamp, m.header.frame_id = stamp, FRAME_ID
                m.color.r, m.color.g, m.color.b, m.color.a = rgba
                m.scale.x, m.scale.y, m.scale.z = scale
                m.pose.orientation.w = 1.0
                return m

            def point(x, y, z=0.0):
                from geometry_msgs.msg import Point
                rx, ry = mat_to_ros_xy(float(x), float(y))
                return Point(x=rx, y=ry, z=z)

            body = 2 * BODY_RADIUS * METRES_PER_UNIT
            margin = 2 * c.params.avoid.margin * METRES_PER_UNIT
            for i, cube in enumerate(c.settings.cubes):
                x, y, th = c.frozen[i] if c.frozen_valid[i] else c.pose[i]   # a silent cube: where we expect it
                if not math.isfinite(x):
                    continue
                g = c.goals[i]
                rgba = ((0.9, 0.1, 0.1, 1.0) if not live[i] or not c.on_mat[i] else
                        (1.0, 0.5, 0.0, 1.0) if c.last_collision[i] else
                        (0.1, 0.8, 0.2, 1.0) if g and g.reached else (0.2, 0.4, 1.0, 1.0))
                m = marker('cubes', i, Marker.CUBE, rgba, (body, body, body))
                m.pose.position = point(x, y, body / 2)
                qx, qy, qz, qw = yaw_to_quaternion(mat_to_ros_yaw(float(th)))
                m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = \
                    qx, qy, qz, qw
                arr.markers.append(m)
                t = marker('names', i, Marker.TEXT_VIEW_FACING, (1.0, 1.0, 1.0, 1.0), (0.0, 0.0, 0.015))
                t.pose.position = point(x, y, body * 1.8)
                t.text = cube
                arr.markers.append(t)
                m = marker('margins', i, Marker.CYLINDER, (rgba[0], rgba[1], rgba[2], 0.2), (margin, margin, 0.002))
                m.pose.position = point(x, y)
                arr.markers.append(m)
                wp = c.last_waypoints[i] if i < len(c.last_waypoints) else (math.nan, math.nan)
                m = marker('waypoints', i, Marker.ARROW, (1.0, 1.0, 0.0, 0.9), (0.003, 0.006, 0.006))
                if g is not None and math.isfinite(wp[0]):
                    m.points = [point(x, y, 0.01), point(wp[0], wp[1], 0.01)]
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
                m = marker('goals', i, Marker.SPHERE, (1.0, 0.0, 1.0, 0.8), (0.012, 0.012, 0.012))
                if g is not None:
                    m.pose.position = point(g.x, g.y, 0.006)
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
                m = marker('scan_rays', i, Marker.LINE_LIST, (0.6, 0.6, 0.6, 0.5), (0.001, 0.0, 0.0))
                if c.last_rays is not None and g is not None:
                    rads, dists = c.last_rays
                    for a, d in zip(rads[i], dists[i]):
                        d = min(abs(float(d)), c.params.avoid.range)
                        m.points += [point(x, y, 0.004), point(x + d * math.cos(a), y + d * math.sin(a), 0.004)]
                else:
                    m.action = Marker.DELETE
                arr.markers.append(m)
            m = marker('walls', 0, Marker.LINE_LIST, (0.8, 0.2, 0.2, 0.8), (0.004, 0.0, 0.0))
            for x1, y1, x2, y2, _w in c.walls:
                m.points += [point(x1, y1, 0.002), point(x2, y2, 0.002)]
            if not m.points:
                m.action = Marker.DELETE
            arr.markers.append(m)
            x0, y0, x1, y1 = c.settings.mat_rect
            m = marker('mat', 0, Marker.LINE_STRIP, (0.9, 0.9, 0.9, 0.6), (0.002, 0.0, 0.0))
            m.points = [point(x0, y0), point(x1, y0), point(x1, y1), point(x0, y1), point(x0, y0)]
            arr.markers.append(m)
            return arr

    return NavigatorNode


_NODE_CLASS = None


def NavigatorNode(**kwargs):
    """Create the navigator node (rclpy must be initialised). Raises ValueError for bad parameters."""
    global _NODE_CLASS
    if _NODE_CLASS is None:
        _NODE_CLASS = _make_node_class()
    return _NODE_CLASS(**kwargs)


def _executor():
    """rclpy's EventsExecutor where it exists (Jazzy: rclpy.experimental): its dispatch is much cheaper than the
    SingleThreadedExecutor's wait-set rebuild, which dominates the state -> command path at 10 cubes.
    TOIO_NAV_EXECUTOR=single selects the SingleThreadedExecutor."""
    import os

    from rclpy.executors import SingleThreadedExecutor
    if os.environ.get('TOIO_NAV_EXECUTOR', 'events') != 'single':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
    return SingleThreadedExecutor()


def main(args: list[str] | None = None) -> int:
    """`ros2 run toio_navigator navigator [--ros-args ...]`. Exit 2 on bad parameters."""
    from toio_navigator.nodes.spin import run_node

    return run_node('navigator', NavigatorNode, errors=(ValueError,), args=args, executor=_executor,
                    error_prefix='bad parameters: ')


if __name__ == '__main__':
    sys.exit(main())
