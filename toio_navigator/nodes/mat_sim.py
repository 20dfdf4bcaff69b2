"""The mat_sim node: the world simulator with N virtual cubes, reachable only through their (simulated) BLE bytes.

Each cube ``<cube>`` of the ``cubes`` parameter gets a virtual cube firmware (:mod:`toio_navigator.sim.virtual_cube`)
whose GATT face is the pair of topics ``<cube>/ble/tx`` (writes and read requests from the driver, in) and
``<cube>/ble/rx`` (notifications and read answers, out), both ``toio_navigator/BleFrame``. A driver with
transport ``sim`` talks to it exactly as it would to a real cube over bleak.

The virtual cube counts as connected while a driver publishes on its tx topic (or as soon as a frame arrives):
when that driver disappears the cube disconnects, forgets its settings and stops -- as a real cube does when the
central goes away. Until then a dead driver's cube stops by the duration of its last motor command.

Out: ``mat_sim/ground_truth`` (geometry_msgs/PoseArray, metres, frame ``mat``, cubes in ``cubes`` order) and, with
``arena_layout`` set, ``<cube>/ir`` (toio_navigator/IrRanges) from the virtual IR sensors.
The world is stepped on a timer by wall-clock time x ``real_time_factor`` in fixed physics steps.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
import rclpy
from geometry_msgs.msg import Pose, PoseArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from toio_navigator.cube import protocol as p
from toio_navigator.msg import BleFrame, IrRanges
from toio_navigator.nodes import conversions
from toio_navigator.nodes.ros_sim_link import BLE_QOS
from toio_navigator.sim.mats import MATS
from toio_navigator.sim.virtual_cube import FirmwareParams, VirtualCube, VirtualCubes, cube_name
from toio_navigator.sim.world import World, WorldParams, grid_poses

#: name -> (default, description); None = a list parameter with no default
PARAMETERS: dict[str, tuple[object, str]] = {
    'cubes': (None, 'cube names (namespaces), e.g. [cube1, cube2]; required'),
    'initial_poses': (None, 'x, y (mat units), heading (rad, clockwise) per cube, flattened; [] = a grid on the mat'),
    'mat': ('collection', f'mat name: {", ".join(sorted(MATS))}'),
    'seed': (0, 'random seed of the world (noise, glitches)'),
    'physics_rate_hz': (50.0, 'fixed physics step rate'),
    'real_time_factor': (1.0, 'simulated seconds per wall-clock second'),
    'firmware_version': ('2.4.0', 'BLE protocol version the virtual cubes report and implement (2.0.0..2.5.0)'),
    'command_delay_s': (WorldParams.command_delay, 'write -> effect latency of motor commands'),
    'min_command_interval_s': (WorldParams.min_command_interval, 'the cube ignores a motor write this soon after '
                                                                 'the last accepted one'),
    'position_noise': (0.0, 'std of reported positions, mat units'),
    'ground_truth_rate_hz': (20.0, 'mat_sim/ground_truth publish rate (0 = off)'),
    'arena_layout': ('', 'arena layout JSON; when set, publish <cube>/ir from virtual IR sensors'),
    'arena_origin_x': (100.0, 'mat x (units) of the arena top-left corner'),
    'arena_origin_y': (50.0, 'mat y (units) of the arena top-left corner'),
    'arena_cell_size': (20.0, 'arena cell side, mat units'),
    'ir_rate_hz': (10.0, '<cube>/ir publish rate'),
    'link_check_period_s': (0.2, 'how often to notice drivers appearing / disappearing'),
}


class MatSimError(ValueError):
    """A mat_sim parameter has a value the simulator cannot work with."""


def _need(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise MatSimError(f'parameter {name}: {message}')


class _CubePort:
    """One virtual cube's BLE face on ROS: tx in, rx out."""

    def __init__(self, node: 'MatSimNode', name: str, cube: VirtualCube) -> None:
        self.name, self.cube, self.node = name, cube, node
        self.rx = node.create_publisher(BleFrame, f'{name}/ble/rx', BLE_QOS)
        self.tx = node.create_subscription(BleFrame, f'{name}/ble/tx', self._on_tx, BLE_QOS)
        self.frames_in = 0
        self.rejected = 0

    def ensure_connected(self) -> bool:
        if self.cube.connected:
            return True
        try:
            self.cube.connect(on_link_lost=None)
        except ConnectionRefusedError as exc:
            self.node.get_logger().warning(f'{self.name}: {exc}', throttle_duration_sec=5.0)
            return False
        for char, props in p.PROPERTIES.items():
            if props & p.Property.NOTIFY:
                self.cube.subscribe(char, self._deliverer(char.value))
        return True

    def _deliverer(self, uuid: str):
        publish, notify = self.rx.publish, BleFrame.NOTIFY

        def deliver(data: bytes) -> None:
            publish(BleFrame(uuid=uuid, op=notify, data=data))
        return deliver

    def check_link(self) -> None:
        """Connect when a driver appeared, disconnect (stop, forget settings) when it went away."""
        present = self.tx.get_publisher_count() > 0
        if present and not self.cube.connected:
            self.ensure_connected()
        elif not present and self.cube.connected:
            self.node.get_logger().info(f'{self.name}: driver went away; the cube disconnects and stops')
            self.cube.disconnect()

    def _on_tx(self, frame: BleFrame) -> None:
        self.frames_in += 1
        try:
            char = p.characteristic(frame.uuid)
        except p.ProtocolError as exc:
            self.rejected += 1
            self.node.get_logger().warning(f'{self.name}: frame for {exc}', throttle_duration_sec=5.0)
            return
        if not self.ensure_connected():
            return
        data = bytes(frame.data)
        try:
            if frame.op == BleFrame.WRITE:
                self.cube.write(char, data)
            elif frame.op == BleFrame.READ:
                self.rx.publish(BleFrame(uuid=char.value, op=BleFrame.READ_RESPONSE, seq=frame.seq,
                                         data=self.cube.read(char)))
            else:
                self.rejected += 1
        except ConnectionError as exc:      # e.g. reading a characteristic that cannot be read
            self.rejected += 1
            self.node.get_logger().warning(f'{self.name}: {exc}', throttle_duration_sec=5.0)


