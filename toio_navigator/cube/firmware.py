"""Which BLE protocol version of the toio Core Cube brings which feature: the one table that both the driver (what
it may ask of a cube) and the simulator (what a simulated cube of a given version does) read, so the two cannot
disagree. Plain Python.

A cube reports its protocol version when asked (config 0x01); one that never answers is taken to be
:data:`ASSUMED_VERSION`. Each :class:`Feature` names the oldest version that has it.
"""
from __future__ import annotations

from dataclasses import dataclass

Version = tuple[int, int, int]


@dataclass(frozen=True)
class Feature:
    name: str           # how a log line or a refusal names it: '<name> disabled: needs firmware >= 2.3.0'
    since: Version

    @property
    def since_text(self) -> str:
        return '.'.join(map(str, self.since))

    def available(self, version: Version) -> bool:
        return version >= self.since


# 2.0.0: the first protocol
MOTOR_CONTROL = Feature('motor control (0x01, 0x02)', (2, 0, 0))
BASIC_CONFIG = Feature('version request and motion thresholds (config 0x01, 0x05, 0x06)', (2, 0, 0))
# 2.1.0: motor speeds up to 115, target control, double tap and posture
MOTOR_TARGET = Feature('move_to_pose (target control 0x03)', (2, 1, 0))
MOTOR_MULTI_TARGET = Feature('multiple targets (0x04)', (2, 1, 0))
MOTOR_ACCELERATION = Feature('acceleration control (0x05)', (2, 1, 0))
DOUBLE_TAP = Feature('double tap', (2, 1, 0))       # config 0x17; double tap and posture in the motion notification
LONG_MELODY = Feature('59-note melodies', (2, 1, 0))   # 2.0.0 plays at most 58 notes
# 2.2.0: notification tuning, wheel speeds, shake, magnet state, sensor read requests
ID_NOTIFICATION_SETTINGS = Feature('position-ID notification settings', (2, 2, 0))   # config 0x18, 0x19
WHEEL_SPEED = Feature('wheel-speed notifications', (2, 2, 0))                       # 0xE0, config 0x1C
SHAKE = Feature('shake', (2, 2, 0))                                                  # 6-byte motion notification
MAGNET_STATE = Feature('magnetic sensor', (2, 2, 0))          # magnet state; config 0x1B with one value
SENSOR_REQUESTS = Feature('motion and magnet read requests (0x81, 0x82)', (2, 2, 0))
# 2.3.0: posture angles, magnetic force, serialized information
POSTURE_EULER = Feature('IMU posture angles', (2, 3, 0))      # config 0x1D type 1, request 0x83 type 1
MAGNET_FORCE = Feature('magnetic force', (2, 3, 0))           # config 0x1B with function, interval, condition
SERIALIZED_INFO = Feature('serialized information (config 0x1E)', (2, 3, 0))
# 2.4.0: quaternion and float angles, connection interval
POSTURE_QUATERNION = Feature('IMU quaternion', (2, 4, 0))     # config 0x1D / request 0x83 type 2
POSTURE_EULER_FLOAT = Feature('IMU float posture angles', (2, 4, 0))   # type 3
CONNECTION_INTERVAL = Feature('connection interval (config 0x30, 0x31, 0x32)', (2, 4, 0))
# 2.5.0
SMOOTH_BLINK = Feature('smooth blink', (2, 5, 0))             # light 0x70
SAVED_SETTINGS = Feature('saved settings (config 0x33, 0x0F)', (2, 5, 0))
REMOTE_POWER_OFF = Feature('remote power-off (config 0x34)', (2, 5, 0))

FEATURES = (MOTOR_CONTROL, BASIC_CONFIG, MOTOR_TARGET, MOTOR_MULTI_TARGET, MOTOR_ACCELERATION, DOUBLE_TAP,
            LONG_MELODY, ID_NOTIFICATION_SETTINGS, WHEEL_SPEED, SHAKE, MAGNET_STATE, SENSOR_REQUESTS, POSTURE_EULER,
            MAGNET_FORCE, SERIALIZED_INFO, POSTURE_QUATERNION, POSTURE_EULER_FLOAT, CONNECTION_INTERVAL,
            SMOOTH_BLINK, SAVED_SETTINGS, REMOTE_POWER_OFF)
#: every protocol version there is, oldest first
VERSIONS = tuple(sorted({'.'.join(map(str, f.since)) for f in FEATURES}))
ASSUMED_VERSION = '2.0.0'   # what a cube that never answers the version request is taken to be

#: motor-control command type byte -> feature
MOTOR_COMMANDS = {0x01: MOTOR_CONTROL, 0x02: MOTOR_CONTROL, 0x03: MOTOR_TARGET, 0x04: MOTOR_MULTI_TARGET,
                  0x05: MOTOR_ACCELERATION}
#: configuration command type byte -> feature (its first form; see MAGNET_FORCE and the posture kinds)
CONFIG_COMMANDS = {0x01: BASIC_CONFIG, 0x05: BASIC_CONFIG, 0x06: BASIC_CONFIG, 0x17: DOUBLE_TAP,
                   0x18: ID_NOTIFICATION_SETTINGS, 0x19: ID_NOTIFICATION_SETTINGS, 0x1B: MAGNET_STATE,
                   0x1C: WHEEL_SPEED, 0x1D: POSTURE_EULER, 0x1E: SERIALIZED_INFO, 0x30: CONNECTION_INTERVAL,
                   0x31: CONNECTION_INTERVAL, 0x32: CONNECTION_INTERVAL, 0x33: SAVED_SETTINGS, 0x34: REMOTE_POWER_OFF,
                   0x0F: SAVED_SETTINGS}
#: posture angle kind (config 0x1D, request 0x83) -> feature
POSTURE_KINDS = {1: POSTURE_EULER, 2: POSTURE_QUATERNION, 3: POSTURE_EULER_FLOAT}
