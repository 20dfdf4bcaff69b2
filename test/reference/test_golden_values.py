"""docs/navigator.md Appendix A: golden values computed by the reference implementation itself."""
import math

import numpy as np
import pytest

from toio_navigator.reference.angles import deg2rad
from toio_navigator.reference.entities import Entity, Wall
from toio_navigator.reference.navigator import Mode, Navigator
from toio_navigator.reference.params import DOUBLE_MAX


def cube(x, y, deg, spd=0.0):
    rad = float(deg2rad(deg))   # the reference converts degrees with a wrap: 180° is −π
    return Entity(x, y, rad, spd, spd * math.cos(rad), spd * math.sin(rad), margin=16.0)


def nav(x, y, deg, spd=0.0, mode=Mode.AVOID):
    return Navigator(cube(x, y, deg, spd), mode)


def pair(ego, other):
    a, b = nav(*ego), nav(*other)
    a.add_other(b)
    return a


def close(got, exp, tol=1e-3):
    assert np.allclose(got, exp, atol=tol, rtol=0), (got, exp)


@pytest.mark.parametrize('ego,target,wp,idx', [
    ((100, 100, 0), (300, 100), (300, 100), 9),          # S1
    ((100, 100, 0), (400, 100), (301, 100), 9),          # S1b: 201-dot step
    ((200, 200, 0), (100, 200), (100, 200), 0),          # S2: straight behind
    ((200, 200, 0), (200, 300), (200, 300), 14),         # S2b
    ((100, 100, 0), (100, 100), (100, 100), 9),          # S13: at the target
])
def test_single_robot_no_walls(ego, target, wp, idx):
    r = nav(*ego).get_waypoint_to(target)
    close(r.waypoint, wp)
    assert r.speed_limit == pytest.approx(1e10)
    assert not r.is_collision and r.debug['waypointIndex'] == idx


def test_sampling_inserts_target_bearing_in_order():
    r = nav(250, 250, 0).get_waypoint_to((300, 280))
    rel = np.degrees(r.debug['rads'])
    close(rel, [-179.427, -159.4907, -139.5544, -119.618, -99.6817, -79.7454, -59.809, -39.8727, -19.9363, 0,
                19.9363, 30.9638, 39.8727, 59.809, 79.7454, 99.6817, 119.618, 139.5544, 159.4907, 179.427])


def test_sampling_gap_defect_adds_absolute_east():
    r = nav(250, 250, 0).get_waypoint_to((150, 250.1))
    rads = np.array(r.debug['rads'])
    assert rads[-1] == 0.0
    close(np.degrees(rads[:19]), np.linspace(-179.427, 179.427, 19), tol=2e-3)


@pytest.mark.parametrize('ego,other,target,wp,limit,col,idx', [
    ((100, 100, 0, 50), (200, 100, 180, 50), (300, 100), (128, 100), 1e10, False, 9),                 # S3
    ((100, 100, 0, 0), (160, 100, 0, 0), (300, 100), (150.5785, 13.0661), 34.8502, False, 6),        # S4
    ((100, 100, 0, 0), (130, 100, 0, 0), (300, 100), (99.8318, 99.0142), 0, True, 4),                # S5
    ((100, 100, 0, 0), (130, 100, 0, 0), (0, 100), (0, 100), 0, True, 0),                            # S5b
    ((100, 100, 0, 0), (140, 100, 0, 0), (300, 100), (99.8318, 99.0142), 0, True, 4),                # S15
    ((100, 200, 0, 165.24), (200, 100, 90, 165.24), (350, 200), (247.2529, 76.9967), 1e10, False, 7),  # S11
    ((200, 100, 90, 165.24), (100, 200, 0, 165.24), (200, 350), (323.0033, 247.2529), 1e10, False, 7),  # S11'
])
def test_two_robots(ego, other, target, wp, limit, col, idx):
    r = pair(ego, other).get_waypoint_to(target)
    close(r.waypoint, wp)
    assert r.speed_limit == pytest.approx(limit, abs=1e-3)
    assert r.is_collision is col and r.debug['waypointIndex'] == idx


def test_head_on_scan_distances():
    r = pair((100, 100, 0, 50), (200, 100, 180, 50)).get_waypoint_to((300, 100))
    close(r.debug['dists'], [201] * 7 + [35.209, 29.464, 28, 28, 29.464, 35.209] + [201] * 7)


def test_overlap_safety_and_severity_zero_at_40():
    r = pair((100, 100, 0, 0), (130, 100, 0, 0)).get_waypoint_to((300, 100))
    close(r.debug['safety'][:10], [1, 1, 1, 0.6739, 0.2293, -0.2428, -0.6858, -1.0466, -1.2819, -1.3636])
    r = pair((100, 100, 0, 0), (140, 100, 0, 0)).get_waypoint_to((300, 100))
    close(r.debug['safety'][:10], [1, 0.9366, 0.761, 0.4942, 0.1682, -0.178, -0.5029, -0.7675, -0.9401, -1])


