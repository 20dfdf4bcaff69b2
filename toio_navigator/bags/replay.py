"""Replay a recorded run through a fresh navigator and compare what it decides with what was recorded.

Offline, through the core: the bag's ``<cube>/state`` and ``<cube>/goal`` messages go into a new
:class:`~toio_navigator.nodes.navigator.SwarmController` at the recorded tick times (``NavResult.header.stamp``),
and every recorded ``<cube>/nav_result`` and ``<cube>/motor_cmd`` is compared field by field, within tolerances,
with the controller's decision of the same tick. The first divergence names the time, topic, field and both
values. No rclpy: bags are read with rosbags.

What the replay assumes, because a bag does not say it (see the module's report for the proposed fix):
  * the states the navigator used at a tick are the latest ones stamped (``CubeState.header.stamp``, the driver's
    receive time) before the tick's stamp; a state stamped within ``ambiguity_s`` of the tick may instead have
    arrived just after it, and when the first choice diverges the other is tried (counted in the report);
  * the controller's clock is the ROS clock of the stamps (the node uses ``time.monotonic``, which only differs by
    a constant offset and microseconds of jitter), and a state counts as received at its stamp;
  * a goal takes effect at the first tick whose NavResult shows its ``goal_id`` (else the first tick after the
    recorder received it); goals sent through the ``navigator/set_goal`` service are in no bag, so they must be
    given with ``extra_goals`` (:func:`demo_swap_goals` rebuilds the demo's);
  * a MotorCommand (no header) belongs to the tick of the same cube's NavResult received nearest to it.
"""
from __future__ import annotations

import copy
import inspect
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toio_navigator.nodes.navigator import (SETTING_PARAMETERS, CubeHandleParams, NavigatorParams,
                                            NavigatorSettings, SwarmController, apply_reference_parameter,
                                            coerce_setting, reference_parameters)

PARAMETERS_KEY = 'toio_navigator.navigator_parameters'     # custom_data written by `toio-nav record`
NAV_FIELDS = ('goal_id', 'active', 'waypoint_x', 'waypoint_y', 'speed_limit', 'speed_ratio', 'collision',
              'reached', 'mode', 'planner')
MOTOR_FIELDS = ('left', 'right', 'duration_ms')
FLOAT_FIELDS = ('waypoint_x', 'waypoint_y', 'speed_limit', 'speed_ratio')
AGE_SHIFT = 0.0
UNSEEN = -1e4                        # SwarmController's position (and waypoint) of a cube it has no state of
DEFAULT_FLOAT_TOLERANCE = 1e-6       # same code, same float64 inputs: only rounding noise is forgiven
NODE_ONLY_PARAMETERS = ('markers_every', 'tick_on_fresh_states', 'use_sim_time', 'start_type_description_service')


class ReplayError(ValueError):
    """The bag or the replay configuration cannot be used (message names the problem)."""


# ------------------------------------------------------------------------------------------------ the recording

@dataclass(frozen=True)
class StateIn:
    stamp_ns: int
    bag_ns: int              # when the recorder received it: the best estimate of the navigator's arrival time
    cube: str
    x: float
    y: float
    theta: float
    on_mat: bool
    link_state: int


@dataclass(frozen=True)
class GoalIn:
    bag_ns: int
    cube: str
    goal_id: int
    msg_cube: str
    x: float
    y: float
    direction: int
    max_speed: float = 0.0
    tolerance: float = 0.0


@dataclass
class Tick:
    """One control tick of the recorded navigator: its NavResults (per cube) and the MotorCommands it sent."""
    stamp_ns: int
    results: dict[str, dict] = field(default_factory=dict)
    result_bag_ns: dict[str, int] = field(default_factory=dict)


@dataclass
class Recording:
    path: Path
    cubes: list[str]
    states: list[StateIn]
    goals: list[GoalIn]
    ticks: list[Tick]
    motors: dict[str, list[tuple[int, int, int]]]     # per cube, in the order the navigator sent them
    start_ns: int
    end_ns: int
    parameters: dict | None                 # the navigator's parameters stored by `toio-nav record`, if any
    notes: list[str] = field(default_factory=list)


_TOPIC = re.compile(r'^/(?P<cube>[A-Za-z_][A-Za-z0-9_]*)/(?P<kind>state|goal|nav_result|motor_cmd)$')
_TYPES = {'state': 'CubeState', 'goal': 'NavGoal', 'nav_result': 'NavResult', 'motor_cmd': 'MotorCommand'}


