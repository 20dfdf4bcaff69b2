"""The navigator's parameters without ROS: the specs the node declares, and ROS parameter values <->
:class:`NavigatorSettings` plus the core's parameter dataclasses.

The navigator node declares :data:`PARAMS` and builds its controller with :func:`navigator_config`, at start-up
and on every run-time change; ``toio-nav replay`` rebuilds a recorded navigator with :func:`coerce_setting` and
:func:`apply_reference_parameter`, the same rules, so a bag replays with exactly the values the node ran with.
The ``<group>.<field>`` parameters (``navigator.*``, ``avoid.*``, ``boids.*``, ``fixes.*``, ``handle.*``) are
every scalar constant of the core's parameter dataclasses, with their defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from toio_navigator.control.goals import GoalPolicy
from toio_navigator.control.navigator_settings import MODES, SATURATIONS, NavigatorSettings, planner_names
from toio_navigator.reference.params import CubeHandleParams, NavigatorParams
from toio_navigator.settings.spec import FLOATS, STRINGS, Param, ParamSet, SettingError
from toio_navigator.units import FRAME_ID, MOTOR_MAX

_DEFAULT = NavigatorSettings()
_POLICY = GoalPolicy()

#: the NavigatorSettings fields, as parameters
SETTING_PARAMS = (
    Param('cubes', ('cube1',), 'cube names (namespaces)', kind=STRINGS),
    Param('rate_hz', _DEFAULT.rate_hz, 'control rate of the swarm step, Hz', low=0.1, high=1000.0, runtime=True),
    Param('mode', _DEFAULT.mode, 'swarm mode: HLAvoid avoidance, Boids flocking, or both', choices=MODES,
          runtime=True),
    Param('planner', _DEFAULT.planner, 'local planner (hlavoid: the reference HLAvoid)',
          choices=tuple(planner_names()), runtime=True),
    Param('stale_timeout_s', _DEFAULT.stale_timeout_s, 'a cube whose state is older than this is stopped and kept '
          'as a static obstacle, s', low=0.0, low_open=True, runtime=True),
    Param('mat_rect', _DEFAULT.mat_rect, 'x_min, y_min, x_max, y_max of the mat, mat units', kind=FLOATS,
          lengths=(4,)),
    Param('walls', _DEFAULT.walls, 'x1, y1, x2, y2, margin per wall (navigator walls, mat units)', kind=FLOATS,
          length_multiple=5, runtime=True),
    Param('border', _DEFAULT.border, "width, x1, x2, y1, y2: the reference's add_border; [] = none", kind=FLOATS,
          lengths=(0, 5), runtime=True),
    Param('max_speed', _DEFAULT.max_speed, 'default speed cap of a goal, motor units', low=0.0, low_open=True,
          high=float(MOTOR_MAX), runtime=True),
    Param('tolerance', _DEFAULT.tolerance, 'goal "reached" radius, mat units (>= handle_tolerance)', low=0.0,
          low_open=True, runtime=True),
    Param('handle_tolerance', _DEFAULT.handle_tolerance, "move_to_target's own reached radius, mat units",
          low=0.0, runtime=True),
    Param('rotate_time_ms', _DEFAULT.rotate_time_ms, "move_to_target's rotateTime; also the command duration, ms",
          low=0.0, low_open=True, runtime=True),
    Param('stop_duration_ms', _DEFAULT.stop_duration_ms, 'duration of a stop command, ms', low=10, high=2550,
          runtime=True),
    Param('command_duration_ms', _DEFAULT.command_duration_ms, 'duration carried by every driving command, ms',
          low=10, high=2550, runtime=True),
    Param('use_pred', _DEFAULT.use_pred, 'navigator entities at the pose predicted after the command lag',
          runtime=True),
    Param('stuck_time_s', _DEFAULT.stuck_time_s, 'dead-lock breaker: a cube with a goal that moved less than '
          'stuck_distance in this long side-steps, s (0 = never)', low=0.0, runtime=True),
    Param('stuck_distance', _DEFAULT.stuck_distance, 'dead-lock breaker: a cube that moved less than this in '
          'stuck_time_s is stuck, mat units', low=0.0, runtime=True),
    Param('sidestep_distance', _DEFAULT.sidestep_distance, 'dead-lock breaker: how far a stuck cube side-steps, '
          'mat units', low=0.0, runtime=True),
    Param('sidestep_time_s', _DEFAULT.sidestep_time_s, 'dead-lock breaker: how long one side-step lasts, s',
          low=0.0, runtime=True),
    Param('border_stop', _DEFAULT.border_stop, "the border's outward stop; false = no border rule in the handle",
          runtime=True),
    Param('saturation', _DEFAULT.saturation, 'wheel saturation: keep_rotation keeps the turn when clipping, '
          'reference truncates asymmetrically', choices=SATURATIONS, runtime=True),
    Param('contact_guard', _DEFAULT.contact_guard, 'a cube never closes in on another one nearer than touching + '
          'contact_gap, whatever its planner says (planners with their own safety layer excepted)', runtime=True),
    Param('contact_gap', _DEFAULT.contact_gap, 'clearance the contact guard keeps beyond touching, mat units',
          low=0.0, high=100.0, runtime=True),
    Param('contact_guard_latency_s', _DEFAULT.contact_guard_latency_s, 'the contact guard counts a command as '
          'taking effect this long after it is sent, and the older commands still in flight as driving until then, '
          's (a loaded lab run measured 0.15-0.27 s)', low=0.0, high=1.0, runtime=True),
    Param('contact_guard_write_gap_s', _DEFAULT.contact_guard_write_gap_s, 'the contact guard counts one motor '
          'write per this long per cube, s (the drivers\' min_motor_interval_ms)', low=0.0, high=1.0, runtime=True),
    Param('plan_time_s', _DEFAULT.plan_time_s, 'coordinated: a plan, made while the cubes stand, stops improving '
          'itself after this long, s (0 = no limit; it always completes its first search)', low=0.0, high=3600.0,
          runtime=True),
)
SETTING_PARAMETERS = tuple(p.name for p in SETTING_PARAMS)

#: the node's own options (not part of the controller, not recorded for replay)
NODE_PARAMS = (
    Param('markers_every', 2, 'publish navigator/markers every N ticks', low=1, runtime=True),
    Param('tick_on_fresh_states', True, 'tick as soon as every live cube has reported (never faster than rate_hz)',
          runtime=True),
    # goals from <cube>/goal_pose and the <cube>/navigate_to_pose action (topic and service goals never give up)
    Param('goal_fail_after_s', _POLICY.fail_after_s, 'a goal_pose or action goal fails when its cube has been '
          'stale or off the mat this long without a break, s', low=0.0, low_open=True, high=3600.0, runtime=True),
    Param('goal_blocked_after_s', _POLICY.blocked_after_s, 'a goal_pose or action goal fails as blocked when its '
          'cube has come no closer (by goal_progress_distance) for this long, s (0 = never)', low=0.0, high=3600.0,
          runtime=True),
    Param('goal_progress_distance', _POLICY.progress_distance, 'coming this much closer to the goal than ever '
          'before counts as progress, mat units', low=0.0, low_open=True, high=1000.0, runtime=True),
    Param('goal_pose_tolerance', _POLICY.pose_tolerance, '"reached" radius of goal_pose goals and of action '
          'goals that give none, mat units (>= handle_tolerance; 0 = tolerance)', low=0.0, high=1000.0,
          runtime=True),
    # frames (REP 103): goal_pose / action goals are accepted in frame_id or map_frame (or ""); TF on /tf
    Param('frame_id', FRAME_ID, "frame of the cubes' poses (the drivers' frame_id): the TF parent of every cube "
          'and the frame goal poses must be in'),
    Param('base_frame', 'base_link', 'TF child frame of a cube, after its namespace: <cube>/<base_frame>'),
    Param('map_frame', 'map', 'a frame published on /tf_static as identical to frame_id (rviz2 and tools that '
          'expect "map"); goal poses in it are accepted too; "" = none'),
    Param('publish_tf', True, 'broadcast frame_id -> <cube>/<base_frame> for every cube on /tf (one TFMessage per '
          'tick) and map_frame -> frame_id on /tf_static'),
)

_GROUPS = {'navigator': 'Navigator gain', 'avoid': 'HLAvoid constant', 'boids': 'Boids constant',
           'fixes': 'fix of a reference defect (false = the reference behaviour)', 'handle': 'CubeHandle constant'}
_MOTOR_LIMITED = ('handle.dead_zone', 'handle.max_spd')


def _dataclass_params(prefix: str, obj) -> dict[str, object]:
    """{'<prefix>.<field>': value} for the scalar fields of a parameter dataclass."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (bool, int, float)):
            out[f'{prefix}.{f.name}'] = v
    return out


