"""The fast angle wrap is bit-identical to the reference's fmod(r + 3π, 2π) − π, quirks included."""
import math

import numpy as np

from toio_navigator.reference.angles import clip_len, deg2rad, unit, wrap


def reference(r):
    return np.array([math.fmod(v + math.pi * 3, math.pi * 2) - math.pi for v in np.ravel(r)]).reshape(np.shape(r))


def test_wrap_is_bit_identical_on_small_and_large_arrays():
    rng = np.random.default_rng(0)
    for size in (7, 5000):
        for scale in (1.0, 3.5, 6.5, 12.0):
            r = rng.uniform(-scale, scale, size)
            r[:4] = [math.pi, -math.pi, 0.0, 2 * math.pi]
            assert np.array_equal(wrap(r), reference(r))


def test_wrap_keeps_the_reference_quirks():
    assert wrap(math.pi) == -math.pi                # +π maps to −π
    assert wrap(-10.0) < -math.pi                   # wrong below −3π, as in the reference (B29)
    assert float(deg2rad(180)) == -math.pi


def test_vector_helpers():
    assert unit(0.0, 0.0) == (0.0, 0.0)
    assert np.allclose(unit(3.0, 4.0), (0.6, 0.8))
    assert np.allclose(clip_len(3.0, 4.0, 1.0), (0.6, 0.8)) and np.allclose(clip_len(3.0, 4.0, 9.0), (3, 4))
