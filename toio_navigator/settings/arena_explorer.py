"""arena_explorer's parameters without ROS: :data:`PARAMS`, :func:`settings_from_values` (SettingError naming the
parameter) and :func:`parse_waypoint`, used at start-up, on a ``waypoint`` change and by the set_waypoint
service."""
from __future__ import annotations

from dataclasses import dataclass, field

from toio_navigator.arena.explorer import ExplorerConfig
from toio_navigator.arena.geometry import ARENA_COLS, ARENA_ROWS, centre_in_range
from toio_navigator.settings.arena import MAPPING_PARAMS, arena_mapping
from toio_navigator.settings.spec import INTS, NAME, Param, ParamSet, SettingError
from toio_navigator.sim.ir_sensors import ArenaMatMapping
from toio_navigator.units import MOTOR_MAX

#: arena_explorer's name for a bad parameter (older imports)
ArenaNodeError = SettingError

NO_WAYPOINT = (-1, -1)

PARAMS = ParamSet(
    Param('cube', 'cube1', 'the exploring cube (namespace of its driver topics)', kind=NAME),
    *MAPPING_PARAMS,
    Param('waypoint', NO_WAYPOINT, 'fastest-path waypoint [x, y] (robot centre cell, 1..13 x 1..18); [-1, -1] = '
                                   'none; also set by the arena_explorer/set_waypoint service', kind=INTS,
          lengths=(0, 2), runtime=True),
    Param('turn_cost', 2.0, 'fastest-path cost of a 90-degree turn (a forward cell costs 1)', low=0.0, high=1e6),
    Param('image_mode', False, 'hunt image cards (photos, reverse hugging)'),
    Param('max_images', 5, 'image mode: stop hunting after this many different cards', low=0),
    Param('camera_layout', '', 'image mode: layout JSON whose cards a simulated camera sees ("" = no camera)'),
    Param('complete_coverage', True, 'after the hug, visit every pose that can still see an unexplored cell'),
    Param('dash', True, "several cells in one forward move when the seed's break checks allow it"),
    Param('max_moves', 5000, 'end exploration after this many motion commands', low=1),
    Param('move_speed', 50.0, 'navigator speed cap of forward moves, motor units', low=1.0, high=float(MOTOR_MAX)),
    Param('turn_speed', 40, 'move_to_pose speed of turns, motor units', low=10, high=MOTOR_MAX),
    Param('goal_tolerance', 6.0, 'forward move reached within this many mat units (>= the navigator '
                                 'handle_tolerance, <= half a cell)', low=0.1),
    Param('square_up_deg', 40.0, 'heading error (deg) that triggers a correction before the readings', low=4.0,
          high=44.0),
    Param('settle_s', 0.1, 'wait after a move before the pose check and the readings, s', low=0.0, high=10.0),
    Param('move_timeout_s', 20.0, 'one motion step may take this long before it is retried, s', low=0.5,
          high=600.0),
    Param('retries', 2, 'retries of a failing motion step before the run stops with ERROR', low=0, high=1000),
)


@dataclass(frozen=True)
class ArenaNodeSettings:
    cube: str = 'cube1'
    mapping: ArenaMatMapping = ArenaMatMapping()
    waypoint: tuple[int, int] | None = None
    move_speed: float = 50.0
    turn_speed: int = 40
    goal_tolerance: float = 6.0
    square_up_deg: float = 40.0
    settle_s: float = 0.1
    move_timeout_s: float = 20.0
    retries: int = 2
    camera_layout: str = ''
    explorer: ExplorerConfig = field(default_factory=ExplorerConfig)


def parse_waypoint(value, cols: int = ARENA_COLS, rows: int = ARENA_ROWS) -> tuple[int, int] | None:
    """[x, y] -> (x, y); [] or [-1, -1] -> None; anything else (not two integers, outside the arena, a centre whose
    3x3 footprint leaves the arena): SettingError naming the problem."""
    values = PARAMS['waypoint'].check(value)
    if not values or values == NO_WAYPOINT:
        return None
    x, y = values
    if not (0 <= x < cols and 0 <= y < rows):
        raise SettingError('waypoint', f'cell ({x},{y}) is outside the arena (0..{cols - 1} x 0..{rows - 1})')
    if not centre_in_range(x, y, cols, rows):
        raise SettingError('waypoint', f'cell ({x},{y}) is not a valid robot centre: the 3x3 footprint would '
                                       f'leave the arena (centres are 1..{cols - 2} x 1..{rows - 2})')
    return x, y


def settings_from_values(values: dict) -> ArenaNodeSettings:
    """ArenaNodeSettings from parameter values (defaults for the missing ones); SettingError naming the first bad
    one."""
    v = PARAMS.check_all(values)
    mapping = arena_mapping(v)
    if v['goal_tolerance'] > 0.5 * mapping.cell_size:
        raise SettingError('goal_tolerance', f'must be <= half a cell ({0.5 * mapping.cell_size:g} mat units): a '
                                             f'cube could stop in the next cell, got {v["goal_tolerance"]}')
    explorer = ExplorerConfig(image_mode=v['image_mode'], max_images=v['max_images'],
                              complete_coverage=v['complete_coverage'], dash=v['dash'], max_moves=v['max_moves'],
                              turn_cost=v['turn_cost'])
    return ArenaNodeSettings(
        cube=v['cube'], mapping=mapping, waypoint=parse_waypoint(v['waypoint']), move_speed=v['move_speed'],
        turn_speed=v['turn_speed'], goal_tolerance=v['goal_tolerance'], square_up_deg=v['square_up_deg'],
        settle_s=v['settle_s'], move_timeout_s=v['move_timeout_s'], retries=v['retries'],
        camera_layout=v['camera_layout'], explorer=explorer)
