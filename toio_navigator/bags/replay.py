"""Replay a recorded run through a fresh navigator and compare what it decides with what was recorded.

Offline, through the core (no rclpy; :mod:`~toio_navigator.bags.recording` reads the bag): every recorded tick
is rebuilt from what its ``<cube>/nav_result`` says the navigator used (the state's header stamp ``state_stamp``,
looked up among the bag's ``<cube>/state`` messages, or, when the recorder lost that state, the copy the NavResult
carries in its ``state_*`` fields; and the goal being pursued: goal_id, goal_x, goal_y, direction, max_speed,
tolerance, so goals sent through the ``navigator/set_goal`` service replay too), then a
:class:`~toio_navigator.control.controller.SwarmController` steps at the tick stamp (``header.stamp``) and its
decision is compared field by field, within tolerances, with the recorded NavResult and MotorCommand. The
navigator's tick is a pure function of these, so a complete bag replays with zero divergence; the first
divergence names the time, topic, field and both values.

A tick the bag lost entirely (its NavResults' ``tick`` numbers skip one) changed the navigator's memory in a way
no message records: differences after it are listed in ``ReplayReport.explained``, not counted as divergence.
A MotorCommand belongs to the tick its header stamp names; one the bag lacks in the middle of a recording was lost
by the recorder (it listens best-effort): noted, not a divergence (whether a command is sent at all follows from
the NavResult's ``active`` and ``reached``, which are compared). Bags recorded before MotorCommand was stamped are
matched in order: a command belongs to the tick of the same cube's next command. What the replay still assumes:
run-time parameter changes (``ros2 param set``) are not in the bag (the parameters stored at the start are used);
a goal re-sent with the same id and fields is not seen as new.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toio_navigator.bags.recording import (
    NAV_FIELDS,
    MotorLog,
    Recording,
    ReplayError,
    Tick,
    goal_shown,
    read_recording,
)
from toio_navigator.control.controller import SwarmController, stamp_seconds
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.input_files import InputError, load_yaml, read_text
from toio_navigator.launching.profiles import config_dir
from toio_navigator.reference.params import CubeHandleParams, NavigatorParams
from toio_navigator.settings.navigator import (
    SETTING_PARAMETERS,
    apply_reference_parameter,
    coerce_setting,
    reference_parameters,
)

#: the last ticks of a recording, whose MotorCommands may not have reached the bag before it ended
TAIL_TICKS = 3
MOTOR_FIELDS = ('left', 'right', 'duration_ms')
FLOAT_FIELDS = ('waypoint_x', 'waypoint_y', 'speed_limit', 'speed_ratio')
UNSEEN = -1e4                        # SwarmController's position (and waypoint) of a cube it has no state of
DEFAULT_FLOAT_TOLERANCE = 1e-6       # same code, same float64 inputs: only rounding noise is forgiven
NODE_ONLY_PARAMETERS = ('markers_every', 'tick_on_fresh_states', 'use_sim_time', 'start_type_description_service')


# ------------------------------------------------------------------------------------------------ configuration

def read_parameter_files(paths) -> dict:
    """The navigator's parameters from ROS parameter YAML files (sections ``/**`` and ``navigator``), later
    files overriding earlier ones."""
    out: dict = {}
    for p in paths:
        try:
            doc = load_yaml(read_text(p, 'parameter file'), f'parameter file {p}')
        except InputError as exc:
            raise ReplayError(str(exc)) from None
        doc = {} if doc is None else doc
        if not isinstance(doc, dict):
            raise ReplayError(f'parameter file {p}: not a mapping of node names')
        for section in ('/**', 'navigator', '/navigator', '/**/navigator'):
            params = (doc.get(section) or {}).get('ros__parameters') if isinstance(doc.get(section), dict) else None
            if params is not None and not isinstance(params, dict):
                raise ReplayError(f'parameter file {p}: {section}.ros__parameters must be a mapping of names')
            if isinstance(params, dict):
                out.update(params)
    return out


def parse_override(text: str) -> tuple[str, object]:
    """'name=value' (value in YAML: 3, 0.5, 1e-2, true, [1, 2], AVOID) -> (name, value)."""
    name, sep, value = text.partition('=')
    if not sep or not name.strip():
        raise ReplayError(f'--set {text!r}: expected name=value, e.g. avoid.margin=30')
    try:
        return name.strip(), load_yaml(value, f'--set {text!r}')
    except InputError as exc:
        raise ReplayError(f'{exc}') from None


def settings_from_parameters(parameters: dict, cubes: list[str], overrides: dict | None = None):
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
    except (ValueError, TypeError, OverflowError) as exc:
        raise ReplayError(f'navigator {exc}') from None
    missing = [c for c in cubes if c not in settings.cubes]
    if missing:
        raise ReplayError(f'the bag has cubes {missing} that the navigator parameters do not list '
                          f'(cubes: {list(settings.cubes)})')
    return settings, params, handle


def default_parameter_files() -> list[Path]:
    """The package's config/navigator.yaml (the bringup's defaults), if present."""
    try:
        path = config_dir() / 'navigator.yaml'
    except ValueError:
        return []
    return [path] if path.is_file() else []


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
    notes: list[str] = field(default_factory=list)
    #: the first few differences after a tick the bag lost entirely: that tick changed the navigator's memory
    #: (its commands, side-steps, escapes) and nothing in the bag says how, so they are not the navigator's
    explained: list[Divergence] = field(default_factory=list)
    lost_ticks: int = 0
    exact_ticks: int = 0      # the ticks compared before the first lost one (all of them when none was lost)

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
        if self.explained:
            lines.append(f'after a lost tick (not counted): {self.explained[0].describe()}')
        lines += [f'note: {n}' for n in self.notes]
        return '\n'.join(lines)


def _compare(tick: Tick, commands, rec: Recording, tol: dict, settings, absent: dict,
             forced: list, tail: bool = False) -> list[Divergence]:
    """Every differing field of one tick (NavResult first, then MotorCommand, in cube order). ``forced``
    receives (cube, recorded command) for every command both sent. A command the replay sends that the bag lacks
    is counted in ``absent``: under 'tail' in the last TAIL_TICKS ticks (the recording ended, a recorder killed or
    a bag cut, between a tick's NavResult and its MotorCommand), under 'lost' before (a stamped bag: the recorder
    lost it); for an unstamped bag it is a divergence before the tail."""
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
        topic = f'/{cube}/motor_cmd'
        log = rec.motors.get(cube, MotorLog())
        if cmd.motor is None:
            if tick.stamp_ns in log.by_stamp:
                out.append(Divergence(t, tick.stamp_ns, topic, '(message)', 'sent', 'none'))
            continue
        motor = log.take(tick.stamp_ns)
        if motor is None:
            if tail or log.stamped:
                absent['tail' if tail else 'lost'] += 1
            else:
                out.append(Divergence(t, tick.stamp_ns, topic, '(message)', 'none (no more recorded)', 'sent'))
            continue
        for f, a, b in zip(MOTOR_FIELDS, motor, cmd.motor):
            if abs(a - b) > tol.get(f, 0):
                out.append(Divergence(t, tick.stamp_ns, topic, f, a, b))
        forced.append((cube, motor))
    return out


# ------------------------------------------------------------------------------------------------ offline replay

@dataclass
class _Tally:
    """What a replay counts besides the comparisons, for the report's notes."""
    missing_states: int = 0        # states named by NavResults that are in neither the bag nor the NavResult
    from_results: int = 0          # states taken from the NavResults' copies
    incomplete: int = 0            # ticks not compared: an input lost
    explained_ticks: int = 0       # ticks that differ after a lost tick
    rejected: list[str] = field(default_factory=list)
    absent: dict[str, int] = field(default_factory=lambda: {'tail': 0, 'lost': 0})


