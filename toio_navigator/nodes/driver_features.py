"""Parity features of the cube_driver (lights, sound, IMU, battery, diagnostics, move_to_pose): being built."""
from __future__ import annotations


class DriverFeatures:
    def __init__(self, node) -> None:
        self.node = node
        self.rssi = None

    def handlers(self) -> dict:
        return {}

    def apply_version(self, version: str) -> None:
        pass

    def settings(self, have) -> list[bytes]:
        return []

    def on_wheel_command(self) -> None:
        pass

    def on_mat_changed(self, on_mat: bool) -> None:
        pass

    def on_pose(self, pose, stamp) -> None:
        pass

    def on_motion(self, note) -> None:
        pass

    def on_button(self, pressed: bool) -> None:
        pass

    def on_battery(self, percent: int) -> None:
        pass

    def close(self) -> None:
        pass
