"""Eight BLE drivers for one 7-slot adapter, through real bleak and the virtual BlueZ: all started at the same
moment, seven connect; the eighth says in one line that every adapter it may use is full, and keeps trying
without disturbing the seven (its retries make no connection attempt the full adapter has to refuse); given a
second adapter in its parameters it connects through that one. A driver on a machine without a system bus or
without BlueZ says so in one line. (Which adapter a driver takes, without a radio: test/cube/test_adapter_choice.py;
16 cubes on three adapters: test_ble_lab.py.)"""
from __future__ import annotations

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from conftest import next_domain_id, ros_env  # noqa: E402
from support.bluez_rig import Probe, needs_dbus_daemon, start_driver, stop  # noqa: E402
from support.lifecycle_probe import bad_lines  # noqa: E402
from toio_navigator.nodes.qos import LATCHED  # noqa: E402
from toio_navigator.sim.bluez.bus import PrivateBus  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402
from toio_navigator.sim.bluez.radio import RadioParams, parse_adapters  # noqa: E402

pytestmark = [needs_dbus_daemon, pytest.mark.ros]

POSES = [(80.0 + 48.0 * k, 250.0, 0.0) for k in range(8)]
CUBES = [f'cube{k + 1}' for k in range(8)]
FULL = 'every adapter of this driver is full (hci0 7/7 links)'


def test_the_eighth_cube_of_a_seven_slot_adapter_is_told_full_keeps_trying_and_connects_through_another():
    host = BluezHost(POSES, radio=RadioParams(adapters=parse_adapters('hci0:7,hci1:7')).calm())
    host.start()
    env = host.environment(ros_env(next_domain_id()))
    probe = Probe(int(env['ROS_DOMAIN_ID']))
    links = {c: probe.collect(msg.LinkStatus, f'/{c}/link_state', LATCHED) for c in CUBES}
    ids = [link.name.split('-')[1] for link in host.bluez.links]
    drivers = {c: start_driver(c, env, ble_name=i, ble_adapter='hci0', imu='off', wheel_speed_notify=False)
               for c, i in zip(CUBES, ids)}
    errors: dict[str, str] = {}

    def connected(cube: str) -> bool:
        last = links[cube][-1] if links[cube] else None
        return last is not None and last.state == msg.LinkStatus.CONNECTED and bool(last.firmware_version)

    def told_full(cube: str) -> bool:
        return bool(links[cube]) and FULL in links[cube][-1].detail
    try:
        assert probe.spin_until(lambda: sum(map(connected, CUBES)) == 7 and any(map(told_full, CUBES)), 60), \
            {c: links[c][-1:] for c in CUBES}
        odd = next(c for c in CUBES if not connected(c))
        seven = [c for c in CUBES if c != odd]
        told = len(links[odd])
        probe.spin_for(4.0)
        # it keeps trying (each try is reported), says why each time, and never made the seven lose a link
        assert len(links[odd]) >= told + 3 and told_full(odd) and not connected(odd), links[odd][-3:]
        assert links[odd][-1].state in (msg.LinkStatus.CONNECTING, msg.LinkStatus.RECONNECTING)    # never FAILED
        assert all(connected(c) and links[c][-1].reconnects == 0 for c in seven)
        assert host.call(lambda: host.bluez.adapters[0].refused_full) <= 1       # it learnt the limit once
        assert host.call(lambda: [r.adapter for r in host.bluez.links]).count('hci0') == 7
        errors[f'{odd} (hci0 only)'] = stop(drivers.pop(odd))
        assert sum(FULL in line for line in errors[f'{odd} (hci0 only)'].splitlines()) == 1, \
            errors[f'{odd} (hci0 only)'][-3000:]

        index = CUBES.index(odd)
        drivers[odd] = start_driver(odd, env, ble_name=ids[index], ble_adapter='hci0,hci1', imu='off',
                                    wheel_speed_notify=False)
        assert probe.spin_until(lambda: connected(odd), 30), links[odd][-3:]
        assert host.call(lambda: host.bluez.links[index].adapter) == 'hci1'
        assert all(connected(c) for c in seven)
    finally:
        errors.update({name: stop(proc) for name, proc in drivers.items()})
        probe.close()
        host.stop()
    for name, err in errors.items():
        assert not bad_lines(err), f'{name}: {err[-3000:]}'


def test_a_driver_on_a_machine_without_a_system_bus_or_without_bluez_says_so_once(tmp_path):
    env = ros_env(next_domain_id())
    probe = Probe(int(env['ROS_DOMAIN_ID']))
    links = {c: probe.collect(msg.LinkStatus, f'/{c}/link_state', LATCHED) for c in ('nobus', 'nobluez')}
    with PrivateBus(tmp_path / 'bus') as bus:
        drivers = {'nobus': start_driver('nobus', {**env, 'DBUS_SYSTEM_BUS_ADDRESS': f'unix:path={tmp_path}/none'},
                                         ble_name='a0a'),
                   'nobluez': start_driver('nobluez', bus.environment(env), ble_name='a0a')}
        try:
            # several tries each (every try is reported on link_state), each with the same reason
            assert probe.spin_until(lambda: all(len(links[c]) >= 5 for c in links), 30), links
        finally:
            errors = {name: stop(proc) for name, proc in drivers.items()}
            probe.close()
    for name, said in (('nobus', 'no D-Bus system bus at unix:path='),
                       ('nobluez', 'BlueZ (org.bluez) is not running on the system bus')):
        assert said in links[name][-1].detail and 'toio-nav fake-bluez' in links[name][-1].detail
        lines = errors[name].splitlines()
        assert sum(said in line for line in lines) == 1, errors[name][-3000:]
        assert not any('cannot start a BLE scan' in line for line in lines)
