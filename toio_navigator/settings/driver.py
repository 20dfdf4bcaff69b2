"""The cube_driver's parameters without ROS: :data:`PARAMS` (what the node declares, what the README's parameter
table describes) and :meth:`DriverConfig.from_values`, the checked, typed configuration (SettingError naming the
parameter and what is wrong with it), used at start-up and on every run-time change.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_adapters import ANY_ADAPTER, parse_adapters
from toio_navigator.cube.ble_finder import ANY_CUBE, BleTarget
from toio_navigator.cube.protocol import ID_ALWAYS, ID_BALANCED, ID_ON_CHANGE
from toio_navigator.cube.transport import BackoffPolicy
from toio_navigator.settings.spec import TEXTS, Param, ParamSet, SettingError, name_problem
from toio_navigator.units import MOTOR_DEAD_ZONE, MOTOR_MAX, UNITS_PER_METRE

__all__ = ['ANY_CUBE', 'PARAMS', 'ConfigError', 'DriverConfig']

#: the driver's name for a bad parameter (older imports)
ConfigError = SettingError
#: BLE reconnect delays vary by this share, so drivers that failed together (one busy adapter) do not retry together
RECONNECT_JITTER = 0.25

_CONDITIONS = {'always': ID_ALWAYS, 'on_change': ID_ON_CHANGE, 'balanced': ID_BALANCED}
_HOUR = 3600.0     # longest timeout or period that makes sense (a larger one would overflow the timers)

PARAMS = ParamSet(
    Param('cube', '', 'cube name used in messages; "" = the node namespace without the slash'),
    Param('transport', 'sim', '"sim" (virtual cube in mat_sim over <cube>/ble/tx|rx) or "ble" (bleak)',
          choices=('sim', 'ble')),
    Param('ble_name', '', 'BLE: the cube\'s 3-character id, matched inside its advertised name (e.g. "a1B"), or "*" '
                          'for any cube that no other driver holds; transport ble needs ble_name or ble_address'),
    Param('ble_address', '', 'BLE: MAC address (CoreBluetooth UUID on macOS); skips scanning when set (and beats '
                             'ble_name)'),
    Param('ble_adapter', '', f'BLE: the adapter(s) to connect through: "hci1", a list ("hci0,hci1" or [hci0, hci1]: '
                             f'the one with a free slot), "{ANY_ADAPTER}" (any adapter BlueZ offers); "" = the '
                             'default (hci0)', kind=TEXTS),
    Param('ble_scan_timeout_s', 10.0, 'BLE: give up a scan after this long', low=0.0, low_open=True, high=_HOUR),
    Param('connect_timeout_s', 10.0, 'one connection attempt times out after this long', low=0.0, low_open=True,
          high=_HOUR),
    Param('io_timeout_s', 5.0, 'one write/read times out after this long', low=0.0, low_open=True, high=_HOUR),
    Param('reconnect_initial_s', 0.5, 'first reconnect delay; doubles per failed attempt', low=0.0, high=_HOUR),
    Param('reconnect_max_s', 8.0, 'longest reconnect delay (>= reconnect_initial_s)', low=0.0, high=_HOUR),
    Param('reconnect_max_attempts', 0, 'give up after this many failed attempts in a row (0 = never)', low=0,
          high=1_000_000),
    Param('motor_duration_ms', 250, 'safety duration of a MotorCommand with duration_ms 0 and of cmd_vel, ms',
          low=10, high=2550, runtime=True),
    Param('expire_by_stamp', True, 'a stamped MotorCommand runs until its stamp + duration_ms at the latest (a late '
          'command only for what is left; needs the hosts\' clocks in sync); false = the whole duration from arrival',
          runtime=True),
    Param('min_motor_interval_ms', 45, 'motor writes closer than this are coalesced (the cube ignores them), ms',
          low=0, high=1000, runtime=True),
    Param('max_motor', MOTOR_MAX, 'firmware speed limit, motor units (100 on firmware 2.0.0)', low=1, high=255,
          runtime=True),
    Param('dead_zone', MOTOR_DEAD_ZONE, '|speed| below this is sent as 0 (10 on firmware 2.0.0); <= max_motor',
          low=0, high=255, runtime=True),
    Param('publish_odom', False, 'publish <cube>/odom (nav_msgs/Odometry)'),
    Param('frame_id', 'mat', 'frame of pose/odom/TF'),
    Param('id_notify_interval_ms', 10, 'Position ID notification minimum interval, ms (firmware >= 2.2.0)', low=0,
          high=2550),
    Param('id_notify_condition', 'always', '"balanced" pauses after 300 ms still; "always" keeps a still cube from '
                                           'looking stale to the navigator', choices=tuple(_CONDITIONS)),
    Param('id_missed_ms', 70, 'report "position ID missed" after the ID was lost this long, ms', low=0, high=2550),
    Param('outlier_jump_units', 5.0 * UNITS_PER_METRE / 100.0, 'a pose jump larger than this is held back until '
          'the next reading confirms it (0 = off)', low=0.0, runtime=True),
    Param('version_timeout_s', 1.0, 'wait this long for the protocol version answer (3 tries, then assume 2.0.0)',
          low=0.0, low_open=True, high=_HOUR),
    Param('wheel_speed_notify', True, 'enable wheel-speed notifications (firmware >= 2.2.0; feeds odom)'),
    Param('horizontal_threshold_deg', 45, 'motion sensor "flat" threshold, degrees', low=1, high=45),
    Param('collision_threshold', 7, 'motion sensor collision level', low=1, high=10),
    Param('double_tap_interval', 5, 'double-tap interval level (firmware >= 2.1.0)', low=0, high=7),
    Param('imu', 'quaternion', 'posture notifications for <cube>/imu: quaternion (>= 2.4.0), euler (>= 2.3.0), off',
          choices=('quaternion', 'euler', 'off')),
    Param('imu_interval_ms', 50, 'posture notification interval, ms', low=10, high=2550),
    Param('magnet', 'off', 'magnetic sensor: off, state (>= 2.2.0) or force (>= 2.3.0)',
          choices=('off', 'state', 'force')),
    Param('magnet_interval_ms', 100, 'magnet notification interval, ms (20 ms steps; >= 2.3.0)', low=20, high=5100),
    Param('light_min_interval_s', 0.1, 'light writes are coalesced to at most one per this interval (newest wins)',
          low=0.0, high=_HOUR, runtime=True),
    Param('sound_min_interval_s', 0.2, 'a sound arriving sooner than this after the last one is dropped', low=0.0,
          high=_HOUR, runtime=True),
    Param('move_default_speed', 80, 'move_to_pose max speed when the goal says 0, motor units', low=10,
          high=MOTOR_MAX, runtime=True),
    Param('move_result_margin_s', 2.0, 'report NO_ANSWER this long after a move_to_pose timeout without a result',
          low=0.0, high=_HOUR, runtime=True),
    Param('diagnostics_period_s', 1.0, 'publish /diagnostics this often (0 = off)', low=0.0, high=_HOUR),
    Param('publish_tf', False, 'broadcast frame_id -> <cube>/base_link on /tf from every pose (off: the navigator '
                               'broadcasts every cube once per tick; turn on for a driver without a navigator)'),
)


@dataclass(frozen=True)
class DriverConfig:
    cube: str
    transport: str
    ble_name: str
    ble_address: str
    ble_adapters: tuple[str, ...]
    ble_scan_timeout_s: float
    connect_timeout_s: float
    io_timeout_s: float
    backoff: BackoffPolicy
    motor_duration_ms: int
    expire_by_stamp: bool
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

    @property
    def ble_adapter(self) -> str:
        """The adapters as one string ('' default, '*', 'hci0,hci1')."""
        return ','.join(self.ble_adapters)

    def ble_target(self) -> BleTarget:
        """What the BLE finder looks for, and how."""
        return BleTarget(self.ble_name, self.ble_address, self.ble_adapters, self.ble_scan_timeout_s, self.backoff,
                         self.io_timeout_s)

    def configuration_writes(self, version: firmware.Version,
                             supports: Callable[[firmware.Feature], bool]) -> list[bytes]:
        """The configuration writes that set up a cube of protocol ``version`` for these settings, oldest
        features first; ``supports(feature)`` tells whether the cube has a feature (and reports one it lacks)."""
        out = [p.ConfigWrite.horizontal_threshold(self.horizontal_threshold_deg).encode(),
               p.ConfigWrite.collision_threshold(self.collision_threshold).encode()]
        if supports(firmware.DOUBLE_TAP):
            out.append(p.ConfigWrite(p.ConfigCommand.DOUBLE_TAP_INTERVAL, (self.double_tap_interval,)).encode())
        if supports(firmware.ID_NOTIFICATION_SETTINGS):
            out += [p.ConfigWrite.id_notification(self.id_notify_interval_10ms, self.id_notify_condition).encode(),
                    p.ConfigWrite.id_missed_sensitivity(self.id_missed_10ms).encode()]
        if self.wheel_speed_notify and supports(firmware.WHEEL_SPEED):
            out.append(p.ConfigWrite.motor_speed_notification(True).encode())
        if self.imu == 'quaternion' and supports(firmware.POSTURE_QUATERNION):
            out.append(p.ConfigWrite.posture_notification(2, self.imu_interval_10ms, 0).encode())
        elif self.imu != 'off' and supports(firmware.POSTURE_EULER):
            out.append(p.ConfigWrite.posture_notification(1, self.imu_interval_10ms, 0).encode())
        if self.magnet == 'force' and supports(firmware.MAGNET_FORCE):
            out.append(p.ConfigWrite.magnetic_sensor(2, self.magnet_interval_20ms, 1).encode())
        elif self.magnet == 'state' and firmware.MAGNET_FORCE.available(version):    # the newer form of 0x1B
            out.append(p.ConfigWrite.magnetic_sensor(1, self.magnet_interval_20ms, 1).encode())
        elif self.magnet == 'state' and supports(firmware.MAGNET_STATE):
            out.append(p.ConfigWrite(p.ConfigCommand.MAGNETIC_SENSOR, (1,)).encode())
        return out

    @classmethod
    def from_values(cls, values: dict[str, object], namespace: str = '/') -> 'DriverConfig':
        """Check every value (defaults for the missing ones); SettingError('parameter <name>: ...') on the first
        bad one."""
        v = PARAMS.check_all(values)
        cube = v['cube'] or namespace.strip('/').split('/')[-1]
        _need(bool(cube), 'cube', 'is empty and the node has no namespace: set cube or run the node in /<cube>')
        _need(not name_problem(cube), 'cube', name_problem(cube))
        _need(v['reconnect_max_s'] >= v['reconnect_initial_s'], 'reconnect_max_s',
              f'must be >= reconnect_initial_s ({v["reconnect_initial_s"]}), got {v["reconnect_max_s"]}')
        _need(v['dead_zone'] <= v['max_motor'], 'dead_zone',
              f'must be <= max_motor ({v["max_motor"]}), got {v["dead_zone"]}')
        _need(bool(v['frame_id']), 'frame_id', 'must not be empty')
        _need(v['transport'] != 'ble' or bool(v['ble_name'] or v['ble_address']), 'ble_name',
              'transport ble needs to know which cube to drive, and neither ble_name nor ble_address is set: set '
              f'ble_name to the cube\'s 3-character id (e.g. "a1B"), ble_address to its address, or ble_name to '
              f'"{ANY_CUBE}" for any cube that no other driver holds')
        try:
            adapters = parse_adapters(v['ble_adapter'])
        except ValueError as exc:
            raise SettingError('ble_adapter', str(exc)) from None
        backoff = BackoffPolicy(initial_s=v['reconnect_initial_s'], max_delay_s=v['reconnect_max_s'],
                                max_attempts=v['reconnect_max_attempts'] or None,
                                connect_timeout_s=v['connect_timeout_s'],
                                jitter=RECONNECT_JITTER if v['transport'] == 'ble' else 0.0)
        return cls(
            cube=cube, transport=v['transport'], ble_name=v['ble_name'], ble_address=v['ble_address'],
            ble_adapters=adapters, ble_scan_timeout_s=v['ble_scan_timeout_s'],
            connect_timeout_s=v['connect_timeout_s'], io_timeout_s=v['io_timeout_s'], backoff=backoff,
            motor_duration_ms=v['motor_duration_ms'], expire_by_stamp=v['expire_by_stamp'],
            min_motor_interval_s=v['min_motor_interval_ms'] / 1000.0,
            max_motor=v['max_motor'], dead_zone=v['dead_zone'], publish_odom=v['publish_odom'],
            frame_id=v['frame_id'], id_notify_interval_10ms=v['id_notify_interval_ms'] // 10,
            id_notify_condition=_CONDITIONS[v['id_notify_condition']], id_missed_10ms=v['id_missed_ms'] // 10,
            outlier_jump_units=v['outlier_jump_units'], version_timeout_s=v['version_timeout_s'],
            wheel_speed_notify=v['wheel_speed_notify'], horizontal_threshold_deg=v['horizontal_threshold_deg'],
            collision_threshold=v['collision_threshold'], double_tap_interval=v['double_tap_interval'],
            imu=v['imu'], imu_interval_10ms=v['imu_interval_ms'] // 10, magnet=v['magnet'],
            magnet_interval_20ms=v['magnet_interval_ms'] // 20, light_min_interval_s=v['light_min_interval_s'],
            sound_min_interval_s=v['sound_min_interval_s'], move_default_speed=v['move_default_speed'],
            move_result_margin_s=v['move_result_margin_s'], diagnostics_period_s=v['diagnostics_period_s'],
            publish_tf=v['publish_tf'])


def _need(condition: bool, name: str, problem: str) -> None:
    if not condition:
        raise SettingError(name, problem)
