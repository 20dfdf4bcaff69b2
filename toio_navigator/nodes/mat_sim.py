"""The mat_sim node: the world simulator with N virtual cubes, reachable only through their (simulated) BLE bytes.

Each cube ``<cube>`` of the ``cubes`` parameter gets a virtual cube firmware (:mod:`toio_navigator.sim.virtual_cube`)
whose GATT face is the pair of topics ``<cube>/ble/tx`` (writes and read requests from the driver, in) and
``<cube>/ble/rx`` (notifications and read answers, out), both ``toio_navigator/BleFrame``. A driver with
transport ``sim`` talks to it exactly as it would to a real cube over bleak.

The virtual cube counts as connected while a live driver publishes on its tx topic (or as soon as a frame
arrives): when that driver disappears the cube disconnects, forgets its settings and stops -- as a real cube does
when the central goes away. A driver that dies without a word (SIGKILL, a hang) is noticed when its DDS liveliness
lease runs out and does not come back (``LINK_LEASE_S`` + ``LINK_GRACE_S``, 1.5 s at most; a driver that a busy
host did not run for a moment gets its lease back and keeps its cube); until then its cube stops by the duration
of its last motor command.

Out: ``mat_sim/ground_truth`` (geometry_msgs/PoseArray, metres, frame ``mat``, cubes in ``cubes`` order),
``mat_sim/contacts`` (toio_navigator/ContactEvent, reliable, depth 100: one message when a pair of cubes starts
touching, with the cumulative ``count``; see :class:`ContactTracker`) and, with ``arena_layout`` set,
``<cube>/ir`` (toio_navigator/IrRanges) from the virtual IR sensors (for real cubes under a virtual arena see the
virtual_ir node, which shares these parameters).
The world is stepped on a timer by wall-clock time x ``real_time_factor`` in fixed physics steps; a BLE write
arriving between two steps is timed by the firmware at its arrival (simulated time of the last step plus the
wall-clock time since, x ``real_time_factor``), so the 45 ms motor-write rule and the command delay hold at
that resolution, not at the 20 ms physics step.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import replace

import numpy as np
from geometry_msgs.msg import Pose, PoseArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException

from toio_navigator.cube import protocol as p
from toio_navigator.msg import BleFrame, ContactEvent, IrRanges
from toio_navigator.nodes import conversions
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import BLE_QOS, Lease
from toio_navigator.nodes.spin import run_node
from toio_navigator.nodes.virtual_ir import ArenaSensors
from toio_navigator.settings.mat_sim import PARAMS, sim_config
from toio_navigator.settings.spec import SettingError
from toio_navigator.sim.virtual_cube import FirmwareParams, VirtualCube, VirtualCubes, cube_name
from toio_navigator.sim.world import World


class ContactTracker:
    """Contact starts between the World's cubes, found after every physics step (plain Python, a World listener).

    Two cubes touch when their collision discs meet: centre distance <= 2 x ``body_radius`` + ``slack`` (the
    World's contact solver leaves touching pairs at exactly that distance or a hair closer). A pair is reported
    when it starts touching and again only after it has separated. Lifted cubes touch nothing (as in the World).
    ``events`` collects (sim_time, i, j, x, y, approach_speed) until the host takes them; ``count`` never resets.
    Contacts that begin and end inside one 20 ms step are not seen (the World resolves them in sub-steps).
    """

    def __init__(self, world: World, slack: float = 1e-6) -> None:
        self.slack = slack
        self.touching = np.zeros((world.n, world.n), dtype=bool)
        self._upper = np.triu(np.ones((world.n, world.n), dtype=bool), k=1)   # each pair once, i < j
        self.events: list[tuple[float, int, int, float, float, float]] = []
        self.count = 0
        world.attach(self)

    def before_step(self, world: World) -> None:
        pass

    def after_step(self, world: World) -> None:
        dx = world.x[None, :] - world.x[:, None]          # [i, j] = j - i
        dy = world.y[None, :] - world.y[:, None]
        reach = 2 * world.params.body_radius + self.slack
        touching = dx * dx + dy * dy <= reach * reach
        touching &= self._upper
        if world.lifted.any():
            touching &= ~world.lifted[:, None] & ~world.lifted[None, :]
        new = touching & ~self.touching
        self.touching = touching
        if not new.any():
            return
        v = world.wheel_speed.mean(axis=1)
        vx, vy = np.cos(world.theta) * v, np.sin(world.theta) * v
        for i, j in zip(*np.nonzero(new)):
            dist = max(math.hypot(dx[i, j], dy[i, j]), 1e-9)
            approach = ((vx[i] - vx[j]) * dx[i, j] + (vy[i] - vy[j]) * dy[i, j]) / dist
            self.count += 1
            self.events.append((world.time, int(i), int(j), float(world.x[i] + world.x[j]) / 2,
                                float(world.y[i] + world.y[j]) / 2, max(float(approach), 0.0)))

    def take(self) -> list[tuple[float, int, int, float, float, float]]:
        events, self.events = self.events, []
        return events


#: the longest delivery delay of a simulated BLE frame that is taken off a motor command's duration
MAX_AIR_DELAY_S = 0.5


class _CubePort:
    """One virtual cube's BLE face on ROS: tx in, rx out."""

    def __init__(self, node: 'MatSimNode', name: str, cube: VirtualCube) -> None:
        self.name, self.cube, self.node = name, cube, node
        self.rx = node.create_publisher(BleFrame, f'{name}/ble/rx', BLE_QOS)
        self.lease = Lease()            # the driver's DDS liveliness: lost when it died or hangs
        self.tx = node.create_subscription(BleFrame, f'{name}/ble/tx', self._on_tx, BLE_QOS,
                                           event_callbacks=SubscriptionEventCallbacks(liveliness=self._on_liveliness,
                                                                                       use_default_callbacks=False))
        self.frames_in = 0
        self.rejected = 0
        self.expired = 0                # motor commands the air's delay used up entirely (_on_time)

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

    def _on_liveliness(self, info) -> None:
        """A driver's writer became alive, left, or its lease ran out (dead, hung or starved): one that left is
        dropped at once, a lost lease once it stays lost (:meth:`check_link`), not after the ~20 s discovery
        lease. (Between nodes of one process, bringup --single, Fast DDS renews a quiet writer's lease only while
        samples flow in that process, measured: mat_sim's own notifications keep the drivers' leases.)"""
        self.lease.on_event(info)
        if info.alive_count == 0 and info.not_alive_count_change <= 0:
            self._drop('it left')

    def check_link(self) -> None:
        """Connect when a driver appeared, disconnect when it left the graph or its lease stayed lost. A frame
        from a driver connects too (:meth:`_on_tx`)."""
        lost = self.lease.lost()
        present = self.tx.get_publisher_count() > 0 and not lost
        if present and not self.cube.connected:
            self.ensure_connected()
        elif not present:
            self._drop('its liveliness lease ran out' if lost else 'it left')

    def _drop(self, why: str) -> None:
        """The driver went away: the cube disconnects (stops, forgets its settings), as a real one does."""
        if self.cube.connected:
            self.node.get_logger().info(f'{self.name}: driver went away ({why}); the cube disconnects and stops')
            self.cube.disconnect()
            # a driver that only looked gone (its lease ran out on a starved host) learns that the link dropped,
            # as from a BLE disconnect event, and reconnects: the cube forgot its settings
            self.rx.publish(BleFrame(op=BleFrame.DISCONNECTED))

    def _on_time(self, char: p.Characteristic, data: bytes, stamp) -> bytes | None:
        """A timed motor command as the cube would run it had the simulated air been as quick as BLE's: DDS on a
        busy host can deliver a write a few hundred ms late, and the cube would then drive that much longer after
        the driver's last decision. Its duration is shortened by the frame's delay since the driver wrote it (at
        most MAX_AIR_DELAY_S: clocks of two hosts need not agree); None when nothing is left of it."""
        if char is not p.Characteristic.MOTOR_CONTROL or data[:1] != b'\x02' or not (stamp.sec or stamp.nanosec):
            return data
        sent_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        late_s = min(max((self.node.get_clock().now().nanoseconds - sent_ns) / 1e9, 0.0), MAX_AIR_DELAY_S)
        try:
            command = p.MotorControlTimed.decode(data)
        except p.ProtocolError:
            return data                 # the cube rejects it as it would
        late_10ms = int(late_s * 100.0 + 0.5)      # to the nearest step: truncating let a cube run 10 ms on
        if command.duration_10ms == 0 or late_10ms == 0:
            return data                 # no limit, or on time
        left = command.duration_10ms - late_10ms
        if left < 1:
            self.expired += 1
            return None
        return replace(command, duration_10ms=left).encode()

    def _on_tx(self, frame: BleFrame) -> None:
        self.frames_in += 1
        try:
            char = p.characteristic(frame.uuid)
        except p.ProtocolError as exc:
            self.rejected += 1
            self.node.get_logger().warning(f'{self.name}: frame for {exc}', throttle_duration_sec=5.0)
            return
        self.lease.heard()              # a frame: its writer is alive
        if not self.ensure_connected():
            return
        data = bytes(frame.data)
        try:
            if frame.op == BleFrame.WRITE:
                data = self._on_time(char, data, frame.stamp)
                if data is None:
                    return
                self.cube.write(char, data)
            elif frame.op == BleFrame.READ:
                self.rx.publish(BleFrame(uuid=char.value, op=BleFrame.READ_RESPONSE, seq=frame.seq,
                                         data=self.cube.read(char)))
            else:
                self.rejected += 1
        except ConnectionError as exc:      # e.g. reading a characteristic that cannot be read
            self.rejected += 1
            self.node.get_logger().warning(f'{self.name}: {exc}', throttle_duration_sec=5.0)


class MatSimNode(LeanNode):
    """Hosts :class:`~toio_navigator.sim.world.World` + :class:`~toio_navigator.sim.virtual_cube.VirtualCubes`.

    Parameters: :data:`toio_navigator.settings.mat_sim.PARAMS`. Raises SettingError naming the parameter when
    one is invalid.
    """

    def __init__(self, node_name: str = 'mat_sim', **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        config = sim_config(self.parameters.values)      # SettingError names a bad parameter
        v = config.values
        cubes = list(v['cubes'])
        firmware = FirmwareParams(version=v['firmware_version'])
        params = config.world
        try:
            self.world = World(config.poses, mat=v['mat'], params=params, seed=v['seed'])
        except ValueError as exc:
            raise SettingError('initial_poses', str(exc)) from None
        self.cube_names = cubes
        self.real_time_factor = v['real_time_factor']
        self._last_step = time.monotonic()
        self._sim_elapsed = 0.0      # simulated seconds handed to world.step (world.time lags by < one step)
        self.firmware = VirtualCubes(self.world, firmware, names=[cube_name(i) for i in range(len(cubes))],
                                     arrival_clock=self.arrival_time)
        self.contacts = ContactTracker(self.world, v['contact_slack_units'])
        self._pub_contacts = self.create_publisher(ContactEvent, 'mat_sim/contacts', BLE_QOS)
        self.ports = [_CubePort(self, name, self.firmware[i]) for i, name in enumerate(cubes)]
        self.create_timer(params.dt, self._step)
        self.create_timer(v['link_check_period_s'], self._check_links)
        self._pub_truth = self.create_publisher(PoseArray, 'mat_sim/ground_truth', 10)
        self._truth_timer = None
        self._start_ground_truth(v['ground_truth_rate_hz'])
        self._ir = None
        if v['arena_layout']:
            self._setup_arena(v)
        self.parameters.on_change(self._apply_parameters)
        self.get_logger().info(f'{len(cubes)} virtual cubes ({firmware.version}) on mat {v["mat"]}: '
                               f'{", ".join(cubes)}')

    def _apply_parameters(self, values: dict, changed: set[str]) -> None:
        """A run-time change (real_time_factor, the motor timing, position noise, the ground-truth rate):
        checked by the start-up rules, then put into effect from the next physics step on."""
        config = sim_config(values)
        self.world.params = replace(self.world.params, command_delay=config.world.command_delay,
                                    min_command_interval=config.world.min_command_interval,
                                    position_noise=config.world.position_noise)
        self.real_time_factor = config.values['real_time_factor']
        if 'ground_truth_rate_hz' in changed:
            self._start_ground_truth(config.values['ground_truth_rate_hz'])

    def _start_ground_truth(self, rate_hz: float) -> None:
        if self._truth_timer is not None:
            self.destroy_timer(self._truth_timer)
            self._truth_timer = None
        if rate_hz > 0:
            self._truth_timer = self.create_timer(1.0 / rate_hz, self._publish_ground_truth)

    def _setup_arena(self, v: dict) -> None:
        arena = ArenaSensors(v, seed=v['seed'])
        self._ir = (arena, [self.create_publisher(IrRanges, f'{name}/ir', 10) for name in self.cube_names])
        self.create_timer(1.0 / arena.rate_hz, self._publish_ir)

    def arrival_time(self) -> float:
        """The simulated time now, finer than the physics step: when a BLE write arrives (firmware clock)."""
        since = min((time.monotonic() - self._last_step) * self.real_time_factor, 0.25 * self.real_time_factor)
        return self._sim_elapsed + since

    # ------------------------------------------------------------------------------------------ timers
    def _step(self) -> None:
        now = time.monotonic()
        # a stalled process must not make the cubes jump: advance at most a quarter second per tick
        advance = min((now - self._last_step) * self.real_time_factor, 0.25 * self.real_time_factor)
        self._sim_elapsed += advance
        self._last_step = now
        self.world.step(advance)
        events = self.contacts.take()
        if events:
            self._publish_contacts(events)

    def _publish_contacts(self, events) -> None:
        stamp = self.get_clock().now().to_msg()
        first = self.contacts.count - len(events) + 1
        for k, (t, i, j, x, y, approach) in enumerate(events):
            msg = ContactEvent(sim_time=float(t), cube_a=self.cube_names[i], cube_b=self.cube_names[j], x=x, y=y,
                               approach_speed=approach, count=first + k)
            msg.header.stamp, msg.header.frame_id = stamp, 'mat'
            self._pub_contacts.publish(msg)

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
        arena, publishers = self._ir
        stamp = self.get_clock().now().to_msg()
        for i, publisher in enumerate(publishers):
            x, y, theta = (float(a) for a in self.world.poses[i])
            msg = IrRanges()
            msg.header.stamp = stamp
            msg.header.frame_id = f'{self.cube_names[i]}/base_link'
            msg.ranges = arena.ranges(x, y, theta, readable=not self.world.lifted[i])
            publisher.publish(msg)


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator mat_sim --ros-args -p cubes:="[cube1, cube2]"``. Exit 2 on bad parameters."""
    return run_node('mat_sim', MatSimNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
