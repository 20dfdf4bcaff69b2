"""World physics: speeds and turn rates of docs/navigator.md §0.1, dead zone, lag, contacts, sensing, determinism."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toio_navigator.sim.mats import MATS, fence_rect, get_mat
from toio_navigator.sim.world import World, WorldParams, grid_poses
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT as K
from toio_navigator.units import WHEEL_TRACK_UNITS as W


def test_fifty_for_one_second_moves_about_103_units():
    world = World([[100, 250, 0]])
    world.set_wheels(0, 50, 50, 1.0)
    world.step(2.0)
    assert 50 * 2.0655 * 0.95 <= world.x[0] - 100 <= 50 * 2.0655 * 1.05
    assert world.y[0] == pytest.approx(250)
    before = world.x[0]
    world.step(0.5)
    assert world.x[0] == before          # the duration ran out: the cube stays stopped


@pytest.mark.parametrize('left, right, expected', [
    (8, -8, 16 * K / W),                   # slowest in-place turn, ~1.7 rad/s
    (50, -50, 100 * K / W),                # ~10.6 rad/s, clockwise on the mat
    (-30, 30, -60 * K / W),
    (115, -115, 230 * K / W),              # ~24 rad/s (~1390 deg/s)
])
def test_turn_rates_match_the_fact_sheet(left, right, expected):
    world = World([[250, 250, 0]])
    world.set_wheels(0, left, right)
    world.step(0.5)                        # past the motor lag
    start = world.theta[0]
    world.step(0.1)
    rate = ((world.theta[0] - start + math.pi) % (2 * math.pi) - math.pi) / 0.1
    assert rate == pytest.approx(expected, rel=0.02)
    assert abs(16 * K / W - 1.7) < 0.05


def test_dead_zone_and_saturation():
    world = World([[150, 150, 0], [150, 250, 0], [150, 350, 0]])
    world.set_wheels(0, 7, 7)
    world.set_wheels(1, 115, 115)
    world.set_wheels(2, 255, 255)
    world.step(1.0)
    assert world.x[0] == 150
    assert world.x[1] == pytest.approx(world.x[2])
    assert world.x[1] - 150 > 200


def test_first_order_motor_lag():
    world = World([[150, 150, 0]], params=WorldParams(dt=0.02, motor_tau=0.04))
    world.set_wheels(0, 100, 100)
    world.step()
    assert world.wheel_speed[0, 0] == pytest.approx(50 * K)   # half way after one step (factor dt/tau)
    world.step(0.3)
    assert world.wheel_speed[0, 0] == pytest.approx(100 * K, rel=1e-3)


@pytest.mark.parametrize('offset', [0.0, 2.0, 15.0])
def test_two_cubes_driven_into_each_other_never_overlap_more_than_one_unit(offset):
    world = World([[150, 250, 0], [350, 250 + offset, math.pi]])
    world.set_wheels(0, 115, 115)
    world.set_wheels(1, 115, 115)
    collided = np.zeros(2, dtype=bool)
    closest = math.inf
    for _ in range(200):
        world.step()
        collided |= world.collided
        closest = min(closest, math.hypot(world.x[1] - world.x[0], world.y[1] - world.y[0]))
        if offset == 0.0:
            assert world.x[0] < world.x[1]  # head-on discs cannot get past each other
    assert closest >= 2 * world.params.body_radius - 1.0
    assert world.max_overlap <= 1.0
    assert collided.all()


def test_a_crowd_keeps_overlaps_below_one_unit_and_stays_inside_the_fences():
    rng = np.random.default_rng(3)
    world = World(grid_poses(40, spacing=30), seed=3)
    for _ in range(10):
        for i in range(world.n):
            world.set_wheels(i, int(rng.integers(-115, 116)), int(rng.integers(-115, 116)))
        world.step(0.5)
    x0, y0, x1, y1 = world.fence
    r = world.params.body_radius
    assert world.max_overlap <= 1.0
    assert np.all((world.x >= x0 + r - 1e-6) & (world.x <= x1 - r + 1e-6))
    assert np.all((world.y >= y0 + r - 1e-6) & (world.y <= y1 - r + 1e-6))


def test_fence_stops_a_cube_beyond_the_mat_edge_and_the_sensor_goes_off_the_mat():
    world = World([[400, 250, 0]])
    world.set_wheels(0, 80, 80)
    world.step(3.0)
    assert world.x[0] == pytest.approx(world.fence[2] - world.params.body_radius)
    assert not world.read_position_ids().on_mat[0]


def test_position_ids_are_quantised_and_missing_when_lifted():
    world = World([[200.4, 300.6, math.radians(89.6)]])
    r = world.read_position_ids()
    assert (r.x[0], r.y[0], r.angle[0], bool(r.on_mat[0])) == (200, 301, 90, True)
    # the ID sensor sits behind and to the left of the centre (facing +y, "left" is +x on a y-down mat)
    assert r.sensor_x[0] > 200 and r.sensor_y[0] < 301
    world.lift(0)
    assert not world.read_position_ids().on_mat[0]
    world.place(0, 100, 100, 0)
    assert world.read_position_ids().on_mat[0]


def test_seeded_noise_is_deterministic():
    params = WorldParams(position_noise=1.5, angle_noise_deg=2.0, glitch_probability=0.05)

    def run(seed):
        world = World(grid_poses(4), params=params, seed=seed)
        world.set_wheels(0, 40, 60)
        readings = []
        for _ in range(30):
            world.step()
            r = world.read_position_ids()
            readings.append(np.concatenate([r.x, r.y, r.angle]))
        return np.array(readings)
    assert np.array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


def test_step_carries_the_remainder_and_rejects_bad_durations():
    world = World([[100, 100, 0]], params=WorldParams(dt=0.02))
    assert world.step(0.01) == 0
    assert world.step(0.01) == 1
    assert world.step(0.1) == 5
    assert world.time == pytest.approx(0.12)
    with pytest.raises(ValueError):
        world.step(-1)
    with pytest.raises(ValueError):
        world.step(float('nan'))


def test_button_and_disabled_driving_stop_the_wheels():
    world = World([[100, 100, 0], [100, 200, 0]])
    world.press_button(0)
    world.driving_enabled[1] = False
    for i in range(2):
        world.set_wheels(i, 50, 50)
    world.step(0.5)
    assert world.x[0] == 100 and world.x[1] == 100


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match='poses'):
        World([[1, 2]])
    with pytest.raises(ValueError, match='unknown mat'):
        World([[1, 2, 3]], mat='nope')
    with pytest.raises(ValueError, match='motor_tau'):
        WorldParams(motor_tau=-1)
    with pytest.raises(IndexError):
        World([[1, 2, 3]]).set_wheels(3, 0, 0)
    with pytest.raises(ValueError):
        World([[1, 2, 3]]).set_battery(0, 120)


def test_mats():
    assert get_mat('collection').centre == (250, 250)
    assert fence_rect(get_mat('collection')) == pytest.approx((14.4, 14.4, 485.6, 485.6))
    assert get_mat('developer_back_12').x_min == 645 and get_mat('developer_back_12').y_max == 898
    assert get_mat('simple').size == (304, 216)
    assert len(MATS) == 16
    world = World([[250, 250, 0]], mat='simple')
    assert world.read_position_ids().on_mat[0]
