"""goal_pose and the navigate_to_pose action with the simulated bringup (``toio-nav bringup --profile sim``: mat_sim,
a cube_driver per cube, the navigator on its default EventsExecutor), watched through mat_sim's ground truth.

* a PoseStamped on /cube1/goal_pose (metres, frame mat) brings cube1 there, within 15 mm;
* the action gives feedback while cube2 drives, then REACHED; a second goal is cancelled mid-way, and cube2
  stands still afterwards.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')
action = pytest.importorskip('toio_navigator.action')

from action_msgs.msg import GoalStatus  # noqa: E402
from geometry_msgs.msg import PoseArray, PoseStamped  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from conftest import navigator_setting, next_domain_id, ros_env  # noqa: E402
from support.goal_probe import navigator_used_fresh_state, start_bringup  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.msg import NavResult  # noqa: E402

NavigateToPose = action.NavigateToPose
CUBES = ['cube1', 'cube2']
START = {'cube1': (100.0, 100.0, 0.0), 'cube2': (100.0, 400.0, 0.0)}
ARRIVED_M = 0.015          # "arrives": within 15 mm of the goal


class Sim:
    def __init__(self, tmp_path: Path) -> None:
        env = ros_env(next_domain_id())
        env.pop('TOIO_NAV_EXECUTOR', None)                  # the navigator's default executor
        flat = ', '.join(repr(v) for c in CUBES for v in START[c])
        self.probe = start_bringup(tmp_path, env, 'sim', CUBES,
                                   f'/**:\n  ros__parameters:\n    cubes: [{", ".join(CUBES)}]\n'
                                   f'mat_sim:\n  ros__parameters:\n    initial_poses: [{flat}]\n')
        node = self.probe.node
        self.truth: dict[str, np.ndarray] = {}
        node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, qos_profile_sensor_data)
        self.goal_pose = node.create_publisher(PoseStamped, 'cube1/goal_pose', 10)
        self.client = ActionClient(node, NavigateToPose, 'cube2/navigate_to_pose')
        self.results: dict[str, NavResult] = {}
        for c in CUBES:
            node.create_subscription(NavResult, f'{c}/nav_result', lambda m, c=c: self.results.__setitem__(c, m), 10)
        # the bringup is ready once the navigator uses fresh states of both cubes (navigator_used_fresh_state)
        self.probe.spin_until(lambda: len(self.truth) == len(CUBES) and self.client.server_is_ready() and
                              self.goal_pose.get_subscription_count() > 0 and all(map(self._seen_live, CUBES)),
                              90.0, 'the bringup')

    def _seen_live(self, cube: str) -> bool:
        return navigator_used_fresh_state(self.results.get(cube), navigator_setting('stale_timeout_s'))

    def _on_truth(self, msg) -> None:
        for cube, p in zip(CUBES, msg.poses):
            self.truth[cube] = np.array([p.position.x, p.position.y])       # metres, frame mat

    def pose(self, x_m: float, y_m: float):
        msg = PoseStamped()
        msg.header.frame_id = 'mat'
        msg.header.stamp = self.probe.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = x_m, y_m
        msg.pose.orientation.w = 1.0
        return msg


@pytest.fixture(scope='module')
def sim(tmp_path_factory):
    s = Sim(tmp_path_factory.mktemp('goal_sim'))
    yield s
    s.probe.close()


def test_a_goal_pose_brings_cube1_within_15_mm(sim):
    target = np.array(units.mat_to_ros_xy(250.0, 150.0))
    sim.goal_pose.publish(sim.pose(*target))
    track: list[tuple[float, np.ndarray]] = []

    def settled_there() -> bool:
        # within 15 mm and still for a second: a cube can coast through the goal and come back
        now = time.monotonic()
        track.append((now, sim.truth['cube1'].copy()))
        recent = [p for t, p in track if now - t <= 1.0]
        return track[0][0] < now - 1.0 and np.hypot(*(recent[-1] - target)) < ARRIVED_M and \
            max(np.hypot(*(p - recent[-1])) for p in recent) < 0.001

    sim.probe.spin_until(settled_there, 60.0, 'cube1 settled at the goal_pose')
    sim.probe.spin_until(lambda: 'from goal_pose: reached' in sim.probe.log('navigator'), 10.0, 'the log line')


def test_the_action_reports_feedback_and_reaches_then_a_cancel_stops_the_cube(sim):
    feedback = []
    goal = NavigateToPose.Goal(pose=sim.pose(*units.mat_to_ros_xy(300.0, 400.0)))
    handle = sim.probe.wait_future(sim.client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(
        m.feedback)), 'the goal response')
    assert handle.accepted
    result = sim.probe.wait_future(handle.get_result_async(), 'the result', timeout=60.0)
    assert result.status == GoalStatus.STATUS_SUCCEEDED and result.result.outcome == NavigateToPose.Result.REACHED
    assert len(feedback) >= 5
    distances = [f.distance_remaining for f in feedback]
    assert distances[0] > 0.2 and distances[-1] < distances[0] - 0.15          # it came ~200 units closer
    assert all(f.estimated_time_remaining.sec + f.estimated_time_remaining.nanosec > 0 for f in feedback[:3])
    assert result.result.distance_remaining <= units.METRES_PER_UNIT * 10.0 * (1 + 1e-6)   # goal_pose_tolerance

    # a long way back: cancel once it has moved, then it stays still
    start = sim.truth['cube2'].copy()
    goal = NavigateToPose.Goal(pose=sim.pose(*units.mat_to_ros_xy(100.0, 400.0)))
    handle = sim.probe.wait_future(sim.client.send_goal_async(goal), 'the goal response')
    sim.probe.spin_until(lambda: np.hypot(*(sim.truth['cube2'] - start)) > 0.02, 30.0, 'cube2 driving')
    sim.probe.wait_future(handle.cancel_goal_async(), 'the cancel response')
    result = sim.probe.wait_future(handle.get_result_async(), 'the result')
    assert result.status == GoalStatus.STATUS_CANCELED
    assert result.result.outcome == NavigateToPose.Result.CANCELLED
    sim.probe.spin_for(0.5)                                  # the stop and the cube's last command have landed
    stopped = sim.truth['cube2'].copy()
    sim.probe.spin_for(1.0)
    assert np.hypot(*(sim.truth['cube2'] - stopped)) < 0.002, 'cube2 kept moving after the cancel'
    assert np.hypot(*(stopped - np.array(units.mat_to_ros_xy(100.0, 400.0)))) > 0.05, 'not stopped mid-way'
