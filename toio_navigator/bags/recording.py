"""A recorded run of the navigator, as the replay reads it from a bag (offline, with rosbags; no rclpy).

The navigator's inputs and outputs are every ``/<cube>/{state,goal,nav_result,motor_cmd}``: each NavResult
names the state its tick used (``state_stamp``, and a copy in its ``state_*`` fields) and the goal it pursued,
so :func:`read_recording` groups them into the navigator's ticks and the MotorCommands those ticks sent.
``toio-nav record`` stores the navigator's parameters in the bag's ``custom_data`` (:func:`stored_parameters`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from rosbags.highlevel import AnyReader

from toio_navigator.bags.repair import diagnose
from toio_navigator.input_files import InputError, load_json, load_yaml, read_text

PARAMETERS_KEY = 'toio_navigator.navigator_parameters'     # custom_data written by `toio-nav record`
NAV_FIELDS = ('goal_id', 'active', 'waypoint_x', 'waypoint_y', 'speed_limit', 'speed_ratio', 'collision',
              'reached', 'mode', 'planner')
#: what a NavResult records of the tick's inputs (the state used, the goal pursued)
INPUT_FIELDS = ('state_stamp', 'goal_x', 'goal_y', 'direction', 'max_speed', 'tolerance')
#: the copy of the state used (NavResults recorded before it was added lack it: the bag's states must do)
STATE_FIELDS = ('state_x', 'state_y', 'state_theta', 'state_on_mat', 'state_link_state')


class ReplayError(ValueError):
    """The bag or the replay configuration cannot be used (message names the problem)."""


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
    number: int | None = None       # the navigator's tick number (None: recorded before NavResult had it)


@dataclass
class MotorLog:
    """One cube's recorded MotorCommands (left, right, duration_ms): by the stamp of the tick that sent them, or,
    for bags recorded before MotorCommand was stamped, in the order sent."""
    by_stamp: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    in_order: list[tuple[int, int, int]] = field(default_factory=list)
    taken: int = 0            # in_order: how many earlier ticks consumed

    @property
    def stamped(self) -> bool:
        return bool(self.by_stamp)

    def take(self, stamp_ns: int) -> tuple[int, int, int] | None:
        """The recorded command of the tick stamped ``stamp_ns`` (unstamped: the next one in order); None when
        the bag has none."""
        if self.stamped:
            return self.by_stamp.get(stamp_ns)
        self.taken += 1
        return self.in_order[self.taken - 1] if self.taken <= len(self.in_order) else None


@dataclass
class Recording:
    path: Path
    cubes: list[str]
    states: list[StateIn]
    goals: list[GoalIn]
    ticks: list[Tick]
    motors: dict[str, MotorLog]             # per cube
    start_ns: int
    end_ns: int
    parameters: dict | None                 # the navigator's parameters stored by `toio-nav record`, if any
    notes: list[str] = field(default_factory=list)


_TOPIC = re.compile(r'^/(?P<cube>[A-Za-z_][A-Za-z0-9_]*)/(?P<kind>state|goal|nav_result|motor_cmd)$')
_TYPES = {'state': 'CubeState', 'goal': 'NavGoal', 'nav_result': 'NavResult', 'motor_cmd': 'MotorCommand'}


def _natural(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r'(\d+)', name)]


def ros_time_ns(t) -> int:
    """A ROS time (sec, nanosec) in nanoseconds."""
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


def _stamp_ns(msg) -> int:
    return ros_time_ns(msg.header.stamp)


def bag_custom_data(path: Path) -> dict:
    """custom_data of a bag directory's metadata.yaml ({} for a bare .mcap or none)."""
    meta = Path(path) / 'metadata.yaml'
    if not meta.is_file():
        return {}
    try:
        info = load_yaml(read_text(meta, 'rosbag2 metadata file'), str(meta))
    except InputError as exc:
        raise ReplayError(str(exc)) from None
    bag_info = info.get('rosbag2_bagfile_information') if isinstance(info, dict) else None
    if not isinstance(bag_info, dict):
        raise ReplayError(f'{meta}: not a rosbag2 metadata file (no rosbag2_bagfile_information mapping)')
    custom = bag_info.get('custom_data') or {}
    if not isinstance(custom, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in custom.items()):
        raise ReplayError(f'{meta}: custom_data must be a mapping of strings to strings')
    return dict(custom)


def stored_parameters(path: Path) -> dict | None:
    """The navigator's parameters `toio-nav record` stored in the bag (None if it holds none): a JSON object
    {name: value} under custom_data PARAMETERS_KEY; ReplayError naming the rule otherwise."""
    custom = bag_custom_data(path) if Path(path).is_dir() else {}
    if PARAMETERS_KEY not in custom:
        return None
    where = f'{path}: custom_data {PARAMETERS_KEY}'
    try:
        parameters = load_json(custom[PARAMETERS_KEY], where)
    except InputError as exc:
        raise ReplayError(str(exc)) from None
    if not isinstance(parameters, dict):
        raise ReplayError(f'{where} must be a JSON object {{name: value}}, got a {type(parameters).__name__}')
    return parameters


