"""The whole simulated system over real DDS, one process per node (mat_sim, a cube_driver per cube, navigator),
driven from this test through the navigator's goal interface and watched through mat_sim's ground truth.

* 8 cubes swap places through the centre, with the demo's planner and with `coordinated`: every goal reached, no
  two cubes ever touch (4 cubes: the demo test, test_demo.py);
* malformed goals (NaN, off the mat, unknown cube) on the topic and the service are refused with a logged
  reason and change nothing;
* killing one driver process stops that cube; the navigator keeps it as an obstacle that the others avoid,
  and they still arrive.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
msgs = pytest.importorskip('toio_navigator.msg')

from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from toio_navigator.demo_cli import BODY_RADIUS, Tracker, swap_goals  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402
from toio_navigator.launching.supervisor import Children  # noqa: E402
from toio_navigator.nodes.service_call import call_until_answered  # noqa: E402
from toio_navigator.srv import GoalStatus, SetGoal  # noqa: E402
from toio_navigator.units import ros_to_mat_xy  # noqa: E402

CONTACT = 2 * BODY_RADIUS
MAT = (45.0, 45.0, 455.0, 455.0)


def write_config(path: Path, poses, planner: str | None = None) -> list[Path]:
    """navigator.yaml of the repo plus a YAML with these cubes and start poses (x, y, heading rad), and the
    navigator's planner if one is given (else navigator.yaml's)."""
    names = [f'cube{i + 1}' for i in range(len(poses))]
    flat = ', '.join(f'{float(v)!r}' for pose in poses for v in pose)
    path.write_text(f'/**:\n  ros__parameters:\n    cubes: [{", ".join(names)}]\n'
                    f"/**/cube_driver:\n  ros__parameters:\n    transport: sim\n    id_notify_interval_ms: 20\n"
                    f'mat_sim:\n  ros__parameters:\n    initial_poses: [{flat}]\n    ground_truth_rate_hz: 50.0\n'
                    + (f'navigator:\n  ros__parameters:\n    planner: {planner}\n' if planner else ''))
    return [profiles.config_dir() / 'navigator.yaml', path]


class System:
    """The bringup's processes plus a probe node in this process."""

    def __init__(self, tmp_path: Path, env: dict, poses, planner: str | None = None) -> None:
        self.names = [f'cube{i + 1}' for i in range(len(poses))]
        self.log_dir = tmp_path / 'logs'
        files = write_config(tmp_path / 'cubes.yaml', poses, planner)
        self.children = Children()
        self.children.start(profiles.plan('sim', self.names), files, env=env, log_dir=self.log_dir)
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('integration_probe', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.tracker = Tracker(len(poses))
        self.truth: np.ndarray | None = None
        self.states: dict = {}
        self.results: dict = {}
        self.t0 = time.monotonic()
        self.killed: set[str] = set()
        self.node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, qos_profile_sensor_data)
        self.goal_pubs = {}
        for c in self.names:
            self.node.create_subscription(msgs.CubeState, f'{c}/state',
                                          lambda m, c=c: self.states.__setitem__(c, m), qos_profile_sensor_data)
            self.node.create_subscription(msgs.NavResult, f'{c}/nav_result',
                                          lambda m, c=c: self.results.__setitem__(c, m), 10)
            self.goal_pubs[c] = self.node.create_publisher(msgs.NavGoal, f'{c}/goal', 10)
        self.set_goal_client = self.node.create_client(SetGoal, 'navigator/set_goal')
        self.status_client = self.node.create_client(GoalStatus, 'navigator/goal_status')
        self.SetGoal, self.GoalStatus = SetGoal, GoalStatus

    def _on_truth(self, msg) -> None:
        if len(msg.poses) == len(self.names):
            self.truth = np.array([ros_to_mat_xy(p.position.x, p.position.y) for p in msg.poses])
            self.tracker.add(time.monotonic() - self.t0, self.truth)

    def spin_until(self, condition, timeout: float, what: str, explain=lambda: '') -> None:
        """Spin until ``condition()``; on a timeout the message says what ``explain()`` returns then."""
        deadline = time.monotonic() + timeout
        while not condition():
            dead = [d for d in self.children.check() if d.split(' ')[0] not in self.killed]
            assert not dead, f'{dead} died while waiting for {what}; logs in {self.log_dir}'
            assert time.monotonic() < deadline, \
                f'timed out waiting for {what}; logs in {self.log_dir}{explain()}'
            self.executor.spin_once(timeout_sec=0.02)

    def not_arrived(self, goal_ids: dict[str, int]) -> str:
        """Where each cube that has not reached its goal stands, and what the navigator last said of it."""
        lines = []
        for i, c in enumerate(self.names):
            if c not in goal_ids or self.reached(c, goal_ids[c]):
                continue
            r = self.results.get(c)
            at = 'unknown' if self.truth is None else f'({self.truth[i, 0]:.0f}, {self.truth[i, 1]:.0f})'
            said = 'no result' if r is None else (
                f'goal {r.goal_id} ({r.goal_x:.0f}, {r.goal_y:.0f}) active={r.active} collision={r.collision} '
                f'waypoint ({r.waypoint_x:.0f}, {r.waypoint_y:.0f}) speed_limit={r.speed_limit:.0f} '
                f'link={r.state_link_state}')
            lines.append(f'\n  {c} at {at}: {said}')
        return ''.join(lines)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def wait_ready(self) -> None:
        self.spin_until(lambda: all(c in self.states and self.states[c].on_mat and self.states[c].link_state ==
                                    msgs.CubeState.LINK_CONNECTED for c in self.names)
                        and self.set_goal_client.service_is_ready() and self.truth is not None
                        and all(p.get_subscription_count() > 0 for p in self.goal_pubs.values()),
                        60.0, 'drivers, navigator and mat_sim')

    def call(self, client, request):
        """Its answer; made again when the answer is lost, as the demo does (goals and status are idempotent)."""
        return call_until_answered(client, request, lambda done, what: self.spin_until(done, 30.0, what),
                                   'a service', 10.0)

    def send_goal(self, cube: str, goal_id: int, x: float, y: float):
        return self.call(self.set_goal_client, self.SetGoal.Request(goal=msgs.NavGoal(
            goal_id=goal_id, cube=cube, x=float(x), y=float(y), direction=msgs.NavGoal.TOWARDS)))

    def status(self, cube: str):
        return self.call(self.status_client, self.GoalStatus.Request(cube=cube))

    def reached(self, cube: str, goal_id: int) -> bool:
        r = self.results.get(cube)
        return r is not None and r.goal_id == goal_id and r.reached

    def log(self, name: str) -> str:
        return (self.log_dir / f'{name}.log').read_text()

    def close(self) -> None:
        try:
            self.executor.shutdown()
            self.node.destroy_node()
            rclpy.try_shutdown(context=self.context)
        finally:
            self.children.stop()


