"""The navigate_to_pose action and goal_pose against the navigator alone, on the SingleThreadedExecutor
(TOIO_NAV_EXECUTOR=single; test_goals_with_sim_bringup.py covers the default EventsExecutor with simulated cubes).

This test publishes the cube states the navigator reads (a timer, 20 Hz, from poses the test sets), so every
outcome follows from known poses: reached, feedback with distance and time, cancel (and the stop it sends),
pre-emption by every other goal interface, refusals with their reasons, and the failures of a goal whose cube
goes stale, leaves the mat or makes no progress.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
msgs = pytest.importorskip('toio_navigator.msg')
action = pytest.importorskip('toio_navigator.action')

from action_msgs.msg import GoalStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402

from conftest import next_domain_id, ros_env  # noqa: E402
from support.goal_probe import cube_state, start_navigator  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.srv import SetGoal  # noqa: E402

NavigateToPose = action.NavigateToPose
R = NavigateToPose.Result
CUBES = ['cube1', 'cube2', 'cube3']
FAIL_AFTER_S, BLOCKED_AFTER_S = 1.5, 3.0


class Navigator:
    """The navigator process, a probe, the cube states it publishes and an action client per cube."""

    def __init__(self, tmp_path: Path) -> None:
        domain = next_domain_id()
        env = ros_env(domain)
        env['TOIO_NAV_EXECUTOR'] = 'single'
        self.probe = start_navigator(tmp_path, env, CUBES, f'    goal_fail_after_s: {FAIL_AFTER_S}\n'
                                                          f'    goal_blocked_after_s: {BLOCKED_AFTER_S}\n')
        node = self.probe.node
        self.GoalStatus = GoalStatus
        self.poses: dict[str, tuple | None] = {c: (100.0, 100.0 + 100.0 * i, 0.0) for i, c in enumerate(CUBES)}
        self.on_mat = {c: True for c in CUBES}
        self.motors: dict[str, list] = {c: [] for c in CUBES}
        self.results: dict[str, object] = {}
        self.state_pubs = {c: node.create_publisher(msgs.CubeState, f'{c}/state', 10) for c in CUBES}
        self.goal_pubs = {c: node.create_publisher(msgs.NavGoal, f'{c}/goal', 10) for c in CUBES}
        self.pose_pubs = {c: node.create_publisher(PoseStamped, f'{c}/goal_pose', 10) for c in CUBES}
        self.clients = {c: ActionClient(node, NavigateToPose, f'{c}/navigate_to_pose') for c in CUBES}
        for c in CUBES:
            node.create_subscription(msgs.MotorCommand, f'{c}/motor_cmd', lambda m, c=c: self.motors[c].append(m), 10)
            node.create_subscription(msgs.NavResult, f'{c}/nav_result',
                                     lambda m, c=c: self.results.__setitem__(c, m), 10)
        node.create_timer(0.05, self._feed)
        self.probe.spin_until(lambda: all(cl.server_is_ready() for cl in self.clients.values()) and
                              all(p.get_subscription_count() > 0 for p in self.pose_pubs.values()) and
                              all(c in self.results for c in CUBES), 60.0, 'the navigator')

    def _feed(self) -> None:
        stamp = self.probe.node.get_clock().now().to_msg()
        for cube, pose in self.poses.items():
            if pose is not None:
                self.state_pubs[cube].publish(cube_state(cube, *pose, stamp, on_mat=self.on_mat[cube]))

    def pose_msg(self, x: float, y: float, frame: str = 'mat'):
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y = units.mat_to_ros_xy(x, y)
        msg.pose.orientation.w = 1.0
        return msg

    def send(self, cube: str, x: float, y: float, frame: str = 'mat', tolerance_m: float = 0.0, feedback=None,
             accepted: bool = True):
        """The goal handle of an action goal to mat (x, y), accepted (or, with ``accepted`` False, rejected)."""
        goal = NavigateToPose.Goal(pose=self.pose_msg(x, y, frame), tolerance=tolerance_m)
        handle = self.probe.wait_future(self.clients[cube].send_goal_async(goal, feedback_callback=feedback),
                                        'the goal response')
        assert handle.accepted == accepted
        return handle

    def result(self, handle):
        return self.probe.wait_future(handle.get_result_async(), 'the action result')

    def close(self) -> None:
        self.probe.close()


@pytest.fixture(scope='module')
def nav(tmp_path_factory):
    n = Navigator(tmp_path_factory.mktemp('goal_action'))
    yield n
    n.close()


@pytest.fixture
def fresh(nav):
    """Every cube fed on the mat at its home pose, with no goal."""
    for i, c in enumerate(CUBES):
        nav.poses[c] = (100.0, 100.0 + 100.0 * i, 0.0)
        nav.on_mat[c] = True
        nav.goal_pubs[c].publish(msgs.NavGoal(cube=c, direction=msgs.NavGoal.STOP))
    nav.probe.spin_for(0.2)
    return nav


def test_feedback_then_reached(fresh):
    nav = fresh
    feedback = []
    handle = nav.send('cube1', 300.0, 100.0, feedback=lambda m: feedback.append(m.feedback))
    nav.probe.spin_until(lambda: len(feedback) >= 3, 30.0, 'feedback')
    fb = feedback[-1]
    assert fb.distance_remaining == pytest.approx(units.METRES_PER_UNIT * 200.0, rel=1e-3)
    eta = fb.estimated_time_remaining.sec + fb.estimated_time_remaining.nanosec * 1e-9
    assert eta > 0.5                                      # 200 units at most ~100 units/s (max_speed 50)
    assert fb.current_pose.header.frame_id == 'mat'
    assert (fb.current_pose.pose.position.x, fb.current_pose.pose.position.y) == \
        pytest.approx(units.mat_to_ros_xy(100.0, 100.0))
    assert any(m.left or m.right for m in nav.motors['cube1'])       # the navigator drives it
    nav.poses['cube1'] = (295.0, 100.0, 0.0)                           # it arrived
    res = nav.result(handle)
    assert res.status == nav.GoalStatus.STATUS_SUCCEEDED
    assert (res.result.outcome, res.result.reason) == (R.REACHED, '')
    assert res.result.distance_remaining == pytest.approx(units.METRES_PER_UNIT * 5.0, rel=1e-3)
    assert res.result.navigation_time.sec + res.result.navigation_time.nanosec > 0


def test_cancel_stops_the_cube(fresh):
    nav = fresh
    feedback = []
    handle = nav.send('cube2', 350.0, 200.0, feedback=lambda m: feedback.append(m))
    nav.probe.spin_until(lambda: feedback and any(m.left or m.right for m in nav.motors['cube2']), 30.0,
                         'driving commands')
    count = len(nav.motors['cube2'])       # before the cancel: its stop may come before the result does
    nav.probe.wait_future(handle.cancel_goal_async(), 'the cancel response')
    res = nav.result(handle)
    assert res.status == nav.GoalStatus.STATUS_CANCELED
    assert res.result.outcome == R.CANCELLED and res.result.reason == 'cancelled by the caller'
    nav.probe.spin_for(0.5)
    after = [(m.left, m.right) for m in nav.motors['cube2'][count:]]
    assert (0, 0) in after, 'no stop after the cancel'
    assert set(after[after.index((0, 0)):]) == {(0, 0)}, f'driven again after the stop: {after}'
    assert nav.results['cube2'].direction == msgs.NavGoal.STOP and not nav.results['cube2'].active


@pytest.mark.parametrize('how', ['goal topic', 'set_goal', 'goal_pose', 'action'])
def test_any_newer_goal_preempts_an_action_goal(fresh, how):
    nav = fresh
    handle = nav.send('cube3', 400.0, 300.0)
    nav.probe.spin_for(0.2)
    if how == 'goal topic':
        nav.goal_pubs['cube3'].publish(msgs.NavGoal(goal_id=7, cube='cube3', x=200.0, y=300.0))
        words = 'pre-empted by a newer goal from the goal topic'
    elif how == 'set_goal':
        client = nav.probe.node.create_client(SetGoal, 'navigator/set_goal')
        answer = nav.probe.wait_future(client.call_async(SetGoal.Request(goal=msgs.NavGoal(
            goal_id=8, cube='cube3', x=200.0, y=300.0))), 'set_goal')
        assert answer.accepted
        words = 'pre-empted by a newer goal from navigator/set_goal'
    elif how == 'goal_pose':
        nav.pose_pubs['cube3'].publish(nav.pose_msg(200.0, 300.0))
        words = 'pre-empted by a newer goal from goal_pose'
    else:
        second = nav.send('cube3', 200.0, 300.0)
        words = 'pre-empted by a newer goal from the action'
    res = nav.result(handle)
    assert res.status == nav.GoalStatus.STATUS_ABORTED
    assert (res.result.outcome, res.result.reason) == (R.PREEMPTED, words)
    nav.probe.spin_until(lambda: nav.results['cube3'].goal_x == pytest.approx(200.0), 10.0, 'the new goal')
    if how == 'action':
        nav.poses['cube3'] = (200.0, 300.0, 0.0)
        assert nav.result(second).result.outcome == R.REACHED


@pytest.mark.parametrize('x, y, frame, tolerance, words', [
    (600.0, 100.0, 'mat', 0.0, "position (0.818, -0.136) m in frame 'mat' is off the mat: x 0.061..0.620 m, "
                               'y -0.620..-0.061 m'),
    (200.0, 100.0, 'odom', 0.0, "frame 'odom' is not the frame of cube1/pose ('mat' or 'map')"),
    (math.nan, 100.0, 'mat', 0.0, 'position (nan, -0.1362530413625304) is not finite'),
    (200.0, 100.0, 'mat', math.nan, 'tolerance nan m is not a finite number >= 0'),
    (200.0, 100.0, 'mat', 0.001, 'tolerance 0.001 m is below 0.0109 m, the radius within which the cube stops'),
])
def test_goals_that_can_never_succeed_are_rejected_with_the_reason_in_metres(fresh, x, y, frame, tolerance, words):
    """Rejected by the action server itself (the client sees the goal rejected, no result), the reason in the
    navigator's log in the goal's frame and unit; the cube's goal is untouched."""
    nav = fresh
    before = nav.results['cube1'].goal_id
    nav.send('cube1', x, y, frame=frame, tolerance_m=tolerance, accepted=False)
    nav.probe.spin_until(lambda: f'cube1/navigate_to_pose: goal rejected: {words}' in nav.probe.log('navigator'),
                         10.0, 'the logged reason')
    nav.probe.spin_for(0.2)
    assert nav.results['cube1'].goal_id == before


