"""The arena drawn on the mat: parameters shared by mat_sim, virtual_ir and arena_explorer (same names, same
rules, one place), and the mapping they describe."""
from __future__ import annotations

from toio_navigator.settings.spec import Param, SettingError
from toio_navigator.sim.ir_sensors import ArenaMatMapping

#: where the arena lies on the mat
MAPPING_PARAMS = (
    Param('arena_origin_x', 100.0, 'mat x (units) of the arena top-left corner', low=-1e5, high=1e5),
    Param('arena_origin_y', 50.0, 'mat y (units) of the arena top-left corner', low=-1e5, high=1e5),
    Param('arena_cell_size', 20.0, 'arena cell side, mat units', low=0.0, low_open=True, high=1e4),
)
#: the virtual IR sensors that see the arena's walls and obstacles
SENSOR_PARAMS = (
    Param('arena_layout', '', 'arena layout JSON (toio_navigator/data/arenas has examples) whose walls and '
                              'obstacles the sensors see'),
    *MAPPING_PARAMS,
    Param('ir_rate_hz', 10.0, '<cube>/ir publish rate, Hz', low=0.0, low_open=True, high=1000.0),
    Param('ir_noise', 0.0, 'probability that a reading is one cell off (seeded; 0 = exact)', low=0.0, high=1.0),
)


def arena_mapping(values: dict) -> ArenaMatMapping:
    """The mapping of checked MAPPING_PARAMS values."""
    try:
        return ArenaMatMapping(values['arena_origin_x'], values['arena_origin_y'], values['arena_cell_size'])
    except ValueError as exc:
        raise SettingError('arena_cell_size', str(exc)) from None
