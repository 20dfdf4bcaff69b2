"""move_to_pose with the firmware's own target control (motor 0x03, answered by 0x83), without ROS: the bytes of
a goal, and the goals under way (which control id belongs to which goal, and when to stop waiting for its answer).

Control ids roll over 1..255, so an answer is never taken for an older goal's.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from toio_navigator.cube import protocol as p

RELATIVE_MODES = (p.AngleMode.RELATIVE_POSITIVE, p.AngleMode.RELATIVE_NEGATIVE)
NO_ANGLE_MODES = (p.AngleMode.NO_ROTATION, p.AngleMode.KEEP_HEADING)
#: what a 0x83 result code means, as a result text
RESULT_TEXT = {r.value: r.name.lower().replace('_', ' ') for r in p.TargetResult}
#: how long the firmware tries when the goal gives no timeout
FIRMWARE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class TargetGoal:
    """A move_to_pose goal in the cube's terms: mat units, theta in radians clockwise, the angle mode and
    movement type of the protocol (0..6, 0..2), max_speed 0 for the driver's default, timeout_s 0 for 10 s."""
    x: float
    y: float
    theta: float = 0.0
    angle_mode: int = p.AngleMode.ABSOLUTE_SHORTEST
    movement_type: int = 0
    max_speed: int = 0
    speed_profile: int = 0
    timeout_s: float = 0.0


def target_bytes(goal: TargetGoal, control_id: int, default_speed: int) -> bytes:
    """The 0x03 write for ``goal``; ValueError naming the bad field."""
    for name in ('x', 'y', 'theta', 'timeout_s'):
        if not math.isfinite(getattr(goal, name)):
            raise ValueError(f'{name} must be finite, got {getattr(goal, name)}')
    if not (0 <= goal.x <= 0xFFFE and 0 <= goal.y <= 0xFFFE):
        raise ValueError(f'target ({goal.x}, {goal.y}) outside 0..65534 mat units')
    if goal.angle_mode > 6 or goal.movement_type > 2 or goal.speed_profile > 3:
        raise ValueError('angle_mode must be 0..6, movement_type 0..2, speed_profile 0..3')
    if not 0 <= goal.timeout_s <= 255:
        raise ValueError(f'timeout_s must be 0..255, got {goal.timeout_s}')
    speed = goal.max_speed or default_speed
    if speed < 10:
        raise ValueError(f'max_speed must be 10..255 (0 = default), got {speed}')
    degrees = math.degrees(goal.theta)
    if goal.angle_mode in RELATIVE_MODES:
        angle = min(int(round(abs(degrees))), 0x1FFF)
    elif goal.angle_mode in NO_ANGLE_MODES:
        angle = 0
    else:
        angle = int(round(degrees)) % 360
    target = p.Target(int(round(goal.x)), int(round(goal.y)), angle, goal.angle_mode)
    return p.MotorTarget(control_id, target, timeout_s=int(round(goal.timeout_s)), movement_type=goal.movement_type,
                         max_speed=speed, speed_profile=goal.speed_profile).encode()


class TargetMoves:
    """The target moves under way: control id -> (goal id, when to give up waiting for the cube's answer).
    Not thread-safe: the driver calls it under its lock."""

    def __init__(self) -> None:
        self._moves: dict[int, tuple[int, float]] = {}
        self._control_id = 0

    def __len__(self) -> int:
        return len(self._moves)

    def next_control_id(self) -> int:
        self._control_id = self._control_id % 255 + 1
        return self._control_id

    def started(self, control_id: int, goal_id: int, timeout_s: float, margin_s: float) -> None:
        """A move was sent; without an answer it counts as lost ``margin_s`` after its timeout (0: 10 s)."""
        self._moves[control_id] = (goal_id, time.monotonic() + (timeout_s or FIRMWARE_TIMEOUT_S) + margin_s)

    def answered(self, control_id: int) -> int | None:
        """The goal id the cube's answer for ``control_id`` belongs to (None: none, or already given up)."""
        entry = self._moves.pop(control_id, None)
        return None if entry is None else entry[0]

    def overdue(self) -> list[tuple[int, int]]:
        """(control id, goal id) of every move whose answer is overdue; they are forgotten."""
        now = time.monotonic()
        late = [(cid, gid) for cid, (gid, deadline) in self._moves.items() if now > deadline]
        for cid, _gid in late:
            del self._moves[cid]
        return late

    def cancel_all(self) -> list[tuple[int, int]]:
        """(control id, goal id) of every move under way; they are forgotten."""
        running, self._moves = self._moves, {}
        return [(cid, gid) for cid, (gid, _deadline) in running.items()]
