"""What the controller sent each cube: its last few wheel commands, for the motion model (the newest one) and the
contact guard (all those that may still be in flight)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CommandHistory:
    """The last M commands sent to each of N cubes, oldest first. An empty slot has ``sent_at`` -inf."""
    sent_at: np.ndarray       # (N, M) clock time sent, s
    wheels: np.ndarray        # (N, M, 2) left, right, motor units
    duration: np.ndarray      # (N, M) s

    @classmethod
    def empty(cls, cubes: int, depth: int) -> CommandHistory:
        return cls(np.full((cubes, depth), -np.inf), np.zeros((cubes, depth, 2)), np.zeros((cubes, depth)))

    @property
    def last_wheels(self) -> np.ndarray:
        """(N, 2) the last wheel command sent to each cube, motor units (0, 0 before the first)."""
        return self.wheels[:, -1]

    @property
    def last_until(self) -> np.ndarray:
        """(N,) the clock time each cube's last command expires (-inf before the first)."""
        return self.sent_at[:, -1] + self.duration[:, -1]

    def has_sent(self, i: int) -> bool:
        return bool(np.isfinite(self.sent_at[i, -1]))

    def append(self, now: float, sent: list[tuple[int, tuple[int, int, int]]]) -> None:
        """Append one tick's commands, sent at ``now``: (cube row, (left, right, duration_ms)) each."""
        if not sent:
            return
        rows = np.array([i for i, _ in sent])
        motors = np.array([m for _, m in sent], dtype=float)
        for a in (self.sent_at, self.wheels, self.duration):
            a[rows, :-1] = a[rows, 1:]
        self.sent_at[rows, -1] = now
        self.wheels[rows, -1] = motors[:, :2]
        self.duration[rows, -1] = motors[:, 2] / 1000.0

    def replace_last(self, i: int, motor: tuple[int, int, int]) -> None:
        """Put ``motor`` (left, right, duration_ms) in place of cube row ``i``'s last command, at its send time."""
        self.wheels[i, -1] = motor[:2]
        self.duration[i, -1] = motor[2] / 1000.0
