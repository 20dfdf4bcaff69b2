"""`toio-nav demo --arena LAYOUT`: the arena explorer end to end over real DDS, one process per node.

Starts the `arena` profile of the bringup (launching/profiles.py: mat_sim with ONE virtual cube and the layout's
virtual IR sensors, the cube_driver over the simulated BLE link, the navigator and the arena_explorer;
config/navigator.yaml + config/arena.yaml), calls ``arena_explorer/start_exploration``, follows ``arena/state``
until the exploration ends, then calls ``arena_explorer/start_fastest_path`` and follows it to the goal. Prints a
progress line and a summary, and writes ``arena.png`` (the explored map from ``arena/map``, the fastest path from
``arena/fastest_path``, the true obstacles the map lacks outlined in red) and the node logs into the output
folder. The layout is read here only to start mat_sim and to score the result; the explorer sees nothing but IR
readings.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import rclpy
from nav_msgs.msg import OccupancyGrid
from nav_msgs.msg import Path as PathMsg
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger

from toio_navigator.arena.fastest_path import fastest_path
from toio_navigator.arena.layout import LayoutError, load_layout
from toio_navigator.arena.render import save_png
from toio_navigator.launching import profiles
from toio_navigator.launching.supervisor import Children
from toio_navigator.lifecycle import StopRequest
from toio_navigator.msg import ArenaState
from toio_navigator.nodes.conversions import grid_from_occupancy, poses_from_path
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.qos import LATCHED, STATE_QOS
from toio_navigator.nodes.service_call import NoAnswer, call_until_answered
from toio_navigator.sim.ir_sensors import ArenaMatMapping

FINAL = ('DONE', 'TERMINATED', 'ERROR')


class ArenaDemoError(RuntimeError):
    pass


def run_yaml(path: Path, layout: Path, real_time_factor: float, waypoint: tuple[int, int] | None) -> Path:
    """The per-run parameters on top of config/arena.yaml: which layout mat_sim senses, how fast it runs."""
    wp = list(waypoint) if waypoint is not None else [-1, -1]
    path.write_text(f'mat_sim:\n  ros__parameters:\n    arena_layout: {str(layout)!r}\n'
                    f'    real_time_factor: {float(real_time_factor)!r}\n'
                    f'arena_explorer:\n  ros__parameters:\n    waypoint: [{wp[0]}, {wp[1]}]\n')
    return path


def path_cost(poses, turn_cost: float) -> float:
    cost = 0.0
    for a, b in zip(poses, poses[1:]):
        quarter_turns = min((b.heading - a.heading) % 4, (a.heading - b.heading) % 4)
        cost += abs(b.x - a.x) + abs(b.y - a.y) + turn_cost * quarter_turns
    return cost


def run_arena_demo(layout_path, out_dir, *, waypoint: tuple[int, int] | None = None, turn_cost: float = 2.0,
                   real_time_factor: float = 1.0, timeout: float = 240.0, param_files=None, env=None,
                   quiet: bool = False) -> int:
    """Run the demo; returns the exit code (0: explored without a false obstacle, back on the start, fastest path
    driven to the goal at the optimal cost of the explored map). Errors are printed to stderr."""
    say = (lambda *a, **k: None) if quiet else (lambda *a, **k: print(*a, **k, flush=True))
    try:
        layout = load_layout(layout_path)
    except LayoutError as exc:
        print(f'toio-nav demo --arena: {exc}', file=sys.stderr)
        return 2
    if (layout.start.x, layout.start.y, layout.start.heading, layout.goal) != (1, 1, 0, (13, 18)):
        print(f'toio-nav demo --arena: the arena_explorer node starts on (1,1) facing N and ends on (13,18); '
              f'{layout_path} has start ({layout.start.x},{layout.start.y},{layout.start.letter}) and goal '
              f'{layout.goal}', file=sys.stderr)
        return 2
    if waypoint is None:
        waypoint = layout.waypoint
    if not (real_time_factor > 0 and timeout > 0 and turn_cost >= 0):
        print('toio-nav demo --arena: real_time_factor and timeout must be > 0, turn_cost >= 0', file=sys.stderr)
        return 2
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = [Path(p).resolve() for p in param_files] if param_files else profiles.profile_files('arena')
        files.append(run_yaml(out / 'arena_run.yaml', Path(layout_path).resolve(), real_time_factor, waypoint))
        for f in files:
            if not f.is_file():
                raise ArenaDemoError(f'parameter file {f} does not exist')
    except (OSError, ArenaDemoError, profiles.BringupError) as exc:
        print(f'toio-nav demo --arena: cannot use {out}: {exc}', file=sys.stderr)
        return 2
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    try:
        return _run(layout, Path(layout_path), out, files, waypoint, turn_cost, timeout, env, say)
    except ArenaDemoError as exc:
        print(f'\ntoio-nav demo --arena: {exc}', file=sys.stderr)
        return 1


def call_trigger(client, what: str, spin_until: Callable[..., None], limit: float,
                 started: Callable[[], bool] = lambda: False, logs: str = '') -> str:
    """Call a Trigger service until it succeeds (the explorer says what it still waits for); its message.
    ``spin_until(condition, what)`` spins until ``condition()`` (raising on the caller's own deadline). An answer
    that never comes is asked for again (:mod:`toio_navigator.nodes.service_call`), and ``started()`` (arena/state
    in the mode the call starts) counts as the answer. ArenaDemoError when the service is not there, does not
    answer or still refuses after ``limit`` s (its message ends with ``logs``)."""
    end = time.monotonic() + limit
    spin_until(lambda: client.service_is_ready() or time.monotonic() > end, f'the {what} service')
    if not client.service_is_ready():
        raise ArenaDemoError(f'timed out waiting for the {what} service{logs}')
    while True:
        try:
            answer = call_until_answered(client, Trigger.Request(), spin_until, what, max(end - time.monotonic(), 0.0),
                                         started)
        except NoAnswer as exc:
            raise ArenaDemoError(f'{exc}{logs}') from None
        if answer is not None and answer.success:
            return answer.message
        if started():       # (a call made again may be refused: "already exploring")
            return f'{what}: started, as its state says'
        if time.monotonic() > end:
            raise ArenaDemoError(f'{what} refused: {answer.message}')
        pause = time.monotonic() + 0.5
        spin_until(lambda: time.monotonic() > pause, f'the answer of {what}')


def _run(layout, layout_path: Path, out: Path, files, waypoint, turn_cost, timeout, env, say) -> int:
    say(f'toio-nav demo --arena {layout_path.name}: one simulated cube explores the arena on the mat, then runs '
        f'the fastest path (waypoint {waypoint}; ROS_DOMAIN_ID {os.environ.get("ROS_DOMAIN_ID", "0")})')
    run = _ArenaRun(out / 'logs', timeout, env, say)
    outcome = run.explore_then_run(files)
    return _report(outcome, layout, layout_path, out, waypoint, turn_cost, run.started, say)


@dataclass
class _Outcome:
    """What the live run gave: the exploration's end, its map, the fastest path's end and its poses."""
    explored_state: object        # ArenaState at the end of the exploration
    explore_s: float
    explore_states: list          # every arena/state of the exploration
    explored: np.ndarray
    obstacle: np.ndarray
    final: object                 # ArenaState at the end of the fastest path
    fastest_s: float
    path: object                  # the arena/fastest_path message
    log_dir: Path


class _ArenaRun:
    """The live part: the arena bringup's nodes, the demo's node following them, the two service calls."""

    def __init__(self, log_dir: Path, timeout: float, env, say) -> None:
        self.log_dir, self.env, self.say = log_dir, env, say
        self.names = {v: k for k, v in vars(ArenaState).items() if k.isupper() and isinstance(v, int)}
        self.started = time.monotonic()
        self.stop = StopRequest()
        self.children = Children()
        self.context = rclpy.Context()
        domain = (env or os.environ).get('ROS_DOMAIN_ID')
        try:
            rclpy.init(context=self.context, **({'domain_id': int(domain)} if domain else {}))
        except Exception as exc:        # e.g. a ROS_DOMAIN_ID the middleware cannot use
            raise ArenaDemoError(f'cannot start ROS (ROS_DOMAIN_ID {domain}): {exc}') from None
        self.node = node = LeanNode('arena_demo', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(node)
        self.latest: dict = {}
        self.states: list = []     # every arena/state: the MDF after every move
        node.create_subscription(ArenaState, 'arena/state', self._on_state, STATE_QOS)
        node.create_subscription(OccupancyGrid, 'arena/map', lambda m: self.latest.__setitem__('map', m), LATCHED)
        node.create_subscription(PathMsg, 'arena/fastest_path', lambda m: self.latest.__setitem__('path', m),
                                 LATCHED)
        self.start_exploration = node.create_client(Trigger, 'arena_explorer/start_exploration')
        self.start_fastest = node.create_client(Trigger, 'arena_explorer/start_fastest_path')
        self.deadline = time.monotonic() + timeout
        self.t0 = time.monotonic()

    def _on_state(self, msg) -> None:
        self.latest['state'] = msg
        self.states.append(msg)

    def spin_until(self, condition, what: str, limit: float | None = None, progress=None) -> None:
        end = min(self.deadline, time.monotonic() + limit) if limit else self.deadline
        last = -math.inf
        while not condition():
            if self.stop:
                raise ArenaDemoError(f'stopped by {self.stop.name or "request"} while waiting for {what}')
            dead = self.children.check()
            if dead:
                raise ArenaDemoError(f'{", ".join(dead)} stopped while waiting for {what} (logs: {self.log_dir})')
            if time.monotonic() > end:
                raise ArenaDemoError(f'timed out waiting for {what} (logs: {self.log_dir})')
            self.executor.spin_once(timeout_sec=0.05)
            if progress is not None and time.monotonic() - last >= 2.0:
                last = time.monotonic()
                progress()

    def call(self, client, what: str, limit: float = 60.0, status: int | None = None) -> str:
        def started() -> bool:
            return status is not None and 'state' in self.latest and self.latest['state'].status == status
        return call_trigger(client, what, self.spin_until, limit, started, f' (logs: {self.log_dir})')

    def progress(self) -> None:
        st = self.latest.get('state')
        if st is not None:
            self.say(f'  t = {time.monotonic() - self.t0:5.1f} s   {self.names.get(st.status, st.status):<12} robot '
                     f'({st.robot_x:2d},{st.robot_y:2d},{st.heading})   explored {st.explored_count:3d}/300   moves '
                     f'{st.moves:3d}')

    def _ended(self, also=lambda st: True):
        """A condition: arena/state in a final mode (and ``also`` of it)."""
        return lambda: 'state' in self.latest and also(self.latest['state']) \
            and self.names.get(self.latest['state'].status) in FINAL

    def explore_then_run(self, files) -> _Outcome:
        """Start the nodes, explore, drive the fastest path; the nodes are stopped in order whatever happens."""
        latest, names, say = self.latest, self.names, self.say
        self.stop.install()         # SIGINT / SIGTERM / SIGHUP: stop the nodes in order and say so, no traceback
        try:
            self.children.start(profiles.plan('arena', ['cube1']), files, env=self.env, log_dir=self.log_dir)
            self.t0 = time.monotonic()
            self.call(self.start_exploration, 'arena_explorer/start_exploration', status=ArenaState.EXPLORING)
            say(f'  exploration started after {time.monotonic() - self.started:.1f} s')
            self.t0 = time.monotonic()
            self.spin_until(self._ended(), 'the exploration', progress=self.progress)
            explore_s = time.monotonic() - self.t0
            explored_state = latest['state']
            self.progress()
            say(f'  exploration: {explored_state.status_text} ({explore_s:.1f} s)')
            if names.get(explored_state.status) != 'DONE':
                raise ArenaDemoError(f'exploration ended with {names.get(explored_state.status)}: '
                                     f'{explored_state.status_text}')
            self.spin_until(lambda: 'map' in latest, 'arena/map', 5.0)
            explored, obstacle = grid_from_occupancy(latest['map'])
            latest.pop('state')
            explore_states = self.states[:len(self.states)]
            self.t0 = time.monotonic()
            message = self.call(self.start_fastest, 'arena_explorer/start_fastest_path', 10.0,
                                status=ArenaState.FASTEST_PATH)
            say(f'  {message}')
            self.spin_until(self._ended(lambda st: st.status != ArenaState.FASTEST_PATH), 'the fastest path',
                            progress=self.progress)
            fastest_s = time.monotonic() - self.t0
            final = latest['state']
            self.spin_until(lambda: 'path' in latest, 'arena/fastest_path', 5.0)
        finally:
            self.children.stop()
            self.executor.shutdown()
            self.node.destroy_node()
            rclpy.try_shutdown(context=self.context)
            self.stop.restore()
        return _Outcome(explored_state, explore_s, explore_states, explored, obstacle, final, fastest_s,
                        latest['path'], self.log_dir)


def _report(run: _Outcome, layout, layout_path: Path, out: Path, waypoint, turn_cost, started: float, say) -> int:
    """Score the run against the layout, write arena.png and result.json, print the summary; the exit code."""
    names = {v: k for k, v in vars(ArenaState).items() if k.isupper() and isinstance(v, int)}
    explored, obstacle, explored_state, final = run.explored, run.obstacle, run.explored_state, run.final
    poses = poses_from_path(run.path, ArenaMatMapping())
    truth = layout.obstacles
    false_obstacles = int(np.count_nonzero(obstacle & explored & ~truth))
    missed = int(np.count_nonzero(truth & ~(obstacle & explored)))
    cost = path_cost(poses, turn_cost)
    optimum_map = fastest_path(obstacle | ~explored, layout.start, layout.goal, waypoint, turn_cost)
    optimum_true = fastest_path(truth, layout.start, layout.goal, waypoint, turn_cost)
    back = (explored_state.robot_x, explored_state.robot_y) == (layout.start.x, layout.start.y)
    at_goal = names.get(final.status) == 'DONE' and (final.robot_x, final.robot_y) == layout.goal
    png = out / 'arena.png'
    title = (f'{layout.name or layout_path.stem}: explored {int(explored.sum())}/300, {false_obstacles} false '
             f'obstacles; fastest path cost {cost:g}')
    save_png(png, explored, obstacle, poses, truth=truth, waypoint=waypoint, title=title,
             start=(layout.start.x, layout.start.y), goal=layout.goal)
    ok = back and false_obstacles == 0 and at_goal and optimum_map.found and math.isclose(cost, optimum_map.cost)
    result = {
        'format': 'toio-arena-demo/1', 'layout': str(layout_path), 'ok': ok,
        'exploration': {'status': names.get(explored_state.status), 'seconds': round(run.explore_s, 2),
                        'moves': explored_state.moves, 'explored_count': explored_state.explored_count,
                        'returned_to_start': back, 'false_obstacles': false_obstacles, 'missed_obstacles': missed,
                        'mdf_part1': explored_state.mdf_part1, 'mdf_part2': explored_state.mdf_part2,
                        'states': [[m.moves, names.get(m.status), m.robot_x, m.robot_y, m.heading, m.mdf_part1,
                                    m.mdf_part2] for m in run.explore_states]},
        'fastest_path': {'status': names.get(final.status), 'seconds': round(run.fastest_s, 2), 'cost': cost,
                         'optimum_on_map': optimum_map.cost_value, 'optimum_on_layout': optimum_true.cost_value,
                         'on_goal': at_goal, 'poses': [p.as_list() for p in poses],
                         'robot': [final.robot_x, final.robot_y, final.heading]},
        'picture': str(png),
    }
    (out / 'result.json').write_text(json.dumps(result, indent=1) + '\n')
    say('summary')
    for line in (
            f'exploration:       {run.explore_s:.1f} s, {explored_state.moves} moves, explored '
            f'{explored_state.explored_count}/300 cells, back on the start: {"yes" if back else "NO"}',
            f'map vs layout:     {false_obstacles} false obstacles, {missed} true obstacle cells not (yet) mapped',
            f'MDF part 1:        {explored_state.mdf_part1}',
            f'MDF part 2:        {explored_state.mdf_part2}',
            f'fastest path:      cost {cost:g} (optimum on the explored map {optimum_map.cost_value}, on the full '
            f'layout {optimum_true.cost_value}), {len(poses)} poses, {run.fastest_s:.1f} s, '
            f'{"on the goal" if at_goal else "NOT on the goal: " + final.status_text}',
            f'picture:           {png} (result: {out / "result.json"})',
            f'total run:         {time.monotonic() - started:.1f} s; node logs in {run.log_dir}'):
        say('  ' + line)
    return 0 if ok else 1
