"""Wheel speeds for N cubes at once: where a cube will be (:func:`predict_pose`) and how move-to-target's
translation and rotation become its wheel speeds (:func:`drive_wheels`).

The wheels come from the core's reference-exact batched CubeHandle (``handle_batch``); where the controller
differs from the reference on purpose it is a named option of :class:`WheelShaping`:

* ``border_stop``  the handle border's outward stop on the translation (docs/navigator.md §4.4 step 5, quick test);
* ``saturation``   'keep_rotation' (symmetric, keeps the turn) or 'reference' (B13's asymmetric truncation);
* latency-aware prediction (:func:`predict_pose`): horizon = command lag + age of the state at the tick.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from toio_navigator.control.arcs import drive_arc
from toio_navigator.reference.handle_batch import move_to_target_batch, wheels_batch
from toio_navigator.reference.params import CubeHandleParams


@dataclass(frozen=True)
class Poses:
    """Poses of N cubes (or of one, as scalars): x and y in mat units, heading in radians."""
    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray

    def turned(self, by) -> Poses:
        """The same cubes facing ``by`` radians further (per cube or one for all)."""
        return Poses(self.x, self.y, np.asarray(self.heading, float) + by)


@dataclass(frozen=True)
class WheelShaping:
    """How move-to-target drives: the handle's parameters and rotate time, its own reached radius, and the
    controller's two named options (module docstring)."""
    handle: CubeHandleParams
    rotate_time_ms: float
    tolerance: float          # move-to-target stops within this of its target (the settings' handle_tolerance)
    border_stop: bool = True
    saturation: str = 'keep_rotation'

    @classmethod
    def of(cls, settings, handle: CubeHandleParams) -> WheelShaping:
        """The shaping a controller with ``settings`` (NavigatorSettings) and ``handle`` drives with."""
        return cls(handle, settings.rotate_time_ms, settings.handle_tolerance, settings.border_stop,
                   settings.saturation)


def wrap_angle(a):
    """Angles wrapped into [-pi, pi)."""
    return (np.asarray(a) + math.pi) % (2 * math.pi) - math.pi


def predict_pose(pose: Poses, wheels: np.ndarray, active_s, horizon, handle: CubeHandleParams) -> Poses:
    """Pose ``horizon`` seconds (scalar or per cube) after the observed ``pose``, driving the last wheel command
    ``wheels`` (..., 2: left, right in motor units), which stays on for ``active_s`` more seconds from the
    observation.

    The controller's latency-aware prediction (a deliberate difference from CubeHandle.predict, §4.2, which
    replays a command history with an acceleration ramp per cube): the horizon is the command lag plus the age
    of the state at the tick, so a late reading is predicted further (:func:`drive_arc`: all cubes at once)."""
    x, y, th = (np.array(v, dtype=float) for v in (pose.x, pose.y, pose.heading))
    tau = np.minimum(np.broadcast_to(np.asarray(horizon, dtype=float), x.shape), np.maximum(active_s, 0.0))
    x1, y1, th1 = drive_arc(x, y, th, wheels[..., 0], wheels[..., 1], tau, handle.k, handle.wheel_track)
    return Poses(x1, y1, wrap_angle(th1))


def border_outward_stop(translate, predicted: Poses, hp: CubeHandleParams):
    """Option ``border_stop``: the quick outward test of the handle's border (docs/navigator.md §4.4 step 5) applied to
    the translation before the wheels are shaped: a cube at or beyond the border rectangle whose next ``dt``
    would take it further out on that axis only turns. (The reference runs the test on the stop-predicted pose
    after the saturation and also cuts durations inside the border; that needs per-cube history.)"""
    x_pred, y_pred, rad_pred = predicted.x, predicted.y, predicted.heading
    (bx0, bx1), (by0, by1) = hp.border_x, hp.border_y
    cx, cy, rx, ry = (bx0 + bx1) / 2, (by0 + by1) / 2, (bx1 - bx0) / 2, (by1 - by0) / 2
    x1 = x_pred + translate * hp.k * hp.dt * np.cos(rad_pred)
    y1 = y_pred + translate * hp.k * hp.dt * np.sin(rad_pred)
    outside = (np.abs(x_pred - cx) >= rx) | (np.abs(y_pred - cy) >= ry)
    outward = ((np.abs(x1 - cx) >= rx) & (np.abs(x1 - cx) >= np.abs(x_pred - cx))) | \
              ((np.abs(y1 - cy) >= ry) & (np.abs(y1 - cy) >= np.abs(y_pred - cy)))
    return np.where(outside & outward, 0.0, translate)


def saturate_keep_rotation(left, right, u_max: float):
    """Option ``saturation='keep_rotation'``: shift both wheels by the excess over ±u_max so left − right (the
    turn) is kept; clip only if the turn alone is too big. The reference (B13) recomputes the excess after the
    left wheel moved, which loses part of the turn exactly when a fast cube must swerve."""
    over = np.maximum(np.maximum(left, right) - u_max, 0.0)
    under = np.minimum(np.minimum(left, right) + u_max, 0.0)
    left, right = left - over - under, right - over - under
    return np.clip(left, -u_max, u_max), np.clip(right, -u_max, u_max)


def drive_wheels(observed: Poses, predicted: Poses, target: np.ndarray, max_speed, shaping: WheelShaping,
                 backward: np.ndarray | None = None):
    """(left, right) motor units of N cubes driving to ``target`` (N, 2) at most at ``max_speed`` (N,): the core's
    reference-exact move_to_target and dead-zone shift (handle_batch), then the named options of ``shaping``.
    ``observed`` are the poses read, ``predicted`` where the next command will find the cubes. A cube driving
    ``backward`` is steered as a cube facing the other way would be, whose left wheel is its right one: the same
    commands, negated and swapped."""
    if backward is not None and np.any(backward):
        flip = np.where(backward, math.pi, 0.0)
        left, right = drive_wheels(observed.turned(flip), predicted.turned(flip), target, max_speed, shaping)
        return np.where(backward, -right, left), np.where(backward, -left, right)
    hp = shaping.handle
    predicted = Poses(*(np.asarray(a, dtype=float) for a in (predicted.x, predicted.y, predicted.heading)))
    target = np.asarray(target, dtype=float)
    tr, rot, _dur, _reached = move_to_target_batch(observed.x, observed.y, observed.heading, predicted.x,
                                                   predicted.y, predicted.heading, target[:, 0], target[:, 1],
                                                   max_speed, hp, shaping.rotate_time_ms, shaping.tolerance)
    if shaping.border_stop:
        tr = border_outward_stop(tr, predicted, hp)
    if shaping.saturation == 'reference':
        return wheels_batch(tr, rot, hp)
    # the reference dead-zone shift alone (an unreachable saturation bound), then the symmetric saturation
    left, right = wheels_batch(tr, rot, replace(hp, max_spd=math.inf))
    return saturate_keep_rotation(left, right, float(hp.max_spd))