def open_reader(path: str | Path):
    """A rosbags AnyReader for a bag directory or a bare .mcap, or ReplayError naming the problem."""
    path = Path(path)
    if not path.exists():
        raise ReplayError(f'{path}: no such bag (a rosbag2 directory or an .mcap file)')
    damage = diagnose(path)          # not finalised / truncated: say what is readable and how to repair
    if damage is not None:
        raise ReplayError(damage)
    bag_custom_data(path)            # a metadata.yaml that is no rosbag2 metadata is named before rosbags reads it
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
                if not all(hasattr(msg, f) for f in INPUT_FIELDS):
                    raise ReplayError(f'{path}: its NavResult has no state_stamp / goal fields (recorded by an older '
                                      'navigator): the ticks cannot be rebuilt; record the run again')
                fields_ = {f: _plain(getattr(msg, f)) for f in NAV_FIELDS + INPUT_FIELDS[1:]}
                fields_['state_stamp_ns'] = ros_time_ns(msg.state_stamp)
                fields_['state'] = _state_copy(msg, cube, fields_['state_stamp_ns'], bag_ns)
                fields_['tick'] = int(msg.tick) if hasattr(msg, 'tick') else None
                results.append((_stamp_ns(msg), bag_ns, cube, fields_))
            else:
                motors.append((bag_ns, _stamp_ns(msg), cube, (int(msg.left), int(msg.right), int(msg.duration_ms))))
    finally:
        reader.close()
    if not results:
        raise ReplayError(f'{path}: no /<cube>/nav_result messages: nothing to compare (record the navigator\'s '
                          'outputs too)')
    if not states:
        raise ReplayError(f'{path}: no /<cube>/state messages: the navigator\'s inputs were not recorded')
    parameters = stored_parameters(path)
    cubes = sorted({r[2] for r in results}, key=_natural)
    if parameters and isinstance(parameters.get('cubes'), list) and parameters['cubes']:
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
        tick.number = fields_['tick']
    if doubled:
        notes.append(f'{doubled} NavResults repeat a cube within one tick stamp; only the first is compared')
    return [by_stamp[s] for s in sorted(by_stamp)]


def _motor_sequences(motors, ticks: list[Tick], notes: list[str]) -> dict[str, MotorLog]:
    """Each cube's MotorCommands, by their tick's stamp. A command with no stamp (a navigator's stop on shutdown,
    or every command of a bag recorded before MotorCommand was stamped) is kept in order only for a cube with no
    stamped one: a busy recorder receives the two topics in batches, so those are matched to ticks by order during
    the replay, not by time; the ones received before the cube's first recorded NavResult belong to ticks the bag
    does not hold."""
    first = {}
    for t in ticks:
        for cube, bag_ns in t.result_bag_ns.items():
            first[cube] = min(first.get(cube, bag_ns), bag_ns)
    out: dict[str, MotorLog] = {}
    unstamped: dict[str, list] = {}
    for bag_ns, stamp_ns, cube, motor in motors:
        if stamp_ns:
            out.setdefault(cube, MotorLog()).by_stamp[stamp_ns] = motor
        else:
            unstamped.setdefault(cube, []).append((bag_ns, motor))
    dropped = 0
    for cube, sequence in unstamped.items():
        if cube in out:
            continue
        kept = [m for bag_ns, m in sequence if cube in first and bag_ns >= first[cube] - 5_000_000]
        dropped += len(sequence) - len(kept)
        out[cube] = MotorLog(in_order=kept)
    if dropped:
        notes.append(f'{dropped} MotorCommands from before the first recorded NavResult of their cube are ignored')
    return out


def _state_copy(msg, cube: str, stamp_ns: int, bag_ns: int) -> StateIn | None:
    """The state a NavResult says its tick used, from its ``state_*`` copy; None when it has none (no state yet,
    or recorded before the copy was added)."""
    if stamp_ns <= 0 or not all(hasattr(msg, f) for f in STATE_FIELDS) or not math.isfinite(msg.state_x):
        return None
    return StateIn(stamp_ns, bag_ns, cube, float(msg.state_x), float(msg.state_y), float(msg.state_theta),
                   bool(msg.state_on_mat), int(msg.state_link_state))


def goal_shown(result: dict) -> tuple | None:
    """The goal a NavResult shows (goal_id, x, y, direction, max_speed, tolerance), None if the cube had none."""
    if not math.isfinite(result['goal_x']):
        return None
    return (result['goal_id'], result['goal_x'], result['goal_y'], result['direction'], result['max_speed'],
            result['tolerance'])


def service_goals(rec: Recording) -> list[GoalIn]:
    """Goals the NavResults show that no recorded ``<cube>/goal`` message carried (sent through the
    navigator/set_goal service), each timed 1 ms before the first tick that shows it (for ``--live``)."""
    on_topics = {(g.cube, g.goal_id, g.x, g.y, g.direction, g.max_speed, g.tolerance) for g in rec.goals}
    out, last = [], {}
    for tick in rec.ticks:
        for cube, r in tick.results.items():
            g = goal_shown(r)
            if g is None or last.get(cube) == g:
                continue
            last[cube] = g
            if (cube, *g) not in on_topics:
                goal_id, x, y, direction, max_speed, tolerance = g
                out.append(GoalIn(tick.stamp_ns - 1_000_000, cube, goal_id, cube, x, y, direction, max_speed,
                                  tolerance))
    return out
