"""Named fixes of reference defects (docs/navigator.md §7): off by default (reference behaviour), each one changes
exactly the documented quirk when switched on."""
import math

import numpy as np
import pytest

from toio_navigator.reference.angles import deg2rad, wrap
from toio_navigator.reference.entities import Entity
from toio_navigator.reference.navigator import Mode, Navigator
from toio_navigator.reference.params import Fixes, NavigatorParams


def nav(x, y, deg, mode=Mode.AVOID, **fixes):
    return Navigator(Entity(x, y, float(deg2rad(deg)), margin=16.0), mode, NavigatorParams(fixes=Fixes(**fixes)))


def test_all_fixes_off_by_default():
    assert not any(getattr(NavigatorParams().fixes, name) for name in Fixes.names())
    assert all(getattr(Fixes.all_on(), name) for name in Fixes.names())


def test_sampling_gap():
    target = (150, 250.1)                          # relative bearing π − 0.001, inside the blind sliver
    bearing = math.atan2(0.1, -100)
    quirk = nav(250, 250, 0).get_waypoint_to(target)
    assert quirk.debug['rads'][-1] == 0.0 and bearing not in quirk.debug['rads']
    fixed = nav(250, 250, 0, sampling_gap=True).get_waypoint_to(target)
    assert fixed.debug['rads'][-1] == pytest.approx(bearing)
    assert fixed.debug['rads'][:-1] == pytest.approx(quirk.debug['rads'][:-1])   # the uniform grid is kept
    assert np.all(np.diff(wrap(np.array(fixed.debug['rads']) - 0.0)) > 0)       # still ordered by angle
    assert fixed.waypoint == pytest.approx(target)                              # goes straight there


def test_heading_wrap():
    def s14b(**fx):
        n = nav(200, 200, 179, **fx)
        n.add_other(nav(150, 230, 0))
        return n.get_waypoint_to((170, 196))
    assert s14b().speed_limit == pytest.approx(8)            # negative radius near the ±π seam, clamped
    fixed = s14b(heading_wrap=True)
    assert fixed.speed_limit > 8 and fixed.waypoint == pytest.approx(s14b().waypoint)


def test_boids_fov():
    def force(rel_deg, **fx):
        ego = nav(200, 200, 0, Mode.BOIDS_AVOID, **fx)
        a = math.radians(rel_deg)
        ego.add_other(nav(200 + 60 * math.cos(a), 200 + 60 * math.sin(a), 0))
        return ego.get_waypoint_to((400, 200)).boids_vector
    assert force(-150) == pytest.approx((-3.4641, -2), abs=1e-3)   # one-sided test: seen behind-left
    assert force(-150, boids_fov=True) == pytest.approx((0, 0))
    assert force(-30, boids_fov=True) == pytest.approx(force(-30))


def test_speed_limit_min():
    def case(**fx):
        n = nav(200, 200, math.degrees(0.16030133847144867), **fx)
        n.add_other(nav(197.7930165649272, 234.2537309179945, 0))
        n.add_border(20)
        return n.get_waypoint_to((156.10384532561397, 216.0202413439584))
    quirk, fixed = case(), case(speed_limit_min=True)
    assert quirk.is_collision and fixed.speed_limit < quirk.speed_limit   # overlap rule no longer raises it


def test_away_in_boids():
    assert nav(150, 150, 0, Mode.BOIDS).get_waypoint_away((250, 350)).waypoint == pytest.approx((150, 150))
    fixed = nav(150, 150, 0, Mode.BOIDS, away_in_boids=True).get_waypoint_away((250, 350))
    assert fixed.waypoint == pytest.approx((50.6627, -24.7372), abs=1e-3)