def _natural(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r'(\d+)', name)]


def _stamp_ns(msg) -> int:
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def bag_custom_data(path: Path) -> dict:
    """custom_data of a bag directory's metadata.yaml ({} for a bare .mcap or none)."""
    import yaml

    meta = Path(path) / 'metadata.yaml'
    if not meta.is_file():
        return {}
    try:
        info = yaml.safe_load(meta.read_text()) or {}
        return dict(info.get('rosbag2_bagfile_information', {}).get('custom_data') or {})
    except (yaml.YAMLError, AttributeError, TypeError) as exc:
        raise ReplayError(f'{meta}: not a readable rosbag2 metadata file: {exc}') from None


def open_reader(path: str | Path):
    """A rosbags AnyReader for a bag directory or a bare .mcap, or ReplayError naming the problem."""
    from rosbags.highlevel import AnyReader

    path = Path(path)
    if not path.exists():
        raise ReplayError(f'{path}: no such bag (a rosbag2 directory or an .mcap file)')
    try:
        reader = AnyReader([path])
        reader.open()
    except Exception as exc:   # rosbags raises several unrelated types for unreadable input
        raise ReplayError(f'{path}: not a readable rosbag2 bag: {exc}') from None
    return reader


def read_recording(path: str | Path) -> Recording:
    """The navigator's inputs and outputs in a bag (every ``/<cube>/{state,goal,nav_result,motor_cmd}``)."""
    path = Path(path)
    reader = open_reader(path)
    try:
        conns = []
        for c in reader.connections:
            m = _TOPIC.match(c.topic)
            if m and c.msgtype.endswith('/' + _TYPES[m['kind']]):
                conns.append(c)
        states, goals, results, motors = [], [], [], []
        start, end = reader.start_time, reader.end_time
        # (rosbags reads every connection when given an empty list)
        for conn, bag_ns, raw in (reader.messages(connections=conns) if conns else ()):
            m = _TOPIC.match(conn.topic)
            cube, kind = m['cube'], m['kind']
            try:
                msg = reader.deserialize(raw, conn.msgtype)
            except Exception as exc:
                raise ReplayError(f'{path}: cannot decode a {conn.msgtype} on {conn.topic}: {exc}') from None
            if kind == 'state':
                states.append(StateIn(_stamp_ns(msg), bag_ns, cube, float(msg.x), float(msg.y), float(msg.theta),
                                      bool(msg.on_mat), int(msg.link_state)))
            elif kind == 'goal':
                goals.append(GoalIn(bag_ns, cube, int(msg.goal_id), str(msg.cube), float(msg.x), float(msg.y),
                                    int(msg.direction), float(msg.max_speed), float(msg.tolerance)))
            elif kind == 'nav_result':
                results.append((_stamp_ns(msg), bag_ns, cube, {f: _plain(getattr(msg, f)) for f in NAV_FIELDS}))
            else:
                motors.append((bag_ns, cube, (int(msg.left), int(msg.right), int(msg.duration_ms))))
    finally:
        reader.close()
    if not results:
        raise ReplayError(f'{path}: no /<cube>/nav_result messages: nothing to compare (record the navigator\'s '
                          'outputs too)')
    if not states:
        raise ReplayError(f'{path}: no /<cube>/state messages: the navigator\'s inputs were not recorded')
    custom = bag_custom_data(path) if path.is_dir() else {}
    parameters = None
    if PARAMETERS_KEY in custom:
        try:
            parameters = json.loads(custom[PARAMETERS_KEY])
        except (TypeError, ValueError) as exc:
            raise ReplayError(f'{path}: custom_data {PARAMETERS_KEY} is not JSON: {exc}') from None
    cubes = sorted({r[2] for r in results}, key=_natural)
    if parameters and isinstance(parameters.get('cubes'), list):
        cubes = [str(c) for c in parameters['cubes']]
    rec = Recording(path, cubes, sorted(states, key=lambda s: s.stamp_ns), goals, [], {}, start, end, parameters)
    rec.ticks = _ticks(results, rec.notes)
    rec.motors = _motor_sequences(motors, rec.ticks, rec.notes)
    return rec


def _plain(value):
    return value.item() if hasattr(value, 'item') else value


def _ticks(results, notes: list[str]) -> list[Tick]:
    by_stamp: dict[int, Tick] = {}
    doubled = 0
    for stamp, bag_ns, cube, fields_ in results:
        tick = by_stamp.setdefault(stamp, Tick(stamp))
        if cube in tick.results:
            doubled += 1
            continue
        tick.results[cube] = fields_
        tick.result_bag_ns[cube] = bag_ns
    if doubled:
        notes.append(f'{doubled} NavResults repeat a cube within one tick stamp; only the first is compared')
    return [by_stamp[s] for s in sorted(by_stamp)]


