"""MDF strings: the worked examples of docs/arena.md §2, round trips and the tolerant decoder."""
from __future__ import annotations

import numpy as np
import pytest

from toio_navigator.arena import mdf

ROWS, COLS = 20, 15


def grids():
    return np.zeros((ROWS, COLS), dtype=bool), np.zeros((ROWS, COLS), dtype=bool)


def zones(explored):
    explored[0:3, 0:3] = True
    explored[17:20, 12:15] = True


def test_example_a_initial_state():
    explored, obstacle = grids()
    zones(explored)
    assert mdf.encode(explored, obstacle) == (
        'F8007000E00000000000000000000000000000000000000000000000000000000007000E001F', '000000')


def test_example_b_five_rows_and_goal_zone():
    explored, obstacle = grids()
    explored[0:5, :] = True
    zones(explored)
    obstacle[0, 14] = obstacle[3, 5] = True
    assert mdf.encode(explored, obstacle) == (
        'FFFFFFFFFFFFFFFFFFF8000000000000000000000000000000000000000000000007000E001F', '0002000000002000000000')


def test_example_c_single_obstacle_full_arena():
    explored, obstacle = grids()
    explored[:] = True
    obstacle[10, 7] = True
    assert mdf.encode(explored, obstacle) == (
        'F' * 76, '0000000000000000000000000000000000000004000000000000000000000000000000000000')


def test_example_d_corner_obstacles():
    explored, obstacle = grids()
    explored[:] = True
    obstacle[0, 3] = obstacle[19, 0] = True
    assert mdf.encode(explored, obstacle)[1] == (
        '1000000000000000000000000000000000000000000000000000000000000000000000040000')


def test_example_e_one_column():
    explored, obstacle = grids()
    explored[:, 0] = True
    zones(explored)
    obstacle[10, 0] = True
    assert mdf.encode(explored, obstacle) == (
        'F8007000E00100020004000800100020004000800100020004000800100020004007800F001F', '0000800000')


def test_obstacle_bits_of_unexplored_cells_are_not_encoded():
    explored, obstacle = grids()
    zones(explored)
    obstacle[10, 7] = True  # not explored: must not appear
    assert mdf.encode(explored, obstacle)[1] == '000000'


def test_random_round_trips_and_string_shapes():
    rng = np.random.default_rng(7)
    for _ in range(200):
        explored = rng.random((ROWS, COLS)) < rng.random()
        obstacle = rng.random((ROWS, COLS)) < 0.3
        p1, p2 = mdf.encode(explored, obstacle)
        n = int(explored.sum())
        assert len(p1) == 76 and p1[0] in 'CDEF' and p1[-1] in '37BF'
        assert len(p2) == 2 * -(-n // 8)
        assert p1 == p1.upper() and p2 == p2.upper()
        e2, o2 = mdf.decode(p1, p2)
        assert (e2 == explored).all()
        assert (o2 == (obstacle & explored)).all()


def test_nothing_explored_gives_an_empty_part2_and_decodes():
    explored, obstacle = grids()
    p1, p2 = mdf.encode(explored, obstacle)
    assert p2 == ''
    e2, o2 = mdf.decode(p1, p2)
    assert not e2.any() and not o2.any()


def test_decoder_accepts_lower_case_and_a_missing_final_pad_digit():
    explored, obstacle = grids()
    explored[:] = True
    obstacle[19, 14] = obstacle[0, 0] = True
    p1, p2 = mdf.encode(explored, obstacle)
    assert p2.endswith('0') and len(p2) == 76
    for a, b in ((p1.lower(), p2.lower()), (p1, p2[:-1]), (' ' + p1 + '\n', p2)):
        e2, o2 = mdf.decode(a, b)
        assert e2.all() and (o2 == obstacle).all()


@pytest.mark.parametrize('p1, p2, words', [
    ('F' * 75, '0' * 76, 'Part 1 has 75'),
    ('F' * 75 + 'G', '0' * 76, 'non-hex'),
    ('7' + 'F' * 75, '0' * 76, 'framing'),
    ('F' * 76, '0' * 70, 'too short'),
    ('F' * 76, '0' * 80, 'too long'),
])
def test_decoder_names_the_problem(p1, p2, words):
    with pytest.raises(mdf.MDFError, match=words):
        mdf.decode(p1, p2)