def reference_parameters(params: NavigatorParams, handle: CubeHandleParams) -> dict[str, object]:
    """Every tunable constant of the core as a ROS parameter name -> value."""
    out = dict(_dataclass_params('navigator', params))
    out.update(_dataclass_params('avoid', params.avoid))
    out.update(_dataclass_params('boids', params.boids))
    out.update(_dataclass_params('fixes', params.fixes))
    out.update(_dataclass_params('handle', handle))
    return out


def _reference_param(name: str, default) -> Param:
    group = name.partition('.')[0]
    bounds = dict(low=0, high=MOTOR_MAX) if name in _MOTOR_LIMITED else {}
    return Param(name, default, f'{_GROUPS[group]} (default {default!r})', runtime=True, **bounds)


REFERENCE_PARAMS = tuple(_reference_param(n, v)
                         for n, v in reference_parameters(NavigatorParams(), CubeHandleParams()).items())
_REFERENCE_NAMES = frozenset(p.name for p in REFERENCE_PARAMS)
PARAMS = ParamSet(*SETTING_PARAMS, *NODE_PARAMS, *REFERENCE_PARAMS)


def coerce_setting(name: str, value):
    """A NavigatorSettings field from a parameter value (SettingError naming the parameter if it cannot be)."""
    if name not in SETTING_PARAMETERS:
        raise SettingError(name, 'is not a navigator setting')
    return PARAMS[name].check(value)


