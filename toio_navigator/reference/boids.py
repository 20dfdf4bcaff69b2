"""Boids flocking of the reference (docs/navigator.md §3), for B egos at once over a pair list.

Visibility: centre distance minus both Boids margins < range, and relative angle < fov — with no absolute
value, as in the reference (B9: blind only in the wedge between +fov and +π, behind-right). ``Fixes.boids_fov``
uses |relative angle| < fov / 2 instead. Only pairs whose relation is BOIDS take part.
"""
from __future__ import annotations

import numpy as np

from toio_navigator.reference.angles import ang, clip_len, unit, wrap
from toio_navigator.reference.batch import EgoBatch, PairBatch, segment_sum
from toio_navigator.reference.params import BoidsParams, Fixes


def boids_force(egos: EgoBatch, pairs: PairBatch, prm: BoidsParams, with_target: bool,
                fixes: Fixes = Fixes()) -> np.ndarray:
    """(B, 2) Boids force: [attraction +] separation + cohesion + alignment, each weighted and clipped."""
    b = egos.b
    e = pairs.ego
    ex, ey = egos.x[e], egos.y[e]
    dx = pairs.x - ex
    dy = pairs.y - ey
    dist = np.sqrt(dx * dx + dy * dy)
    rel = wrap(ang(dx, dy) - egos.rad[e])
    in_fov = (np.abs(rel) < prm.fov / 2) if fixes.boids_fov else (rel < prm.fov)
    seen = pairs.boids & ((dist - egos.boids_margin[e]) - pairs.boids_margin < prm.range) & in_fov
    idx = np.nonzero(seen)[0]
    p = pairs.take(idx)
    e = p.ego
    count = np.bincount(e, minlength=b).astype(float)
    # separation: push away from each neighbour, stronger when close (range / gap − 1)
    sx_, sy_ = ex[idx] - p.x, ey[idx] - p.y
    raw = np.sqrt(sx_ * sx_ + sy_ * sy_)
    gap = np.maximum(1.0, (raw - egos.boids_margin[e]) - p.boids_margin)
    ux, uy = unit(sx_, sy_)
    k = prm.range / gap - 1
    sep = segment_sum(np.stack([ux * k, uy * k], axis=1), e, b) * prm.p_weight_separation
    sep = np.stack(clip_len(sep[:, 0], sep[:, 1], prm.p_max_separation), axis=1)
    # cohesion: mean offset to the neighbours; alignment: mean absolute velocity of the neighbours
    cnt = count[e]
    coh = segment_sum(np.stack([(p.x - ex[idx]) / cnt, (p.y - ey[idx]) / cnt], axis=1), e, b)
    coh = coh * prm.p_weight_cohesion
    coh = np.stack(clip_len(coh[:, 0], coh[:, 1], prm.p_max_cohesion), axis=1)
    ali = segment_sum(np.stack([p.vx / cnt, p.vy / cnt], axis=1), e, b) * prm.p_weight_alignment
    ali = np.stack(clip_len(ali[:, 0], ali[:, 1], prm.p_max_alignment), axis=1)
    f = sep + coh + ali
    if with_target:
        ax, ay = unit(egos.tx - egos.x, egos.ty - egos.y)
        att = np.stack([ax, ay], axis=1) * prm.p_weight_attraction
        f = ((att + sep) + coh) + ali
    return np.stack(clip_len(f[:, 0], f[:, 1], prm.p_max_all), axis=1)