def _motor_sequences(motors, ticks: list[Tick], notes: list[str]) -> dict[str, list[tuple[int, int, int]]]:
    """Each cube's MotorCommands in the order sent. A MotorCommand has no header, and a busy recorder receives
    the two topics in batches, so commands are matched to ticks by order during the replay, not by time; the
    ones received before the cube's first recorded NavResult belong to ticks the bag does not hold."""
    first = {}
    for t in ticks:
        for cube, bag_ns in t.result_bag_ns.items():
            first[cube] = min(first.get(cube, bag_ns), bag_ns)
    out: dict[str, list] = {}
    dropped = 0
    for bag_ns, cube, motor in motors:
        if cube not in first or bag_ns < first[cube] - 5_000_000:
            dropped += 1
            continue
        out.setdefault(cube, []).append(motor)
    if dropped:
        notes.append(f'{dropped} MotorCommands from before the first recorded NavResult of their cube are ignored')
    return out


# ------------------------------------------------------------------------------------------------ configuration

def read_parameter_files(paths) -> dict:
    """The navigator's parameters from ROS parameter YAML files (sections ``/**`` and ``navigator``), later
    files overriding earlier ones."""
    import yaml

    out: dict = {}
    for p in paths:
        p = Path(p)
        try:
            doc = yaml.safe_load(p.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ReplayError(f'parameter file {p}: {exc}') from None
        if not isinstance(doc, dict):
            raise ReplayError(f'parameter file {p}: not a mapping of node names')
        for section in ('/**', 'navigator', '/navigator', '/**/navigator'):
            params = (doc.get(section) or {}).get('ros__parameters') if isinstance(doc.get(section), dict) else None
            if isinstance(params, dict):
                out.update(params)
    return out


def parse_override(text: str) -> tuple[str, object]:
    """'name=value' (value in YAML: 3, 0.5, true, [1, 2], AVOID) -> (name, value)."""
    import yaml

    name, sep, value = text.partition('=')
    if not sep or not name.strip():
        raise ReplayError(f'--set {text!r}: expected name=value, e.g. avoid.margin=30')
    try:
        return name.strip(), yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise ReplayError(f'--set {text!r}: bad value: {exc}') from None


def navigator_config(parameters: dict, cubes: list[str], overrides: dict | None = None):
    """(NavigatorSettings, NavigatorParams, CubeHandleParams) from flat ROS parameters plus overrides.

    Unknown override names are an error (a typo must not silently replay the unchanged navigator)."""
    params, handle = NavigatorParams(), CubeHandleParams()
    known_reference = reference_parameters(params, handle)
    merged = dict(parameters)
    for name, value in (overrides or {}).items():
        if name not in SETTING_PARAMETERS and name not in known_reference:
            raise ReplayError(f'--set {name}: not a navigator parameter (e.g. avoid.margin, max_speed, mode)')
        merged[name] = value
    settings = NavigatorSettings()
    merged.setdefault('cubes', list(cubes))
    try:
        for name in SETTING_PARAMETERS:
            if name in merged:
                setattr(settings, name, coerce_setting(name, merged[name]))
        settings.check()
        for name, value in merged.items():
            if name in known_reference:
                params, handle = apply_reference_parameter(params, handle, name, value)
    except ValueError as exc:
        raise ReplayError(f'navigator parameter {exc}') from None
    missing = [c for c in cubes if c not in settings.cubes]
    if missing:
        raise ReplayError(f'the bag has cubes {missing} that the navigator parameters do not list '
                          f'(cubes: {list(settings.cubes)})')
    return settings, params, handle


def default_parameter_files() -> list[Path]:
    """The package's config/navigator.yaml (the bringup's defaults), if present."""
    from toio_navigator.nodes.bringup import config_dir

    try:
        path = config_dir() / 'navigator.yaml'
    except ValueError:
        return []
    return [path] if path.is_file() else []


# ------------------------------------------------------------------------------------------------ goals not in bags

def demo_swap_goals(rec: Recording, mat_rect=(45.0, 45.0, 455.0, 455.0)) -> list[GoalIn]:
    """The goals `toio-nav demo` sent through navigator/set_goal (not recorded): each cube's position before its
    goal took effect, mirrored through the mat centre (demo_cli.swap_goals), with the goal_id its NavResults show."""
    from toio_navigator.demo_cli import swap_goals

    out = []
    for cube in rec.cubes:
        first = next((t for t in rec.ticks if t.results.get(cube, {}).get('goal_id')), None)
        if first is None:
            continue
        before = [s for s in rec.states if s.cube == cube and s.stamp_ns < first.stamp_ns]
        if not before:
            continue
        gx, gy = swap_goals(np.array([[before[-1].x, before[-1].y]]), mat_rect)[0]
        # bag_ns just before the tick: applied right before the first tick that shows the id
        out.append(GoalIn(first.stamp_ns - 1, cube, int(first.results[cube]['goal_id']), cube, float(gx),
                          float(gy), 0))
    return out


# ------------------------------------------------------------------------------------------------ comparison

@dataclass(frozen=True)
class Divergence:
    time_s: float            # since the start of the bag
    stamp_ns: int            # the tick's stamp
    topic: str
    field: str
    recorded: object
    replayed: object

    def describe(self) -> str:
        return (f'first divergence at t={self.time_s:.3f} s (tick stamp {self.stamp_ns / 1e9:.9f}): {self.topic} '
                f'field {self.field}: recorded {_show(self.recorded)}, replayed {_show(self.replayed)}')


def _show(v) -> str:
    if isinstance(v, float):
        return f'{v:.6g}'
    return repr(v) if isinstance(v, str) else str(v)


@dataclass
class ReplayReport:
    bag: Path
    ticks: int = 0
    compared: dict[str, int] = field(default_factory=lambda: {'nav_result': 0, 'motor_cmd': 0})
    diverged: dict[str, int] = field(default_factory=lambda: {'nav_result': 0, 'motor_cmd': 0})
    divergences: list[Divergence] = field(default_factory=list)     # the first few, in time order
    ambiguous_resolved: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def summary(self) -> str:
        lines = [f'replay of {self.bag}: {self.ticks} ticks, {self.compared["nav_result"]} nav_result and '
                 f'{self.compared["motor_cmd"]} motor_cmd messages compared']
        if self.ok:
            lines.append('zero divergence')
        else:
            lines.append(self.first.describe())
            lines.append(f'diverging messages: nav_result {self.diverged["nav_result"]}, motor_cmd '
                         f'{self.diverged["motor_cmd"]}')
        if self.ambiguous_resolved:
            lines.append(f'{self.ambiguous_resolved} ticks matched only with a state stamped just before the tick '
                         'treated as arriving after it')
        lines += [f'note: {n}' for n in self.notes]
        return '\n'.join(lines)


def _compare(tick: Tick, commands, rec: Recording, tol: dict, settings, sent: dict,
             forced: list) -> list[Divergence]:
    """Every differing field of one tick (NavResult first, then MotorCommand, in cube order). ``sent``: per cube,
    how many recorded MotorCommands earlier ticks consumed; advanced for every command the replay sends.
    ``forced`` receives (cube, recorded command) for every command both sent."""
    out = []
    t = (tick.stamp_ns - rec.start_ns) / 1e9
    by_cube = {c.cube: c for c in commands}
    for cube in rec.cubes:
        recorded = tick.results.get(cube)
        cmd = by_cube.get(cube)
        if recorded is None or cmd is None:
            continue
        mine = dict(goal_id=cmd.goal_id, active=cmd.active, waypoint_x=cmd.waypoint[0], waypoint_y=cmd.waypoint[1],
                    speed_limit=cmd.speed_limit, speed_ratio=cmd.speed_ratio, collision=cmd.collision,
                    reached=cmd.reached, mode=settings.mode, planner=settings.planner)
        for f in NAV_FIELDS:
            a, b = recorded[f], mine[f]
            if f in FLOAT_FIELDS:
                same = (a == b) or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tol.get(f, tol['*']))
            else:
                same = a == b
            if not same:
                out.append(Divergence(t, tick.stamp_ns, f'/{cube}/nav_result', f, a, b))
        if cmd.motor is None:
            continue
        topic = f'/{cube}/motor_cmd'
        queue = rec.motors.get(cube, [])
        k = sent.get(cube, 0)
        sent[cube] = k + 1
        if k >= len(queue):
            out.append(Divergence(t, tick.stamp_ns, topic, '(message)', 'none (no more recorded)', 'sent'))
            continue
        for f, a, b in zip(MOTOR_FIELDS, queue[k], cmd.motor):
            if abs(a - b) > tol.get(f, 0):
                out.append(Divergence(t, tick.stamp_ns, topic, f, a, b))
        forced.append((cube, queue[k]))
    return out


