"""A coordinating planner (one that resolves its own dead-locks) may lead a cube away from its goal to let another
pass, so the controller reports its goal reached only while the planner keeps it there: its waypoint near the cube,
or held on the goal itself. A cube the plan parks on its goal a little further than move-to-target's stop radius
(8 u) away, inside the goal's tolerance, is reached; before, such a cube stood for good and never counted."""
from __future__ import annotations

import numpy as np
import pytest

from toio_navigator.control.controller import SwarmController
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.planners import PLANNERS
from toio_navigator.planners.interface import PlannerOutput

GOAL = np.array([143.9, 143.9])


class Parking:
    """A stand-in for the coordinated planner's last stretch: every cube's waypoint is ``point``, speed 0."""
    resolves_deadlocks = True

    def __init__(self, point) -> None:
        self.point = np.asarray(point, float)

    def reset(self, n: int, seed: int = 0) -> None:
        self.n = n

    def step(self, state, dt: float) -> PlannerOutput:
        n = state.pos.shape[0]
        return PlannerOutput(velocity=np.zeros((n, 2)), waypoint=np.tile(self.point, (n, 1)), speed_limit=np.zeros(n),
                             collision=np.zeros(n, bool))


@pytest.fixture
def parking(monkeypatch):
    def use(point):
        monkeypatch.setitem(PLANNERS, 'parking', lambda: Parking(point))
        ctl = SwarmController(NavigatorSettings(cubes=('cube3',), planner='parking'))
        ctl.set_goal('cube3', 102, *GOAL, 0, 50.0, 0.0)
        ctl.update_state('cube3', 139.8, 151.6, 5.1, True, 2, stamp_ns=0)    # 8.97 u off: seen in a 16-cube swap
        return [c for c in ctl.step(now=0.0) if c.cube == 'cube3'][0]
    return use


def test_a_cube_held_on_its_goal_within_the_tolerance_is_reached(parking):
    assert parking(GOAL).reached


def test_a_cube_led_away_from_its_goal_is_not_reached(parking):
    assert not parking(GOAL + [0.0, 40.0]).reached         # on its way elsewhere, passing through its goal
