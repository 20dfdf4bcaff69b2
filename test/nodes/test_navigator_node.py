"""The navigator: goals in, one swarm step per tick, wheel commands out; stale / off-mat cubes stop; bad goals
are refused with a reason. First the ROS-free controller in a small closed loop, then the node over rclpy."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from toio_navigator.control.controller import SwarmController
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.settings.navigator import coerce_setting
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT as K
from toio_navigator.units import WHEEL_TRACK_UNITS as TRACK

rclpy = pytest.importorskip('rclpy')
msgs = pytest.importorskip('toio_navigator.msg')
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from toio_navigator.nodes.navigator import NavigatorNode  # noqa: E402
from toio_navigator.srv import GoalStatus, SetGoal  # noqa: E402

BORDER = (20.0, 40.0, 460.0, 40.0, 460.0)
CONTACT = 0.0318 / 2 * 733.93 * 2           # two body radii, mat units


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Unicycles:
    """Cubes that obey wheel commands after a 130 ms delay and stop when the command's duration runs out."""

    def __init__(self, poses) -> None:
        self.pose = np.array(poses, dtype=float)
        n = len(self.pose)
        self.cmd, self.until, self.queue = np.zeros((n, 2)), np.zeros(n), []

    def command(self, now: float, i: int, motor) -> None:
        self.queue.append((now + 0.13, i, motor))

    def advance(self, clock: Clock, seconds: float, frozen=()) -> None:
        for _ in range(int(round(seconds / 0.01))):
            for item in [q for q in self.queue if q[0] <= clock.t]:
                self.queue.remove(item)
                _, i, (left, right, ms) = item
                self.cmd[i], self.until[i] = (left, right), clock.t + ms / 1000
            on = (clock.t < self.until) & ~np.isin(np.arange(len(self.pose)), list(frozen))
            vl, vr = np.where(on, self.cmd[:, 0], 0) * K, np.where(on, self.cmd[:, 1], 0) * K
            self.pose[:, 2] += (vl - vr) / TRACK * 0.01
            v = (vl + vr) / 2
            self.pose[:, 0] += np.cos(self.pose[:, 2]) * v * 0.01
            self.pose[:, 1] += np.sin(self.pose[:, 2]) * v * 0.01
            clock.t += 0.01

    def min_distance(self) -> float:
        d = np.hypot(*(self.pose[:, None, :2] - self.pose[None, :, :2]).transpose(2, 0, 1))
        np.fill_diagonal(d, np.inf)
        return float(d.min())


def run_loop(ctrl: SwarmController, cubes: Unicycles, clock: Clock, seconds: float, silent=(), frozen=(),
             goals_at=None):
    """Tick at 20 Hz: states in (except from ``silent`` cubes), commands out; returns the last commands and the
    smallest centre distance seen."""
    names = ctrl.settings.cubes
    closest = math.inf
    out = []
    for k in range(int(seconds * 20)):
        if goals_at:
            for i, (t, gx, gy) in list(goals_at.items()):
                if clock.t >= t:
                    assert ctrl.set_goal(names[i], i + 1, gx, gy, 0, 0, 0) == ''
                    del goals_at[i]
        for i, name in enumerate(names):
            if i not in silent:
                ctrl.update_state(name, *cubes.pose[i], True, 2)
        out = ctrl.step()
        for i, c in enumerate(out):
            if c.motor is not None:
                cubes.command(clock.t, i, c.motor)
        cubes.advance(clock, 0.05, frozen)
        closest = min(closest, cubes.min_distance())
        if not goals_at and all(c.reached or not c.active for c in out) and any(c.reached for c in out):
            break
    return out, closest


def controller(names, clock, **kw) -> SwarmController:
    return SwarmController(NavigatorSettings(cubes=tuple(names), border=BORDER, **kw), clock=clock)


def test_one_cube_reaches_its_goal_and_then_holds_with_stop_commands():
    clock = Clock()
    ctrl = controller(['cube1'], clock)
    cubes = Unicycles([(100, 70, math.pi / 2)])
    ctrl.update_state('cube1', *cubes.pose[0], True, 2)
    assert ctrl.set_goal('cube1', 7, 250, 250, 0, 0, 0) == ''
    out, _ = run_loop(ctrl, cubes, clock, 6.0)
    assert out[0].reached and out[0].goal_id == 7
    assert math.hypot(cubes.pose[0, 0] - 250, cubes.pose[0, 1] - 250) <= 20
    assert ctrl.step()[0].motor[:2] == (0, 0)           # holding: a short stop, not silence
    assert ctrl.status('cube1')['reached']


