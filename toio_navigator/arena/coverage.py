"""Where the robot could still learn something: poses whose sensors would reach an unexplored cell.

Used by the explorer after the wall hug, to visit what the hug's sensors did not see. Vectorised over all
robot centres: for each heading and sensor the ray cells are whole-grid shifts of padded status arrays.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.arena.geometry import SIX_SENSORS, SensorMount, body_vector
from toio_navigator.arena.grid import ScoreRules

_PAD = 8  # larger than any mount offset + sensor range + 1


def sensing_targets(known_free: np.ndarray, explored: np.ndarray, rules: ScoreRules = ScoreRules(),
                    sensors: tuple[SensorMount, ...] = SIX_SENSORS) -> np.ndarray:
    """Bool [heading, y, x]: some sensor of a robot there would score an unexplored cell.

    A sensor scores the cells along its ray up to its range, stopping at the first obstacle or wall; so it
    reaches an unexplored cell when every cell before it on the ray is known free.
    """
    rows, cols = known_free.shape
    free_p = np.zeros((rows + 2 * _PAD, cols + 2 * _PAD), dtype=bool)
    unknown_p = np.zeros_like(free_p)
    free_p[_PAD:_PAD + rows, _PAD:_PAD + cols] = known_free
    unknown_p[_PAD:_PAD + rows, _PAD:_PAD + cols] = ~explored  # outside the arena stays "wall"

    def shifted(arr: np.ndarray, dx: int, dy: int) -> np.ndarray:
        return arr[_PAD + dy:_PAD + dy + rows, _PAD + dx:_PAD + dx + cols]

    out = np.zeros((4, rows, cols), dtype=bool)
    for h in range(4):
        for mount in sensors:
            mx, my = body_vector(h, mount.front, mount.left)
            dx, dy = mount.direction(h)
            clear = np.ones((rows, cols), dtype=bool)
            for k in range(1, rules.sensor_range(mount) + 1):
                ox, oy = mx + k * dx, my + k * dy
                out[h] |= clear & shifted(unknown_p, ox, oy)
                clear &= shifted(free_p, ox, oy)
    return out


def photo_targets(obstacle: np.ndarray, viewed_faces: np.ndarray, photographed: np.ndarray) -> np.ndarray:
    """Bool [heading, y, x]: a robot there, not photographed yet (``photographed[heading, y, x]``), has an
    obstacle among the three cells touching its left side whose face towards the robot no photo has resolved
    (``viewed_faces[face, y, x]``). The camera looks out of the left side."""
    rows, cols = obstacle.shape
    out = np.zeros((4, rows, cols), dtype=bool)
    pad = np.zeros((4, rows + 2 * _PAD, cols + 2 * _PAD), dtype=bool)
    pad[:, _PAD:_PAD + rows, _PAD:_PAD + cols] = obstacle & ~viewed_faces
    for h in range(4):
        face = (h + 1) % 4  # the face of a left cell that points back at the robot (its right)
        for front in (-1, 0, 1):
            dx, dy = body_vector(h, front, 2)
            out[h] |= pad[face, _PAD + dy:_PAD + dy + rows, _PAD + dx:_PAD + dx + cols]
    return out & ~photographed