# ------------------------------------------------------------------------------------------------ offline replay

@dataclass
class _Snapshot:
    """Everything the replay carries from one tick to the next."""
    ctrl: SwarmController
    pending: list[StateIn]          # states stamped before the next tick but not yet given to the controller
    si: int                         # next state of rec.states to look at
    seen: frozenset                 # cubes that have had a state
    sent: dict                      # per cube: recorded MotorCommands consumed
    age_ub: dict                    # per cube: upper bound of the controller's smoothed state age


@dataclass
class _Frame:
    """One replayed tick: where it started, the choices not yet tried, and what the chosen one gave."""
    k: int
    before: _Snapshot
    choices: object                 # iterator of (after, deferred, diffs, compared, motors)
    after: _Snapshot | None = None
    deferred: frozenset = frozenset()
    diffs: list = field(default_factory=list)
    compared: bool = False
    motors: int = 0


def replay_recording(rec: Recording, settings: NavigatorSettings, params: NavigatorParams,
                     handle: CubeHandleParams, *, tolerances: dict | None = None, extra_goals=(),
                     ambiguity_s: float = 0.05, max_trials: int = 64, lookback: int = 3,
                     max_backtracks: int = 8, resync: bool = True, keep: int = 20) -> ReplayReport:
    """Drive a fresh SwarmController with the recorded inputs at the recorded ticks and compare its outputs.

    Which states arrived before a tick is not recorded: the replay first assumes every state stamped before the
    tick, and if that diverges tries treating the last states (stamped within ``ambiguity_s``) as late; if no
    choice matches it revisits the choices of up to ``lookback`` earlier ticks (a wrong choice can match one tick
    and diverge later). With ``resync`` the controller's memory of the commands it sent is set to the recorded
    commands after each tick, so a tolerated or reported difference does not snowball into every later tick.
    Ticks before every cube has a recorded state are a warm-up: stepped, not compared, and
    the recorded motor commands replace the replay's (the navigator had inputs from before the recording)."""
    report = ReplayReport(rec.path, notes=list(rec.notes))
    tol = {'*': DEFAULT_FLOAT_TOLERANCE, **(tolerances or {})}
    t0 = rec.start_ns = min([rec.start_ns] + [t.stamp_ns for t in rec.ticks[:1]] + [s.stamp_ns for s in rec.states[:1]])
    now = [0.0]
    ctrl = SwarmController(settings, params, handle, clock=lambda: now[0])
    takes_age = 'age' in inspect.signature(ctrl.update_state).parameters
    goals = _schedule_goals(list(rec.goals) + list(extra_goals), rec.ticks)
    inferred = [0]

    # the navigator may have missed the first states the recorder got (discovery at start-up): compare only from
    # the first tick whose NavResults show every cube seen (an unseen cube's waypoint is the far-away placeholder)
    first_seen_by_navigator = next((k for k, t in enumerate(rec.ticks) if len(t.results) == len(rec.cubes) and all(
        r['waypoint_x'] != UNSEEN for r in t.results.values())), 0)
    diverged = [False]        # after the first real divergence the later ticks get no search (speed)

    def choices(k: int, snap: _Snapshot):
        tick = rec.ticks[k]
        pending, si = list(snap.pending), snap.si
        while si < len(rec.states) and rec.states[si].stamp_ns < tick.stamp_ns:
            pending.append(rec.states[si])
            si += 1
        tick_s = (tick.stamp_ns - t0) / 1e9
        compare = k >= first_seen_by_navigator and \
            all(c in snap.seen or any(s.cube == c for s in pending) for c in rec.cubes)
        trials = max_trials if compare and not diverged[0] else 1
        motor_only = []               # (pre-step controller, deferred, age bound, diffs): age search, second pass
        for deferred in _deferral_choices(pending, tick.stamp_ns, ambiguity_s, trials):
            trial = _clone(snap.ctrl)
            for g in goals.get(k, ()):
                reason = trial.set_goal(g.cube, g.goal_id, g.x, g.y, g.direction, g.max_speed, g.tolerance,
                                        msg_cube=g.msg_cube)
                if reason and not deferred:
                    report.notes.append(f'goal {g.goal_id} for {g.cube} rejected in the replay: {reason}')
            age_ub = dict(snap.age_ub)
            for s in pending:
                if s not in deferred:
                    now[0] = (s.stamp_ns - t0) / 1e9
                    extra = {'age': max(0.0, (s.bag_ns - s.stamp_ns) / 1e9)} if takes_age else {}
                    trial.update_state(s.cube, s.x, s.y, s.theta, s.on_mat, s.link_state, **extra)
                    # it arrived before this tick: its age on arrival was at most tick - stamp (smoothed alike)
                    age_ub[s.cube] = 0.8 * age_ub.get(s.cube, 0.0) + 0.2 * (tick.stamp_ns - s.stamp_ns) / 1e9
            now[0] = tick_s
            pre = _clone(trial) if compare and takes_age and not diverged[0] else None
            commands = trial.step(tick_s)
            sent = dict(snap.sent)
            if compare:
                forced: list = []
                diffs = _compare(tick, commands, rec, tol, trial.settings, sent, forced)
                if diffs and pre is not None and all(d.topic.endswith('motor_cmd') for d in diffs):
                    motor_only.append((pre, deferred, age_ub, diffs))
            else:
                diffs, forced = [], []
                _adopt_recorded_motors(trial, rec, tick, tick_s, sent)
            yield finish(trial, commands, sent, forced, deferred, age_ub, diffs, compare, pending, si, snap, tick_s)
        for pre, deferred, age_ub, diffs in motor_only:
            found = _infer_ages(pre, tick, tick_s, rec, tol, snap.sent, age_ub, diffs)
            if found is not None:
                inferred[0] += 1
                trial, commands, sent, forced = found
                yield finish(trial, commands, sent, forced, deferred, age_ub, [], True, pending, si, snap, tick_s)

    def finish(trial, commands, sent, forced, deferred, age_ub, diffs, compare, pending, si, snap, tick_s):
        if resync:     # the cubes got the recorded commands: the next tick's motion model uses them
            for cube, (left, right, duration_ms) in forced:
                i = trial.index[cube]
                trial.last_cmd[i] = (left, right)
                trial.last_cmd_until[i] = tick_s + duration_ms / 1000.0
        after = _Snapshot(trial, [s for s in pending if s in deferred], si,
                          snap.seen | {s.cube for s in pending if s not in deferred}, sent, age_ub)
        return after, deferred, diffs, compare, sum(1 for c in commands if c.motor is not None)

    frames: list[_Frame] = []
    snap = _Snapshot(ctrl, [], 0, frozenset(), {}, {})
    floor = 0                          # frames below this index are final (a divergence was accepted there)
    backtracks = 0
    k = 0
    frame = _Frame(0, snap, choices(0, snap)) if rec.ticks else None
    while frame is not None:
        found = next((c for c in frame.choices if not c[2]), None)
        if found is None and backtracks < max_backtracks and not diverged[0]:
            # no choice explains this tick: maybe an earlier tick took a wrong one that happened to match
            j = len(frames) - 1
            while j >= max(floor, len(frames) - lookback):
                alt = next((c for c in frames[j].choices if not c[2]), None)
                if alt is not None:
                    backtracks += 1
                    frame = frames[j]
                    del frames[j:]
                    found = alt
                    break
                j -= 1
        if found is None:              # a real divergence: keep the first choice's outcome
            frame.choices = choices(frame.k, frame.before)
            found = next(frame.choices)
            floor = len(frames) + 1
            diverged[0] = True
        frame.after, frame.deferred, frame.diffs, frame.compared, frame.motors = found
        frames.append(frame)
        k = frame.k + 1
        frame = _Frame(k, frame.after, choices(k, frame.after)) if k < len(rec.ticks) else None

    sent = frames[-1].after.sent if frames else {}
    warmup = 0
    for fr in frames:
        if not fr.compared:
            warmup += 1
            continue
        tick = rec.ticks[fr.k]
        report.ticks += 1
        report.ambiguous_resolved += bool(fr.deferred)
        report.compared['nav_result'] += sum(1 for c in rec.cubes if c in tick.results)
        report.compared['motor_cmd'] += fr.motors
        for kind in ('nav_result', 'motor_cmd'):
            report.diverged[kind] += len({d.topic for d in fr.diffs if d.topic.endswith(kind)})
        if len(report.divergences) < keep:
            report.divergences += fr.diffs[:keep - len(report.divergences)]
    if diverged[0]:
        report.notes.append('after the first divergence, late states and ages were not searched: later counts '
                            'are upper bounds')
    if warmup:
        report.notes.append(f'{warmup} leading ticks not compared: some cube had no state yet (in the bag, or in the '
                            'navigator according to its NavResults)')
    if inferred[0]:
        report.notes.append(f'{inferred[0]} ticks matched only with a state age (arrival delay, not recorded) other '
                            'than the recorder\'s, within what the tick times allow')
    if backtracks:
        report.notes.append(f'{backtracks} times an earlier tick\'s choice of late states was revisited')
    unmatched = {c: len(q) - sent.get(c, 0) for c, q in rec.motors.items() if len(q) - sent.get(c, 0) > 1}
    if unmatched:
        report.notes.append('recorded MotorCommands the replay never sent: ' +
                            ', '.join(f'{c} {n}' for c, n in sorted(unmatched.items())))
    _completeness(rec, report)
    return report


