"""``navigator/markers``: the swarm as rviz markers (cubes, names, avoidance margins, waypoints, goals, scan rays,
walls and the mat), built from a :class:`~toio_navigator.control.controller.SwarmController`'s latest tick.
Every mat position goes through :mod:`toio_navigator.nodes.conversions` (metres, y up, frame ``mat``)."""
from __future__ import annotations

import math

from visualization_msgs.msg import Marker, MarkerArray

from toio_navigator.nodes import conversions
from toio_navigator.units import BODY_RADIUS, FRAME_ID

RED, ORANGE, GREEN, BLUE = (0.9, 0.1, 0.1, 1.0), (1.0, 0.5, 0.0, 1.0), (0.1, 0.8, 0.2, 1.0), (0.2, 0.4, 1.0, 1.0)


def _marker(stamp, ns: str, mid: int, mtype: int, rgba, scale=(0.01, 0.01, 0.01)) -> Marker:
    m = Marker(ns=ns, id=mid, type=mtype, action=Marker.ADD)
    m.header.stamp, m.header.frame_id = stamp, FRAME_ID
    m.color.r, m.color.g, m.color.b, m.color.a = rgba
    m.scale.x, m.scale.y, m.scale.z = scale
    m.pose.orientation.w = 1.0
    return m


def navigator_markers(c, stamp) -> MarkerArray:
    """The MarkerArray of controller ``c`` (mat units inside, REP 103 metres out)."""
    point = conversions.point
    arr = MarkerArray()
    live = c.live()
    body = conversions.metres(2 * BODY_RADIUS)
    margin = conversions.metres(2 * c.params.avoid.margin)
    for i, cube in enumerate(c.settings.cubes):
        x, y, th = c.frozen[i] if c.frozen_valid[i] else c.pose[i]   # a silent cube: where we expect it
        if not math.isfinite(x):
            continue
        g = c.goals[i]
        rgba = (RED if not live[i] or not c.on_mat[i] else ORANGE if c.last_collision[i] else
                GREEN if g and g.reached else BLUE)
        m = _marker(stamp, 'cubes', i, Marker.CUBE, rgba, (body, body, body))
        conversions.fill_pose(m.pose, float(x), float(y), float(th))
        m.pose.position.z = body / 2
        arr.markers.append(m)
        t = _marker(stamp, 'names', i, Marker.TEXT_VIEW_FACING, (1.0, 1.0, 1.0, 1.0), (0.0, 0.0, 0.015))
        t.pose.position = point(x, y, body * 1.8)
        t.text = cube
        arr.markers.append(t)
        m = _marker(stamp, 'margins', i, Marker.CYLINDER, (rgba[0], rgba[1], rgba[2], 0.2), (margin, margin, 0.002))
        m.pose.position = point(x, y)
        arr.markers.append(m)
        wp = c.last_waypoints[i] if i < len(c.last_waypoints) else (math.nan, math.nan)
        m = _marker(stamp, 'waypoints', i, Marker.ARROW, (1.0, 1.0, 0.0, 0.9), (0.003, 0.006, 0.006))
        if g is not None and math.isfinite(wp[0]):
            m.points = [point(x, y, 0.01), point(wp[0], wp[1], 0.01)]
        else:
            m.action = Marker.DELETE
        arr.markers.append(m)
        m = _marker(stamp, 'goals', i, Marker.SPHERE, (1.0, 0.0, 1.0, 0.8), (0.012, 0.012, 0.012))
        if g is not None:
            m.pose.position = point(g.x, g.y, 0.006)
        else:
            m.action = Marker.DELETE
        arr.markers.append(m)
        m = _marker(stamp, 'scan_rays', i, Marker.LINE_LIST, (0.6, 0.6, 0.6, 0.5), (0.001, 0.0, 0.0))
        if c.last_rays is not None and g is not None:
            rads, dists = c.last_rays
            for a, d in zip(rads[i], dists[i]):
                d = min(abs(float(d)), c.params.avoid.range)
                m.points += [point(x, y, 0.004), point(x + d * math.cos(a), y + d * math.sin(a), 0.004)]
        else:
            m.action = Marker.DELETE
        arr.markers.append(m)
    m = _marker(stamp, 'walls', 0, Marker.LINE_LIST, (0.8, 0.2, 0.2, 0.8), (0.004, 0.0, 0.0))
    for x1, y1, x2, y2, _w in c.walls:
        m.points += [point(x1, y1, 0.002), point(x2, y2, 0.002)]
    if not m.points:
        m.action = Marker.DELETE
    arr.markers.append(m)
    x0, y0, x1, y1 = c.settings.mat_rect
    m = _marker(stamp, 'mat', 0, Marker.LINE_STRIP, (0.9, 0.9, 0.9, 0.6), (0.002, 0.0, 0.0))
    m.points = [point(x0, y0), point(x1, y0), point(x1, y1), point(x0, y1), point(x0, y0)]
    arr.markers.append(m)
    return arr
