"""`toio-nav demo`: the README's main command.

Eight simulated cubes on the toio collection mat swap places through the centre. The demo starts the simulated
bringup (mat_sim, one cube_driver per cube, the navigator: the same nodes and YAML as `toio-nav bringup`, one
process each, over real DDS), waits until every driver is connected, sends every cube its goal through the
navigator's ``navigator/set_goal`` service, prints a progress line while they drive and, at the end, a summary
(all reached?, time, minimum clearance, contacts). It leaves in the output folder a rosbag2 (mcap) of every
topic (recorded by a `toio-nav record` child process; `--navigator-topics` records only what `toio-nav replay`
needs, for slow machines) and a PNG of the trajectories. Exit code 0 only if every cube arrived without a single
contact.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import rclpy
import yaml
from geometry_msgs.msg import PoseArray
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.bags.record import UNFINALISED
from toio_navigator.bags.replay import ReplayError, read_parameter_files
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.launching import profiles
from toio_navigator.launching.supervisor import Children
from toio_navigator.launching.web_console import console_params, port_to_use
from toio_navigator.lifecycle import StopRequest, supervised_env
from toio_navigator.msg import CubeState, NavGoal, NavResult
from toio_navigator.nodes.arena_demo import run_arena_demo
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.service_call import NoAnswer, call_until_answered
from toio_navigator.settings.web_console import DEFAULT_PORT
from toio_navigator.srv import SetGoal
from toio_navigator.units import BODY_RADIUS, METRES_PER_UNIT, ros_to_mat_xy

# ------------------------------------------------------------------------------------------------ pure parts

def swap_goals(starts: np.ndarray, mat_rect) -> np.ndarray:
    """Each cube's goal: its start mirrored through the mat centre (so every path crosses the centre)."""
    x0, y0, x1, y1 = mat_rect
    return np.column_stack([x0 + x1 - starts[:, 0], y0 + y1 - starts[:, 1]])


@dataclass
class Tracker:
    """Ground-truth frames of the run: trajectories, the smallest clearance and contact events."""
    n: int
    contact_distance: float = 2 * BODY_RADIUS
    #: a touch lasts a fraction of a physics step and the bodies part at once; 50 Hz samples closer than this
    #: guard (about 2.7 mm) are counted as a contact so none is missed
    guard: float = 2.0
    times: list = field(default_factory=list)
    frames: list = field(default_factory=list)
    min_clearance: float = math.inf                 # mat units, body to body
    contacts: int = 0                               # pairs that came into contact (counted when they start)
    events: list = field(default_factory=list)      # (t, i, j, x, y) of every contact start
    _touching: np.ndarray | None = None

    def add(self, t: float, xy: np.ndarray) -> None:
        xy = np.asarray(xy, dtype=float).reshape(self.n, 2)
        self.times.append(t)
        self.frames.append(xy)
        if self.n < 2:
            return
        d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
        iu = np.triu_indices(self.n, 1)
        pair = d[iu]
        self.min_clearance = min(self.min_clearance, float(pair.min()) - self.contact_distance)
        touching = pair <= self.contact_distance + self.guard
        before = np.zeros_like(touching) if self._touching is None else self._touching
        started = np.nonzero(touching & ~before)[0]
        self.contacts += int(started.size)
        for k in started:
            i, j = int(iu[0][k]), int(iu[1][k])
            mid = 0.5 * (xy[i] + xy[j])
            self.events.append((t, i, j, float(mid[0]), float(mid[1])))
        self._touching = touching

    def trajectories(self) -> np.ndarray:
        return np.stack(self.frames) if self.frames else np.zeros((0, self.n, 2))


