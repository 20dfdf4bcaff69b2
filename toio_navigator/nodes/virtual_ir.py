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

import math
import sys
import time

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.msg import CubeState, IrRanges

NO_READING = [-1] * 6

#: the arena on the mat; shared with mat_sim (name -> (default, description))
ARENA_PARAMETERS: dict[str, tuple[object, str]] = {
    'arena_layout': ('', 'arena layout JSON (format: docs/arena.md §6) whose walls and obstacles the sensors see'),
    'arena_origin_x': (100.0, 'mat x (units) of the arena top-left corner'),
    'arena_origin_y': (50.0, 'mat y (units) of the arena top-left corner'),
    'arena_cell_size': (20.0, 'arena cell side, mat units'),
    'ir_rate_hz': (10.0, '<cube>/ir publish rate'),
    'ir_noise': (0.0, 'probability that a reading is one cell off (seeded; 0 = exact)'),
}

#: name -> (default, description); None = a list parameter with no default
PARAMETERS: dict[str, tuple[object, str]] = {
    'cubes': (None, 'cube names (namespaces) to give virtual IR sensors, e.g. [cube1]; required'),
    **ARENA_PARAMETERS,
    'seed': (0, 'random seed of the sensor noise'),
    'stale_s': (0.5, 'a cube whose last state is older than this gets -1 readings'),
}


class VirtualIrError(ValueError):
    """A parameter of the virtual IR sensors has a value they cannot work with."""


def _number(v: dict, name: str, low: float, strict: bool = False, high: float = math.inf) -> float:
    value = v[name]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > low if strict else value >= low) and value <= high
    if not ok:
        bound = f'{">" if strict else ">="} {low:g}' + (f' and <= {high:g}' if high < math.inf else '')
        raise VirtualIrError(f'parameter {name}: must be a number {bound}, got {value!r}')
    return float(value)


class ArenaSensors:
    """A layout's virtual IR sensors placed on the mat: mat pose in, IrRanges ranges out (plain Python)."""

    def __init__(self, v: dict, seed: int = 0) -> None:
        """``v``: values of :data:`ARENA_PARAMETERS`; VirtualIrError naming the bad one."""
        from toio_navigator.arena.layout import LayoutError, load_layout
        from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors
        if not isinstance(v['arena_layout'], str) or not v['arena_layout']:
            raise VirtualIrError(f'parameter arena_layout: needs the path of a layout JSON, got {v["arena_layout"]!r}')
        origin = (_number(v, 'arena_origin_x', -1e5), _number(v, 'arena_origin_y', -1e5))
        cell = _number(v, 'arena_cell_size', 0.0, strict=True)
        self.rate_hz = _number(v, 'ir_rate_hz', 0.0, strict=True)
        noise = _number(v, 'ir_noise', 0.0, high=1.0)
        try:
            layout = load_layout(v['arena_layout'])
            self.mapping = ArenaMatMapping(*origin, cell, layout.cols, layout.rows)
            self.sensors = VirtualIrSensors(layout.obstacles, noise=noise, seed=seed)
        except (LayoutError, OSError, ValueError) as exc:
            raise VirtualIrError(f'parameter arena_layout: {exc}') from None

    def ranges(self, x: float, y: float, theta: float, readable: bool = True) -> list[int]:
        """Six IrRanges values of a cube at mat pose (x, y, clockwise theta); -1s when it cannot read."""
        if not readable or not self.mapping.inside(x, y):
            return list(NO_READING)
        return list(self.sensors.read_ranges(self.mapping.mat_to_pose(x, y, theta)))


class VirtualIrNode(Node):
    """Raises :class:`VirtualIrError` naming the parameter when one is invalid."""

    def __init__(self, node_name: str = 'virtual_ir', **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        for name, (default, doc) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=doc, dynamic_typing=True))
        v = {name: self.get_parameter(name).value for name in PARAMETERS}
        cubes = list(v['cubes'] or [])
        if not cubes or not all(isinstance(c, str) and c and c.replace('_', 'a').isalnum() and not c[0].isdigit()
                                for c in cubes) or len(set(cubes)) != len(cubes):
            raise VirtualIrError(f'parameter cubes: needs a non-empty list of unique cube names, got {v["cubes"]!r}')
        if isinstance(v['seed'], bool) or not isinstance(v['seed'], int):
            raise VirtualIrError(f'parameter seed: must be an integer, got {v["seed"]!r}')
        self.stale_s = _number(v, 'stale_s', 0.0, strict=True)
        self.arena = ArenaSensors(v, seed=v['seed'])
        self.cubes = cubes
        self.states: dict[str, tuple[float, CubeState]] = {}
        self._ir_pubs = {}
        for cube in cubes:
            self.create_subscription(CubeState, f'{cube}/state', lambda msg, c=cube: self._on_state(c, msg),
                                     qos_profile_sensor_data)
            self._ir_pubs[cube] = self.create_publisher(IrRanges, f'{cube}/ir', 10)
        self.create_timer(1.0 / self.arena.rate_hz, self._publish)
        m = self.arena.mapping
        self.get_logger().info(f'virtual IR for {", ".join(cubes)}: {v["arena_layout"]} on the mat at '
                               f'({m.origin_x:g}, {m.origin_y:g}), {m.cell_size:g}-unit cells')

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
    from toio_navigator.nodes.spin import run_node

    return run_node('virtual_ir', VirtualIrNode, errors=(VirtualIrError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
