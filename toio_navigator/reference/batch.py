"""Array containers shared by the HLAvoid and Boids kernels, per-ego reductions over pair lists, and the index
arrays of groups laid end to end (:func:`ragged`).

The kernels answer B queries at once. Each ego row holds the ego's state, its own margins and its target; the
robots an ego knows about come as a flat *pair list* sorted by ego index (one row per (ego, other) pair), so a
single query is simply B = 1 and a swarm step is B = N with the pairs found by neighbour culling (swarm.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class EgoBatch:
    """B egos and their targets. All arrays have shape (B,)."""
    x: np.ndarray
    y: np.ndarray
    rad: np.ndarray
    spd: np.ndarray
    w: np.ndarray
    avoid_margin: np.ndarray   # the ego's HLAvoid margin
    boids_margin: np.ndarray   # the ego's Boids margin
    tx: np.ndarray             # target position
    ty: np.ndarray
    tvx: np.ndarray            # target velocity (used when fleeing)
    tvy: np.ndarray

    @property
    def b(self) -> int:
        return int(self.x.shape[0])


@dataclass
class PairBatch:
    """P (ego, other) pairs, sorted by ``ego``. All arrays have shape (P,)."""
    ego: np.ndarray            # int index into the EgoBatch
    x: np.ndarray
    y: np.ndarray
    vx: np.ndarray
    vy: np.ndarray
    margin: np.ndarray         # the other's Entity margin (cube default 16)
    avoid_margin: np.ndarray   # the other's HLAvoid margin
    boids_margin: np.ndarray   # the other's Boids margin
    boids: np.ndarray          # bool: relation BOIDS (flock with it)

    @property
    def p(self) -> int:
        return int(self.ego.shape[0])

    def take(self, idx) -> 'PairBatch':
        return PairBatch(*(getattr(self, f)[idx] for f in
                           ('ego', 'x', 'y', 'vx', 'vy', 'margin', 'avoid_margin', 'boids_margin', 'boids')))


def empty_pairs() -> PairBatch:
    z = np.zeros(0)
    return PairBatch(np.zeros(0, dtype=np.intp), z, z, z, z, z, z, z, np.zeros(0, dtype=bool))


def ragged(counts) -> tuple[np.ndarray, np.ndarray]:
    """Groups of ``counts`` items laid end to end: (the group of each item, its place within its group)."""
    counts = np.asarray(counts, dtype=np.int64)
    group = np.repeat(np.arange(len(counts)), counts)
    return group, np.arange(int(counts.sum())) - (np.cumsum(counts) - counts)[group]


def _starts(ego: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Start offset of each ego's segment and whether the segment is non-empty."""
    bounds = np.searchsorted(ego, np.arange(b + 1), side='left')
    return bounds[:-1], bounds[1:] > bounds[:-1]


def segment_min(values: np.ndarray, ego: np.ndarray, b: int, init: float, axis: int = 0) -> np.ndarray:
    """Per-ego minimum over the pair axis of ``values``, starting from ``init`` (an empty segment gives init).

    ``axis`` = 0: values (P, S) → (B, S); ``axis`` = 1: values (S, P) → (S, B).
    """
    if axis == 1:
        out = np.full((values.shape[0], b), init, dtype=float)
    else:
        out = np.full((b,) + values.shape[1:], init, dtype=float)
    if values.shape[axis] == 0:
        return out
    starts, nonempty = _starts(ego, b)
    red = np.minimum.reduceat(values, starts[nonempty], axis=axis)
    if axis == 1:
        out[:, nonempty] = np.minimum(out[:, nonempty], red)
    else:
        out[nonempty] = np.minimum(out[nonempty], red)
    return out


def segment_any(flags: np.ndarray, ego: np.ndarray, b: int) -> np.ndarray:
    out = np.zeros(b, dtype=bool)
    if flags.shape[0] == 0:
        return out
    starts, nonempty = _starts(ego, b)
    out[nonempty] = np.logical_or.reduceat(flags, starts[nonempty], axis=0)
    return out


def segment_sum(values: np.ndarray, ego: np.ndarray, b: int) -> np.ndarray:
    out = np.zeros((b,) + values.shape[1:], dtype=float)
    if values.shape[0] == 0:
        return out
    starts, nonempty = _starts(ego, b)
    out[nonempty] = np.add.reduceat(values, starts[nonempty], axis=0)
    return out
