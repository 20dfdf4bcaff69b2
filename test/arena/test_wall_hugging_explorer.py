"""The explorer: seed score rules, left-hug decisions, dashes, images, complete exploration of known and random
layouts checked against an independent model of what the sensors can observe."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toio_navigator import cli
from toio_navigator.arena.explorer import (
    FORWARD,
    LEFT,
    PHOTO,
    RIGHT,
    SENSE,
    ArenaExplorer,
    ExplorerConfig,
    ProtocolError,
)
from toio_navigator.arena.geometry import SIX_SENSORS, Pose, footprint
from toio_navigator.arena.grid import ArenaBelief, ScoreRules
from toio_navigator.arena.layout import ArenaLayout, ImageCard, grid_to_rows, load_layout
from toio_navigator.sim.arena_run import SimulatedArenaRobot, run_exploration

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'
EMPTY = np.zeros((20, 15), dtype=bool)


# --- grid scores --------------------------------------------------------------------------------------------
def test_seed_score_example():
    # seed: robot (5,3) heading east, readings 1,2,6,6,6,6
    b = ArenaBelief()
    b.apply_readings(Pose(5, 3, 1), (1, 2, 6, 6, 6, 6))
    assert b.score[2, 7] == 3 and b.obstacle[2, 7]          # sensor 1, reading 1: obstacle at (7,2)
    assert b.score[3, 7] == -3 and b.score[4, 7] == -3       # sensors 2, 3: free
    assert b.score[5, 6] == -3 and b.score[5, 4] == -3       # sensors 4, 5 look left (north)
    assert b.score[1, 5] == -1 and b.score[0, 5] == -1       # long sensor looks right (south) to the wall
    assert int(b.explored.sum()) == 7 and int(b.obstacle.sum()) == 1


def test_long_sensor_scores_free_cells_before_the_hit_and_nothing_beyond_its_range():
    b = ArenaBelief()
    pose = Pose(7, 10, 0)            # the long sensor sits at (8,10) looking east
    b.apply_readings(pose, (0, 0, 0, 0, 0, 3))  # zero readings are ignored
    assert [int(b.score[10, x]) for x in (9, 10, 11, 12)] == [-1, -1, 1, 0]
    assert not b.explored[10, 12] and b.obstacle[10, 11]
    b.apply_readings(pose, (0, 0, 0, 0, 0, 9))  # clamped to 6: nothing within 5 cells
    assert [int(b.score[10, x]) for x in (9, 10, 11, 12, 13, 14)] == [-2, -2, 0, -1, -1, 0]
    assert not b.obstacle[10, 11] and b.explored[10, 13] and not b.explored[10, 14]


def test_body_cells_are_pinned_free_and_later_hits_do_not_revive_them():
    b = ArenaBelief()
    b.apply_readings(Pose(7, 10, 0), (1, 1, 1, 1, 1, 1))
    assert b.obstacle[12, 8]
    b.mark_body(Pose(7, 11, 0))      # footprint y 10..12 now covers (8,12)
    b.apply_readings(Pose(7, 9, 0), (1, 1, 1, 1, 1, 1))
    assert not b.obstacle[12, 8] and b.explored[12, 8]


@pytest.mark.parametrize('make, words', [
    (lambda: ExplorerConfig(max_moves=0), 'max_moves'),
    (lambda: ExplorerConfig(turn_cost=-1), 'turn_cost'),
    (lambda: ExplorerConfig(dash_max_extra=-2), 'dash_max_extra'),
    (lambda: ExplorerConfig(reverse_hug_headings=(0, 7)), 'reverse_hug_headings'),
    (lambda: ScoreRules(short_hit=0), 'short_hit'),
    (lambda: ScoreRules(long_range=6), 'long_range'),
])
def test_bad_parameters_are_named(make, words):
    with pytest.raises(ValueError, match=words):
        make()


# --- step machine -----------------------------------------------------------------------------------------
def stepper(obstacles, start=Pose(1, 1, 0), **config):
    layout = ArenaLayout(obstacles=obstacles, start=start)
    robot = SimulatedArenaRobot.on_layout(layout)
    return ArenaExplorer(ExplorerConfig(**config), start=start), robot


def answer(explorer, robot, cmd):
    moved = robot.execute(cmd.kind, cmd.cells)
    explorer.on_moved(robot.sensors.read(robot.pose), moved if cmd.kind == FORWARD else None)


def test_first_command_asks_for_readings_and_a_pending_command_repeats():
    ex, robot = stepper(EMPTY)
    assert ex.next_move().kind == SENSE and ex.next_move().kind == SENSE
    answer(ex, robot, ex.next_move())
    cmd = ex.next_move()
    # left is the arena wall, the front is free: forward, a dash of at most 1 + 3 cells heading north
    assert cmd.kind == FORWARD and 1 <= cmd.cells <= 4


def test_left_turn_when_the_left_is_open_then_no_second_left():
    ex, robot = stepper(EMPTY, start=Pose(4, 1, 0))
    answer(ex, robot, ex.next_move())
    assert ex.next_move().kind == LEFT        # cells x=2 on the left are free (unexplored counts as free)
    answer(ex, robot, ex.next_move())
    assert ex.next_move().kind == FORWARD     # the previous command was a left turn: go forward


def test_right_turn_when_front_and_left_are_blocked():
    grid = EMPTY.copy()
    grid[3, 0:3] = True                       # the row just in front of the start footprint
    ex, robot = stepper(grid)
    answer(ex, robot, ex.next_move())
    assert ex.next_move().kind == RIGHT


def test_protocol_errors_short_moves_and_terminate():
    ex, robot = stepper(EMPTY)
    with pytest.raises(ProtocolError):
        ex.on_moved((1, 1, 1, 1, 1, 1))       # nothing pending yet
    answer(ex, robot, ex.next_move())
    cmd = ex.next_move()
    with pytest.raises(ProtocolError):
        ex.on_photo([(3, 'CENTRE')])              # a motion is pending, not a photo
    ex.on_moved(robot.sensors.read(Pose(1, 2, 0)), cells_moved=1)  # the robot stopped after one cell
    assert ex.pose == Pose(1, 2, 0) and ''.join(ex.actions) == 'F' * cmd.cells and ex.moves == 1
    assert ex.status == 'EXPLORING'
    ex.terminate()
    assert ex.done and ex.next_move() is None and ex.status == 'TERMINATED'


# --- whole explorations ---------------------------------------------------------------------------------------
def observable_cells(grid):
    """Independent model: every cell a noise-free sensor can score from a pose reachable from the start."""
    rows, cols = grid.shape

    def valid(p):
        return 1 <= p.x <= cols - 2 and 1 <= p.y <= rows - 2 and not grid[p.y - 1:p.y + 2, p.x - 1:p.x + 2].any()

    seen, todo, cells = {Pose(1, 1, 0)}, [Pose(1, 1, 0)], set()
    while todo:
        p = todo.pop()
        cells.update(footprint(p.x, p.y))
        for mount in SIX_SENSORS:
            for x, y in mount.ray(p, 5 if mount.long_range else 1):
                if not (0 <= x < cols and 0 <= y < rows):
                    break
                cells.add((x, y))
                if grid[y, x]:
                    break
        for q in (p.turned_left(), p.turned_right(), p.forward(1)):
            if q not in seen and valid(q):
                seen.add(q)
                todo.append(q)
    return cells


def assert_sound_and_complete(explorer, robot, grid):
    b = explorer.belief
    assert not (b.obstacle & ~grid).any(), 'false obstacle'
    assert not (b.known_free & grid).any(), 'obstacle marked free'
    missed = [c for c in observable_cells(grid) if not b.explored[c[1], c[0]]]
    assert not missed, f'observable cells left unexplored: {missed[:5]}'
    assert explorer.returned_to_start and robot.pose == explorer.pose


@pytest.mark.parametrize('name', ['01_sample_arena_1', '02_empty'])
def test_sample_layouts_are_fully_explored(name):
    layout = load_layout(ARENAS / f'{name}.json')
    explorer, robot = run_exploration(layout)
    assert_sound_and_complete(explorer, robot, layout.obstacles)
    expected = layout.expected['mdf_full_exploration']
    assert explorer.mdf() == (expected['part1'], expected['part2'])
    assert explorer.moves < len(explorer.actions)  # dashes merged several cells into one command
    assert explorer.fastest_path(layout.waypoint).cost == layout.expected['fastest_path_cost_P2_via_waypoint']


def test_random_layouts_are_explored_soundly_and_completely():
    rng = np.random.default_rng(11)
    for trial in range(12):
        grid = rng.random((20, 15)) < (0.04, 0.08, 0.12, 0.2)[trial % 4]
        grid[0:3, 0:3] = False
        grid[17:20, 12:15] = False
        explorer, robot = run_exploration(ArenaLayout(obstacles=grid), ExplorerConfig(image_mode=trial % 2 == 1))
        assert_sound_and_complete(explorer, robot, grid)


def test_the_hug_alone_stops_on_return_to_start():
    explorer, robot = run_exploration(ArenaLayout(obstacles=EMPTY), ExplorerConfig(complete_coverage=False))
    assert explorer.returned_to_start and explorer.done and explorer.belief.explored.all()
    assert set(explorer.actions) == {'F', 'R'}  # an empty arena is hugged clockwise with right turns only


def test_noisy_sensors_still_end_back_at_start():
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    explorer, robot = run_exploration(layout, noise=0.05, seed=5)
    assert explorer.done and explorer.returned_to_start and robot.pose == explorer.pose


def island_layout():
    grid = EMPTY.copy()
    grid[9:11, 3:5] = True  # a 2x2 island next to the west corridor: only a reverse hug passes its far side
    cards = (ImageCard(3, 10, 3, 4), ImageCard(4, 9, 1, 9), ImageCard(4, 10, 0, 2), ImageCard(3, 9, 2, 5))
    return ArenaLayout(obstacles=grid, images=cards)


def test_reverse_hugging_finds_every_card_of_an_island_at_its_true_cell_and_face():
    layout = island_layout()
    explorer, robot = run_exploration(layout, ExplorerConfig(image_mode=True))
    truth = {(c.id, c.x, c.y, c.face) for c in layout.images}
    assert {(r.id, r.x, r.y, r.face) for r in explorer.images} == truth
    assert_sound_and_complete(explorer, robot, layout.obstacles)
    plain, _ = run_exploration(layout, ExplorerConfig(image_mode=False))
    assert plain.images == [] and 'RR' not in ''.join(plain.actions[:20]) and 'RR' in ''.join(explorer.actions)


def test_a_photo_is_requested_for_an_obstacle_on_the_left_and_bounds_shift_the_record():
    grid = EMPTY.copy()
    grid[0:3, 2] = True   # left of a robot at (4,1) facing north; sensor 5 sees (2,0), the back is the wall
    ex, robot = stepper(grid, start=Pose(4, 1, 0), image_mode=True)
    answer(ex, robot, ex.next_move())
    assert ex.next_move().kind == PHOTO
    ex.on_photo([(6, 'LEFT'), (-1, 'CENTRE')])     # LEFT in the picture = one cell towards the robot's rear
    assert [(r.id, r.x, r.y, r.face) for r in ex.images] == [(6, 2, 0, 1)]
    assert ex.next_move().kind != PHOTO        # one photo per pose
    ex2, robot2 = stepper(grid, start=Pose(4, 1, 0), image_mode=False)
    answer(ex2, robot2, ex2.next_move())
    assert ex2.next_move().kind != PHOTO


# --- CLI -------------------------------------------------------------------------------------------------------
def test_cli_explore_writes_the_result_file(tmp_path, capsys):
    out = tmp_path / 'explore.json'
    assert cli.main(['explore', '--arena', str(ARENAS / '01_sample_arena_1.json'), '--out', str(out)]) == 0
    result = json.loads(out.read_text())
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    assert result['format'] == 'toio-arena-explore/1' and result['returned_to_start'] is True
    assert result['mdf_part2'] == layout.expected['mdf_full_exploration']['part2']
    assert result['obstacle_rows_top_first'] == grid_to_rows(layout.obstacles)
    assert result['explored_rows_top_first'] == ['1' * 15] * 20
    assert set(result['actions']) <= set('FLR') and result['moves'] < len(result['actions'])
    assert result['images'] == []


def test_cli_explore_reports_images_and_bad_input(tmp_path, capsys):
    layout = island_layout()
    rows = ['.' * 15] * 20
    data = {'format': 'toio-arena-layout/1', 'grid_rows_top_first': [
        ''.join('#' if layout.obstacles[19 - i, x] else '.' for x in range(15)) for i in range(20)],
        'images': [{'x': c.x, 'y': c.y, 'face': 'NESW'[c.face], 'id': c.id} for c in layout.images]}
    arena = tmp_path / 'island.json'
    arena.write_text(json.dumps(data))
    out = tmp_path / 'explore.json'
    assert cli.main(['explore', '--arena', str(arena), '--out', str(out)]) == 0
    assert {(i['id'], i['x'], i['y'], i['face']) for i in json.loads(out.read_text())['images']} == {
        (4, 3, 10, 'W'), (9, 4, 9, 'E'), (2, 4, 10, 'N'), (5, 3, 9, 'S')}
    capsys.readouterr()
    assert cli.main(['explore', '--arena', str(arena), '--out', str(out), '--noise', '2']) != 0
    assert '--noise' in capsys.readouterr().err
    data['grid_rows_top_first'] = rows[:5]
    arena.write_text(json.dumps(data))
    assert cli.main(['explore', '--arena', str(arena), '--out', str(out)]) != 0
    assert 'rows' in capsys.readouterr().err


def seeable_cards(layout):
    """Independent model: cards on a face that looks at a reachable robot's left side (one of its 3 left cells)."""
    grid = layout.obstacles
    start = layout.start
    seen, todo = {start}, [start]
    while todo:
        p = todo.pop()
        for q in (p.turned_left(), p.turned_right(), p.forward(1)):
            inside = 1 <= q.x <= 13 and 1 <= q.y <= 18
            if q not in seen and inside and not grid[q.y - 1:q.y + 2, q.x - 1:q.x + 2].any():
                seen.add(q)
                todo.append(q)
    return {(c.id, c.x, c.y, c.face) for c in layout.images for p in seen
            if c.face == (p.heading + 1) % 4 and (c.x, c.y) in [p.cell(f, 2) for f in (-1, 0, 1)]}


