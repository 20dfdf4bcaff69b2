"""CubeHandle, the reference's motion controller of one cube (docs/navigator.md §4).

* ``update`` / ``predict``  §4.2 pose from the cube, wheel speeds and the pose after the lag from the command
                            history (with the reference's 120 dot/s warm-up cap, B14, and 50 ms stop prediction)
* ``move_raw``              §4.3 clip, round half to even, record the history
* ``move``                  §4.4 dead-zone adjustment, the asymmetric saturation (B13), border limitation
* ``move_to_target``        §4.5 closed-loop steering to a point (call every tick)
* ``rotate_to_*``           §4.6; ``translate_by_dist`` / ``rotate_by_rad`` §4.7 (one shot)

There is no clock inside: ``update`` takes the time of the observation and commands are stamped with it (or with
an explicit ``now``). A command is returned as a :class:`MotorCommand` — what the handle sends; the caller
transmits it (``to_firmware`` gives what the cube then actually runs: dead zone, 10 ms steps, ≤ 2550 ms).
Float32 roundings of the reference (yaw-rate casts, the 0.05 s border step) are kept where they decide integers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from toio_navigator.reference.angles import deg2rad, wrap, wrap_deg
from toio_navigator.reference.params import CubeHandleParams

_F32_DT = float(np.float32(0.05))     # the border simulation's step is a C# float


def _f32(x: float) -> float:
    return float(np.float32(x))


def _sign(x: float) -> float:
    return float((x > 0) - (x < 0))


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


@dataclass(frozen=True)
class MotorCommand:
    """A motor command as the handle sends it: integer wheel speeds (motor units) and a duration (ms)."""
    left: int
    right: int
    duration_ms: int
    order: str = 'weak'

    def to_firmware(self, dead_zone: int, max_spd: int) -> tuple[int, int, int]:
        """What the cube runs: |u| below the dead zone stops the wheel, duration in 10 ms steps up to 2550."""
        def wheel(u: int) -> int:
            u = max(-max_spd, min(max_spd, u))
            return 0 if abs(u) < dead_zone else u
        return wheel(self.left), wheel(self.right), max(0, min(255, self.duration_ms // 10)) * 10


@dataclass
class Movement:
    """The reference's Movement: translate / rotate in motor units, duration, reached / idle flags."""
    translate: float
    rotate: float
    duration_ms: int = 500
    reached: bool = False
    idle: bool = False
    order: str = 'weak'
    command: MotorCommand | None = field(default=None, compare=False)   # set once executed

    def exec(self, handle: 'CubeHandle', border: bool = True, now: float | None = None) -> 'Movement':
        return handle.move_movement(self, border=border, now=now)


