"""CubeHandle against docs/navigator.md Appendix A (dead zone 8, max 115, pose (250, 250), heading 0)."""
import math

import pytest

from toio_navigator.reference.cube_handle import CubeHandle, MotorCommand


def handle(x=250, y=250, deg=0, now=10.0):
    h = CubeHandle()
    h.update_deg(x, y, deg, now)
    return h


@pytest.mark.parametrize('tr,rot,sent,ret', [
    ((0), 5, (2, -2), (0, 5)), (0, 10, (8, -8), (0, 16)), (0, 12, (8, -8), (0, 16)), (0, 20, (10, -10), (0, 20)),
    (3, 0, (8, 8), (8, 0)), (5, 2, (10, 8), (9, 2)), (5, 10, (10, 0), (5, 10)), (2, 12, (12, 0), (6, 12)),
    (-5, 10, (0, -10), (-5, 10)), (4, 20, (12, -8), (2, 20)), (10, 30, (22, -8), (7, 30)),
    (-3, -12, (-12, 0), (-6, -12)), (6, -12, (0, 12), (6, -12)), (0, -14, (-8, 8), (0, -16)),
    (100, 40, (115, 80), (97.5, 35)), (110, 30, (115, 95), (105, 20)), (-110, 30, (-85, -115), (-100, 30)),
    (110, -30, (85, 115), (100, -30)), (60, 0, (60, 60), (60, 0)),
])
def test_move_dead_zone_and_saturation(tr, rot, sent, ret):
    mv = handle().move(tr, rot, 1000, border=False)
    assert (mv.command.left, mv.command.right) == sent
    assert (mv.translate, mv.rotate) == pytest.approx(ret)


def test_firmware_view_of_a_command():
    assert MotorCommand(2, -2, 1234).to_firmware(8, 115) == (0, 0, 1230)
    assert MotorCommand(120, -9, 9000).to_firmware(8, 115) == (115, -9, 2550)


@pytest.mark.parametrize('target,spd,tr,rot,dur,reached', [
    ((350, 250), 50, 50, 0, 250, False), ((250, 350), 50, 13.6364, 54.2647, 250, False),
    ((150, 250), 50, 0, -118.7721, 250, False), ((260, 250), 50, 20, 0, 250, False),
    ((300, 270), 80, 70.1239, 17.9161, 250, False), ((400, 250), 100, 100, 0, 250, False),
    ((255, 250), 50, 0, 0, 100, True), ((250, 260), 50, 0, 59.386, 250, False),
])
def test_move_to_target(target, spd, tr, rot, dur, reached):
    mv = handle().move_to_target(*target, max_spd=spd, rotate_time=250)
    assert mv.translate == pytest.approx(tr, abs=1e-3) and mv.rotate == pytest.approx(rot, abs=1e-3)
    assert mv.duration_ms == dur and mv.reached is reached


def test_rotate_to_deg():
    for rt, rot in ((200, -73.4078), (400, -36.7039), (800, -18.3519)):
        mv = handle().rotate_to_deg(-89, rt)
        assert mv.rotate == pytest.approx(rot, abs=1e-3) and mv.duration_ms == rt
    mv = handle().rotate_to_deg(5, 400)
    assert mv.rotate == pytest.approx(16) and mv.duration_ms == 51
    assert handle().rotate_to_deg(3, 400).reached


def drive(u_l, u_r, t0):
    h = handle(now=t0)
    for k in range(21):
        h.move_raw(u_l, u_r, 250, now=t0 + k * 0.05)
    h.update_deg(250, 250, 0, t0 + 1.05)
    return h


def test_prediction_from_command_history():
    # The reference's 0.01 s loop runs 13 or 14 integration steps over the 0.13 s lag depending on how the
    # clock rounds; the two golden runs of Appendix A show one of each, reproduced here with two clock bases.
    h = drive(80, 80, 0.0)
    assert h.spdL == pytest.approx(120) and h.spdPredL == pytest.approx(165.2422, abs=1e-3)
    assert h.xPred - h.x == pytest.approx(20.7242, abs=1e-3)
    assert h.stopXPred - h.x == pytest.approx(25.9863, abs=1e-3)
    h = drive(60, 20, 1.0)
    assert (h.spdL, h.spdR, h.w) == pytest.approx((120, 41.3105, 4.0307), abs=1e-3)
    assert (h.spdPredL, h.spdPredR, h.wPred) == pytest.approx((123.9316, 41.3105, 4.2321), abs=1e-3)
    assert h.radPred == pytest.approx(0.5905, abs=1e-3)
    assert (h.xPred - h.x, h.yPred - h.y) == pytest.approx((10.8174, 3.5352), abs=1e-3)


def test_border_limitation():
    mv = handle(80, 250, 180).move(50, 0, 1000)
    assert (mv.command.left, mv.command.right, mv.duration_ms) == (50, 50, 50)
    mv = handle(60, 250, 180).move(50, 0, 1000)            # outside, moving further out: blocked
    assert (mv.command.left, mv.command.right, mv.duration_ms) == (0, 0, 1000)
    mv = handle(60, 250, 180).move(-50, 0, 1000)           # reversing inward: allowed
    assert (mv.command.left, mv.command.right, mv.duration_ms) == (-50, -50, 1000)
    mv = handle(60, 250, 100).move(50, 10, 1000)           # blocked, the turn boosted to 2 × dead zone
    assert (mv.command.left, mv.command.right, mv.duration_ms) == (8, -8, 1000)


def test_one_shot_commands():
    h = handle()
    mv = h.translate_by_dist(100, 50)
    assert mv.translate == 50 and mv.duration_ms == int(100 / (50 * h.p.k) * 1000) and mv.order == 'strong'
    assert h.translate_by_dist(100, 5).duration_ms == 10          # below the dead zone: a 10 ms no-op
    mv = h.rotate_by_rad(-math.pi, 100)
    assert mv.rotate == -100 and mv.duration_ms == int(math.pi / (100 * h.p.k / h.p.wheel_track) * 1000)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match='finite'):
        CubeHandle().update(float('nan'), 0, 0, 0)
    with pytest.raises(ValueError, match='finite'):
        handle().move_raw(float('inf'), 0)