def test_eight_cubes_swap_through_the_centre_without_contact():
    clock = Clock()
    columns = (100, 200, 300, 400)
    homes = [(x, 70, math.pi / 2) for x in columns] + [(x, 430, -math.pi / 2) for x in columns]
    names = [f'cube{i + 1}' for i in range(8)]
    ctrl = controller(names, clock)
    cubes = Unicycles(homes)
    goals = {i: (0.6 * i, 500 - x, 500 - y) for i, (x, y, _) in enumerate(homes)}
    out, closest = run_loop(ctrl, cubes, clock, 20.0, goals_at=goals)
    assert [c.reached for c in out] == [True] * 8
    assert closest > CONTACT


def test_a_silent_cube_is_stopped_and_avoided_by_the_others():
    clock = Clock()
    # cube2 sits on cube1's straight path and goes silent (driver dead); cube1 must go round it
    ctrl = controller(['cube1', 'cube2'], clock)
    cubes = Unicycles([(100, 250, 0.0), (250, 250, 0.0)])
    ctrl.update_state('cube2', *cubes.pose[1], True, 2)
    ctrl.set_goal('cube2', 2, 400, 400, 0, 0, 0)
    ctrl.set_goal('cube1', 1, 400, 250, 0, 0, 0)
    clock.t = 1.0                                         # cube2's last state is now 1 s old: stale
    out, closest = run_loop(ctrl, cubes, clock, 10.0, silent={1}, frozen={1})
    assert out[1].stale and out[1].motor == (0, 0, 100)
    assert not out[1].active
    assert out[0].reached
    assert closest > CONTACT


def test_a_cube_off_the_mat_is_stopped():
    clock = Clock()
    ctrl = controller(['cube1'], clock)
    ctrl.update_state('cube1', 100, 100, 0, True, 2)
    ctrl.set_goal('cube1', 1, 300, 300, 0, 0, 0)
    assert ctrl.step()[0].motor[:2] != (0, 0)
    ctrl.update_state('cube1', 100, 100, 0, False, 2)     # "position ID missed": lifted
    c = ctrl.step()[0]
    assert c.motor[:2] == (0, 0) and not c.on_mat and not c.active
    ctrl.update_state('cube1', 30, 100, 0, True, 2)       # reads a position outside the mat rectangle
    assert ctrl.step()[0].motor[:2] == (0, 0)


@pytest.mark.parametrize('goal, reason', [
    (dict(cube='cube9', x=200, y=200), 'unknown cube'),
    (dict(x=math.nan, y=200), 'not finite'),
    (dict(x=200, y=math.inf), 'not finite'),
    (dict(x=600, y=200), 'off the mat'),
    (dict(x=200, y=10), 'off the mat'),
    (dict(x=200, y=200, direction=7), 'direction'),
    (dict(x=200, y=200, max_speed=200), 'max_speed'),
    (dict(x=200, y=200, tolerance=-1), 'tolerance'),
    (dict(x=200, y=200, msg_cube='cube2'), 'does not match'),
])
def test_malformed_goals_are_rejected_with_a_reason_and_change_nothing(goal, reason):
    clock = Clock()
    ctrl = controller(['cube1', 'cube2'], clock)
    ctrl.update_state('cube1', 100, 100, 0, True, 2)
    assert ctrl.set_goal('cube1', 1, 300, 300, 0, 0, 0) == ''
    before = ctrl.goals[0]
    args = dict(cube='cube1', goal_id=9, x=0, y=0, direction=0, max_speed=0, tolerance=0, msg_cube='')
    args.update(goal)
    got = ctrl.set_goal(**args)
    assert reason in got
    assert ctrl.goals[0] is before and ctrl.goals[1] is None
    assert ctrl.status('cube1')['goal_id'] == 1


def test_stop_goal_cancels_and_stops():
    clock = Clock()
    ctrl = controller(['cube1'], clock)
    ctrl.update_state('cube1', 100, 100, 0, True, 2)
    ctrl.set_goal('cube1', 1, 300, 300, 0, 0, 0)
    ctrl.step()
    assert ctrl.set_goal('cube1', 2, math.nan, math.nan, 2, 0, 0) == ''   # STOP needs no position
    c = ctrl.step()[0]
    assert c.motor == (0, 0, 100) and not c.active