def test_image_mode_finds_every_seeable_card_and_no_wrong_one():
    rng = np.random.default_rng(5)
    total = 0
    for _ in range(8):
        grid = rng.random((20, 15)) < 0.07
        grid[0:3, 0:3] = False
        grid[17:20, 12:15] = False
        ys, xs = np.nonzero(grid)
        cards = tuple(ImageCard(int(xs[j]), int(ys[j]), int(rng.integers(4)), int(rng.integers(1, 16)))
                      for j in range(len(xs)))  # a card on every obstacle, random faces
        layout = ArenaLayout(obstacles=grid, images=cards)
        explorer, robot = run_exploration(layout, ExplorerConfig(image_mode=True, max_images=99))
        found = {(r.id, r.x, r.y, r.face) for r in explorer.images}
        truth = {(c.id, c.x, c.y, c.face) for c in cards}
        assert found <= truth and seeable_cards(layout) <= found
        assert_sound_and_complete(explorer, robot, grid)
        total += len(found)
    assert total > 20


def test_walls_are_never_photographed():
    ex, robot = stepper(EMPTY, image_mode=True)
    photos = 0
    while (cmd := ex.next_move()) is not None:
        if cmd.kind == PHOTO:
            photos += 1
            ex.on_photo([])
        else:
            answer(ex, robot, cmd)
    assert photos == 0 and ex.returned_to_start and ex.belief.explored.all()