@pytest.fixture
def system(tmp_path, child_env, ros_domain, monkeypatch):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    made = []

    def start(poses, planner: str | None = None) -> System:
        made.append(System(tmp_path, child_env, poses, planner))
        made[-1].wait_ready()
        return made[-1]

    yield start
    for s in made:
        s.close()


def run_swap(s: System, stagger: float = 0.6, timeout: float = 45.0) -> np.ndarray:
    starts = s.truth.copy()
    goals = swap_goals(starts, MAT)
    for i, c in enumerate(s.names):
        assert s.send_goal(c, 10 + i, *goals[i]).accepted
        s.spin_for(stagger)
    ids = {c: 10 + i for i, c in enumerate(s.names)}
    s.spin_until(lambda: all(s.reached(c, ids[c]) for c in s.names), timeout, 'every cube to arrive',
                 lambda: s.not_arrived(ids))
    return goals


HOMES_8 = [(x, 70.0, math.pi / 2) for x in (100.0, 200.0, 300.0, 400.0)] + \
          [(x, 430.0, -math.pi / 2) for x in (100.0, 200.0, 300.0, 400.0)]


def test_malformed_goals_are_refused_with_a_logged_reason_and_change_nothing(system):
    s = system([(100.0, 100.0, 0.785), (400.0, 100.0, 2.356), (400.0, 400.0, -2.356), (100.0, 400.0, -0.785)])
    assert s.send_goal('cube4', 4, 250.0, 250.0).accepted           # one cube busy: its goal must survive
    # refused on the service, with the reason
    for goal, reason in [((math.nan, 200.0), 'not finite'), ((600.0, 200.0), 'off the mat')]:
        answer = s.send_goal('cube1', 99, *goal)
        assert not answer.accepted and reason in answer.reason
    answer = s.send_goal('cube9', 99, 200.0, 200.0)
    assert not answer.accepted and 'unknown cube' in answer.reason
    # refused on the topic: logged by the navigator
    s.goal_pubs['cube2'].publish(msgs.NavGoal(goal_id=98, cube='cube2', x=math.inf, y=100.0))
    s.goal_pubs['cube4'].publish(msgs.NavGoal(goal_id=97, cube='cube4', x=100.0, y=-50.0))
    s.spin_until(lambda: 'goal 97' in s.log('navigator'), 10.0, 'the navigator to log the refusals')
    log = s.log('navigator')
    assert "goal 98 for 'cube2' rejected: goal position (inf, 100.0) is not finite" in log
    assert "goal 97 for 'cube4' rejected: goal (100.0, -50.0) is off the mat" in log
    # ... and nothing changed: the idle cubes have no goal and stand still, cube4 still heads for its goal
    before = s.truth.copy()
    s.spin_for(0.5)
    for c in ('cube1', 'cube2', 'cube3'):
        st = s.status(c)
        assert st.known and st.goal_id == 0 and not st.active
    assert np.abs(s.truth[:3] - before[:3]).max() < 1.0
    st = s.status('cube4')
    assert st.goal_id == 4 and (st.active or st.reached)
    s.spin_until(lambda: s.reached('cube4', 4), 20.0, 'cube4 to reach the goal it had before')
    assert not s.status('cube9').known


