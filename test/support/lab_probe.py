"""A probe node that a lab-network test runs inside one lab host: the test's eyes and hands on that host.

    python test/support/lab_probe.py --cubes cube1,cube2 [--name laptop] [--watch]

With ``--watch`` it subscribes to the ground truth, every cube's state and NavResult and mat_sim/contacts;
without, it only calls services and reads the graph (a light process, for hosts that only need to ask).

It reads one JSON request per line on stdin and answers each with one JSON line on stdout (``{"ok": ...}``);
ROS is spun in a thread of its own meanwhile, so observations keep arriving between requests. Times are wall
clock (``time.time()``, the clock every namespace of the machine shares), so the test can relate them to the
moments it pulled a cable or killed a host. Requests (``op``):

  ready        wait until every cube reports connected and on the mat, and (``navigator``) the navigator's
               services answer, and (``recorder``) a node of that name subscribes to every ``topics`` entry
  goals        call navigator/set_goal for each of ``goals`` [[cube, goal_id, x, y], ...], ``stagger`` s apart
  status       navigator/goal_status of every cube
  wait_reached wait until each cube's NavResult shows its goal id of ``goal_ids`` reached (or ``timeout``)
  wait_moving  wait until ``count`` cubes are ``distance`` mat units (ground truth) away from where they were,
               each still moving
  wait_still   wait until no cube has moved over the last ``seconds``
  truth        ground-truth samples [stamp, arrival, [[x, y, theta] per cube]] with stamps in [t0, t1]
  states       per cube, the arrival times of its CubeStates in [t0, t1]
  contacts     mat_sim/contacts: [cube_a, cube_b, sim_time, count, stamp, approach_speed, x, y] of each
  graph        node names this probe sees and the publisher count of ``topic``
  publish      publish a still CubeState for ``cube`` every 0.1 s from now on (a foreign lab's traffic)
  quit         stop
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from pathlib import Path

import rclpy
from geometry_msgs.msg import PoseArray
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import deserialize_message

from toio_navigator.msg import ContactEvent, CubeState, NavGoal, NavResult
from toio_navigator.srv import GoalStatus, SetGoal
from toio_navigator.units import quaternion_to_yaw, ros_to_mat_xy, ros_to_mat_yaw

# run as a script inside a lab host: test/ on the path, as pytest has it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.goal_probe import navigator_used_fresh_state  # noqa: E402

CONTACTS_DEPTH = 100         # mat_sim/contacts is reliable with this depth: none may be lost


class Probe:
    def __init__(self, name: str, cubes: list[str], watch: bool) -> None:
        self.node = Node(name)
        self.cubes = cubes
        self.lock = threading.Lock()
        # states and results are kept as received (raw) and decoded only when asked: 50 Hz x 8 cubes of decoding
        # would take CPU from the lab's hosts, which share this machine
        self.states: dict[str, bytes] = {}
        self.state_times: dict[str, list[float]] = {c: [] for c in cubes}
        self.results: dict[str, bytes] = {}
        self.truth: list = []
        self.contacts: list = []
        n = self.node
        if watch:
            n.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, qos_profile_sensor_data)
            n.create_subscription(ContactEvent, 'mat_sim/contacts', self._on_contact, CONTACTS_DEPTH)
            for c in cubes:
                n.create_subscription(CubeState, f'{c}/state', lambda m, c=c: self._on_state(c, m),
                                      qos_profile_sensor_data, raw=True)
                n.create_subscription(NavResult, f'{c}/nav_result', lambda m, c=c: self.results.__setitem__(c, m),
                                      10, raw=True)
        self.set_goal = n.create_client(SetGoal, 'navigator/set_goal')
        self.goal_status = n.create_client(GoalStatus, 'navigator/goal_status')
        self.publishers = {}

    # ---- subscriptions (executor thread)
    def _on_truth(self, msg: PoseArray) -> None:
        now = time.time()
        if len(msg.poses) != len(self.cubes):
            return
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        poses = []
        for p in msg.poses:
            x, y = ros_to_mat_xy(p.position.x, p.position.y)
            q = p.orientation
            poses.append([float(x), float(y), float(ros_to_mat_yaw(quaternion_to_yaw(q.x, q.y, q.z, q.w)))])
        with self.lock:
            self.truth.append([stamp, now, poses])

    def _on_state(self, cube: str, raw: bytes) -> None:
        with self.lock:
            self.states[cube] = raw
            self.state_times[cube].append(time.time())

    def state(self, cube: str) -> CubeState | None:
        with self.lock:
            raw = self.states.get(cube)
        return None if raw is None else deserialize_message(raw, CubeState)

    def _on_contact(self, msg: ContactEvent) -> None:
        with self.lock:
            self.contacts.append([msg.cube_a, msg.cube_b, float(msg.sim_time), int(msg.count),
                                  msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, float(msg.approach_speed),
                                  float(msg.x), float(msg.y)])

    # ---- requests (main thread)
    def wait(self, condition, timeout: float, period: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(period)
        return True

    def call(self, client, request, timeout: float = 10.0):
        return self.call_all(client, [request], timeout)[0]

    def call_all(self, client, requests, timeout: float = 10.0) -> list:
        """Every request sent at once; the answers in order (None: none within ``timeout``)."""
        futures = [client.call_async(r) for r in requests]
        self.wait(lambda: all(f.done() for f in futures), timeout)
        out = []
        for f in futures:
            if not f.done():
                client.remove_pending_request(f)
            out.append(f.result() if f.done() else None)
        return out

    def op_ready(self, timeout: float, navigator: bool = True, recorder: str = '', topics=(),
                 stale_s: float = 0.0) -> dict:
        """Every cube connected and on the mat; with ``navigator``, its services up and, with ``stale_s`` > 0 (a
        watching probe), its last tick used a state of every cube no older than that: a goal for a cube the
        navigator has not yet seen live (discovery across hosts of a busy machine can take seconds) would leave that
        cube standing while the others drive."""
        def connected():
            states = [self.state(c) for c in self.cubes]
            return all(m is not None and m.on_mat and m.link_state == CubeState.LINK_CONNECTED for m in states)

        def seen_live(cube: str) -> bool:
            raw = self.results.get(cube)
            return navigator_used_fresh_state(None if raw is None else deserialize_message(raw, NavResult), stale_s)

        def recording():
            return all(any(i.node_name == recorder for i in self.node.get_subscriptions_info_by_topic(t))
                       for t in topics)
        checks = [('cube drivers', connected)]
        if navigator:
            checks.append(('navigator', lambda: self.set_goal.service_is_ready() and
                           self.goal_status.service_is_ready()))
            if stale_s > 0.0:
                checks.append(('the navigator to see every cube live', lambda: all(map(seen_live, self.cubes))))
        if recorder:
            checks.append(('recorder', recording))
        deadline = time.monotonic() + timeout
        for what, check in checks:
            if not self.wait(check, max(0.0, deadline - time.monotonic())):
                return {'ok': False, 'waiting_for': what}
        return {'ok': True, 'poses': {c: [self.state(c).x, self.state(c).y] for c in self.cubes}}

    def op_goals(self, goals, stagger: float = 0.0) -> dict:
        """Send one goal per cube: ``stagger`` seconds apart, or with no stagger all at once (one call after the
        other would let the first cubes arrive before the last start when a busy host answers slowly)."""
        def request(cube, goal_id, x, y):
            return SetGoal.Request(goal=NavGoal(goal_id=int(goal_id), cube=cube, x=float(x), y=float(y),
                                                direction=NavGoal.TOWARDS))
        if stagger > 0.0:
            results = []
            for k, goal in enumerate(goals):
                if k:
                    time.sleep(stagger)
                results.append(self.call(self.set_goal, request(*goal)))
        else:
            results = self.call_all(self.set_goal, [request(*goal) for goal in goals])
        answers = [[goal[0], res is not None and res.accepted, 'no answer' if res is None else res.reason]
                   for goal, res in zip(goals, results)]
        return {'ok': all(a[1] for a in answers), 'answers': answers, 'time': time.time()}

    def op_status(self) -> dict:
        out = {}
        for c in self.cubes:
            res = self.call(self.goal_status, GoalStatus.Request(cube=c), timeout=2.0)
            out[c] = None if res is None else {
                'known': res.known, 'goal_id': res.goal_id, 'active': res.active, 'reached': res.reached,
                'stale': res.stale, 'on_mat': res.on_mat, 'status': res.status,
                'distance': res.distance if math.isfinite(res.distance) else None}
        return {'ok': all(v is not None for v in out.values()), 'status': out, 'time': time.time()}

    def op_wait_reached(self, goal_ids: dict, timeout: float) -> dict:
        def done():
            return all(self._reached(c, g) for c, g in goal_ids.items())
        ok = self.wait(done, timeout, period=0.1)
        return {'ok': ok, 'reached': [c for c, g in goal_ids.items() if self._reached(c, g)], 'time': time.time()}

    def op_wait_moving(self, distance: float, count: int, timeout: float, within: float = 0.5) -> dict:
        """Wait until ``count`` cubes are ``distance`` mat units (ground truth) away from where they were at the
        call and each has moved in the last ``within`` seconds (is being driven now, not a cube that already
        arrived while others have not yet started)."""
        with self.lock:
            first = len(self.truth)
        if not self.wait(lambda: len(self.truth) > first, timeout):
            return {'ok': False, 'error': 'no ground truth'}
        with self.lock:
            start = self.truth[first][2]

        def moved():
            with self.lock:
                now = self.truth[-1]
                k = len(self.truth) - 1
                while k > first and self.truth[k - 1][0] >= now[0] - within:
                    k -= 1
                recent = self.truth[k]
            return sum(math.hypot(a[0] - b[0], a[1] - b[1]) >= distance and
                       math.hypot(a[0] - c[0], a[1] - c[1]) > 5.0 for a, b, c in zip(now[2], start, recent[2])) >= count
        return {'ok': self.wait(moved, timeout), 'time': time.time()}

    def op_wait_still(self, seconds: float, timeout: float) -> dict:
        """Wait until no cube has moved more than 0.5 mat units over the last ``seconds`` of ground truth."""
        def still():
            with self.lock:
                recent = [s[2] for s in self.truth if s[0] >= self.truth[-1][0] - seconds] if self.truth else []
                span = self.truth[-1][0] - self.truth[0][0] if self.truth else 0.0
            if span < seconds or len(recent) < 2:
                return False
            return all(math.hypot(a[0] - b[0], a[1] - b[1]) <= 0.5 for a, b in zip(recent[0], recent[-1]))
        return {'ok': self.wait(still, timeout), 'time': time.time()}

    def _reached(self, cube: str, goal_id: int) -> bool:
        raw = self.results.get(cube)
        r = None if raw is None else deserialize_message(raw, NavResult)
        return r is not None and r.goal_id == goal_id and r.reached

    def op_truth(self, t0: float, t1: float) -> dict:
        with self.lock:
            return {'ok': True, 'samples': [s for s in self.truth if t0 <= s[0] <= t1]}

    def op_states(self, t0: float, t1: float) -> dict:
        with self.lock:
            return {'ok': True, 'times': {c: [t for t in ts if t0 <= t <= t1] for c, ts in self.state_times.items()}}

    def op_contacts(self) -> dict:
        with self.lock:
            return {'ok': True, 'contacts': list(self.contacts)}

    def op_graph(self, topic: str = '') -> dict:
        names = sorted(f'{ns.rstrip("/")}/{n}' for n, ns in self.node.get_node_names_and_namespaces())
        return {'ok': True, 'nodes': names, 'publishers': self.node.count_publishers(topic) if topic else 0}

    def op_publish(self, cube: str) -> dict:
        pub = self.node.create_publisher(CubeState, f'{cube}/state', 10)
        msg = CubeState(cube=cube, x=250.0, y=250.0, on_mat=True, link_state=CubeState.LINK_CONNECTED)
        self.publishers[cube] = self.node.create_timer(0.1, lambda: pub.publish(msg))
        return {'ok': True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cubes', required=True, help='comma-separated cube names')
    parser.add_argument('--name', default='lab_probe')
    parser.add_argument('--watch', action='store_true', help='subscribe to ground truth, states, results, contacts')
    args = parser.parse_args()
    rclpy.init()
    probe = Probe(args.name, [c for c in args.cubes.split(',') if c], args.watch)
    executor = SingleThreadedExecutor()
    executor.add_node(probe.node)

    def spin():
        try:
            executor.spin()
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    print(json.dumps({'ok': True, 'started': args.name}), flush=True)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request.pop('op')
            if op == 'quit':
                break
            try:
                answer = getattr(probe, f'op_{op}')(**request)
            except Exception as exc:     # a bad request must not kill the probe: the test gets the reason
                answer = {'ok': False, 'error': f'{op}: {type(exc).__name__}: {exc}'}
            print(json.dumps(answer), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown(timeout_sec=1.0)
        spinner.join(timeout=10.0)         # the context must outlive the spin loop (on a busy host it takes a while)
        probe.node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