def draw(path: Path, names: list[str], traj: np.ndarray, goals: np.ndarray, mat_rect, title: str) -> None:
    """PNG of the trajectories on the mat (mat frame: y grows downwards, as printed), on a plain matplotlib
    Figure (no pyplot: no global backend or figure list)."""
    fig = Figure(figsize=(7, 7), dpi=110)
    ax = fig.subplots()
    x0, y0, x1, y1 = mat_rect
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, lw=1.5, color='0.3'))
    colours = colormaps['tab10']
    for i, name in enumerate(names):
        c = colours(i % 10)
        if len(traj):
            ax.plot(traj[:, i, 0], traj[:, i, 1], '-', color=c, lw=1.4, label=name)
            ax.add_patch(Circle(traj[0, i], BODY_RADIUS, fill=False, color=c, lw=1))
            ax.add_patch(Circle(traj[-1, i], BODY_RADIUS, color=c, alpha=0.5))
        ax.plot(*goals[i], 'x', color=c, ms=9, mew=2)
    ax.set_xlim(x0 - 15, x1 + 15)
    ax.set_ylim(y1 + 15, y0 - 15)         # y down, as on the mat
    ax.set_aspect('equal')
    ax.set_xlabel('x (mat units)')
    ax.set_ylabel('y (mat units, down)')
    ax.set_title(title, fontsize=9)
    ax.legend(loc='upper right', fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)


def summary_lines(names, reached: dict, elapsed: float, tracker: Tracker, bag: Path, png: Path,
                  timed_out: bool, planner: str = '') -> list[str]:
    n_ok = sum(bool(reached.get(c)) for c in names)
    clearance = tracker.min_clearance
    lines = [
        f'planner:           {planner or "?"}',
        f'all reached:       {"yes" if n_ok == len(names) else "NO"} ({n_ok}/{len(names)} cubes)'
        + (' - timed out' if timed_out else ''),
        f'time:              {elapsed:.1f} s from the first goal to the last arrival',
        f'minimum clearance: {clearance * METRES_PER_UNIT * 1000:.1f} mm body to body '
        f'({clearance:.1f} mat units)' if math.isfinite(clearance) else 'minimum clearance: n/a (no ground truth)',
        f'contacts:          {tracker.contacts}',
        f'bag (mcap):        {bag}',
        f'trajectories:      {png}',
    ]
    for t, i, j, x, y in tracker.events[:5]:
        lines.append(f'  contact:         {names[i]} - {names[j]} at t = {t:.1f} s near ({x:.0f}, {y:.0f})')
    missing = [c for c in names if not reached.get(c)]
    if missing:
        lines.insert(2, f'not reached:       {", ".join(missing)}')
    return lines


def demo_planner(files) -> str:
    """The navigator's planner as the demo's parameter files set it (the node's default when none does)."""
    try:
        return str(read_parameter_files(files).get('planner', NavigatorSettings.planner))
    except ReplayError:
        return ''


# ------------------------------------------------------------------------------------------------ the live run

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--out', type=Path, default=None,
                        help='output folder for the bag and the picture (default out/demo; out/arena with --arena)')
    parser.add_argument('--timeout', type=float, default=90.0,
                        help='give up this many seconds after the first goal (default 90)')
    parser.add_argument('--stagger', type=float, default=0.6,
                        help='seconds between two cubes\' goals (default 0.6; 0 = all at once)')
    parser.add_argument('--arena', metavar='LAYOUT', default=None,
                        help='instead: the arena exploration demo on this layout (toio_navigator.nodes.arena_demo)')
    parser.add_argument('--params-file', action='append', type=Path, default=None, metavar='YAML',
                        help='bringup parameter files (default: config/navigator.yaml + config/sim.yaml)')
    parser.add_argument('--web-port', type=int, default=DEFAULT_PORT, metavar='PORT',
                        help=f'the live web console\'s port (default {DEFAULT_PORT}, or any free one when it is taken; '
                             '0 = any free port); the demo prints its address')
    parser.add_argument('--no-web', dest='web', action='store_false', help='no web console')
    parser.add_argument('--navigator-topics', dest='all_topics', action='store_false',
                        help='record only the navigator\'s inputs/outputs, ground truth and contacts instead of '
                             'every topic (a lighter recorder for slow machines; replay needs only these)')


