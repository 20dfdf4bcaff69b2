"""The cube's position readings as the driver reports them: mat units and radians in [-pi, pi), with a one-off
jump held back until the next reading confirms it. Plain Python, no ROS.

A cube that reads a mis-printed or dirty spot of the mat can report one position far from the others; a real
move (lifted and put down elsewhere, a collision) is confirmed by the next reading near the new place.
"""
from __future__ import annotations

import math

Pose = tuple[float, float, float]


def mat_pose(x: int, y: int, angle_deg: int) -> Pose:
    """A position-ID reading (mat units, degrees clockwise 0..359) as x, y and theta in [-pi, pi)."""
    theta = math.radians(angle_deg % 360)
    if theta >= math.pi:
        theta -= 2.0 * math.pi
    return float(x), float(y), theta


class PoseGate:
    """Admits a reading unless it jumped further than ``jump`` from the last admitted pose while the cube stayed
    on the mat; such a reading is held, and admitted if the next one lands near it."""

    def __init__(self) -> None:
        self.pose: Pose | None = None       # the last admitted reading
        self._held: Pose | None = None
        self.held = 0                       # readings held back (diagnostics: pose_outliers_held)

    def admit(self, pose: Pose, jump: float, on_mat: bool) -> bool:
        """True if ``pose`` is to be reported; ``jump`` 0 admits everything, ``on_mat`` False (the cube was lifted
        or lost the mat since the last reading) admits the new place at once."""
        if jump > 0 and self.pose is not None and on_mat:
            if math.hypot(pose[0] - self.pose[0], pose[1] - self.pose[1]) > jump:
                held, self._held = self._held, pose
                if held is None or math.hypot(pose[0] - held[0], pose[1] - held[1]) > jump:
                    self.held += 1      # a one-off glitch so far: wait for the next reading
                    return False
        self._held = None
        self.pose = pose
        return True