def apply_reference_parameter(params: NavigatorParams, handle: CubeHandleParams, name: str, value):
    """(params, handle) with one ``<group>.<field>`` changed; SettingError for a bad value or name."""
    if name not in _REFERENCE_NAMES:
        raise SettingError(name, 'is not a navigator constant (navigator.*, avoid.*, boids.*, fixes.*, handle.*)')
    value = PARAMS[name].check(value)
    group, _, field_name = name.partition('.')
    if group == 'navigator':
        return replace(params, **{field_name: value}), handle
    if group == 'handle':
        return params, replace(handle, **{field_name: value})
    return replace(params, **{group: replace(getattr(params, group), **{field_name: value})}), handle


@dataclass(frozen=True)
class Frames:
    """The navigator's TF frames: ``frame_id`` -> ``<cube>/<base_frame>`` on /tf, ``map_frame`` -> ``frame_id``
    (identity) on /tf_static when ``map_frame`` is set."""
    frame_id: str = FRAME_ID
    base_frame: str = 'base_link'
    map_frame: str = 'map'
    publish_tf: bool = True

    def child(self, cube: str) -> str:
        return f'{cube}/{self.base_frame}'

    def accepts(self, frame: str) -> bool:
        """A goal pose in ``frame`` is in the mat frame: frame_id, map_frame (identical), or "" (unset)."""
        return frame in ('', self.frame_id) or (bool(self.map_frame) and frame == self.map_frame)


def _frames(v: dict) -> Frames:
    for name in ('frame_id', 'base_frame'):
        if not v[name].strip() or v[name] != v[name].strip():
            raise SettingError(name, f'must be a frame name without spaces at either end, got {v[name]!r}')
    if v['map_frame'] and v['map_frame'] in (v['frame_id'], v['base_frame']):
        raise SettingError('map_frame', f'must differ from frame_id and base_frame, got {v["map_frame"]!r}')
    return Frames(v['frame_id'], v['base_frame'], v['map_frame'], v['publish_tf'])


@dataclass(frozen=True)
class NavigatorConfig:
    """Everything the node runs with, from checked parameter values."""
    settings: NavigatorSettings
    params: NavigatorParams
    handle: CubeHandleParams
    markers_every: int
    tick_on_fresh_states: bool
    goals: GoalPolicy
    frames: Frames


def navigator_config(values: dict[str, object]) -> NavigatorConfig:
    """The node's configuration from parameter values (defaults for the missing ones): each value by its rule,
    then the rules between them (NavigatorSettings.check); SettingError naming the parameter."""
    v = PARAMS.check_all(values)
    settings = NavigatorSettings(**{name: v[name] for name in SETTING_PARAMETERS})
    try:
        settings.check()
    except ValueError as exc:          # its messages start with the field name: 'tolerance: ...'
        name, _, problem = str(exc).partition(': ')
        raise SettingError(name, problem) from None
    params, handle = NavigatorParams(), CubeHandleParams()
    for spec in REFERENCE_PARAMS:
        params, handle = apply_reference_parameter(params, handle, spec.name, v[spec.name])
    goals = GoalPolicy(v['goal_fail_after_s'], v['goal_blocked_after_s'], v['goal_progress_distance'],
                       v['goal_pose_tolerance'])
    if 0 < goals.pose_tolerance < settings.handle_tolerance:
        raise SettingError('goal_pose_tolerance', f'must be 0 or >= handle_tolerance ({settings.handle_tolerance:g}: '
                           f'the cube stops within that), got {goals.pose_tolerance:g}')
    return NavigatorConfig(settings, params, handle, v['markers_every'], v['tick_on_fresh_states'], goals,
                           _frames(v))