def _clone(ctrl: SwarmController) -> SwarmController:
    """A copy of the controller's run-time state; the parameter objects (never changed by a replay) are shared."""
    shared = (ctrl.params, ctrl.handle, ctrl.settings, ctrl.walls)
    return copy.deepcopy(ctrl, memo={id(o): o for o in shared})


def _infer_ages(pre: SwarmController, tick: Tick, tick_s: float, rec: Recording, tol: dict, sent0: dict,
                age_ub: dict, diffs: list, grid_s: float = 0.0005, limit: int = 80):
    """The navigator smooths how old each state was on arrival (not recorded; the replay's first guess is the
    recorder's arrival time) and predicts the pose that much further. For each cube whose motor command differs,
    try other ages the tick times allow (0 .. age_ub, nearest to the guess first); a cube's command depends on its
    own age only. Returns (controller, commands, sent, forced) for the whole tick, or None."""
    cubes = sorted({d.topic.split('/')[1] for d in diffs})
    chosen = {}
    for c in cubes:
        i = pre.index[c]
        base = float(pre.age[i])
        ub = max(age_ub.get(c, 0.0), base)
        grid = sorted((j * grid_s for j in range(int(ub / grid_s) + 1)), key=lambda a: abs(a - base))[:limit]
        for a in grid + [ub]:
            trial = _clone(pre)
            trial.age[i] = a
            commands = trial.step(tick_s)
            sent, forced = dict(sent0), []
            if not any(d.topic == f'/{c}/motor_cmd'
                       for d in _compare(tick, commands, rec, tol, trial.settings, sent, forced)):
                chosen[c] = a
                break
        else:
            return None
    trial = _clone(pre)
    for c, a in chosen.items():
        trial.age[trial.index[c]] = a
    commands = trial.step(tick_s)
    sent, forced = dict(sent0), []
    if _compare(tick, commands, rec, tol, trial.settings, sent, forced):
        return None
    return trial, commands, sent, forced


