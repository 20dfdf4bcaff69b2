"""Re-record the fixture bags of this folder from the simulator (not run by the tests; needs rclpy).

    PYTHONPATH=. .venv/bin/python test/data/bags/make_fixtures.py [NAME ...]

Each fixture: the simulated bringup (mat_sim, one cube_driver per cube, the navigator, over DDS in a private
domain) with a few cubes, `toio-nav record` of the navigator's inputs and outputs plus the ground truth, and goals
published on `<cube>/goal` (topics, not the set_goal service, so the bag holds them). The run stops when every
cube has reached its goal (or at the time limit) and leaves a small mcap or sqlite3 bag here.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.msg import CubeState, NavGoal, NavResult

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

# name -> (storage, start poses (x, y, heading), goals (x, y) or None = STOP after `stop_after` s, time limit)
FIXTURES = {
    'swap3_mcap': ('mcap', [(120, 120, 0.785), (380, 380, -2.356), (380, 120, 2.356)],
                   [(380, 380), (120, 120), (120, 380)], 20.0),
    'cross2_sqlite3': ('sqlite3', [(100, 250, 0.0), (400, 250, 3.1416)], [(400, 250), (100, 250)], 10.0),
}


def sim_yaml(path: Path, poses) -> None:
    names = [f'cube{i + 1}' for i in range(len(poses))]
    flat = ', '.join(f'{x:.1f}, {y:.1f}, {h:.4f}' for x, y, h in poses)
    path.write_text(f"""/**:
  ros__parameters:
    cubes: [{', '.join(names)}]
/**/cube_driver:
  ros__parameters:
    transport: sim
mat_sim:
  ros__parameters:
    mat: collection
    initial_poses: [{flat}]
    ground_truth_rate_hz: 10.0
""")


def record_fixture(name: str) -> None:
    storage, poses, goals, limit = FIXTURES[name]
    names = [f'cube{i + 1}' for i in range(len(poses))]
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(150, 230)), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               PYTHONPATH=str(REPO), AMENT_PREFIX_PATH=os.environ.get('AMENT_PREFIX_PATH', sys.prefix))
    os.environ.update(ROS_DOMAIN_ID=env['ROS_DOMAIN_ID'], ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    tmp = Path(tempfile.mkdtemp())
    sim_yaml(tmp / 'sim.yaml', poses)
    files = ['--params-file', str(REPO / 'config' / 'navigator.yaml'), '--params-file', str(tmp / 'sim.yaml')]
    cli = [sys.executable, '-m', 'toio_navigator.cli']
    bringup = subprocess.Popen(cli + ['bringup', '--processes'] + files, env=env, start_new_session=True)
    topics = [f'/{c}/{t}' for c in names for t in ('state', 'goal', 'nav_result', 'motor_cmd')]
    recorder = None

    rclpy.init()
    node = Node('fixture_goals')
    states, reached, ticking = {}, set(), set()
    pubs = {c: node.create_publisher(NavGoal, f'{c}/goal', 10) for c in names}
    for c in names:
        node.create_subscription(CubeState, f'{c}/state', lambda m, c=c: states.__setitem__(c, m),
                                 qos_profile_sensor_data)
        node.create_subscription(NavResult, f'{c}/nav_result',
                                 lambda m, c=c: (ticking.add(c), reached.add(c) if m.reached and m.goal_id else None),
                                 10)
    try:
        deadline = time.monotonic() + 180     # a loaded machine takes long to start five Python nodes
        while not (len(states) == len(names) and all(s.on_mat and s.link_state == 2 for s in states.values())
                   and len(ticking) == len(names)):
            rclpy.spin_once(node, timeout_sec=0.1)
            if time.monotonic() > deadline:
                raise SystemExit('the simulated cubes never connected')
        recorder = subprocess.Popen(cli + ['record', *topics, '/mat_sim/ground_truth', '-o', str(out),
                                           '-s', storage], env=env, start_new_session=True)
        # wait until the recorder has every topic (goals: navigator + recorder; states: + this node; results:
        # this node + recorder), so the bag starts before the first goal
        deadline = time.monotonic() + 90
        while min(min(node.count_subscribers(f'{c}/goal') - 2, node.count_subscribers(f'{c}/state') - 3,
                      node.count_subscribers(f'{c}/nav_result') - 2) for c in names) < 0:
            rclpy.spin_once(node, timeout_sec=0.05)
            if time.monotonic() > deadline:
                raise SystemExit('the recorder never subscribed to every topic')
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        for i, c in enumerate(names):
            gx, gy = goals[i]
            pubs[c].publish(NavGoal(goal_id=10 + i, cube=c, x=float(gx), y=float(gy), direction=NavGoal.TOWARDS))
            end = time.monotonic() + 0.4
            while time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
        end = time.monotonic() + limit
        while time.monotonic() < end and len(reached) < len(names):
            rclpy.spin_once(node, timeout_sec=0.05)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        print(f'{name}: reached {sorted(reached)}')
    finally:
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait(timeout=20)
        bringup.send_signal(signal.SIGINT)
        bringup.wait(timeout=20)
        node.destroy_node()
        rclpy.shutdown()
        shutil.rmtree(tmp)


if __name__ == '__main__':
    for fixture in sys.argv[1:] or list(FIXTURES):
        record_fixture(fixture)
