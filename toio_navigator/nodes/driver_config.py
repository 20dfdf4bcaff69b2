"""The cube_driver's parameters: names, defaults, documentation and validation (plain Python, no rclpy).

:data:`PARAMETERS` is the single table the node declares from (and the README's parameter table is made from);
:func:`DriverConfig.from_values` turns the values into a checked, typed config or raises :class:`ConfigError`
naming the parameter and what is wrong with it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from toio_navigator.cube.protocol import ID_ALWAYS, ID_BALANCED, ID_ON_CHANGE
from toio_navigator.cube.transport import BackoffPolicy
from toio_navigator.units import MOTOR_DEAD_ZONE, MOTOR_MAX, UNITS_PER_METRE


class ConfigError(ValueError):
    """A driver parameter has a value the driver cannot work with."""


#: name -> (default, description); the default's type is the parameter's type
PARAMETERS: dict[str, tuple[object, str]] = {
    'cube': ('', 'cube name used in messages; "" = the node namespace without the slash'),
    'transport': ('sim', '"sim" (virtual cube in mat_sim over <cube>/ble/tx|rx) or "ble" (bleak)'),
    'ble_name': ('', 'BLE: 3-character cube id matched inside the advertised name (e.g. "a1B"); "" and no '
                     'ble_address = the first cube found (a connected cube stops advertising)'),
    'ble_address': ('', 'BLE: MAC address (CoreBluetooth UUID on macOS); skips scanning when set'),
    'ble_adapter': ('', 'BLE: adapter, e.g. "hci1" ("" = default)'),
    'ble_scan_timeout_s': (10.0, 'BLE: give up a scan after this long'),
    'connect_timeout_s': (10.0, 'one connection attempt times out after this long'),
    'io_timeout_s': (5.0, 'one write/read times out after this long'),
    'reconnect_initial_s': (0.5, 'first reconnect delay; doubles per failed attempt'),
    'reconnect_max_s': (8.0, 'longest reconnect delay'),
    'reconnect_max_attempts': (0, 'give up after this many failed attempts in a row (0 = never)'),
    'motor_duration_ms': (250, 'safety duration of a MotorCommand with duration_ms 0 and of cmd_vel, 10..2550 ms'),
    'min_motor_interval_ms': (45, 'motor writes closer than this are coalesced (the cube ignores them)'),
    'max_motor': (MOTOR_MAX, 'firmware speed limit, motor units (100 on firmware 2.0.0)'),
    'dead_zone': (MOTOR_DEAD_ZONE, '|speed| below this is sent as 0 (10 on firmware 2.0.0)'),
    'publish_odom': (False, 'publish <cube>/odom (nav_msgs/Odometry)'),
    'frame_id': ('mat', 'frame of pose/odom/TF'),
    'id_notify_interval_ms': (10, 'Position ID notification minimum interval, 0..2550 ms (firmware >= 2.2.0)'),
    'id_notify_condition': ('always', '"always", "on_change" or "balanced" (pause after 300 ms still); '
                                      '"always" keeps a still cube from looking stale to the navigator'),
    'id_missed_ms': (70, 'report "position ID missed" after the ID was lost this long, 0..2550 ms'),
    'outlier_jump_units': (5.0 * UNITS_PER_METRE / 100.0, 'a pose jump larger than this is held back until the '
                                                          'next reading confirms it (0 = off)'),
    'version_timeout_s': (1.0, 'wait this long for the protocol version answer (3 tries, then assume 2.0.0)'),
    'wheel_speed_notify': (True, 'enable wheel-speed notifications (firmware >= 2.2.0; feeds odom)'),
    'horizontal_threshold_deg': (45, 'motion sensor "flat" threshold, 1..45 degrees'),
    'collision_threshold': (7, 'motion sensor collision level 1..10'),
    'double_tap_interval': (5, 'double-tap interval level 0..7 (firmware >= 2.1.0)'),
    'imu': ('quaternion', 'posture notifications for <cube>/imu: "quaternion" (>= 2.4.0), "euler" (>= 2.3.0), "off"'),
    'imu_interval_ms': (50, 'posture notification interval, 10..2550 ms'),
    'magnet': ('off', 'magnetic sensor: "off", "state" (>= 2.2.0) or "force" (>= 2.3.0)'),
    'magnet_interval_ms': (100, 'magnet notification interval, 20..5100 ms (20 ms steps; >= 2.3.0)'),
    'light_min_interval_s': (0.1, 'light writes are coalesced to at most one per this interval (newest wins)'),
    'sound_min_interval_s': (0.2, 'a sound arriving sooner than this after the last one is dropped'),
    'move_default_speed': (80, 'move_to_pose max speed when the goal says 0, motor units 10..115'),
    'move_result_margin_s': (2.0, 'report NO_ANSWER this long after a move_to_pose timeout without a result'),
    'diagnostics_period_s': (1.0, 'publish /diagnostics this often (0 = off)'),
    'publish_tf': (True, 'broadcast mat -> <cube>/base_link where tf2_ros exists (skipped with a log otherwise)'),
}

_CONDITIONS = {'always': ID_ALWAYS, 'on_change': ID_ON_CHANGE, 'balanced': ID_BALANCED}


@dataclass(frozen=True)
class DriverConfig:
    cube: str
    transport: str
    ble_name: str
    ble_address: str
    ble_adapter: str
    ble_scan_timeout_s: float
    connect_timeout_s: float
    io_timeout_s: float
    backoff: BackoffPolicy
    motor_duration_ms: int
    min_motor_interval_s: float
    max_motor: int
    dead_zone: int
    publish_odom: bool
    frame_id: str
    id_notify_interval_10ms: int
    id_notify_condition: int
    id_missed_10ms: int
    outlier_jump_units: float
    version_timeout_s: float
    wheel_speed_notify: bool
    horizontal_threshold_deg: int
    collision_threshold: int
    double_tap_interval: int
    imu: str
    imu_interval_10ms: int
    magnet: str
    magnet_interval_20ms: int
    light_min_interval_s: float
    sound_min_interval_s: float
    move_default_speed: int
    move_result_margin_s: float
    diagnostics_period_s: float
    publish_tf: bool

    @property
    def base_frame(self) -> str:
        return f'{self.cube}/base_link'

    @classmethod
    def from_values(cls, values: dict[str, object], namespace: str = '/') -> 'DriverConfig':
        """Check every value; ConfigError('parameter <name>: ...') on the first bad one."""
        v = {name: values.get(name, default) for name, (default, _doc) in PARAMETERS.items()}
        cube = str(v['cube']) or namespace.strip('/').split('/')[-1]
        _need(bool(cube), 'cube', 'is empty and the node has no namespace: set cube or run the node in /<cube>')
        _need(cube.replace('_', 'a').isalnum() and not cube[0].isdigit(), 'cube',
              f'{cube!r} is not a valid ROS name (letters, digits, _; not starting with a digit)')
        _need(v['transport'] in ('sim', 'ble'), 'transport', f'must be "sim" or "ble", got {v["transport"]!r}')
        for name in ('ble_scan_timeout_s', 'connect_timeout_s', 'io_timeout_s', 'version_timeout_s'):
            _positive(v, name)
        for name in ('reconnect_initial_s', 'reconnect_max_s', 'outlier_jump_units', 'light_min_interval_s',
                     'sound_min_interval_s', 'move_result_margin_s', 'diagnostics_period_s'):
            _non_negative(v, name)
        _need(v['reconnect_max_s'] >= v['reconnect_initial_s'], 'reconnect_max_s',
              f'must be >= reconnect_initial_s ({v["reconnect_initial_s"]}), got {v["reconnect_max_s"]}')
        _int_range(v, 'reconnect_max_attempts', 0, 1_000_000)
        _int_range(v, 'motor_duration_ms', 10, 2550)
        _int_range(v, 'min_motor_interval_ms', 0, 1000)
        _int_range(v, 'max_motor', 1, 255)
        _int_range(v, 'dead_zone', 0, int(v['max_motor']))
        _int_range(v, 'id_notify_interval_ms', 0, 2550)
        _need(v['id_notify_condition'] in _CONDITIONS, 'id_notify_condition',
              f'must be one of {", ".join(_CONDITIONS)}, got {v["id_notify_condition"]!r}')
        _int_range(v, 'id_missed_ms', 0, 2550)
        _int_range(v, 'horizontal_threshold_deg', 1, 45)
        _int_range(v, 'collision_threshold', 1, 10)
        _int_range(v, 'double_tap_interval', 0, 7)
        _need(v['imu'] in ('quaternion', 'euler', 'off'), 'imu', f'must be quaternion, euler or off, got {v["imu"]!r}')
        _int_range(v, 'imu_interval_ms', 10, 2550)
        _need(v['magnet'] in ('off', 'state', 'force'), 'magnet', f'must be off, state or force, got {v["magnet"]!r}')
        _int_range(v, 'magnet_interval_ms', 20, 5100)
        _int_range(v, 'move_default_speed', 10, 115)
        _need(bool(str(v['frame_id'])), 'frame_id', 'must not be empty')
        attempts = int(v['reconnect_max_attempts'])
        backoff = BackoffPolicy(initial_s=float(v['reconnect_initial_s']), max_delay_s=float(v['reconnect_max_s']),
                                max_attempts=attempts or None, connect_timeout_s=float(v['connect_timeout_s']))
        return cls(
            cube=cube, transport=str(v['transport']), ble_name=str(v['ble_name']),
            ble_address=str(v['ble_address']), ble_adapter=str(v['ble_adapter']),
            ble_scan_timeout_s=float(v['ble_scan_timeout_s']), connect_timeout_s=float(v['connect_timeout_s']),
            io_timeout_s=float(v['io_timeout_s']), backoff=backoff, motor_duration_ms=int(v['motor_duration_ms']),
            min_motor_interval_s=int(v['min_motor_interval_ms']) / 1000.0, max_motor=int(v['max_motor']),
            dead_zone=int(v['dead_zone']), publish_odom=bool(v['publish_odom']), frame_id=str(v['frame_id']),
            id_notify_interval_10ms=int(v['id_notify_interval_ms']) // 10,
            id_notify_condition=_CONDITIONS[str(v['id_notify_condition'])],
            id_missed_10ms=int(v['id_missed_ms']) // 10, outlier_jump_units=float(v['outlier_jump_units']),
            version_timeout_s=float(v['version_timeout_s']), wheel_speed_notify=bool(v['wheel_speed_notify']),
            horizontal_threshold_deg=int(v['horizontal_threshold_deg']),
            collision_threshold=int(v['collision_threshold']), double_tap_interval=int(v['double_tap_interval']),
            imu=str(v['imu']), imu_interval_10ms=int(v['imu_interval_ms']) // 10, magnet=str(v['magnet']),
            magnet_interval_20ms=int(v['magnet_interval_ms']) // 20,
            light_min_interval_s=float(v['light_min_interval_s']),
            sound_min_interval_s=float(v['sound_min_interval_s']), move_default_speed=int(v['move_default_speed']),
            move_result_margin_s=float(v['move_result_margin_s']),
            diagnostics_period_s=float(v['diagnostics_period_s']), publish_tf=bool(v['publish_tf']))


def _need(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise ConfigError(f'parameter {name}: {message}')


def _positive(v: dict, name: str) -> None:
    value = v[name]
    _need(isinstance(value, (int, float)) and math.isfinite(value) and value > 0, name,
          f'must be a number > 0, got {value!r}')


def _non_negative(v: dict, name: str) -> None:
    value = v[name]
    _need(isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, name,
          f'must be a number >= 0, got {value!r}')


def _int_range(v: dict, name: str, low: int, high: int) -> None:
    value = v[name]
    _need(isinstance(value, int) and not isinstance(value, bool) and low <= value <= high, name,
          f'must be an integer {low}..{high}, got {value!r}')