def _deferral_choices(pending: list[StateIn], tick_ns: int, window_s: float, limit: int):
    """Sets of pending states to treat as arriving after the tick: per cube, its last 0, 1, ... states stamped
    within ``window_s`` (one publisher's messages arrive in order), fewest and latest first; then, since a busy
    navigator receives a whole burst late, every state stamped after a cut (cuts ever earlier in the window)."""
    yield frozenset()
    if limit <= 1:
        return
    late = [s for s in pending if tick_ns - s.stamp_ns <= window_s * 1e9]
    tried = {frozenset()}
    by_cube: dict[str, list[StateIn]] = {}
    for s in late:
        by_cube.setdefault(s.cube, []).append(s)

    def likelihood(c):
        return len(c), sum(tick_ns - s.stamp_ns for s in c)

    combos = [frozenset()]
    for v in by_cube.values():
        opts = [frozenset(v[len(v) - n:]) for n in range(len(v) + 1)]
        combos = sorted((c | o for c in combos for o in opts), key=likelihood)[:4 * limit]
    for c in [c for c in combos if c not in tried][:limit - 1]:
        tried.add(c)
        yield c
    for cut in sorted({s.stamp_ns for s in late}, reverse=True):
        c = frozenset(s for s in late if s.stamp_ns >= cut)
        if c not in tried:
            tried.add(c)
            yield c


