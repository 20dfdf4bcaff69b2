"""MDF (Map Descriptor Format) strings, exactly per docs/arena.md §2.

Part 1: bits ``11`` + one explored bit per cell (row y=0 first, x=0..14 in each row) + ``11`` -> 76 hex digits.
Part 2: one obstacle bit per *explored* cell in the same order, zero-padded to whole bytes -> 2*ceil(n/8) digits.
Encoders write upper case. The decoder also accepts lower case, surrounding white space and a Part 2 padded only
to whole hex digits (one public encoder does that), and ignores the pad bits.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.arena.geometry import ARENA_COLS, ARENA_ROWS

FRAME_BITS = '11'


class MDFError(ValueError):
    """An MDF string that cannot be decoded; the message names the problem."""


def _bits_to_hex(bits: str) -> str:
    return ''.join('%X' % int(bits[i:i + 4], 2) for i in range(0, len(bits), 4))


def _hex_to_bits(text: str, what: str) -> str:
    try:
        return ''.join(format(int(ch, 16), '04b') for ch in text)
    except ValueError:
        bad = next(ch for ch in text if ch not in '0123456789abcdefABCDEF')
        raise MDFError(f'{what} has a non-hex character {bad!r}') from None


def encode(explored: np.ndarray, obstacle: np.ndarray) -> tuple[str, str]:
    """Bool grids [y, x] -> (part1, part2). Obstacle bits of unexplored cells are not part of Part 2."""
    explored = np.asarray(explored, dtype=bool)
    obstacle = np.asarray(obstacle, dtype=bool)
    if explored.shape != obstacle.shape:
        raise MDFError(f'explored grid {explored.shape} and obstacle grid {obstacle.shape} differ in shape')
    seen = explored.ravel()  # row y=0 first, x ascending: the MDF cell order
    part1 = _bits_to_hex(FRAME_BITS + ''.join('1' if v else '0' for v in seen) + FRAME_BITS)
    bits = ''.join('1' if v else '0' for v in obstacle.ravel()[seen])
    bits += '0' * (-len(bits) % 8)
    return part1, _bits_to_hex(bits)


def decode(part1: str, part2: str, cols: int = ARENA_COLS, rows: int = ARENA_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """(part1, part2) -> (explored, obstacle) bool grids [y, x]."""
    if not isinstance(part1, str) or not isinstance(part2, str):
        raise MDFError('MDF parts must be strings')
    part1, part2 = part1.strip(), part2.strip()
    n_cells = rows * cols
    p1_digits = (n_cells + 2 * len(FRAME_BITS)) // 4
    if len(part1) != p1_digits:
        raise MDFError(f'Part 1 has {len(part1)} hex digits, expected {p1_digits}')
    bits1 = _hex_to_bits(part1, 'Part 1')
    if bits1[:2] != FRAME_BITS or bits1[-2:] != FRAME_BITS:
        raise MDFError("Part 1 must start and end with the framing bits '11'")
    explored = np.array([b == '1' for b in bits1[2:2 + n_cells]], dtype=bool)
    n = int(explored.sum())
    bits2 = _hex_to_bits(part2, 'Part 2')
    if len(bits2) < n:
        raise MDFError(f'Part 2 has {len(part2)} hex digits, too short for the {n} explored cells '
                       f'(expected {2 * -(-n // 8)})')
    if len(bits2) - n >= 8:
        raise MDFError(f'Part 2 has {len(part2)} hex digits, too long for the {n} explored cells '
                       f'(expected {2 * -(-n // 8)})')
    obstacle = np.zeros(n_cells, dtype=bool)
    obstacle[explored] = [b == '1' for b in bits2[:n]]
    return explored.reshape(rows, cols), obstacle.reshape(rows, cols)
