"""virtual_ir's parameters without ROS: :data:`PARAMS` and :func:`virtual_ir_values` (SettingError naming the
parameter)."""
from __future__ import annotations

from toio_navigator.settings.arena import SENSOR_PARAMS
from toio_navigator.settings.spec import STRINGS, Param, ParamSet, SettingError

#: virtual_ir's name for a bad parameter (older imports)
VirtualIrError = SettingError

PARAMS = ParamSet(
    Param('cubes', None, 'cube names (namespaces) to give virtual IR sensors, e.g. [cube1]; required', kind=STRINGS),
    *SENSOR_PARAMS,
    Param('seed', 0, 'random seed of the sensor noise', low=0, high=2**32 - 1),
    Param('stale_s', 0.5, 'a cube whose last state is older than this gets -1 readings, s', low=0.0, low_open=True,
          high=3600.0, runtime=True),
)


def virtual_ir_values(values: dict) -> dict[str, object]:
    """Checked values (defaults for the missing ones); the layout is required here."""
    v = PARAMS.check_all(values)
    if not v['arena_layout']:
        raise SettingError('arena_layout', 'needs the path of a layout JSON, got \'\'')
    return v