def _adopt_recorded_motors(ctrl: SwarmController, rec: Recording, tick: Tick, tick_s: float, sent: dict) -> None:
    """During the warm-up the recorded commands are what the cubes got (an active cube gets one every tick): the
    controller's motion model uses them instead of its own."""
    for cube, result in tick.results.items():
        i = ctrl.index.get(cube)
        queue = rec.motors.get(cube, [])
        if i is None or not result.get('active') or sent.get(cube, 0) >= len(queue):
            continue
        left, right, duration_ms = queue[sent.get(cube, 0)]
        sent[cube] = sent.get(cube, 0) + 1
        ctrl.last_cmd[i] = (left, right)
        ctrl.last_cmd_until[i] = tick_s + duration_ms / 1000.0


def _schedule_goals(goals: list[GoalIn], ticks: list[Tick]) -> dict[int, list[GoalIn]]:
    """Tick index before which each goal is applied: the first tick showing its goal_id near where the recorder
    received it, else the first tick stamped after that."""
    stamps = np.array([t.stamp_ns for t in ticks], dtype=np.int64)
    out: dict[int, list[GoalIn]] = {}
    for g in sorted(goals, key=lambda g: g.bag_ns):
        k0 = int(np.searchsorted(stamps, g.bag_ns, side='right'))
        k = k0
        if g.goal_id and g.direction != 2:
            shows = [j for j in range(max(0, k0 - 3), min(len(ticks), k0 + 4))
                     if ticks[j].results.get(g.cube, {}).get('goal_id') == g.goal_id
                     and (j == 0 or ticks[j - 1].results.get(g.cube, {}).get('goal_id') != g.goal_id)]
            if shows:
                k = shows[0]
        if k < len(ticks):
            out.setdefault(k, []).append(g)
    return out


