"""Which topics the web console reads and what each message means for its view: :func:`events` turns one message into
:class:`~toio_navigator.web.view.ViewState` events. The live node and the replay of a bag call the same function,
so both pages show the same thing.

Messages are read by field name only, so rclpy's message classes and the ones rosbags builds from a bag both
work. Metres (REP 103) are turned into mat units here, through :mod:`toio_navigator.units`.
"""
from __future__ import annotations

import math
import re

from toio_navigator.arena.geometry import HEADING_LETTERS
from toio_navigator.units import quaternion_to_yaw, ros_to_mat_xy, ros_to_mat_yaw

#: per-cube topics: relative name -> message type
CUBE_TOPICS = {'state': 'toio_navigator/msg/CubeState', 'nav_result': 'toio_navigator/msg/NavResult',
               'link_state': 'toio_navigator/msg/LinkStatus'}
#: topics of the whole bringup
SHARED_TOPICS = {'mat_sim/contacts': 'toio_navigator/msg/ContactEvent', 'arena/map': 'nav_msgs/msg/OccupancyGrid',
                 'arena/state': 'toio_navigator/msg/ArenaState', 'arena/fastest_path': 'nav_msgs/msg/Path'}
ARENA_STATUS = ('IDLE', 'EXPLORING', 'RETURNING', 'IMAGE_HUNT', 'FASTEST_PATH', 'DONE', 'TERMINATED', 'ERROR')
_CUBE_TOPIC = re.compile(r'^/?(?P<cube>[A-Za-z_][A-Za-z0-9_]*)/(?P<kind>state|nav_result|link_state)$')


def topics(cubes) -> dict[str, str]:
    """{topic: message type} of everything the console reads for ``cubes`` (names without a leading slash)."""
    out = {f'{c}/{kind}': kind_type for c in cubes for kind, kind_type in CUBE_TOPICS.items()}
    out.update(SHARED_TOPICS)
    return out


class Feed:
    """Messages -> view events."""

    def events(self, topic: str, msg) -> list[tuple[str, tuple]]:
        """The view events of ``msg`` received on ``topic`` ([] for a topic the console does not show)."""
        name = topic.lstrip('/')
        if name in SHARED_TOPICS:
            return getattr(self, '_' + name.replace('/', '_'))(msg)
        m = _CUBE_TOPIC.match(topic)
        return getattr(self, '_' + m['kind'])(m['cube'], msg) if m else []

    @staticmethod
    def _state(cube: str, msg) -> list:
        return [('cube_state', (cube, float(msg.x), float(msg.y), float(msg.theta), bool(msg.on_mat),
                                int(msg.battery), int(msg.link_state)))]

    @staticmethod
    def _link_state(cube: str, msg) -> list:
        return [('link_state', (cube, int(msg.state), str(msg.detail)))]

    @staticmethod
    def _nav_result(cube: str, msg) -> list:
        waypoint = (float(msg.waypoint_x), float(msg.waypoint_y))
        goal = (float(msg.goal_x), float(msg.goal_y), int(msg.direction))
        if not (math.isfinite(goal[0]) and math.isfinite(goal[1])):
            goal = None
        if not all(map(math.isfinite, waypoint)):
            waypoint = None
        return [('nav_result', (cube, int(msg.goal_id), bool(msg.active), bool(msg.reached), bool(msg.collision),
                                waypoint, goal, float(msg.max_speed), str(msg.mode), str(msg.planner)))]

    @staticmethod
    def _mat_sim_contacts(msg) -> list:
        return [('contact', (str(msg.cube_a), str(msg.cube_b), float(msg.x), float(msg.y), int(msg.count)))]

    def _arena_map(self, msg) -> list:
        w, h, res = int(msg.info.width), int(msg.info.height), float(msg.info.resolution)
        data = list(msg.data)
        if w <= 0 or h <= 0 or not res > 0 or len(data) != w * h:
            return []
        # the grid's origin is its bottom-left corner in metres; the arena's top-left corner on the mat is above it
        left, bottom = ros_to_mat_xy(float(msg.info.origin.position.x), float(msg.info.origin.position.y))
        cell = float(ros_to_mat_xy(res, 0.0)[0])
        cells = ''.join('u' if v < 0 else ('o' if v > 50 else 'f') for v in data)      # row 0 = the bottom row
        return [('arena_map', (cells, w, h, (float(left), float(bottom - h * cell), cell)))]

    @staticmethod
    def _arena_state(msg) -> list:
        status = int(msg.status)
        images = [[int(i.id), int(i.x), int(i.y), str(i.face)] for i in msg.images]
        return [('arena_state', ((str(msg.mdf_part1), str(msg.mdf_part2)),
                                 (int(msg.robot_x), int(msg.robot_y), str(msg.heading)),
                                 ARENA_STATUS[status] if 0 <= status < len(ARENA_STATUS) else str(status),
                                 str(msg.status_text), int(msg.explored_count), int(msg.moves), images))]

    @staticmethod
    def _arena_fastest_path(msg) -> list:
        points = []
        for p in msg.poses:
            x, y = ros_to_mat_xy(float(p.pose.position.x), float(p.pose.position.y))
            q = p.pose.orientation
            theta = ros_to_mat_yaw(quaternion_to_yaw(q.x, q.y, q.z, q.w))
            heading = HEADING_LETTERS[(int(round(theta / (math.pi / 2))) + 1) % 4]   # mat -y is arena north
            points.append((float(x), float(y), heading))
        return [('arena_path', (points,))]
