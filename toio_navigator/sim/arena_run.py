"""Offline exploration: the explorer's step machine driven by a simulated robot on a layout (no ROS).

The simulated robot holds the true pose, refuses to drive into obstacles or walls, and answers every command
with the virtual IR readings (and photos from the virtual camera). The explorer only sees those answers.
"""
from __future__ import annotations

from dataclasses import dataclass

from toio_navigator.arena.explorer import FORWARD, LEFT, PHOTO, RIGHT, ArenaExplorer, ExplorerConfig
from toio_navigator.arena.fastest_path import valid_centres
from toio_navigator.arena.geometry import Pose
from toio_navigator.arena.layout import ArenaLayout
from toio_navigator.sim.ir_sensors import VirtualCamera, VirtualIrSensors


@dataclass
class SimulatedArenaRobot:
    layout: ArenaLayout
    sensors: VirtualIrSensors
    camera: VirtualCamera
    pose: Pose

    @classmethod
    def on_layout(cls, layout: ArenaLayout, noise: float = 0.0, seed: int | None = 0) -> 'SimulatedArenaRobot':
        return cls(layout, VirtualIrSensors(layout.obstacles, noise=noise, seed=seed),
                   VirtualCamera(layout.images), layout.start)

    def __post_init__(self):
        self._valid = valid_centres(self.layout.obstacles)

    def execute(self, kind: str, cells: int = 1) -> int:
        """Carry out one motion command; returns the cells actually moved (0 for turns and sensing)."""
        if kind == LEFT:
            self.pose = self.pose.turned_left()
        elif kind == RIGHT:
            self.pose = self.pose.turned_right()
        elif kind == FORWARD:
            for moved in range(cells):
                nxt = self.pose.forward(1)
                rows, cols = self._valid.shape
                if not (0 <= nxt.x < cols and 0 <= nxt.y < rows and self._valid[nxt.y, nxt.x]):
                    return moved
                self.pose = nxt
            return cells
        return 0


def run_exploration(layout: ArenaLayout, config: ExplorerConfig = ExplorerConfig(), noise: float = 0.0,
                    seed: int | None = 0) -> tuple[ArenaExplorer, SimulatedArenaRobot]:
    """Explore ``layout`` to the end; returns the explorer (its belief, actions, images) and the robot."""
    robot = SimulatedArenaRobot.on_layout(layout, noise, seed)
    explorer = ArenaExplorer(config, start=layout.start, goal=layout.goal)
    while (cmd := explorer.next_move()) is not None:
        if cmd.kind == PHOTO:
            explorer.on_photo([(s.id, s.bound) for s in robot.camera.capture_all(robot.pose)])
            continue
        moved = robot.execute(cmd.kind, cmd.cells)
        explorer.on_moved(robot.sensors.read(robot.pose), moved if cmd.kind == FORWARD else None)
    return explorer, robot