class DemoError(RuntimeError):
    pass


class DemoStopped(DemoError):
    """A stop signal (Ctrl-C, SIGTERM, a closed terminal) ended the demo early."""


def _check_stop(stop: StopRequest, what: str) -> None:
    if stop:
        raise DemoStopped(f'stopped by {stop.name or "request"} {what}; every node was stopped')


def _wait(executor, condition, timeout: float, what: str, children, stop: StopRequest) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        _check_stop(stop, f'while waiting for {what}')
        dead = children.check()
        if dead:
            raise DemoError(f'{", ".join(dead)} stopped while waiting for {what} (see the node logs in '
                            f'{children.log_dir})')
        if time.monotonic() > deadline:
            raise DemoError(f'timed out after {timeout:.0f} s waiting for {what}')
        executor.spin_once(timeout_sec=0.05)


def run(args: argparse.Namespace) -> int:
    if args.arena is not None:
        return run_arena_demo(args.arena, args.out or Path('out/arena'), param_files=args.params_file)
    args.out = args.out or Path('out/demo')
    if not (args.timeout > 0 and args.stagger >= 0 and 0 <= args.web_port <= 65535):
        print('toio-nav demo: --timeout must be > 0, --stagger >= 0 and --web-port within 0..65535', file=sys.stderr)
        return 2
    try:
        files = [p.resolve() for p in args.params_file] if args.params_file else profiles.profile_files('sim')
        names = profiles.read_cubes(files)
    except profiles.BringupError as exc:
        print(f'toio-nav demo: {exc}', file=sys.stderr)
        return 2
    out = args.out
    bag_dir, png = out / 'bag', out / 'trajectories.png'
    try:
        out.mkdir(parents=True, exist_ok=True)
        if bag_dir.exists():
            # a previous demo's bag: finalised, or left unfinalised by a recorder that was killed
            ours = (bag_dir / 'metadata.yaml').exists() or (bag_dir / UNFINALISED).exists()
            if not ours and any(bag_dir.iterdir()):
                raise DemoError(f'{bag_dir} exists and is not a bag of a previous demo; not overwriting it')
            shutil.rmtree(bag_dir)
    except (OSError, DemoError) as exc:
        print(f'toio-nav demo: cannot use {out}: {exc}', file=sys.stderr)
        return 2
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    # SIGINT, SIGTERM and SIGHUP only set a flag the loops below poll: the recorder and every node are then
    # stopped in order (the cubes stop, the bag is finalised) and the demo says so, with no traceback
    stop = StopRequest().install()
    try:
        return _run_live(args, files, names, bag_dir, png, stop)
    except DemoStopped as exc:
        print(f'\ntoio-nav demo: {exc}', file=sys.stderr)
        return 130
    except DemoError as exc:
        print(f'\ntoio-nav demo: {exc}', file=sys.stderr)
        return 1
    finally:
        stop.restore()


def _run_live(args, files, names, bag_dir: Path, png: Path, stop: StopRequest) -> int:
    print(f'toio-nav demo: {len(names)} simulated cubes swap places through the centre of the collection mat, planner '
          f'{demo_planner(files) or "?"} (ROS_DOMAIN_ID {os.environ.get("ROS_DOMAIN_ID", "0")})', flush=True)
    demo = _LiveDemo(args, files, names, bag_dir, stop)
    try:
        demo.start()
        demo.drive()
    finally:
        demo.close()
    return demo.report(png)