@pytest.mark.parametrize('settings, message', [
    (dict(cubes=()), 'empty'),
    (dict(cubes=('a', 'a')), 'duplicate'),
    (dict(cubes=('a b',)), 'valid ROS name'),
    (dict(cubes=('a',), mode='FAST'), 'mode'),
    (dict(cubes=('a',), planner='astar'), 'planner'),
    (dict(cubes=('a',), rate_hz=0.0), 'rate_hz'),
    (dict(cubes=('a',), walls=(1.0, 2.0, 3.0)), 'walls'),
    (dict(cubes=('a',), mat_rect=(10.0, 10.0, 5.0, 50.0)), 'mat_rect'),
])
def test_bad_settings_name_the_problem(settings, message):
    with pytest.raises(ValueError, match=message):
        SwarmController(NavigatorSettings(**settings))


def test_parameter_values_are_coerced_or_refused_by_name():
    assert coerce_setting('rate_hz', 10) == 10.0
    assert coerce_setting('walls', [1, 2, 3, 4, 5]) == (1.0, 2.0, 3.0, 4.0, 5.0)
    with pytest.raises(ValueError, match='rate_hz'):
        coerce_setting('rate_hz', 'fast')
    with pytest.raises(ValueError, match='cubes'):
        coerce_setting('cubes', [1, 2])


# ------------------------------------------------------------------------------------------------ the node

@pytest.fixture
def ros(ros_domain, monkeypatch):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', 'cubes:=[cube1, cube2]', '-p', 'rate_hz:=50.0',
                                      '-p', 'stale_timeout_s:=1.0'])
    executor = SingleThreadedExecutor(context=context)
    yield context, executor
    executor.shutdown()
    rclpy.shutdown(context=context)


def spin_until(executor, condition, timeout=10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.02)
        if condition():
            return True
    return False


def test_node_turns_states_and_goals_into_motor_commands_and_results(ros):
    context, executor = ros
    nav = NavigatorNode(context=context)
    probe = Node('probe', context=context)
    executor.add_node(nav)
    executor.add_node(probe)
    cmds, results, markers = [], [], []
    probe.create_subscription(msgs.MotorCommand, 'cube1/motor_cmd', cmds.append, 10)
    probe.create_subscription(msgs.NavResult, 'cube1/nav_result', results.append, 10)
    probe.create_subscription(MarkerArray, 'navigator/markers', markers.append, 10)
    states = {c: probe.create_publisher(msgs.CubeState, f'{c}/state', 10) for c in ('cube1', 'cube2')}
    goal_pub = probe.create_publisher(msgs.NavGoal, 'cube1/goal', 10)
    set_goal = probe.create_client(SetGoal, 'navigator/set_goal')
    status = probe.create_client(GoalStatus, 'navigator/goal_status')

    stamps = set()

    def publish_states():
        for c, (x, y) in {'cube1': (100.0, 100.0), 'cube2': (400.0, 400.0)}.items():
            m = msgs.CubeState(cube=c, x=x, y=y, theta=0.0, on_mat=True, link_state=msgs.CubeState.LINK_CONNECTED)
            m.header.stamp = probe.get_clock().now().to_msg()
            stamps.add((c, m.header.stamp.sec, m.header.stamp.nanosec))
            states[c].publish(m)

    assert spin_until(executor, lambda: goal_pub.get_subscription_count() > 0 and set_goal.service_is_ready())
    publish_states()
    goal_pub.publish(msgs.NavGoal(goal_id=5, cube='cube1', x=300.0, y=100.0))
    assert spin_until(executor, lambda: (publish_states() or True) and any(r.goal_id == 5 for r in results)
                      and len(cmds) > 0 and any(any(m.ns == 'cubes' for m in a.markers) for a in markers))
    assert cmds[-1].left > 0 and cmds[-1].right > 0 and cmds[-1].duration_ms > 0   # straight ahead, east
    r = [r for r in results if r.goal_id == 5][-1]
    assert r.active and r.mode == 'AVOID' and r.planner == 'hlavoid' and r.header.frame_id == 'mat'
    # what a replay needs: the stamp of the state the tick used (one we sent) and the goal pursued
    assert ('cube1', r.state_stamp.sec, r.state_stamp.nanosec) in stamps
    assert (r.goal_x, r.goal_y, r.direction, r.max_speed, r.tolerance) == (300.0, 100.0, 0, 0.0, 0.0)
    drawn = [a for a in markers if any(m.ns == 'cubes' for m in a.markers)][-1]   # (earlier: before any state)
    assert {m.ns for m in drawn.markers} >= {'cubes', 'goals', 'waypoints', 'walls', 'margins'}

    def call(client, request):
        future = client.call_async(request)
        assert spin_until(executor, future.done)
        return future.result()

    bad = call(set_goal, SetGoal.Request(goal=msgs.NavGoal(goal_id=6, cube='cube1', x=math.nan, y=1.0)))
    assert not bad.accepted and 'not finite' in bad.reason
    unknown = call(set_goal, SetGoal.Request(goal=msgs.NavGoal(goal_id=6, cube='cube7', x=100.0, y=100.0)))
    assert not unknown.accepted and 'unknown cube' in unknown.reason
    tight = call(set_goal, SetGoal.Request(goal=msgs.NavGoal(goal_id=6, cube='cube1', x=200.0, y=100.0,
                                                             tolerance=3.0)))
    assert not tight.accepted and 'below the handle tolerance' in tight.reason
    st = call(status, GoalStatus.Request(cube='cube1'))
    assert st.known and st.goal_id == 5 and st.active and not st.reached
    ok = call(set_goal, SetGoal.Request(goal=msgs.NavGoal(goal_id=8, cube='cube2', x=200.0, y=400.0)))
    assert ok.accepted and ok.reason == ''
    assert call(status, GoalStatus.Request(cube='cube2')).goal_id == 8

    # run-time parameters, as `ros2 param set` would send them
    assert nav.set_parameters([Parameter('mode', value='BOIDS_AVOID')])[0].successful
    assert nav.controller.settings.mode == 'BOIDS_AVOID'
    refused = nav.set_parameters([Parameter('mode', value='FAST')])[0]
    assert not refused.successful and 'mode' in refused.reason
    assert nav.set_parameters([Parameter('planner', value='orca')])[0].successful
    assert nav.controller.planner is not None
    assert nav.set_parameters([Parameter('avoid.margin', value=30.0)])[0].successful
    assert nav.controller.params.avoid.margin == 30.0
    assert not nav.set_parameters([Parameter('avoid.margin', value='wide')])[0].successful
    assert not nav.set_parameters([Parameter('cubes', value=['x'])])[0].successful
    results.clear()
    assert spin_until(executor, lambda: (publish_states() or True) and any(r.planner == 'orca' for r in results))
    nav.destroy_node()
    probe.destroy_node()


