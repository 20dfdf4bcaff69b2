"""The demo stall: a cube in HLAvoid's collision state whose escape waypoint lies inside CubeHandle's reach.

The situation of the failed demo run (cube6 still for 80 s at (251, 425), NavResult collision true, waypoint
5.5 units away): the swap's cubes on their goals, cube6 between cube2 and cube3 near the bottom border. HLAvoid
overlaps cube2, cube3 and the border there, its only allowed rays are a few units long, and its stop rule holds
the speed at 0; move-to-target stops within handle_tolerance (8), so every tick sent 0/0 and the side-step of the
dead-lock breaker (which only changes the goal, which HLAvoid ignores in that state) never moved it.
The closed loop below runs the controller on the simulator's physics (about 0.3 s of CPU per test).
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.control.breaker import overlap_escape
from toio_navigator.control.controller import SwarmController
from toio_navigator.control.navigator_settings import NavigatorSettings
from toio_navigator.reference.params import NavigatorParams
from toio_navigator.sim.world import World

CUBES = tuple(f'cube{i}' for i in range(1, 9))
GOALS = [(400, 430), (300, 430), (200, 430), (100, 430), (400, 70), (300, 70), (200, 70), (100, 70)]
STUCK = 5                                   # cube6
STUCK_START = (251.9, 427.1, 1.97)
TICK = 0.05


def demo_end(stuck_time_s: float = 1.0):
    """Controller (the demo's navigator settings) and world in the stalled end state of the demo run."""
    poses = [[x, y, 0.0] for x, y in GOALS]
    poses[1] = [294.6, 420.0, 0.0]          # cube2 and cube3 parked within their goal tolerance
    poses[2] = [199.3, 414.1, 0.0]
    poses[STUCK] = list(STUCK_START)
    settings = NavigatorSettings(cubes=CUBES, border=(10.0, 40.0, 460.0, 40.0, 460.0), max_speed=50.0,
                                 tolerance=20.0, command_duration_ms=150, stuck_time_s=stuck_time_s)
    controller = SwarmController(settings, NavigatorParams().with_overrides(avoid={'margin': 25.0}))
    for i, cube in enumerate(CUBES):
        assert controller.set_goal(cube, 1, *GOALS[i], 0, 0.0, 0.0) == ''
    return controller, World(np.array(poses))


def run(controller: SwarmController, world: World, seconds: float):
    """Closed loop: states from the world every tick, the tick's motor commands applied with their duration.
    Yields (time, the stuck cube's command) after every tick."""
    for k in range(int(round(seconds / TICK))):
        t = round(k * TICK, 9)
        for i, cube in enumerate(CUBES):
            theta = (world.theta[i] + math.pi) % (2 * math.pi) - math.pi
            controller.update_state(cube, world.x[i], world.y[i], theta, True, 2, int(round(t * 1e9)))
        commands = controller.step(t)
        for i, cmd in enumerate(commands):
            if cmd.motor is not None:
                world.set_wheels(i, cmd.motor[0], cmd.motor[1], cmd.motor[2] / 1000.0)
        world.step(TICK)
        yield t, commands[STUCK]


def test_the_situation_is_hlavoids_collision_state_with_an_escape_waypoint_inside_the_handle_reach():
    controller, world = demo_end()
    _t, cmd = next(run(controller, world, TICK))
    reach = controller.settings.handle_tolerance
    assert cmd.collision
    assert math.hypot(cmd.waypoint[0] - STUCK_START[0], cmd.waypoint[1] - STUCK_START[1]) < reach
    assert cmd.motor[:2] == (0, 0)


def test_without_the_breaker_the_cube_stands_still():
    """The reference behaviour (no breaker): 0/0 every tick, the cube never moves."""
    controller, world = demo_end(stuck_time_s=0.0)
    for _t, cmd in run(controller, world, 3.0):
        assert cmd.motor[:2] == (0, 0)
    assert math.hypot(world.x[STUCK] - STUCK_START[0], world.y[STUCK] - STUCK_START[1]) < 0.5


def test_the_breaker_drives_the_cube_out_of_the_pocket_and_on_to_its_goal():
    controller, world = demo_end()
    start_to_goal = math.hypot(GOALS[STUCK][0] - STUCK_START[0], GOALS[STUCK][1] - STUCK_START[1])
    moved_by, reached_at, closest = None, None, math.inf
    for t, cmd in run(controller, world, 10.0):
        p = world.poses[:, :2]
        d = np.hypot(*(p[STUCK] - np.delete(p, STUCK, axis=0)).T)
        closest = min(closest, float(d.min()))
        if moved_by is None and math.hypot(p[STUCK, 0] - STUCK_START[0], p[STUCK, 1] - STUCK_START[1]) > 15:
            moved_by = t
        if reached_at is None and cmd.reached:
            reached_at = t
    assert moved_by is not None and moved_by < 3.0, 'the stalled cube did not move within 3 s'
    assert reached_at is not None, f'cube6 never reached its goal {start_to_goal:.0f} units away'
    assert reached_at < 10.0
    assert closest > 2 * world.params.body_radius, 'the way out touched another cube'


def test_the_way_out_of_a_pocket_looks_past_the_first_few_units():
    """Between two cubes whose zones overlap and a wall below, the local pushes point sideways (and change side
    after a few units); the way out that stays out is up."""
    p = np.array([251.9, 427.1])
    others = np.array([[294.6, 420.0], [199.3, 414.1]])
    wall = np.array([[40.0, 460.0, 460.0, 460.0, 10.0]])
    way = overlap_escape(p, others, np.array([50.0, 50.0]), wall, 25.0, 40.0, np.array([0.14, -0.99]))
    assert way[1] < -0.9                     # up the mat (y down)


def test_a_cube_resting_near_its_goal_keeps_the_planners_waypoint():
    """The breaker leaves a cube that has reached its goal alone: it makes no progress there on purpose, and
    its waypoint (a few units off, inside the handle's reach) is what the planner said, breaker or not."""
    waypoints = []
    for stuck_time_s in (1.0, 0.0):
        controller, world = demo_end(stuck_time_s)
        world.place(7, GOALS[7][0] + 6.0, GOALS[7][1], 0.0)   # cube8, far from cube6, 6 units off its goal
        waypoints.append([controller.last_waypoints[7].copy() for _t, _cmd in run(controller, world, 2.0)])
        assert controller.status('cube8')['reached']
    with_breaker, without = np.array(waypoints[0]), np.array(waypoints[1])
    assert np.hypot(*(with_breaker[-1] - world.poses[7, :2])) <= controller.settings.handle_tolerance
    assert np.array_equal(with_breaker, without)
