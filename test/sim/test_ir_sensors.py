"""Virtual IR sensors, camera and the arena-on-mat mapping (docs/arena.md §3, §8)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toio_navigator.arena.geometry import SIX_SENSORS, Pose
from toio_navigator.arena.grid import ArenaBelief, readings_from_ir_ranges
from toio_navigator.arena.layout import ImageCard
from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualCamera, VirtualIrSensors, read_at_mat_pose

EMPTY = np.zeros((20, 15), dtype=bool)


def test_sensor_cells_match_the_seed_example():
    # seed: robot (5,3) heading 90 (east); sensor 3 (front-left) sits at (6,4), its first cell is (7,4)
    pose = Pose(5, 3, 1)
    s3 = SIX_SENSORS[2]
    assert pose.cell(s3.front, s3.left) == (6, 4) and s3.ray(pose, 1) == [(7, 4)]
    assert SIX_SENSORS[3].ray(pose, 1) == [(6, 5)]  # sensor 4 looks left (north) from the same cell
    assert SIX_SENSORS[5].ray(pose, 2) == [(5, 1), (5, 0)]  # the long sensor looks right (south)


def test_readings_on_an_empty_arena_at_the_start():
    # facing north at (1,1): front rays run up to the cap, the left sensors touch the west wall,
    # the long right sensor sees 12 free cells, capped at 9
    assert VirtualIrSensors(EMPTY).read(Pose(1, 1, 0)) == (9, 9, 9, 1, 1, 9)
    # facing east at (1,1): front sensors see 12 cells (capped), left looks north, right (south) wall at once
    assert VirtualIrSensors(EMPTY).read(Pose(1, 1, 1)) == (9, 9, 9, 9, 9, 1)


def test_readings_count_cells_to_the_first_obstacle():
    grid = EMPTY.copy()
    grid[4, 2] = True    # 1 cell ahead of the front-right sensor of (1,1,N): (2,2) -> (2,3) free, (2,4) hit
    grid[1, 6] = True    # right of the footprint: long sensor at (2,1) -> (3..5,1) free, (6,1) is k=4
    assert VirtualIrSensors(grid).read(Pose(1, 1, 0)) == (2, 9, 9, 1, 1, 4)
    assert VirtualIrSensors(grid, max_reading=3).read(Pose(1, 1, 0)) == (2, 3, 3, 1, 1, 3)


def test_noise_is_seeded_bounded_and_off_by_default():
    truth = VirtualIrSensors(EMPTY).read(Pose(7, 10, 0))
    a = [VirtualIrSensors(EMPTY, noise=0.5, seed=3).read(Pose(7, 10, 0)) for _ in range(2)]
    assert a[0] == a[1]  # same seed, same readings
    sensors = VirtualIrSensors(EMPTY, noise=0.5, seed=3)
    samples = np.array([sensors.read(Pose(7, 10, 0)) for _ in range(200)])
    assert (np.abs(samples - np.array(truth)) <= 1).all() and samples.min() >= 1 and samples.max() <= 9
    assert (samples != np.array(truth)).any()
    with pytest.raises(ValueError, match='noise'):
        VirtualIrSensors(EMPTY, noise=1.5)


def test_camera_reports_the_card_facing_the_robot_with_its_bound():
    cards = [ImageCard(3, 10, 3, 7), ImageCard(3, 11, 3, 8), ImageCard(3, 9, 2, 9)]
    cam = VirtualCamera(cards)
    assert cam.capture(Pose(5, 10, 2)).id == -1  # heading south at x=5 the left cells are x=7: nothing there
    # heading south at x=1 the camera looks east at x=3, so it sees cards on west faces (face 3)
    s = cam.capture(Pose(1, 10, 2))
    assert (s.id, s.bound) == (7, 'CENTRE')  # left-centre cell (3,10)
    s = cam.capture(Pose(1, 12, 2))
    assert (s.id, s.bound) == (8, 'RIGHT')   # left-front cell (3,11): the robot's front is right in the picture
    s = cam.capture(Pose(1, 10, 0))
    assert s.id == -1                        # heading north it looks west, away from the cards
    assert cam.capture(Pose(1, 8, 2)).id == -1  # rear-left (3,9) carries a card, but on its south face
    both = cam.capture_all(Pose(1, 11, 2))      # left-centre (3,11) and left-front (3,10): heading south
    assert [(s.id, s.bound) for s in both] == [(8, 'CENTRE'), (7, 'RIGHT')]


def test_mat_mapping_round_trips_every_cell_and_heading():
    m = ArenaMatMapping(origin_x=100, origin_y=50, cell_size=20)
    for y in range(20):
        for x in range(15):
            for h in range(4):
                mx, my, theta = m.pose_to_mat(Pose(x, y, h))
                assert m.mat_to_pose(mx + 4, my - 4, theta + 0.3) == Pose(x, y, h)
    # arena y grows upward, mat y downward; north is mat angle -90 degrees
    assert m.cell_to_mat(0, 19) == (110.0, 60.0) and m.cell_to_mat(0, 0) == (110.0, 440.0)
    assert m.pose_to_mat(Pose(1, 1, 0))[2] == pytest.approx(-math.pi / 2)
    assert not m.inside(99, 100) and m.inside(101, 100)
    with pytest.raises(ValueError, match='cell_size'):
        ArenaMatMapping(cell_size=0)


def test_readings_at_a_mat_pose():
    m = ArenaMatMapping()
    sensors = VirtualIrSensors(EMPTY)
    mx, my, theta = m.pose_to_mat(Pose(1, 1, 0))
    assert read_at_mat_pose(sensors, m, mx, my, theta) == (9, 9, 9, 1, 1, 9)


def test_ir_ranges_message_convention_round_trips_through_the_belief():
    sensors = VirtualIrSensors(EMPTY)
    ranges = sensors.read_ranges(Pose(1, 1, 0))
    assert ranges == (0, 0, 0, 1, 1, 0)  # 0 = nothing within range (msg/IrRanges.msg)
    a, b = ArenaBelief(), ArenaBelief()
    a.apply_readings(Pose(1, 1, 0), sensors.read(Pose(1, 1, 0)))
    b.apply_readings(Pose(1, 1, 0), readings_from_ir_ranges(ranges))
    assert (a.score == b.score).all() and (a.explored == b.explored).all() and a.explored.sum() == 8
    assert readings_from_ir_ranges((-1, 0, 3, -1, 2, 9)) == (0, 1000, 3, 0, 2, 9)  # -1: no reading, ignored