def bordered(x, y, deg):
    n = nav(x, y, deg)
    n.add_border(20)
    return n


def test_walls_border_and_wedge():
    r = bordered(90, 250, 180).get_waypoint_to((0, 300))                     # S6
    close(r.waypoint, (82, 294.2201))
    assert r.speed_limit == pytest.approx(8) and not r.is_collision and r.debug['waypointIndex'] == 5
    close(r.debug['dists'], [201, 201, 201, 193.2502, 170.4274, 44.9379, 15.9082, 10.4238, 9.1517, 8.51, 8,
                             8.51, 10.4238, 15.9082, 44.9379, 170.4274, 193.2502, 201, 201, 201])
    r = bordered(60, 150, 225).get_waypoint_to((0, 300))                     # S6b, inside the wall band
    close(r.waypoint, (71.4948, 294.305))
    assert r.speed_limit == 0 and r.is_collision and r.debug['waypointIndex'] == 2
    close(r.debug['safety'], [1, 0.8291, 0.1588, -0.5305, -0.7428, -1.1562, -1.6434, -1.9336, -1.992, -1.8117,
                              -1.4142, -0.8473, -0.1787, 0.5112, 1, 1, 1, 1, 1, 1])
    n = nav(150, 150, 225)                                                   # S7
    n.add_wall(Wall(0, 150, 150, 250, 10))
    n.add_wall(Wall(0, 300, 150, 250, 10))
    r = n.get_waypoint_to((130, 350))
    close(r.waypoint, (222.0127, 308.0854))
    assert r.speed_limit == pytest.approx(1e10) and r.debug['waypointIndex'] == 1


def test_run_away():
    r = nav(150, 150, 0).get_waypoint_away((250, 350))                       # S8
    close(r.waypoint, (50.6627, -24.7372))
    assert r.speed_limit == pytest.approx(112.0966, abs=1e-3) and r.debug['waypointIndex'] == 3
    r = bordered(150, 150, 0).get_waypoint_away((250, 350))                  # S8b
    close(r.waypoint, (337.4763, 82))
    assert r.speed_limit == pytest.approx(4400.2433, abs=1e-3) and r.debug['waypointIndex'] == 8
    r = nav(150, 150, 0, mode=Mode.BOIDS).get_waypoint_away((250, 350))      # S12: BOIDS stands still
    close(r.waypoint, (150, 150))
    close(r.avoid_vector, (-99.3373, -174.7372))
    assert r.speed_limit == pytest.approx(112.0966, abs=1e-3)


def flock(mode):
    ego = nav(100, 100, 0, 50, mode)
    ego.add_other(nav(150, 120, 0, 50))
    ego.add_other(nav(120, 160, 90, 30))
    return ego


def test_boids_modes():
    r = flock(Mode.BOIDS).get_waypoint_to((400, 400))
    close(r.boids_vector, (14.86, 27.9684))
    close(r.waypoint, (114.86, 127.9684))
    assert r.speed_ratio == pytest.approx(0.4223, abs=1e-4)
    assert r.speed_limit == DOUBLE_MAX and not r.is_collision
    r = flock(Mode.BOIDS_AVOID).get_waypoint_to((400, 400))
    close(r.boids_vector, (-20.4954, -7.3869))
    close(r.waypoint, (224.8897, 257.4915))
    close(r.avoid_vector, (124.8897, 157.4915))
    assert r.speed_ratio == pytest.approx(0.8148, abs=1e-4)
    assert r.speed_limit == pytest.approx(1e10) and r.debug['waypointIndex'] == 12


def test_boids_fov_is_one_sided():
    def force(rel_deg):
        ego = nav(200, 200, 0, mode=Mode.BOIDS_AVOID)
        a = math.radians(rel_deg)
        ego.add_other(nav(200 + 60 * math.cos(a), 200 + 60 * math.sin(a), 0))
        return ego.get_waypoint_to((400, 200)).boids_vector
    close(force(150), (0, 0))
    close(force(-150), (-3.4641, -2))


def test_seam_turning_radius_quirk():
    r = nav(200, 200, 179).get_waypoint_to((170, 196))                       # S14
    close(r.waypoint, (170, 196))
    assert r.debug['waypointIndex'] == 10 and r.speed_limit == pytest.approx(1e10)
    n = nav(200, 200, 179)                                                   # S14b
    n.add_other(nav(150, 230, 0))
    r = n.get_waypoint_to((170, 196))
    close(r.waypoint, (171.9315, 190.3701))
    assert r.debug['waypointIndex'] == 11 and r.speed_limit == pytest.approx(8)
