"""The virtual_ir node: a virtual arena under REAL cubes -- the six IR readings of each cube from its reported pose.

mat_sim publishes ``<cube>/ir`` only for the cubes it simulates (from the true pose). A real cube on a printed mat has
no IR sensors; this node gives it virtual ones: it subscribes ``<cube>/state`` (toio_navigator/CubeState from the
cube's driver, mat units) and publishes ``<cube>/ir`` (toio_navigator/IrRanges) at ``ir_rate_hz`` from the arena
layout drawn on the mat (``arena_origin_x/y``, ``arena_cell_size``: the same parameters as mat_sim and
arena_explorer). The readings are all -1 ("no reading") while the cube is off the mat, outside the arena, or its
state is older than ``stale_s``; nothing is published before the first state.

The arena explorer reads only ``<cube>/ir``: it cannot tell this node from mat_sim.
"""
from __future__ import annotations

import sys
import time

from rclpy.exceptions import ParameterException
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.arena.layout import LayoutError, load_layout
from toio_navigator.msg import CubeState, IrRanges
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.spec import SettingError
from toio_navigator.settings.virtual_ir import PARAMS, virtual_ir_values
from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors

NO_READING = [-1] * 6


class ArenaSensors:
    """A layout's virtual IR sensors placed on the mat: mat pose in, IrRanges ranges out (plain Python)."""

    def __init__(self, v: dict, seed: int = 0) -> None:
        """``v``: checked values of :data:`toio_navigator.settings.arena.SENSOR_PARAMS`; SettingError naming
        arena_layout when the layout cannot be read."""
        self.rate_hz = v['ir_rate_hz']
        try:
            layout = load_layout(v['arena_layout'])
            self.mapping = ArenaMatMapping(v['arena_origin_x'], v['arena_origin_y'], v['arena_cell_size'],
                                           layout.cols, layout.rows)
            self.sensors = VirtualIrSensors(layout.obstacles, noise=v['ir_noise'], seed=seed)
        except (LayoutError, OSError, ValueError) as exc:
            raise SettingError('arena_layout', str(exc)) from None

    def ranges(self, x: float, y: float, theta: float, readable: bool = True) -> list[int]:
        """Six IrRanges values of a cube at mat pose (x, y, clockwise theta); -1s when it cannot read."""
        if not readable or not self.mapping.inside(x, y):
            return list(NO_READING)
        return list(self.sensors.read_ranges(self.mapping.mat_to_pose(x, y, theta)))


class VirtualIrNode(LeanNode):
    """Parameters: :data:`toio_navigator.settings.virtual_ir.PARAMS`. Raises SettingError naming the parameter
    when one is invalid."""

    def __init__(self, node_name: str = 'virtual_ir', **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        v = virtual_ir_values(self.parameters.values)
        cubes = list(v['cubes'])
        self.stale_s = v['stale_s']
        self.arena = ArenaSensors(v, seed=v['seed'])
        self.cubes = cubes
        self.states: dict[str, tuple[float, CubeState]] = {}
        self._ir_pubs = {}
        for cube in cubes:
            self.create_subscription(CubeState, f'{cube}/state', lambda msg, c=cube: self._on_state(c, msg),
                                     qos_profile_sensor_data)
            self._ir_pubs[cube] = self.create_publisher(IrRanges, f'{cube}/ir', 10)
        self.create_timer(1.0 / self.arena.rate_hz, self._publish)
        self.parameters.on_change(self._apply_parameters)
        m = self.arena.mapping
        self.get_logger().info(f'virtual IR for {", ".join(cubes)}: {v["arena_layout"]} on the mat at '
                               f'({m.origin_x:g}, {m.origin_y:g}), {m.cell_size:g}-unit cells')

    def _apply_parameters(self, values: dict, _changed: set[str]) -> None:
        self.stale_s = virtual_ir_values(values)['stale_s']      # the only run-time parameter

    def _on_state(self, cube: str, msg: CubeState) -> None:
        self.states[cube] = (time.monotonic(), msg)

    def _publish(self) -> None:
        now, stamp = time.monotonic(), self.get_clock().now().to_msg()
        for cube, publisher in self._ir_pubs.items():
            entry = self.states.get(cube)
            if entry is None:
                continue      # never heard of this cube: say nothing rather than "no reading" forever
            when, s = entry
            msg = IrRanges()
            msg.header.stamp, msg.header.frame_id = stamp, f'{cube}/base_link'
            msg.ranges = self.arena.ranges(s.x, s.y, s.theta, readable=s.on_mat and now - when <= self.stale_s)
            publisher.publish(msg)


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator virtual_ir --ros-args -p cubes:="[cube1]" -p arena_layout:=arena.json``.
    Exit 2 on bad parameters."""
    return run_node('virtual_ir', VirtualIrNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
