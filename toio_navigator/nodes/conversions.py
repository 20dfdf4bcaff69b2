"""Message <-> core helpers for the nodes: every mat <-> REP 103 conversion goes through ``toio_navigator.units``.

Functions here fill ROS messages from plain numbers in the package's own units (mat units, y down, clockwise
radians, motor units) and back. They allocate nothing they do not return and do no I/O, so the driver's pose ->
message path stays cheap. Importing this module needs the ROS message packages, not a running ROS graph.
"""
from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion, Transform, Twist
from nav_msgs.msg import OccupancyGrid, Odometry, Path

from toio_navigator import units


def clip_motor(value: float, max_motor: int = units.MOTOR_MAX, dead_zone: int = units.MOTOR_DEAD_ZONE) -> int:
    """A wheel speed in motor units as the firmware can take it: rounded, |u| <= max_motor, |u| < dead_zone -> 0.

    NaN or infinite speeds are not clipped silently: ValueError.
    """
    if not math.isfinite(value):
        raise ValueError(f'wheel speed must be finite, got {value}')
    speed = int(round(max(-max_motor, min(max_motor, value))))
    return 0 if abs(speed) < dead_zone else speed


def twist_to_wheels(twist: Twist, max_motor: int = units.MOTOR_MAX,
                    dead_zone: int = units.MOTOR_DEAD_ZONE) -> tuple[int, int]:
    """geometry_msgs/Twist (m/s forward, rad/s counter-clockwise) -> clipped (left, right) motor units.

    When one wheel would exceed the limit both are scaled by the same factor, so the turn radius is kept.
    """
    left, right = units.twist_to_motor(twist.linear.x, twist.angular.z)
    if not (math.isfinite(left) and math.isfinite(right)):
        raise ValueError(f'twist must be finite, got linear.x={twist.linear.x}, angular.z={twist.angular.z}')
    peak = max(abs(left), abs(right))
    if peak > max_motor:
        left, right = left * max_motor / peak, right * max_motor / peak
    return clip_motor(left, max_motor, dead_zone), clip_motor(right, max_motor, dead_zone)


def set_quaternion_from_yaw(q: Quaternion, yaw: float) -> None:
    q.x, q.y, q.z, q.w = units.yaw_to_quaternion(yaw)


def fill_pose(pose: Pose, x: float, y: float, theta: float) -> None:
    """A mat pose (units, y down, clockwise rad) into a geometry_msgs/Pose in metres, frame ``mat`` (REP 103)."""
    pose.position.x, pose.position.y = units.mat_to_ros_xy(x, y)
    pose.position.z = 0.0
    set_quaternion_from_yaw(pose.orientation, units.mat_to_ros_yaw(theta))


def metres(length: float) -> float:
    """A length (or a size) in mat units, in metres."""
    return length * units.METRES_PER_UNIT


def mat_length(length_m: float) -> float:
    """A length (or a size) in metres, in mat units."""
    return length_m * units.UNITS_PER_METRE


def fill_transform(transform: Transform, x: float, y: float, theta: float) -> None:
    """A mat pose (units, y down, clockwise rad) as the transform frame ``mat`` -> the cube's body (REP 103)."""
    transform.translation.x, transform.translation.y = units.mat_to_ros_xy(x, y)
    transform.translation.z = 0.0
    set_quaternion_from_yaw(transform.rotation, units.mat_to_ros_yaw(theta))


def duration(seconds: float) -> Duration:
    """Seconds as a builtin_interfaces/Duration; not finite or negative -> 0 (unknown), capped at a day."""
    if not math.isfinite(seconds) or seconds <= 0:
        return Duration()
    sec, nanosec = divmod(int(round(min(seconds, 86400.0) * 1e9)), 1_000_000_000)
    return Duration(sec=sec, nanosec=nanosec)


def point(x: float, y: float, z: float = 0.0) -> Point:
    """A mat point (units, y down) as a geometry_msgs/Point in metres (REP 103); ``z`` is already in metres."""
    rx, ry = units.mat_to_ros_xy(float(x), float(y))
    return Point(x=rx, y=ry, z=z)


def pose_stamped(x: float, y: float, theta: float, stamp, frame_id: str = units.FRAME_ID) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    fill_pose(msg.pose, x, y, theta)
    return msg


def mat_pose_from_pose(pose: Pose) -> tuple[float, float, float]:
    """geometry_msgs/Pose in metres (REP 103) -> mat (x, y, theta) in units / clockwise rad."""
    x, y = units.ros_to_mat_xy(pose.position.x, pose.position.y)
    o = pose.orientation
    return x, y, units.ros_to_mat_yaw(units.quaternion_to_yaw(o.x, o.y, o.z, o.w))


def odometry(x: float, y: float, theta: float, left: float, right: float, stamp, child_frame_id: str,
             frame_id: str = units.FRAME_ID) -> Odometry:
    """nav_msgs/Odometry from a mat pose and signed wheel speeds (motor units): twist in the body frame."""
    msg = Odometry()
    msg.header.frame_id = frame_id
    msg.child_frame_id = child_frame_id
    fill_odometry(msg, x, y, theta, left, right, stamp)
    return msg


