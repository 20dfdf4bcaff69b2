"""Units and frames: the only place where mat conventions meet ROS conventions.

Inside the package everything is in the cube's own terms:
  * positions in mat units ("dots" of the position ID): 1 unit = 560/411 mm,
  * the mat frame: x to the right, y *down* on the printed mat,
  * headings in radians from +x towards +y, i.e. clockwise seen from above (as the cube reports them),
  * speeds in mat units per second, motor commands in toio motor units ("u", -115..115).

ROS (REP 103) wants metres, y up and counter-clockwise angles. The ROS frame ``mat`` used by the nodes has its
origin at mat unit (0, 0), x along mat x and y along *minus* mat y, so a cube's mat pose (x, y, theta) is the ROS
pose (x*s, -y*s, -theta) with s = METRES_PER_UNIT. Every function here works on floats and numpy arrays alike.
"""
from __future__ import annotations

import math

#: mat units per metre (DotPerM of the reference: 411 dots over 560 mm)
UNITS_PER_METRE = 411.0 / 0.560
METRES_PER_UNIT = 0.560 / 411.0
#: wheel speed in mat units/s per motor unit: 4.3 rpm/u on a 25 mm tyre (reference K = VDotOverU ~ 2.06553)
UNITS_PER_S_PER_MOTOR_UNIT = 4.3 * math.pi * 0.0125 / 60.0 * UNITS_PER_METRE
#: distance between the two tyres in mat units (0.0266 m)
WHEEL_TRACK_UNITS = 0.0266 * UNITS_PER_METRE
#: firmware limits of a motor command
MOTOR_MAX = 115
MOTOR_DEAD_ZONE = 8  # |u| below this does not turn the wheel (reference: 0..7 -> stop)

#: half the 31.8 mm body width, mat units: a cube's collision disc (two cubes touch below twice this apart)
BODY_RADIUS = 0.0318 / 2 / METRES_PER_UNIT

FRAME_ID = 'mat'


def mat_to_ros_xy(x, y):
    """Mat units, y down -> metres, y up."""
    return x * METRES_PER_UNIT, -y * METRES_PER_UNIT


def ros_to_mat_xy(x, y):
    """Metres, y up -> mat units, y down."""
    return x * UNITS_PER_METRE, -y * UNITS_PER_METRE


def mat_to_ros_yaw(theta):
    """Clockwise mat heading (rad) -> counter-clockwise ROS yaw (rad). Also for angular velocities."""
    return -theta


def ros_to_mat_yaw(yaw):
    """Counter-clockwise ROS yaw (rad) -> clockwise mat heading (rad). Also for angular velocities."""
    return -yaw


def yaw_to_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """A rotation about +z by ``yaw`` (ROS frame) as (x, y, z, w)."""
    half = 0.5 * yaw
    return 0.0, 0.0, math.sin(half), math.cos(half)


def quaternion_to_yaw(x: float, y: float, z: float, w: float) -> float:
    """The yaw (about +z) of a quaternion (x, y, z, w)."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def twist_to_motor(linear_mps, angular_rps):
    """ROS body twist (m/s forward, rad/s counter-clockwise) -> (left, right) in motor units, not yet clipped.

    Differential drive in mat terms: v = (vL + vR) / 2 and w_mat = (vL - vR) / track, clockwise positive.
    """
    v = linear_mps * UNITS_PER_METRE
    w_mat = ros_to_mat_yaw(angular_rps)
    left = (v + 0.5 * w_mat * WHEEL_TRACK_UNITS) / UNITS_PER_S_PER_MOTOR_UNIT
    right = (v - 0.5 * w_mat * WHEEL_TRACK_UNITS) / UNITS_PER_S_PER_MOTOR_UNIT
    return left, right


def motor_to_twist(left, right):
    """(left, right) wheel speeds in motor units -> ROS body twist (m/s, rad/s counter-clockwise)."""
    v_left = left * UNITS_PER_S_PER_MOTOR_UNIT
    v_right = right * UNITS_PER_S_PER_MOTOR_UNIT
    linear = 0.5 * (v_left + v_right) * METRES_PER_UNIT
    angular = mat_to_ros_yaw((v_left - v_right) / WHEEL_TRACK_UNITS)
    return linear, angular