class CubeHandle:
    """Motion controller of one cube. Angles in rad (mat frame), positions in dots, times in seconds."""

    def __init__(self, params: CubeHandleParams | None = None):
        self.p = params or CubeHandleParams()
        self.x = self.y = self.rad = 0.0
        self.time = 0.0
        self.spdL = self.spdR = 0.0
        self.xPred = self.yPred = self.radPred = 0.0
        self.spdPredL = self.spdPredR = 0.0
        self.stopXPred = self.stopYPred = self.stopRadPred = 0.0
        self._hist: list[tuple[float, float, float, float]] = []   # (sent time, duration s, uL, uR)
        self.last_command: MotorCommand | None = None

    # ------------------------------------------------------------------ border
    def set_border_rect(self, x_min: int, y_min: int, width: int, height: int, margin: int = 20) -> None:
        """From a mat rectangle: shrink by ``margin`` on every side (never past the centre) (§4.1)."""
        xmin = min(x_min + margin, int(x_min + width / 2))
        ymin = min(y_min + margin, int(y_min + height / 2))
        w = max(width - 2 * margin, 0)
        h = max(height - 2 * margin, 0)
        self.p = _replace(self.p, border_x=(float(xmin), float(xmin + w)), border_y=(float(ymin), float(ymin + h)))

    # ------------------------------------------------------------------ derived state
    @property
    def spd(self) -> float:
        return (self.spdL + self.spdR) / 2

    @property
    def w(self) -> float:
        return (self.spdL - self.spdR) / self.p.wheel_track

    @property
    def v(self) -> tuple[float, float]:
        return self.spd * math.cos(self.rad), self.spd * math.sin(self.rad)

    @property
    def spdPred(self) -> float:
        return (self.spdPredL + self.spdPredR) / 2

    @property
    def wPred(self) -> float:
        return (self.spdPredL - self.spdPredR) / self.p.wheel_track

    @property
    def vPred(self) -> tuple[float, float]:
        """Predicted speed along the *observed* heading (B16)."""
        return self.spdPred * math.cos(self.rad), self.spdPred * math.sin(self.rad)

    # ------------------------------------------------------------------ update and prediction (§4.2)
    def update_deg(self, x: float, y: float, angle_deg: float, now: float) -> None:
        """Observation as the cube reports it (integer degrees 0..359)."""
        self._observe(x, y, float(deg2rad(wrap_deg(angle_deg))), now)

    def update(self, x: float, y: float, rad: float, now: float) -> None:
        """Observation with the heading in radians (mat frame)."""
        self._observe(x, y, float(wrap(rad)), now)

    def _observe(self, x: float, y: float, rad: float, now: float) -> None:
        for name, v in (('x', x), ('y', y), ('rad', rad), ('now', now)):
            if not math.isfinite(v):
                raise ValueError(f'CubeHandle.update: {name} must be finite')
        self.x, self.y, self.rad, self.time = float(x), float(y), rad, float(now)
        self.predict(now)

    def _target_at(self, t: float) -> tuple[float, float]:
        """Wheel-speed targets (dot/s) of the command running at time t (history model, §4.2)."""
        h = self._hist
        for i, (ts, dur, ul, ur) in enumerate(h):
            if ts <= t and (i == len(h) - 1 or h[i + 1][0] > t):
                if ts + dur > t:
                    return ul * self.p.k, ur * self.p.k
                return 0.0, 0.0
        return 0.0, 0.0

    def predict(self, now: float) -> None:
        p = self.p
        step = p.pred_step
        dv = step * p.pred_accel
        t0 = now - p.lag
        xp, yp, rp = self.x, self.y, self.rad
        sl = sr = 0.0
        # the reference's loop, literally: whether the last 0.01 s step runs depends on the rounding of the
        # clock (13 or 14 integration steps for lag 0.13)
        t = t0 - p.pred_warmup_steps * step
        while t < now:
            tl, tr = self._target_at(t)
            sl += _sign(tl - sl) * min(abs(tl - sl), dv)
            sr += _sign(tr - sr) * min(abs(tr - sr), dv)
            if abs(t - t0) < 0.001:
                self.spdL, self.spdR = sl, sr          # "current" speed (capped by the warm-up, B14)
            if t >= t0 - 0.001:
                rp = float(wrap(rp + _f32((sl - sr) / p.wheel_track) * step))
                xp += math.cos(rp) * (sl + sr) / 2 * step
                yp += math.sin(rp) * (sl + sr) / 2 * step
            t += step
        self.xPred, self.yPred, self.radPred = xp, yp, rp
        self.spdPredL, self.spdPredR = sl, sr
        for _ in range(p.pred_stop_steps):             # only 50 ms of stopping by default (B15)
            sl += _sign(-sl) * min(abs(sl), dv)
            sr += _sign(-sr) * min(abs(sr), dv)
            rp = float(wrap(rp + _f32((sl - sr) / p.wheel_track) * step))
            xp += math.cos(rp) * (sl + sr) / 2 * step
            yp += math.sin(rp) * (sl + sr) / 2 * step
        self.stopXPred, self.stopYPred, self.stopRadPred = xp, yp, rp
        if abs(self.spdPredL) < p.pred_small_speed:
            self.spdPredL = 0.0
        if abs(self.spdPredR) < p.pred_small_speed:
            self.spdPredR = 0.0

    # ------------------------------------------------------------------ commands (§4.3, §4.4)
    def move_raw(self, u_l: float, u_r: float, duration_ms: int = 1000, order: str = 'weak',
                 now: float | None = None) -> MotorCommand:
        p = self.p
        if not (math.isfinite(u_l) and math.isfinite(u_r)):
            raise ValueError('CubeHandle.move_raw: wheel speeds must be finite')
        u_l = _clip(u_l, -p.max_spd, p.max_spd)
        u_r = _clip(u_r, -p.max_spd, p.max_spd)
        duration_ms = int(duration_ms)
        if duration_ms < 10:
            if duration_ms <= 5:
                u_l = u_r = 0.0
            duration_ms = 10
        cmd = MotorCommand(int(round(u_l)), int(round(u_r)), duration_ms, order)
        t = self.time if now is None else float(now)
        self._hist.append((t, _f32(duration_ms / 1000), u_l, u_r))
        del self._hist[:-self.history_size]
        self.last_command = cmd
        return cmd

    @property
    def history_size(self) -> int:
        return int(self.p.lag / self.p.dt + 4)

    def stop(self, now: float | None = None) -> MotorCommand:
        return self.move_raw(0, 0, 100, 'strong', now)

    def _dead_zone(self, u_l: float, u_r: float) -> tuple[float, float]:
        """Shift both wheels so each is 0 or outside the dead zone, keeping rotate = uL − uR (§4.4 step 2)."""
        d = float(self.p.dead_zone)
        big, small = max(u_l, u_r), min(u_l, u_r)
        if (u_l == 0 or u_l >= d or u_l <= -d) and (u_r == 0 or u_r >= d or u_r <= -d):
            return u_l, u_r
        s = u_l + u_r
        if abs(u_l - u_r) < d:
            if s > 0:
                return u_l + (d - small), u_r + (d - small)
            if s < 0:
                return u_l + (-d - big), u_r + (-d - big)
            return u_l, u_r
        if abs(u_l - u_r) < 2 * d:
            if s > 0:
                k = -small if small < d / 2 else d - small
                return u_l + k, u_r + k
            if s < 0:
                k = -big if big > -d / 2 else -d - big
                return u_l + k, u_r + k
            return _sign(u_l) * d, _sign(u_r) * d
        if s > 0:
            k = (-d - small) if small < -d / 2 else (d - small) if small > d / 2 else -small
        else:
            k = (-d - big) if small < -d / 2 else (d - big) if small > d / 2 else -big
        return u_l + k, u_r + k

    def _saturate(self, u_l: float, u_r: float) -> tuple[float, float]:
        """The reference's truncation: the excess is recomputed after the left wheel is shifted (B13)."""
        m = self.p.max_spd
        if max(u_l, u_r) > m:
            u_l -= max(u_l, u_r) - m
            u_r -= max(u_l, u_r) - m
        elif min(u_l, u_r) < -m:
            u_l -= min(u_l, u_r) + m
            u_r -= min(u_l, u_r) + m
        return u_l, u_r

    def move(self, translate: float, rotate: float, duration_ms: int = 1000, border: bool = True,
             order: str = 'weak', now: float | None = None) -> Movement:
        """Send (translate, rotate); returns the movement actually sent, its ``command`` set (§4.4)."""
        u_l, u_r = self._dead_zone(translate + rotate / 2, translate - rotate / 2)
        u_l, u_r = self._saturate(u_l, u_r)
        translate = (u_l + u_r) / 2
        rotate = u_l - u_r
        dur = int(duration_ms)
        if border:
            translate, rotate, dur = self._border(translate, rotate, u_l, u_r, int(duration_ms))
        cmd = self.move_raw(translate + rotate / 2, translate - rotate / 2, dur, order, now)
        return Movement(translate, rotate, dur, False, False, order, cmd)

    def move_movement(self, mv: Movement, border: bool = True, now: float | None = None) -> Movement:
        if mv.idle:
            return mv
        sent = self.move(mv.translate, mv.rotate, mv.duration_ms, border, mv.order, now)
        sent.reached = mv.reached
        return sent

    def _border(self, tr: float, rot: float, u_l: float, u_r: float, dur: int) -> tuple[float, float, int]:
        """Border limitation (§4.4 step 5): block outward translation outside, cut the duration inside."""
        p = self.p
        cx = (p.border_x[0] + p.border_x[1]) / 2
        cy = (p.border_y[0] + p.border_y[1]) / 2
        rx = (p.border_x[1] - p.border_x[0]) / 2
        ry = (p.border_y[1] - p.border_y[0]) / 2
        e = p.border_tangent_window
        d = float(p.dead_zone)
        x, y, rad = self.stopXPred, self.stopYPred, self.radPred
        px = x + tr * p.k * p.dt * math.cos(rad)
        py = y + tr * p.k * p.dt * math.sin(rad)
        outside = abs(x - cx) >= rx or abs(y - cy) >= ry
        going_out = (abs(px - cx) >= rx and abs(px - cx) >= abs(x - cx)) or \
                    (abs(py - cy) >= ry and abs(py - cy) >= abs(y - cy))
        if outside and going_out:
            pi = math.pi
            right, left, low, high = x - cx > rx, x - cx < -rx, y - cy > ry, y - cy < -ry
            in_x, in_y = abs(x - cx) <= rx, abs(y - cy) <= ry
            windows = (
                right and low and (pi - e < rad < pi or pi / 2 - e < -rad < pi / 2),
                right and high and (pi - e < -rad < pi or pi / 2 - e < rad < pi / 2),
                left and high and (0 < -rad < e or pi / 2 < rad < pi / 2 + e),
                left and low and (0 < rad < e or pi / 2 < -rad < pi / 2 + e),
                right and in_y and (pi / 2 - e < rad < pi / 2 or pi / 2 - e < -rad < pi / 2),
                left and in_y and (pi / 2 < rad < pi / 2 + e or pi / 2 < -rad < pi / 2 + e),
                low and in_x and (0 < rad < e or pi - e < rad < pi),
                high and in_x and (0 < -rad < e or pi - e < -rad < pi),
            )
            if abs(rot) < 2 * d and any(windows):
                rot = 2 * d * _sign(rot)
            return 0.0, rot, dur
        sl, sr = u_l * p.k, u_r * p.k
        yaw_step = float(np.float32(np.float32((sl - sr) / p.wheel_track) * np.float32(_F32_DT)))
        limit = _f32(dur / 1000)
        t = 0.0
        pr = rad
        qx, qy = x, y
        while t < limit:
            pr = float(wrap(pr + yaw_step))
            dx = math.cos(pr) * (sl + sr) / 2 * _F32_DT
            dy = math.sin(pr) * (sl + sr) / 2 * _F32_DT
            qx += dx
            qy += dy
            if (abs(qx - cx) >= rx and abs(qx + dx - cx) >= abs(qx - cx)) or \
                    (abs(qy - cy) >= ry and abs(qy + dy - cy) >= abs(qy - cy)):
                dur = int(t * 1000 - _f32(_F32_DT * 1000))
                if dur < 10:
                    dur = 0
                break
            t += _F32_DT
        return tr, rot, dur

    # ------------------------------------------------------------------ closed loop (§4.5, §4.6)
    def move_to_target(self, x: float, y: float, max_spd: float = 50, rotate_time: int = 250,
                       tolerance: float = 8) -> Movement:
        p = self.p
        k, wt, d = p.k, p.wheel_track, float(p.dead_zone)
        dxp, dyp = x - self.xPred, y - self.yPred
        dist = math.hypot(dxp, dyp)
        drad_pred = float(wrap(float(wrap(math.atan2(dyp, dxp))) - self.radPred))
        drad = float(wrap(float(wrap(math.atan2(y - self.y, x - self.x))) - self.rad))
        bx = self.x * (1 - p.p_mv2tar_reach_pred) + self.xPred * p.p_mv2tar_reach_pred
        by = self.y * (1 - p.p_mv2tar_reach_pred) + self.yPred * p.p_mv2tar_reach_pred
        if math.hypot(bx - x, by - y) < tolerance:
            return Movement(0.0, 0.0, p.reached_duration_ms, True)
        end_deg = p.m2t_max_turn_deg * min(1.0, max(dist, 20) / max(1.0, max_spd) / k / p.m2t_turn_time_factor
                                           / (rotate_time / 1000.0))
        tr = max_spd * _clip(1 - (abs(drad) - float(deg2rad(p.m2t_full_speed_deg))) / float(deg2rad(end_deg)), 0, 1)
        half = max(max_spd, d) * 0.5
        tr *= _clip(dist, d * 0.5, half) / half
        rot = drad_pred / (rotate_time / 1000.0) * wt / k
        miu = abs(tr) / p.max_spd
        rot *= abs(tr / p.m2t_blend_speed) * miu + 1 * (1 - miu)
        return Movement(tr, rot, int(rotate_time), False)

    def rotate_to_rad(self, target: float, rotate_time: int = 400, tolerance: float = 0.1) -> Movement:
        p = self.p
        lag_ms, dt_ms = int(p.lag * 1000), int(p.dt * 1000)
        rotate_time = int(_clip(int(rotate_time), lag_ms + dt_ms, p.rotate_time_max))
        if abs(float(wrap(target - self.stopRadPred))) < tolerance:
            return Movement(0.0, 0.0, p.reached_duration_ms, True)
        drad = float(wrap(target - self.radPred))
        rot = drad / (rotate_time / 1000.0) * p.wheel_track / p.k
        if abs(rot) < 2 * p.dead_zone:
            rot = 2 * p.dead_zone * _sign(rot)
        w = rot * p.k / p.wheel_track
        dur = int(drad / w * 1000) if w != 0 else 0
        return Movement(0.0, rot, dur, False)

    def rotate_to_deg(self, deg: float, rotate_time: int = 400, tolerance: float = 5) -> Movement:
        return self.rotate_to_rad(float(deg2rad(deg)), rotate_time, float(deg2rad(tolerance)))

    def rotate_to_target(self, x: float, y: float, rotate_time: int = 400, tolerance: float = 0.1) -> Movement:
        return self.rotate_to_rad(float(wrap(math.atan2(y - self.y, x - self.x))), rotate_time, tolerance)

    # ------------------------------------------------------------------ one shot (§4.7)
    def translate_by_dist(self, dist: float, translate: float) -> Movement:
        p = self.p
        if dist < 0:
            dist, translate = -dist, -translate
        if abs(translate) < p.dead_zone:
            return Movement(0.0, 0.0, 10, False, order='strong')
        translate = _clip(translate, -p.max_spd, p.max_spd)
        return Movement(translate, 0.0, abs(int(dist / (abs(translate) * p.k) * 1000)), False, order='strong')

    def rotate_by_rad(self, drad: float, rotate: float) -> Movement:
        p = self.p
        if drad < 0:
            drad, rotate = -drad, -rotate
        if abs(rotate) < 2 * p.dead_zone:
            return Movement(0.0, 0.0, 10, False, order='strong')
        rotate = _clip(rotate, -2 * p.max_spd, 2 * p.max_spd)
        return Movement(0.0, rotate, int(drad / (abs(rotate) * p.k / p.wheel_track) * 1000), False, order='strong')

    def rotate_by_deg(self, ddeg: float, rotate: float) -> Movement:
        return self.rotate_by_rad(ddeg / 180 * math.pi, rotate)


def _replace(p: CubeHandleParams, **kw) -> CubeHandleParams:
    return replace(p, **kw)