@pytest.mark.parametrize('planner', ['hlavoid', 'coordinated'])
def test_eight_cubes_swap_through_the_centre_without_contact(system, planner):
    """The demo's planner (hlavoid, navigator.yaml's) and coordinated, which a live navigator plans with in a
    worker thread while its ticks hold the cubes (staggered goals: a plan for each new set of goals)."""
    s = system(HOMES_8, planner)
    run_swap(s)
    assert s.tracker.contacts == 0 and s.tracker.min_clearance > 0, s.tracker.events
    assert {r.planner for r in s.results.values()} == {planner}
    for i, c in enumerate(s.names):
        st = s.status(c)
        assert st.reached and st.goal_id == 10 + i and st.distance <= 20.0


def test_a_killed_driver_leaves_its_cube_stopped_and_avoided(system):
    # cube2 drives down the middle and loses its driver half way; cube1 then crosses the mat along y = 250,
    # right through where cube2 stopped, while cube3 and cube4 swap along the bottom and top edges
    s = system([(70.0, 250.0, 0.0), (250.0, 130.0, math.pi / 2), (100.0, 420.0, 0.0), (400.0, 80.0, math.pi)])
    assert s.send_goal('cube2', 2, 250.0, 420.0).accepted
    s.spin_until(lambda: s.truth[1, 1] > 215.0, 10.0, 'cube2 to reach the middle')
    s.killed.add('/cube2/cube_driver')
    s.children.process('/cube2/cube_driver').kill()
    s.spin_until(lambda: not s.status('cube2').active or s.status('cube2').stale, 5.0,
                 'the navigator to see cube2 go stale')
    s.spin_for(1.0)
    stopped_at = s.truth[1].copy()
    assert abs(stopped_at[1] - 250.0) < CONTACT + 10.0, 'cube2 must block cube1\'s straight path for this test'
    goals = {'cube1': (430.0, 250.0), 'cube3': (400.0, 420.0), 'cube4': (100.0, 80.0)}
    for k, (c, g) in enumerate(goals.items()):
        assert s.send_goal(c, 20 + k, *g).accepted
    s.spin_until(lambda: all(s.reached(c, 20 + k) for k, c in enumerate(goals)), 40.0, 'the others to arrive')
    assert s.tracker.contacts == 0, s.tracker.events
    assert np.hypot(*(s.truth[1] - stopped_at)) < 1.0, 'the cube without a driver moved'
    st = s.status('cube2')
    assert st.stale and 'stale' in st.status
    assert s.children.process('navigator').poll() is None
