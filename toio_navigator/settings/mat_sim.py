"""mat_sim's parameters without ROS: :data:`PARAMS` and :func:`sim_config` (the checked configuration; SettingError
naming the parameter), used at start-up and on every run-time change."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.cube import firmware
from toio_navigator.settings.arena import SENSOR_PARAMS
from toio_navigator.settings.spec import FLOATS, STRINGS, Param, ParamSet, SettingError
from toio_navigator.sim.mats import MATS
from toio_navigator.sim.world import WorldParams, grid_poses

#: mat_sim's name for a bad parameter (older imports)
MatSimError = SettingError

PARAMS = ParamSet(
    Param('cubes', None, 'cube names (namespaces), e.g. [cube1, cube2]; required', kind=STRINGS),
    Param('initial_poses', (), 'x, y (mat units), heading (rad, clockwise) per cube, flattened; [] = a grid on the '
                               'mat', kind=FLOATS, low=-1e5, high=1e5),
    Param('mat', 'collection', 'the mat the cubes stand on', choices=tuple(sorted(MATS))),
    Param('seed', 0, 'random seed of the world (noise, glitches)', low=0, high=2**32 - 1),
    Param('physics_rate_hz', 50.0, 'fixed physics step rate, Hz', low=1.0, high=1000.0),
    Param('real_time_factor', 1.0, 'simulated seconds per wall-clock second', low=0.0, low_open=True, high=100.0,
          runtime=True),
    Param('firmware_version', '2.4.0', 'BLE protocol version the virtual cubes report and implement',
          choices=firmware.VERSIONS),
    Param('command_delay_s', WorldParams.command_delay, 'write -> effect latency of motor commands, s', low=0.0,
          high=10.0, runtime=True),
    Param('min_command_interval_s', WorldParams.min_command_interval, 'the cube ignores a motor write arriving '
          'this soon after the last accepted one, s (0 = never)', low=0.0, high=10.0, runtime=True),
    Param('position_noise', 0.0, 'std of reported positions, mat units', low=0.0, high=1000.0, runtime=True),
    Param('ground_truth_rate_hz', 20.0, 'mat_sim/ground_truth publish rate, Hz (0 = off)', low=0.0, high=1000.0,
          runtime=True),
    *SENSOR_PARAMS,     # arena_layout ('' = no <cube>/ir), arena_origin_x/y, arena_cell_size, ir_rate_hz, ir_noise
    Param('contact_slack_units', 1e-6, 'mat_sim/contacts: discs closer than 2 radii + this touch (float rounding)',
          low=0.0, high=1000.0),
    Param('link_check_period_s', 0.2, 'how often to notice drivers appearing / disappearing, s', low=0.0,
          low_open=True, high=60.0),
)


@dataclass(frozen=True)
class SimConfig:
    """Checked values (``values``, by name) plus what is made of several of them."""
    values: dict
    poses: np.ndarray             # (n, 3) initial mat poses
    world: WorldParams


def sim_config(values: dict) -> SimConfig:
    """The simulator's configuration from parameter values (defaults for the missing ones)."""
    v = PARAMS.check_all(values)
    n, flat = len(v['cubes']), v['initial_poses']
    if not flat:
        try:
            poses = grid_poses(n, v['mat'])
        except ValueError as exc:      # too many cubes for the mat
            raise SettingError('cubes', str(exc)) from None
    elif len(flat) != 3 * n:
        raise SettingError('initial_poses', f'needs 3 numbers (x, y, heading) per cube: {3 * n} for {n} cubes, '
                                            f'got {len(flat)}')
    else:
        poses = np.asarray(flat, dtype=float).reshape(n, 3)
    world = WorldParams(dt=1.0 / v['physics_rate_hz'], command_delay=v['command_delay_s'],
                        min_command_interval=v['min_command_interval_s'], position_noise=v['position_noise'])
    return SimConfig(v, poses, world)