def fill_odometry(msg: Odometry, x: float, y: float, theta: float, left: float, right: float, stamp) -> None:
    """Update an Odometry in place (the driver reuses one message per cube: no allocation per notification)."""
    msg.header.stamp = stamp
    fill_pose(msg.pose.pose, x, y, theta)
    msg.twist.twist.linear.x, msg.twist.twist.angular.z = units.motor_to_twist(left, right)


def colour_to_rgb(r: float, g: float, b: float) -> tuple[int, int, int]:
    """std_msgs/ColorRGBA channels 0..1 -> 0..255 bytes. Out-of-range or NaN channels are an error."""
    out = []
    for name, value in (('r', r), ('g', g), ('b', b)):
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f'colour channel {name} must be in 0..1, got {value}')
        out.append(int(round(value * 255)))
    return out[0], out[1], out[2]


def duration_10ms(duration_ms: int, low_ms: int = 10, high_ms: int = 2550) -> int:
    """Milliseconds -> the firmware's 10 ms steps (rounded down), ValueError outside low_ms..high_ms."""
    if not low_ms <= duration_ms <= high_ms:
        raise ValueError(f'duration must be {low_ms}..{high_ms} ms, got {duration_ms}')
    return duration_ms // 10


def body_vector_from_cube(x: float, y: float, z: float) -> tuple[float, float, float]:
    """A vector on the cube's body axes (x forward, y right, z down; e.g. the magnetic force) on REP 103 body axes
    (x forward, y left, z up): the two frames differ by a half turn about x, which flips y and z."""
    return x, -y, -z


def imu_quaternion_from_cube(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """The cube's posture quaternion (body x forward, y right, z down) -> REP 103 (x forward, y left, z up).

    The half turn about x between the frames flips the y and z components (as measured on a real cube by the
    peer driver: nose up +pitch, right side up -roll, counter-clockwise turn -yaw on the cube's axes).
    Returns (x, y, z, w).
    """
    rx, ry, rz = body_vector_from_cube(x, y, z)
    return rx, ry, rz, w


def euler_deg_to_ros_quaternion(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """The cube's Euler angles (degrees, its own axes, yaw -> pitch -> roll) -> REP 103 quaternion (x, y, z, w)."""
    # in REP 103 axes the roll keeps its sign, pitch and yaw change sign (y and z axes are flipped)
    r, p, y = math.radians(roll) / 2, -math.radians(pitch) / 2, -math.radians(yaw) / 2
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


# ------------------------------------------------------------------------------------------------ the arena

def occupancy_grid(explored, obstacle, mapping, stamp) -> OccupancyGrid:
    """An arena belief (bool [y, x] arrays) on ``mapping`` (an ArenaMatMapping) as an OccupancyGrid in frame
    ``mat`` (REP 103): cell (0, 0) = the arena's bottom-left corner.

    Arena y grows upward and ROS y does too, so row y of the grid is arena row y (no flip); -1 / 0 / 100."""
    rows, cols = explored.shape
    msg = OccupancyGrid()
    msg.header.stamp, msg.header.frame_id = stamp, units.FRAME_ID
    msg.info.map_load_time = stamp
    msg.info.resolution = float(metres(mapping.cell_size))
    msg.info.width, msg.info.height = cols, rows
    x0, y0 = units.mat_to_ros_xy(mapping.origin_x, mapping.origin_y + rows * mapping.cell_size)
    msg.info.origin.position.x, msg.info.origin.position.y = float(x0), float(y0)
    msg.info.origin.orientation.w = 1.0
    values = np.where(explored, np.where(obstacle, 100, 0), -1).astype(np.int8)   # row-major from (0, 0)
    msg.data = values.ravel().tolist()
    return msg


def grid_from_occupancy(msg: OccupancyGrid) -> tuple[np.ndarray, np.ndarray]:
    """(explored, obstacle) bool [y, x] arrays of an arena OccupancyGrid (the inverse of :func:`occupancy_grid`)."""
    data = np.asarray(msg.data, dtype=np.int16).reshape(msg.info.height, msg.info.width)
    return data != -1, data == 100


def route_path(poses, mapping, stamp) -> Path:
    """Robot centre poses (arena cells) as a nav_msgs/Path in frame ``mat`` (metres, counter-clockwise yaw)."""
    msg = Path()
    msg.header.stamp, msg.header.frame_id = stamp, units.FRAME_ID
    for pose in poses:
        mx, my, theta = mapping.pose_to_mat(pose)
        msg.poses.append(pose_stamped(mx, my, theta, stamp))
    return msg


def poses_from_path(msg: Path, mapping) -> list:
    """The arena cell poses of a Path (the inverse of :func:`route_path`)."""
    return [mapping.mat_to_pose(*mat_pose_from_pose(ps.pose)) for ps in msg.poses]
