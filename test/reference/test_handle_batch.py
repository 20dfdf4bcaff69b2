"""The batched CubeHandle steps equal the scalar CubeHandle on random inputs."""
import numpy as np
import pytest

from toio_navigator.reference.cube_handle import CubeHandle
from toio_navigator.reference.handle_batch import move_to_target_batch, wheels_batch
from toio_navigator.reference.params import CubeHandleParams


def test_wheels_batch_equals_move():
    rng = np.random.default_rng(2)
    tr = np.concatenate([rng.uniform(-20, 20, 400), rng.uniform(-140, 140, 400), [0, 3, -5, 110, -110]])
    rot = np.concatenate([rng.uniform(-30, 30, 400), rng.uniform(-120, 120, 400), [5, 0, 10, 30, 30]])
    tr[::7] = np.round(tr[::7])
    rot[::5] = -2 * tr[::5]                        # l + r = 0 family
    ul, ur = wheels_batch(tr, rot, CubeHandleParams())
    h = CubeHandle()
    h.update(250, 250, 0.0, 1.0)
    for i in range(tr.shape[0]):
        mv = h.move(tr[i], rot[i], 1000, border=False)
        assert (ul[i] + ur[i]) / 2 == mv.translate and ul[i] - ur[i] == mv.rotate, i


def test_move_to_target_batch_equals_scalar():
    rng = np.random.default_rng(3)
    prm = CubeHandleParams()
    n = 300
    x, y = rng.integers(50, 450, n).astype(float), rng.integers(50, 450, n).astype(float)
    rad = rng.uniform(-np.pi, np.pi, n)
    tx, ty = x + rng.uniform(-150, 150, n), y + rng.uniform(-150, 150, n)
    tx[:20], ty[:20] = x[:20] + 3, y[:20] - 2                     # within tolerance: reached
    spd = rng.choice([20.0, 50.0, 80.0, 115.0], n)
    h = CubeHandle(prm)
    xp, yp, rp = [], [], []
    for i in range(n):
        h.update(x[i], y[i], rad[i], 5.0)
        xp.append(h.xPred), yp.append(h.yPred), rp.append(h.radPred)
    tr, rot, dur, reached = move_to_target_batch(x, y, rad, xp, yp, rp, tx, ty, spd, prm)
    assert reached[:20].all() and not reached[20:].all()
    for i in range(n):
        h.update(x[i], y[i], rad[i], 5.0)
        mv = h.move_to_target(tx[i], ty[i], spd[i])
        assert (dur[i], reached[i]) == (mv.duration_ms, mv.reached), i
        assert (tr[i], rot[i]) == pytest.approx((mv.translate, mv.rotate), rel=1e-12, abs=1e-12), i