def replay_recording(rec: Recording, settings: NavigatorSettings, params: NavigatorParams,
                     handle: CubeHandleParams, *, tolerances: dict | None = None, resync: bool = True,
                     keep: int = 20) -> ReplayReport:
    """Drive a fresh SwarmController with each recorded tick's own inputs and compare its outputs.

    Before tick k, every cube's controller state is set from the tick's NavResult: the state stamped
    ``state_stamp`` (looked up in the bag) and the goal it shows (applied when it differs from the last one);
    then the controller steps at the tick stamp. Nothing is guessed, so the same navigator gives the same
    outputs. With ``resync`` the controller's memory of the commands it sent is set to the recorded commands, so
    one reported difference does not snowball into every later tick. Ticks before the navigator had seen every
    cube (its NavResults show the far-away placeholder) are a warm-up: stepped, not compared, and the recorded
    commands replace the replay's (the navigator ran before the recording started)."""
    report = ReplayReport(rec.path, notes=list(rec.notes))
    tol = {'*': DEFAULT_FLOAT_TOLERANCE, **(tolerances or {})}
    rec.start_ns = min([rec.start_ns] + [t.stamp_ns for t in rec.ticks[:1]] + [s.stamp_ns for s in rec.states[:1]])
    ctrl = SwarmController(settings, params, handle, clock=lambda: math.nan)   # the replay always passes `now`
    states = {(s.cube, s.stamp_ns): s for s in rec.states}
    first = _first_compared_tick(rec, settings)
    lost_at = _first_lost_tick(rec.ticks)
    tally = _Tally()
    for k, tick in enumerate(rec.ticks):
        complete = _feed_tick(ctrl, tick, states, tally) and len(tick.results) == len(rec.cubes)
        commands = ctrl.step(stamp_seconds(tick.stamp_ns))
        if k < first or not complete:    # inputs the bag lost: step, follow the recorded commands, no verdict
            tally.incomplete += k >= first
            _adopt_recorded_motors(ctrl, rec, commands, tick.stamp_ns)
            continue
        forced: list = []
        diffs = _compare(tick, commands, rec, tol, ctrl.settings, tally.absent, forced,
                         tail=k >= len(rec.ticks) - TAIL_TICKS)
        if resync:     # the cubes got the recorded commands: the motion model and the contact guard count with them
            for cube, motor in forced:
                ctrl.replace_last_command(ctrl.index[cube], motor)
        report.ticks += 1
        report.compared['nav_result'] += sum(1 for c in rec.cubes if c in tick.results)
        report.compared['motor_cmd'] += len(forced)
        report.exact_ticks += k < lost_at
        if k >= lost_at:
            tally.explained_ticks += bool(diffs)
            report.explained += diffs[:max(keep - len(report.explained), 0)]
            continue
        for kind in ('nav_result', 'motor_cmd'):
            report.diverged[kind] += len({d.topic for d in diffs if d.topic.endswith(kind)})
        if len(report.divergences) < keep:
            report.divergences += diffs[:keep - len(report.divergences)]
    _note_replay(report, rec, first, lost_at, tally)
    _completeness(rec, report, settings.rate_hz)
    return report