class _LiveDemo:
    """One run of the live demo: a node watching the cubes' states, the navigator's results and the simulator's
    ground truth; the bringup and the recorder as child processes; the goals and the progress line."""

    def __init__(self, args, files, names, bag_dir: Path, stop: StopRequest) -> None:
        self.args, self.files, self.names, self.bag_dir, self.stop = args, files, names, bag_dir, stop
        self.log_dir = bag_dir.parent / 'logs'
        self.n = len(names)
        self.started = time.monotonic()
        self.children = Children()
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = LeanNode('demo', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.tracker = Tracker(self.n)
        self.states: dict[str, object] = {}
        self.reached: dict[str, bool] = {}
        self.goal_ids: dict[str, int] = {}
        self.t0: float | None = None
        self.goals: np.ndarray | None = None
        self.recorder = None
        self.timed_out = False
        self.node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth, qos_profile_sensor_data)
        for c in names:
            self.node.create_subscription(CubeState, f'{c}/state', lambda m, c=c: self.states.__setitem__(c, m),
                                          qos_profile_sensor_data)
            self.node.create_subscription(NavResult, f'{c}/nav_result', lambda m, c=c: self._on_result(c, m), 10)
        self.set_goal = self.node.create_client(SetGoal, 'navigator/set_goal')

    def _on_truth(self, msg: PoseArray) -> None:
        if len(msg.poses) != self.n or self.t0 is None:
            return
        xy = np.array([ros_to_mat_xy(p.position.x, p.position.y) for p in msg.poses])
        self.tracker.add(time.monotonic() - self.t0, xy)

    def _on_result(self, cube: str, msg: NavResult) -> None:
        if self.goal_ids.get(cube) and msg.goal_id == self.goal_ids[cube] and msg.reached \
                and not self.reached.get(cube):
            self.reached[cube] = time.monotonic()

    def _wait(self, condition, timeout: float, what: str) -> None:
        _wait(self.executor, condition, timeout, what, self.children, self.stop)

    def start(self) -> None:
        """The bringup and the recorder, up and ready: every driver connected, the navigator's service there,
        the recorder subscribed to every topic. DemoError when another bringup runs on this domain."""
        names, log_dir = self.names, self.log_dir
        # another bringup on this domain would mix its cubes with ours: look before starting
        look = time.monotonic() + 1.0
        while time.monotonic() < look:
            self.executor.spin_once(timeout_sec=0.05)
            _check_stop(self.stop, 'before starting the nodes')
        ours = {spec.executable for spec in profiles.NODES}
        foreign = sorted({f'{ns.rstrip("/")}/{name}' for name, ns in self.node.get_node_names_and_namespaces()
                          if name in ours})
        if foreign:
            raise DemoError(f'ROS_DOMAIN_ID {os.environ.get("ROS_DOMAIN_ID", "0")} already has '
                            f'{", ".join(foreign[:4])}{" ..." if len(foreign) > 4 else ""} running; stop it or '
                            f'choose another ROS_DOMAIN_ID')
        # the recorder in a process of its own: sharing this loop (goals, progress, ground truth) made it drop
        # and delay messages, and a bag that lost inputs cannot replay
        self.recorder = _start_recorder(self.bag_dir, log_dir, names, self.args.all_topics)
        _start_nodes(self.args, self.children, names, self.files, log_dir)
        if self.args.web:
            address = log_dir / 'web_console_address.txt'
            self._wait(address.exists, 30.0, 'the web console')
            print(f'  web console: {address.read_text().strip()} (the live page: open it in a browser)', flush=True)
        states = self.states
        self._wait(lambda: all(c in states and states[c].link_state == CubeState.LINK_CONNECTED
                               and states[c].on_mat for c in names), 60.0,
                   'every cube driver to connect and read its position')
        self._wait(self.set_goal.service_is_ready, 30.0, 'the navigator')
        # no goal before the recorder has every topic: a bag missing the first commands cannot replay
        wanted = [t for t in recorded_topics(names) if not t.endswith('/link_state')]

        def recorder_ready() -> bool:
            if self.recorder.poll() is not None:
                raise DemoError(f'the recorder stopped (see {log_dir / "record.log"})')
            return all(any(i.node_name == RECORDER_NODE for i in self.node.get_subscriptions_info_by_topic(t))
                       for t in wanted)
        self._wait(recorder_ready, 60.0, 'the recorder to subscribe to every topic')
        print(f'  {self.n} cubes connected, navigator ready after {time.monotonic() - self.started:.1f} s',
              flush=True)

    def drive(self) -> None:
        """Send the goals (one every ``--stagger`` s) and print the progress until every cube is there or the
        timeout passes; then half a second more into the bag, the cubes standing still."""
        names, n = self.names, self.n
        self.goals = swap_goals(np.array([(self.states[c].x, self.states[c].y) for c in names]),
                                (45.0, 45.0, 455.0, 455.0))
        self.t0 = time.monotonic()
        pending = list(range(n))
        last_print = -math.inf
        tty = sys.stdout.isatty()
        while True:
            now = time.monotonic() - self.t0
            while pending and now >= pending[0] * self.args.stagger:
                self._send_goal(pending.pop(0))
            self.executor.spin_once(timeout_sec=0.02)
            _check_stop(self.stop, f'at t = {now:.1f} s')
            dead = self.children.check()
            if dead:
                raise DemoError(f'{", ".join(dead)} stopped during the run (see the node logs in {self.log_dir})')
            done = sum(bool(self.reached.get(c)) for c in names)
            if now - last_print >= (0.5 if tty else 2.0) or done == n:
                last_print = now
                self._print_progress(now, done, tty)
            if done == n and not pending:
                break
            if now > self.args.timeout:
                self.timed_out = True
                break
        if tty:
            print(flush=True)
        settle = time.monotonic() + 0.5            # a last half second into the bag: cubes standing still
        while time.monotonic() < settle:
            self.executor.spin_once(timeout_sec=0.02)

    def _send_goal(self, i: int) -> None:
        cube = self.names[i]
        self.goal_ids[cube] = 100 + i
        req = SetGoal.Request(goal=NavGoal(goal_id=100 + i, cube=cube, x=float(self.goals[i, 0]),
                                           y=float(self.goals[i, 1]), direction=NavGoal.TOWARDS))

        def spin(condition, what: str) -> None:     # (the call ends its own waits within seconds)
            self._wait(condition, 60.0, what)
        try:    # (a lost answer is asked for again: the same goal set twice is the same goal)
            answer = call_until_answered(self.set_goal, req, spin, f'the navigator ({cube}\'s goal)', 10.0)
        except NoAnswer as exc:
            raise DemoError(str(exc)) from None
        if not answer.accepted:
            raise DemoError(f'the navigator refused {cube}\'s goal: {answer.reason}')

    def _print_progress(self, now: float, done: int, tty: bool) -> None:
        tracker = self.tracker
        clear = (f'{tracker.min_clearance * METRES_PER_UNIT * 1000:5.1f} mm'
                 if math.isfinite(tracker.min_clearance) else '   n/a  ')
        line = f'  t = {now:5.1f} s   reached {done}/{self.n}   min clearance {clear}   contacts {tracker.contacts}'
        # one line rewritten in place on a terminal; a line every 2 s in a log
        print(f'\r{line}   ' if tty else line, end='' if tty else '\n', flush=True)

    def close(self) -> None:
        _stop_recorder(self.recorder)
        self.children.stop()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def report(self, png: Path) -> int:
        """The picture and the summary; 0 if every cube arrived without a contact and the bag is finalised."""
        names, n, tracker, bag_dir, log_dir = self.names, self.n, self.tracker, self.bag_dir, self.log_dir
        arrivals = [self.reached[c] for c in names if self.reached.get(c)]
        elapsed = (max(arrivals) - self.t0) if arrivals and not self.timed_out else (time.monotonic() - self.t0)
        ok = len(arrivals) == n and tracker.contacts == 0 and not self.timed_out
        title = (f'{n}-cube swap through the centre: {"all reached" if len(arrivals) == n else "NOT all reached"}, '
                 f'{elapsed:.1f} s, min clearance {tracker.min_clearance * METRES_PER_UNIT * 1000:.1f} mm, '
                 f'{tracker.contacts} contacts')
        draw(png, names, tracker.trajectories(), self.goals, (45.0, 45.0, 455.0, 455.0), title)
        print('summary')
        for line in summary_lines(names, self.reached, elapsed, tracker, bag_dir, png, self.timed_out,
                                  demo_planner(self.files)):
            print('  ' + line)
        counts = bag_message_counts(bag_dir)
        for line in _recorder_complaints(log_dir / 'record.log'):
            print(f'  recorder:          {line}')
        if not (bag_dir / 'metadata.yaml').exists():
            ok = False
            print(f'  bag:               NOT finalised: the recorder did not stop in time (see '
                  f'{log_dir / "record.log"}); `toio-nav repair {bag_dir}` rebuilds what it holds')
        print(f'  recorded {sum(counts.values())} messages on {sum(1 for c in counts.values() if c)} topics; total '
              f'run {time.monotonic() - self.started:.1f} s; node logs in {log_dir}')
        return 0 if ok else 1