def test_goal_pose_off_the_mat_is_refused_in_metres(fresh):
    nav = fresh
    nav.pose_pubs['cube1'].publish(nav.pose_msg(200.0, 10.0))
    nav.probe.spin_until(lambda: 'goal_pose for cube1 refused: position (0.273, -0.014) m in frame \'mat\' is off '
                                 'the mat' in nav.probe.log('navigator'), 10.0, 'the logged refusal')


def test_goals_in_the_map_frame_or_without_a_frame_are_in_the_mat(fresh):
    nav = fresh
    for frame in ('map', ''):
        handle = nav.send('cube1', 150.0, 100.0, frame=frame)
        nav.probe.spin_until(lambda: nav.results['cube1'].goal_x == pytest.approx(150.0), 10.0, 'the goal')
        nav.poses['cube1'] = (150.0, 100.0, 0.0)
        assert nav.result(handle).result.outcome == R.REACHED
        nav.poses['cube1'] = (100.0, 100.0, 0.0)


@pytest.mark.parametrize('trouble, outcome, words', [
    ('silent', R.STALE, 'no state from the cube for'),
    ('lifted', R.OFF_MAT, 'the cube is off the mat for'),
    ('stuck', R.BLOCKED, 'no progress towards the goal (200 units away) for'),
])
def test_a_goal_fails_when_its_cube_is_stale_off_the_mat_or_blocked(fresh, trouble, outcome, words):
    nav = fresh
    handle = nav.send('cube2', 300.0, 200.0)
    nav.probe.spin_for(0.2)
    if trouble == 'silent':
        nav.poses['cube2'] = None
    elif trouble == 'lifted':
        nav.on_mat['cube2'] = False
    res = nav.result(handle)
    assert res.status == nav.GoalStatus.STATUS_ABORTED
    assert res.result.outcome == outcome and res.result.reason.startswith(words)
    seconds = float(res.result.reason.rsplit(' for ', 1)[1].removesuffix(' s'))
    assert seconds >= (BLOCKED_AFTER_S if outcome == R.BLOCKED else FAIL_AFTER_S)
    nav.poses['cube2'] = (100.0, 200.0, 0.0)
    nav.on_mat['cube2'] = True
    # the failed goal is dropped: the cube does not resume it when it comes back
    nav.probe.spin_until(lambda: nav.results['cube2'].direction == msgs.NavGoal.STOP, 10.0, 'the stop')


def test_goal_pose_in_another_frame_is_refused_with_a_logged_reason(fresh):
    nav = fresh
    before = nav.results['cube1'].goal_id
    nav.pose_pubs['cube1'].publish(nav.pose_msg(200.0, 100.0, frame='odom'))
    nav.probe.spin_until(lambda: "goal_pose for cube1 refused: frame 'odom'" in nav.probe.log('navigator'), 10.0,
                         'the logged refusal')
    assert nav.results['cube1'].goal_id == before
    nav.pose_pubs['cube1'].publish(nav.pose_msg(200.0, 100.0))
    nav.probe.spin_until(lambda: nav.results['cube1'].goal_x == pytest.approx(200.0), 10.0, 'the goal_pose goal')