def test_node_refuses_to_start_with_bad_parameters(ros_domain, monkeypatch):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', 'cubes:=[cube1]', '-p', 'mode:=SIDEWAYS'])
    try:
        with pytest.raises(ValueError, match='mode'):
            NavigatorNode(context=context)
    finally:
        rclpy.shutdown(context=context)


def test_a_cube_that_goes_silent_while_driving_is_expected_where_its_last_command_took_it():
    clock = Clock()
    ctrl = controller(['cube1', 'cube2'], clock)
    ctrl.update_state('cube1', 100, 250, 0.0, True, 2)
    ctrl.update_state('cube2', 400, 400, 0.0, True, 2)
    ctrl.set_goal('cube1', 1, 400, 250, 0, 0, 0)
    for _ in range(3):                                   # driving east with 250 ms commands
        first = ctrl.step()[0]
        clock.t += 0.05
        ctrl.update_state('cube1', 100, 250, 0.0, True, 2)
        ctrl.update_state('cube2', 400, 400, 0.0, True, 2)
    assert first.motor[0] > 0 and first.motor[1] > 0
    clock.t += 1.0                                       # cube1 falls silent
    ctrl.update_state('cube2', 400, 400, 0.0, True, 2)
    ctrl.step()
    x, y, _ = ctrl.frozen[0]
    ahead = x + ctrl.frozen_extra[0]
    assert 102 < x < 150 and abs(y - 250) < 5              # between its last reading and where it would stop,
    assert 105 < ahead < 200                               # covering both


def test_destroy_node_takes_the_whole_navigator_off_the_graph(ros):
    """destroy_node must leave nothing of the navigator behind: its action servers (Node.destroy_node does not
    destroy those) held its rcl node, so the node and its DDS participant outlived it, until the interpreter's
    final garbage collection, after rclpy had been shut down."""
    context, _executor = ros
    nav = NavigatorNode(context=context)
    probe = Node('probe', context=context)
    try:
        assert 'navigator' in [name for name, _ns in probe.get_node_names_and_namespaces()]
        nav.destroy_node()
        assert 'navigator' not in [name for name, _ns in probe.get_node_names_and_namespaces()]
        assert not [topic for topic, _types in probe.get_topic_names_and_types() if 'navigate_to_pose' in topic]
    finally:
        probe.destroy_node()