def _first_compared_tick(rec: Recording, settings: NavigatorSettings) -> int:
    """Index of the first tick compared. The first recorded tick may not be the navigator's first: the commands
    it sent before (in effect for up to a command duration) are not in the bag, so compare only once every cube
    is seen and that long has passed."""
    history_ns = max(settings.command_duration_ms, settings.stop_duration_ms) * 1_000_000
    begin = rec.ticks[0].stamp_ns + history_ns if rec.ticks else 0
    return next((k for k, t in enumerate(rec.ticks) if t.stamp_ns >= begin and len(t.results) == len(rec.cubes)
                 and all(r['waypoint_x'] != UNSEEN and r['state_stamp_ns'] > 0 for r in t.results.values())),
                len(rec.ticks))


def _feed_tick(ctrl: SwarmController, tick: Tick, states: dict, tally: _Tally) -> bool:
    """Give the controller the goals and states ``tick``'s NavResults show; False when a state is lost."""
    complete = True
    for cube, r in tick.results.items():
        i = ctrl.index.get(cube)
        if i is None:
            continue
        goal = goal_shown(r)
        if goal is not None and goal != _goal_tuple(ctrl.last_goal[i]):
            goal_id, x, y, direction, max_speed, tolerance = goal
            reason = ctrl.set_goal(cube, goal_id, x, y, direction, max_speed, tolerance)
            if reason:
                tally.rejected.append(f'goal {goal_id} for {cube}: {reason}')
        stamp = r['state_stamp_ns']
        if stamp > 0 and int(ctrl.stamp_ns[i]) != stamp:
            s = states.get((cube, stamp))
            if s is None and r.get('state') is not None:
                s = r['state']
                tally.from_results += 1
            if s is None:
                tally.missing_states += 1
                complete = False
                continue
            ctrl.update_state(cube, s.x, s.y, s.theta, s.on_mat, s.link_state, stamp)
    return complete


def _note_replay(report: ReplayReport, rec: Recording, first: int, lost_at: int, tally: _Tally) -> None:
    """The report's notes on what was not compared and why."""
    if lost_at < len(rec.ticks):
        report.lost_ticks = sum(max(b.number - a.number - 1, 0) for a, b in zip(rec.ticks, rec.ticks[1:])
                                if a.number is not None and b.number is not None)
        t_lost = (rec.ticks[lost_at].stamp_ns - rec.start_ns) / 1e9
        report.notes.append(f'the bag lost {report.lost_ticks} whole ticks of the navigator (the first just '
                            f'before the tick at t={t_lost:.3f} s): what a lost tick changed in its memory is in no '
                            f'message, so a difference from there on is listed but is no divergence '
                            f'({tally.explained_ticks} ticks differ)')
    if first:
        report.notes.append(f'{min(first, len(rec.ticks))} leading ticks not compared (warm-up: the commands sent '
                            'before the recording, or a cube the navigator had not seen yet)')
    if tally.incomplete:
        report.notes.append(f'{tally.incomplete} ticks not compared: the bag lost a state they used '
                            f'({tally.missing_states} states named by NavResults are missing) or a NavResult')
    if tally.from_results:
        report.notes.append(f'{tally.from_results} states the bag lost were taken from the copies in the NavResults')
    if tally.rejected:
        report.notes.append('goals rejected in the replay: ' + '; '.join(tally.rejected[:3]))
    absent = tally.absent
    if absent['tail']:
        report.notes.append(f'{absent["tail"]} MotorCommands of the last {TAIL_TICKS} ticks are not in the bag: it '
                            'ended first')
    if absent['lost']:
        report.notes.append(f'{absent["lost"]} MotorCommands of compared ticks are not in the bag (the recorder, '
                            'which listens best-effort, lost them); their ticks\' NavResults were compared')
    unmatched = {c: len(q.in_order) - q.taken for c, q in rec.motors.items() if len(q.in_order) - q.taken > 1}
    if unmatched:
        report.notes.append('recorded MotorCommands the replay never sent: ' +
                            ', '.join(f'{c} {n}' for c, n in sorted(unmatched.items())))