def _start_nodes(args, children: Children, names: list[str], files, log_dir: Path) -> None:
    """The sim bringup, and the web console unless --no-web (on --web-port, or any free port if that is taken)."""
    if args.web:
        log_dir.mkdir(parents=True, exist_ok=True)
        address = log_dir / 'web_console_address.txt'
        address.unlink(missing_ok=True)
        files = list(files) + [console_params(log_dir / 'web_console.yaml', port_to_use(args.web_port), address)]
    children.start(profiles.plan('sim', names, web=args.web), files, log_dir=log_dir)


# ------------------------------------------------------------------------------------------------ the recorder

RECORDER_NODE = 'toio_nav_record'               # the node name of `toio-nav record`


def recorded_topics(names: list[str]) -> list[str]:
    """What replay and render need: the navigator's inputs and outputs, the simulator's ground truth and contact
    events. The demo waits for the recorder to subscribe to these before the first goal; `--navigator-topics`
    records only these (a recorder of all ~70 topics on a loaded 2-core machine may drop some states; replay then
    skips the ticks that used them and says so)."""
    per_cube = ('state', 'goal', 'nav_result', 'motor_cmd', 'link_state')
    return [f'/{c}/{t}' for c in names for t in per_cube] + ['/mat_sim/ground_truth', '/mat_sim/contacts']