def _completeness(rec: Recording, report: ReplayReport) -> None:
    """Notes on what the recording lost (lost inputs make divergences that are not the navigator's)."""
    partial = sum(1 for t in rec.ticks if len(t.results) < len(rec.cubes))
    if partial:
        report.notes.append(f'{partial} of {len(rec.ticks)} ticks lack some cube\'s NavResult (messages lost '
                            'while recording?)')
    behind = (rec.end_ns - rec.ticks[-1].stamp_ns) / 1e9 if rec.ticks else 0.0
    if behind > 1.0:
        report.notes.append(f'the last recorded NavResult is stamped {behind:.1f} s before the bag ends: the '
                            'recorder fell behind and the rest never reached the bag (record in a process of its '
                            'own: toio-nav record)')
    if len(rec.ticks) > 2:
        gaps = np.diff([t.stamp_ns for t in rec.ticks]) / 1e9
        rate = 20.0
        if rec.parameters and isinstance(rec.parameters.get('rate_hz'), (int, float)):
            rate = float(rec.parameters['rate_hz'])
        big = int(np.count_nonzero(gaps > 2.5 / rate))
        if np.median(gaps) > 1.5 / rate:
            report.notes.append(f'the recorded ticks are {np.median(gaps) * 1000:.0f} ms apart (median) while the '
                                f'navigator ticks every {1000 / rate:.0f} ms: about '
                                f'{100 * (1 - 1 / (np.median(gaps) * rate)):.0f}% of the ticks were lost while '
                                'recording, so the replay cannot follow the navigator')
        elif big:
            report.notes.append(f'{big} gaps between recorded ticks longer than {2.5 / rate:.3f} s (largest '
                                f'{gaps.max():.3f} s): ticks were lost while recording, or the navigator stalled')


def replay_bag(bag: str | Path, *, parameter_files=(), overrides: dict | None = None,
               tolerances: dict | None = None, demo_goals: bool = False, keep: int = 20) -> ReplayReport:
    """Read ``bag``, build the navigator it ran (parameters stored in the bag, else ``parameter_files``, else
    config/navigator.yaml) with ``overrides``, and replay it offline. ReplayError for unusable input."""
    rec = read_recording(bag)
    if parameter_files:
        parameters = read_parameter_files(parameter_files)
    elif rec.parameters is not None:
        parameters = rec.parameters
    else:
        parameters = read_parameter_files(default_parameter_files())
        rec.notes.append('the bag holds no navigator parameters; used config/navigator.yaml')
        parameters['cubes'] = list(rec.cubes)      # navigator.yaml lists a placeholder cube
    parameters = {k: v for k, v in parameters.items() if k not in NODE_ONLY_PARAMETERS}
    settings, params, handle = navigator_config(parameters, rec.cubes, overrides)
    extra = demo_swap_goals(rec, settings.mat_rect) if demo_goals else []
    if not rec.goals and not extra and any(r.get('goal_id') for t in rec.ticks for r in t.results.values()):
        rec.notes.append('the NavResults pursue goals that are not in the bag (sent through navigator/set_goal?); '
                         'use --demo-goals for a `toio-nav demo` bag')
    return replay_recording(rec, settings, params, handle, tolerances=tolerances, extra_goals=extra, keep=keep)