def _first_lost_tick(ticks: list[Tick]) -> int:
    """Index of the first recorded tick whose predecessor in the navigator is not in the bag (its number
    skips one); len(ticks) when none is lost or the NavResults carry no tick number."""
    for k in range(1, len(ticks)):
        a, b = ticks[k - 1].number, ticks[k].number
        if a is not None and b is not None and b > a + 1:
            return k
    return len(ticks)


def _goal_tuple(g) -> tuple | None:
    return None if g is None else (g.goal_id, g.x, g.y, g.direction, g.max_speed, g.tolerance)


def _adopt_recorded_motors(ctrl: SwarmController, rec: Recording, commands, stamp_ns: int) -> None:
    """On a tick that is not compared (warm-up, lost inputs) the recorded commands are what the cubes got: the
    controller's motion model and contact guard count with them instead of its own. Whether a cube got one at
    all is the replay's own decision (it depends only on stamps, goals and positions, which are exact), so a lost
    NavResult does not shift which recorded command belongs to which later tick."""
    for cmd in commands:
        i = ctrl.index.get(cmd.cube)
        if i is None or cmd.motor is None:
            continue
        motor = rec.motors.get(cmd.cube, MotorLog()).take(stamp_ns)
        if motor is not None:
            ctrl.replace_last_command(i, motor)


def _completeness(rec: Recording, report: ReplayReport, rate: float) -> None:
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
        big = int(np.count_nonzero(gaps > 2.5 / rate))
        if np.median(gaps) > 1.5 / rate:
            report.notes.append(f'the recorded ticks are {np.median(gaps) * 1000:.0f} ms apart (median) while the '
                                f'navigator ticks every {1000 / rate:.0f} ms: about '
                                f'{100 * (1 - 1 / (np.median(gaps) * rate)):.0f}% of the ticks were lost while '
                                'recording, so the replay cannot follow the navigator')
        elif big and all(t.number is not None for t in rec.ticks):
            numbered = np.diff([t.number for t in rec.ticks])
            stalls = int(np.count_nonzero((gaps > 2.5 / rate) & (numbered == 1)))
            if stalls:
                report.notes.append(f'the navigator stalled {stalls} times for more than {2.5 / rate:.3f} s '
                                    f'between two ticks (largest gap {gaps[numbered == 1].max():.3f} s)')
        elif big:
            report.notes.append(f'{big} gaps between recorded ticks longer than {2.5 / rate:.3f} s (largest '
                                f'{gaps.max():.3f} s): ticks were lost while recording, or the navigator stalled')


def replay_bag(bag: str | Path, *, parameter_files=(), overrides: dict | None = None,
               tolerances: dict | None = None, keep: int = 20) -> ReplayReport:
    """Read ``bag``, build the navigator it ran (parameters stored in the bag, else ``parameter_files``, else
    config/navigator.yaml) with ``overrides``, and replay it offline. ReplayError for unusable input."""
    rec = read_recording(bag)
    if parameter_files:
        parameters = read_parameter_files(parameter_files)
    elif rec.parameters is not None:
        # a navigator recorded before the contact guard existed ran without it
        parameters = {'contact_guard': False, **rec.parameters}
    else:
        parameters = read_parameter_files(default_parameter_files())
        rec.notes.append('the bag holds no navigator parameters; used config/navigator.yaml')
        parameters['cubes'] = list(rec.cubes)      # navigator.yaml lists a placeholder cube
    parameters = {k: v for k, v in parameters.items() if k not in NODE_ONLY_PARAMETERS}
    settings, params, handle = settings_from_parameters(parameters, rec.cubes, overrides)
    return replay_recording(rec, settings, params, handle, tolerances=tolerances, keep=keep)