def _start_recorder(bag_dir: Path, log_dir: Path, names: list[str], all_topics: bool = False):
    """`toio-nav record -o BAG TOPICS...` as a child process (the navigator's parameters go in custom_data);
    with ``all_topics`` no topic list, so the recorder takes every topic it discovers."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / 'record.log', 'w')
    try:
        return subprocess.Popen([sys.executable, '-m', 'toio_navigator.cli', 'record', '-o', str(bag_dir),
                                 *([] if all_topics else recorded_topics(names))],
                                stdout=log, stderr=subprocess.STDOUT, env=supervised_env())
    finally:
        log.close()                      # the child holds its own descriptor


def _stop_recorder(proc, timeout: float = 15.0) -> None:
    """SIGTERM (the recorder closes the bag on it), then wait; kill only a recorder that does not stop."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def bag_message_counts(bag_dir: Path) -> dict[str, int]:
    """{topic: messages} from a rosbag2 directory's metadata.yaml ({} if there is none or it is unreadable)."""
    try:
        info = yaml.safe_load((Path(bag_dir) / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
        return {t['topic_metadata']['name']: int(t['message_count']) for t in info['topics_with_message_count']}
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        return {}


def _recorder_complaints(log: Path) -> list[str]:
    """The recorder's stderr lines worth showing (skipped topics, a navigator that never answered, a drain that
    gave up)."""
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return ['no log']
    return [ln.strip() for ln in lines if any(w in ln for w in ('skipped', 'never', 'still behind', 'Traceback'))][:10]
