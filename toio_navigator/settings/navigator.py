"""The navigator's parameters without ROS: ROS parameter values <-> :class:`NavigatorSettings` and the core's
parameter dataclasses. The navigator node declares from here and ``toio-nav replay`` rebuilds a recorded
navigator from here, so a bag replays with exactly the values the node ran with.
"""
from __future__ import annotations

import math
from dataclasses import fields, replace

from toio_navigator.navigation.controller import NavigatorSettings
from toio_navigator.navigation.params import CubeHandleParams, NavigatorParams
from toio_navigator.units import MOTOR_MAX


def _dataclass_params(prefix: str, obj) -> dict[str, object]:
    """{'<prefix>.<field>': value} for the scalar fields of a parameter dataclass."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (bool, int, float)):
            out[f'{prefix}.{f.name}'] = v
    return out


def reference_parameters(params: NavigatorParams, handle: CubeHandleParams) -> dict[str, object]:
    """Every tunable constant of the core as a ROS parameter name -> default."""
    out = {k: v for k, v in _dataclass_params('navigator', params).items()}
    out.update(_dataclass_params('avoid', params.avoid))
    out.update(_dataclass_params('boids', params.boids))
    out.update(_dataclass_params('fixes', params.fixes))
    out.update(_dataclass_params('handle', handle))
    return out


def _coerce(name: str, value, like):
    """``value`` as the type of ``like`` (bool, int or float), or ValueError naming the parameter."""
    try:
        if isinstance(like, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(value, (bool, str, list, tuple, bytes)) or value is None:
            raise TypeError
        if isinstance(like, int):
            if float(value) != int(value):
                raise TypeError
            return int(value)
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f'{name}: expected a {type(like).__name__}, got {value!r}') from None
    if not math.isfinite(value):
        raise ValueError(f'{name}: must be finite, got {value}')
    return value


def coerce_setting(name: str, value):
    """A NavigatorSettings field from a parameter value (ValueError naming the parameter if it cannot be)."""
    like = getattr(NavigatorSettings(), name)
    if name == 'cubes':
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'cubes: expected a list of names, got {value!r}')
        return tuple(value)
    if isinstance(like, tuple):
        if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
            raise ValueError(f'{name}: expected a list of numbers, got {value!r}')
        return tuple(_coerce(name, v, 0.0) for v in value)
    if isinstance(like, str):
        if not isinstance(value, str):
            raise ValueError(f'{name}: expected a string, got {value!r}')
        return value
    return _coerce(name, value, like)


def apply_reference_parameter(params: NavigatorParams, handle: CubeHandleParams, name: str, value):
    """(params, handle) with one ``<group>.<field>`` changed; ValueError for a bad value."""
    group, _, field_name = name.partition('.')
    current = reference_parameters(params, handle)
    if name not in current:
        raise ValueError(f'unknown parameter {name}')
    value = _coerce(name, value, current[name])
    if group == 'navigator':
        return replace(params, **{field_name: value}), handle
    if group == 'avoid':
        return replace(params, avoid=replace(params.avoid, **{field_name: value})), handle
    if group == 'boids':
        return replace(params, boids=replace(params.boids, **{field_name: value})), handle
    if group == 'fixes':
        return replace(params, fixes=replace(params.fixes, **{field_name: bool(value)})), handle
    if group == 'handle':
        if field_name in ('dead_zone', 'max_spd') and not 0 <= value <= MOTOR_MAX:
            raise ValueError(f'{name}: must be within 0..{MOTOR_MAX}, got {value}')
        return params, replace(handle, **{field_name: value})
    raise ValueError(f'unknown parameter {name}')


SETTING_PARAMETERS = ('cubes', 'rate_hz', 'mode', 'planner', 'stale_timeout_s', 'mat_rect', 'walls', 'border',
                      'max_speed', 'tolerance', 'handle_tolerance', 'rotate_time_ms', 'stop_duration_ms',
                      'command_duration_ms', 'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance',
                      'sidestep_time_s', 'border_stop', 'saturation')
RUNTIME_SETTINGS = ('mode', 'planner', 'stale_timeout_s', 'max_speed', 'tolerance', 'handle_tolerance',
                    'rotate_time_ms', 'stop_duration_ms', 'command_duration_ms', 'walls', 'border', 'rate_hz',
                    'use_pred', 'stuck_time_s', 'stuck_distance', 'sidestep_distance', 'sidestep_time_s',
                    'border_stop', 'saturation')
