"""One cube per driver, through real bleak and the virtual BlueZ: drivers started together with ``ble_name: "*"``
each take a different cube, even when both scans hear the same cube first. (A "*" driver that finds no free cube,
and a BLE driver told no cube: test_ble_finder.py, test_cube_driver_bytes.py.)"""
from __future__ import annotations

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from conftest import next_domain_id, ros_env  # noqa: E402
from support.bluez_rig import CALM, Probe, needs_dbus_daemon, start_driver, stop  # noqa: E402
from support.lifecycle_probe import bad_lines  # noqa: E402
from toio_navigator.nodes.qos import LATCHED  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402

pytestmark = [needs_dbus_daemon, pytest.mark.ros]

POSES = [(100.0, 250.0, 0.0), (400.0, 250.0, 0.0)]
DRIVERS = ('cube1', 'cube2')


def test_drivers_for_any_cube_each_take_a_different_one():
    host = BluezHost(POSES, radio=CALM)
    host.start()
    env = host.environment(ros_env(next_domain_id()))
    probe = Probe(int(env['ROS_DOMAIN_ID']))
    states = {c: probe.collect(msg.CubeState, f'/{c}/state') for c in DRIVERS}
    links = {c: probe.collect(msg.LinkStatus, f'/{c}/link_state', LATCHED) for c in DRIVERS}
    # the cubes come into range only once both drivers scan: both scans hear the same cube first
    host.call(lambda: [host.bluez.vanish(i) for i in range(len(POSES))])
    drivers = {c: start_driver(c, env, ble_name='*') for c in DRIVERS}
    try:
        # both are scanning (the virtual BlueZ keeps one discovery session per client)
        adapter = host.bluez.adapters[0]
        assert probe.spin_until(lambda: host.call(lambda: len(adapter.discovering_clients)) == len(DRIVERS), 30)
        host.call(lambda: [host.bluez.reappear(i) for i in range(len(POSES))])

        def connected(cube: str) -> bool:
            return bool(links[cube]) and links[cube][-1].state == msg.LinkStatus.CONNECTED \
                and bool(links[cube][-1].firmware_version) and bool(states[cube]) and states[cube][-1].on_mat
        assert probe.spin_until(lambda: all(connected(c) for c in DRIVERS), 60), {c: links[c][-1:] for c in DRIVERS}
        # each driver reports the pose of a cube of its own (two drivers sharing one would report the same)
        assert sorted(round(states[c][-1].x) for c in DRIVERS) == [100, 400]
        assert host.call(lambda: [link.connected for link in host.bluez.links]) == [True, True]
    finally:
        errors = {name: stop(proc) for name, proc in drivers.items()}
        probe.close()
        host.stop()
    for name, err in errors.items():
        assert not bad_lines(err), f'{name}: {err[-3000:]}'