class MatSimNode(Node):
    """Hosts :class:`~toio_navigator.sim.world.World` + :class:`~toio_navigator.sim.virtual_cube.VirtualCubes`.

    Raises :class:`MatSimError` naming the parameter when one is invalid.
    """

    def __init__(self, node_name: str = 'mat_sim', **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        for name, (default, doc) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=doc, dynamic_typing=True))
        v = {name: self.get_parameter(name).value for name in PARAMETERS}
        cubes = list(v['cubes'] or [])
        _need(bool(cubes) and all(isinstance(c, str) and c for c in cubes), 'cubes',
              f'needs a non-empty list of cube names, got {v["cubes"]!r}')
        _need(len(set(cubes)) == len(cubes), 'cubes', f'names must be unique, got {cubes}')
        _need(v['mat'] in MATS, 'mat', f'unknown mat {v["mat"]!r}; known: {", ".join(sorted(MATS))}')
        for name in ('physics_rate_hz', 'real_time_factor', 'link_check_period_s'):
            _need(isinstance(v[name], (int, float)) and math.isfinite(v[name]) and v[name] > 0, name,
                  f'must be a number > 0, got {v[name]!r}')
        for name in ('ground_truth_rate_hz', 'ir_rate_hz', 'command_delay_s', 'min_command_interval_s',
                     'position_noise', 'arena_cell_size'):
            _need(isinstance(v[name], (int, float)) and math.isfinite(v[name]) and v[name] >= 0, name,
                  f'must be a number >= 0, got {v[name]!r}')
        _need(isinstance(v['seed'], int) and not isinstance(v['seed'], bool), 'seed',
              f'must be an integer, got {v["seed"]!r}')
        poses = self._initial_poses(v['initial_poses'], len(cubes), v['mat'])
        try:
            firmware = FirmwareParams(version=str(v['firmware_version']))
        except p.ProtocolError as exc:
            raise MatSimError(f'parameter firmware_version: {exc}') from None
        _need(p.parse_version(firmware.version) >= (2, 0, 0) and p.parse_version(firmware.version) <= (2, 5, 0),
              'firmware_version', f'must be 2.0.0..2.5.0, got {firmware.version}')
        try:
            dt = 1.0 / float(v['physics_rate_hz'])
            # the firmware sees writes at physics-step resolution (world time moves in steps of dt): compared
            # as is, a 45 ms rule would reject writes 50 ms apart whenever they land 2 steps apart (40 ms), i.e.
            # act like a 60 ms rule. Half a step of tolerance restores the real cube's threshold on average.
            params = WorldParams(dt=dt, command_delay=float(v['command_delay_s']),
                                 min_command_interval=max(0.0, float(v['min_command_interval_s']) - 0.5 * dt),
                                 position_noise=float(v['position_noise']))
            self.world = World(poses, mat=str(v['mat']), params=params, seed=int(v['seed']))
        except ValueError as exc:
            raise MatSimError(f'world: {exc}') from None
        self.cube_names = cubes
        self.firmware = VirtualCubes(self.world, firmware, names=[cube_name(i) for i in range(len(cubes))])
        self.ports = [_CubePort(self, name, self.firmware[i]) for i, name in enumerate(cubes)]
        self.real_time_factor = float(v['real_time_factor'])
        self._last_step = time.monotonic()
        self.create_timer(params.dt, self._step)
        self.create_timer(float(v['link_check_period_s']), self._check_links)
        self._pub_truth = self.create_publisher(PoseArray, 'mat_sim/ground_truth', 10)
        if v['ground_truth_rate_hz'] > 0:
            self.create_timer(1.0 / v['ground_truth_rate_hz'], self._publish_ground_truth)
        self._ir = None
        if v['arena_layout']:
            self._setup_arena(v)
        self.get_logger().info(f'{len(cubes)} virtual cubes ({firmware.version}) on mat {v["mat"]}: '
                               f'{", ".join(cubes)}')

    def _initial_poses(self, flat, n: int, mat: str) -> np.ndarray:
        if not flat:
            return grid_poses(n, mat)
        values = list(flat)
        _need(all(isinstance(x, (int, float)) and math.isfinite(x) for x in values), 'initial_poses',
              'must be finite numbers')
        _need(len(values) == 3 * n, 'initial_poses', f'needs 3 numbers (x, y, heading) per cube: {3 * n} for '
                                                       f'{n} cubes, got {len(values)}')
        return np.asarray(values, dtype=float).reshape(n, 3)

    def _setup_arena(self, v: dict) -> None:
        from toio_navigator.arena.layout import LayoutError, load_layout
        from toio_navigator.sim.ir_sensors import ArenaMatMapping, VirtualIrSensors
        try:
            layout = load_layout(str(v['arena_layout']))
            mapping = ArenaMatMapping(float(v['arena_origin_x']), float(v['arena_origin_y']),
                                      float(v['arena_cell_size']), layout.cols, layout.rows)
        except (LayoutError, ValueError) as exc:
            raise MatSimError(f'parameter arena_layout: {exc}') from None
        _need(v['ir_rate_hz'] > 0, 'ir_rate_hz', 'must be > 0 when arena_layout is set')
        self._ir = (VirtualIrSensors(layout.obstacles, seed=int(v['seed'])), mapping,
                    [self.create_publisher(IrRanges, f'{name}/ir', 10) for name in self.cube_names])
        self.create_timer(1.0 / v['ir_rate_hz'], self._publish_ir)

    # ------------------------------------------------------------------------------------------ timers
    def _step(self) -> None:
        now = time.monotonic()
        # a stalled process must not make the cubes jump: advance at most a quarter second per tick
        self.world.step(min((now - self._last_step) * self.real_time_factor, 0.25 * self.real_time_factor))
        self._last_step = now

    def _check_links(self) -> None:
        for port in self.ports:
            port.check_link()

    def _publish_ground_truth(self) -> None:
        msg = PoseArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = 'mat'
        for x, y, theta in self.world.poses:
            pose = Pose()
            conversions.fill_pose(pose, float(x), float(y), float(theta))
            msg.poses.append(pose)
        self._pub_truth.publish(msg)

    def _publish_ir(self) -> None:
        sensors, mapping, publishers = self._ir
        stamp = self.get_clock().now().to_msg()
        for i, publisher in enumerate(publishers):
            x, y, theta = (float(a) for a in self.world.poses[i])
            msg = IrRanges()
            msg.header.stamp = stamp
            msg.header.frame_id = f'{self.cube_names[i]}/base_link'
            if mapping.inside(x, y) and not self.world.lifted[i]:
                msg.ranges = list(sensors.read_ranges(mapping.mat_to_pose(x, y, theta)))
            else:
                msg.ranges = [-1] * 6
            publisher.publish(msg)


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator mat_sim --ros-args -p cubes:="[cube1, cube2]"``. Exit 2 on bad parameters."""
    try:
        rclpy.init(args=args)
    except Exception as exc:
        print(f'mat_sim: cannot start ROS: {exc}', file=sys.stderr)
        return 2
    try:
        node = MatSimNode()
    except (MatSimError, ParameterException) as exc:
        print(f'mat_sim: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
