"""Real bleak against the virtual BlueZ, in this process (no ROS): what a BLE client of a toio cube sees.

The GATT layout and write types bleak finds, BlueZ's one-discovery-per-client rule (and our scan taking turns),
the connection-interval request whose minimum exceeds its maximum (refused by the codec and by the cube), a
device bleak lost while it started (found again by the next scan), a BlueZ that crashes under a connected
transport and comes back, and the ``toio-nav fake-bluez`` command.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

bleak = pytest.importorskip('bleak')

from support.bluez_rig import CALM, needs_dbus_daemon  # noqa: E402
from toio_navigator import cli  # noqa: E402
from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.cube.ble_scan import forget_unheard, scan  # noqa: E402
from toio_navigator.cube.ble_transport import BleTransport  # noqa: E402
from toio_navigator.cube.transport import BackoffPolicy, LinkState  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402
from toio_navigator.sim.bluez.service import advertised_name  # noqa: E402

pytestmark = needs_dbus_daemon
C = p.Characteristic


@pytest.fixture(scope='module')
def host():
    """Two cubes; bleak in this process finds their BlueZ through DBUS_SYSTEM_BUS_ADDRESS."""
    host = BluezHost([(100.0, 250.0, 0.0), (300.0, 250.0, 0.0)], radio=CALM)
    host.start()
    with host.as_system_bus():
        yield host
    host.stop()


def run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_bleak_finds_the_toio_service_and_its_write_types_reach_the_cube(host):
    async def scenario():
        found = await scan(names=['a0a'], timeout_s=5.0)
        async with bleak.BleakClient(found[0].device) as client:
            chars = {c.uuid: c for c in client.services.get_service(p.SERVICE_UUID).characteristics}
            motor = p.MotorControlTimed(30, 30, 10).encode()
            await client.write_gatt_char(C.MOTOR_CONTROL.value, motor, response=False)
            await client.write_gatt_char(C.LIGHT_CONTROL.value, p.LightOn(0, 0, 255, 0).encode(), response=True)
            with pytest.raises(bleak.exc.BleakError, match='Request Not Supported'):   # BlueZ checks the flags
                await client.write_gatt_char(C.LIGHT_CONTROL.value, p.LightOn(1, 1, 1, 0).encode(), response=False)
            battery = await client.read_gatt_char(C.BATTERY_INFORMATION.value)
        return found[0], chars, battery
    found, chars, battery = run(scenario())
    assert (found.name, found.address) == ('toio-a0a', '5E:00:00:00:00:00')
    assert {uuid: sorted(c.properties) for uuid, c in chars.items()} == {
        C.ID_INFORMATION.value: ['notify', 'read'],
        C.MOTOR_CONTROL.value: ['notify', 'read', 'write-without-response'],
        C.LIGHT_CONTROL.value: ['write'], C.SOUND_CONTROL.value: ['write'],
        C.SENSOR_INFORMATION.value: ['notify', 'read', 'write'], C.BUTTON_INFORMATION.value: ['notify', 'read'],
        C.BATTERY_INFORMATION.value: ['notify', 'read'], C.CONFIGURATION.value: ['notify', 'read', 'write']}
    # the handles bleak reports for a real cube, and a CCCD on every notifying characteristic
    assert [chars[c.value].handle for c in C] == [12, 16, 20, 23, 26, 30, 34, 38]
    assert all(len(chars[c.value].descriptors) == ('notify' in chars[c.value].properties) for c in C)
    assert battery == bytearray(b'\x64')
    writes = [(w.char, w.data, w.kind) for w in host.writes(0)]
    assert writes == [(C.MOTOR_CONTROL, p.MotorControlTimed(30, 30, 10).encode(), 'command'),
                      (C.LIGHT_CONTROL, p.LightOn(0, 0, 255, 0).encode(), 'request')]
    assert not host.call(lambda: host.firmware[0].connected)              # the client's exit disconnected it


def test_one_discovery_per_client_and_our_scans_take_turns(host):
    async def two_bleak_scanners():
        first = bleak.BleakScanner(service_uuids=[p.SERVICE_UUID])
        second = bleak.BleakScanner(service_uuids=[p.SERVICE_UUID])
        await first.start()
        try:
            with pytest.raises(bleak.exc.BleakDBusError, match='InProgress'):
                await second.start()        # one D-Bus client (bleak's, per loop), one discovery
        finally:
            await first.stop()

    async def two_of_our_scans():
        return await asyncio.gather(scan(names=['a0a'], timeout_s=5.0),
                                    scan(addresses=['5e:00:00:00:00:01'], timeout_s=5.0))
    run(two_bleak_scanners())
    by_id, by_address = run(two_of_our_scans())
    assert [c.address for c in by_id] == ['5E:00:00:00:00:00']
    assert [c.name for c in by_address] == ['toio-b0a']


def test_advertised_names_follow_the_firmware_version():
    assert [advertised_name('toio-a1B', v) for v in ('2.5.0', '2.4.0', '2.3.0', '2.2.0')] == \
        ['toio-a1B', 'toio-a1B', 'toio Core Cube-a1B', 'toio Core Cube']


def test_a_connection_interval_whose_minimum_exceeds_its_maximum_is_refused(host):
    with pytest.raises(p.ProtocolError, match='minimum 80 exceeds the maximum 8'):
        p.ConfigWrite.connection_interval(80, 8).encode()
    assert p.ConfigWrite.connection_interval(0xFFFF, 8).encode() == bytes.fromhex('30 00 ff ff 08 00')   # no preference

    async def scenario():
        answers = []
        async with bleak.BleakClient((await scan(names=['b0a'], timeout_s=5.0))[0].device) as client:
            await client.start_notify(C.CONFIGURATION.value, lambda _c, data: answers.append(bytes(data)))
            for request in ('30 00 50 00 08 00', '31 00', '30 00 0c 00 18 00', '31 00'):
                await client.write_gatt_char(C.CONFIGURATION.value, bytes.fromhex(request), response=True)
                await asyncio.sleep(0.05)
        return answers
    dropped = host.call(lambda: host.firmware[1].dropped_writes)
    answers = run(scenario())
    # the bad request is dropped without an answer (the defaults stay), the good one is answered and kept
    assert answers == [bytes.fromhex('b1 00 08 00 50 00'), bytes.fromhex('b0 00 00'),
                       bytes.fromhex('b1 00 0c 00 18 00')]
    assert host.call(lambda: host.firmware[1].dropped_writes) == dropped + 1


def test_a_cube_bleak_lost_while_it_started_is_found_by_the_next_scan(host):
    """BlueZ adds cube b0a's device right after it answered GetManagedObjects to a bleak that is starting: bleak
    handles the InterfacesAdded, then replaces its cache with the older answer, and ignores the cube's adverts
    from then on (here the first scan misses it in most runs). A driver scans again in the same
    loop; by then the missed cube's device was removed from BlueZ, and its next advert added it afresh."""
    link = host.bluez.adapters[0].devices[1]
    armed = [True]

    def export_after_the_answer(msg):
        if armed[0] and msg.member == 'GetManagedObjects':
            armed[0] = False
            host.loop.call_soon(lambda: link.export_device() if link.device is None else None)

    def arm():
        link.remove_device()
        host.bluez.bus.add_message_handler(export_after_the_answer)
    host.call(arm)

    async def two_scans():
        first = await scan(names=['b0a'], timeout_s=2.0)
        return first, first or await scan(names=['b0a'], timeout_s=2.0)
    try:
        first, second = run(two_scans())
    finally:
        host.call(lambda: host.bluez.bus.remove_message_handler(export_after_the_answer))
    assert not armed[0]                                     # bleak did start while the hook was armed
    assert [c.name for c in second] == ['toio-b0a'], 'the second scan did not find the cube either'


def test_forget_unheard_removes_only_wanted_known_cubes(host):
    async def scenario():
        await scan(addresses=['5e:00:00:00:00:01', '5e:00:00:00:00:00'], timeout_s=5.0)   # BlueZ knows both
        return await forget_unheard(lambda address, name: 'b0a' in name, None, 5.0)
    assert run(scenario()) == ['5E:00:00:00:00:01']
    devices = host.bluez.adapters[0].devices
    assert host.call(lambda: (devices[0].device is not None, devices[1].device is None)) == \
        (True, True)
    assert [c.name for c in run(scan(names=['b0a'], timeout_s=5.0))] == ['toio-b0a']     # and it comes back


def test_a_transport_loses_its_link_when_bluez_crashes_and_reconnects_when_it_returns(host):
    async def scenario():
        found = await scan(names=['a0a'], timeout_s=5.0)
        # retries 2 s and 6 s after the crash: BlueZ returns in between, and the link must not wait for 6 s
        link = BleTransport(found[0].device, backoff=BackoffPolicy(initial_s=2.0, max_delay_s=8.0,
                                                                   connect_timeout_s=4.0))
        states, positions = [], []
        link.add_link_state_callback(lambda s: states.append((time.monotonic(), s)))
        await link.start_notify('id', lambda _c, data: positions.append(data))
        await link.connect()
        await link.write('config', p.ConfigWrite.id_notification(2, p.ID_ALWAYS).encode())
        await link.write('motor', p.MotorControlTimed(40, 40, 255).encode())
        await asyncio.sleep(0.3)
        killed = time.monotonic()
        await asyncio.to_thread(host.kill_bluez, 3.0)       # the cube keeps its link (and command) for 3 s
        await asyncio.sleep(0.5)
        lost = [t - killed for t, s in states if s is LinkState.RECONNECTING]
        still_driving = host.call(lambda: host.world.wheel_command[0].tolist())
        await asyncio.sleep(2.0)
        restarted = time.monotonic()
        await asyncio.to_thread(host.restart_bluez)
        back = await link.wait_connected(8.0)
        took = time.monotonic() - restarted
        settings = None
        for _ in range(100):        # the link is up first, then it re-subscribes and re-sends the settings
            settings = host.call(lambda: (host.firmware.id_interval[0], host.firmware.id_condition[0]))
            if settings == (0.02, p.ID_ALWAYS):
                break
            await asyncio.sleep(0.02)
        count = len(positions)
        for _ in range(200):            # positions flow again (a busy host delivers them late, never not at all)
            if len(positions) - count >= 5:
                break
            await asyncio.sleep(0.02)
        flowing = len(positions) - count
        await link.disconnect()
        return lost, still_driving, back, took, settings, flowing
    lost, still_driving, back, took, settings, flowing = run(scenario())
    assert lost and lost[0] < 1.0, f'the link was reported lost {lost} s after BlueZ died'
    assert still_driving == [40.0, 40.0]       # nobody told the cube yet: its last command runs on
    assert back and took < 2.0, f'reconnected: {back}, {took:.1f} s after BlueZ returned (not after the backoff)'
    assert settings == (0.02, p.ID_ALWAYS)      # the transport re-sent the setting the restarted link forgot
    assert flowing >= 5


def test_fake_bluez_serves_the_cubes_to_a_command_and_refuses_bad_input(tmp_path, capsys):
    params = tmp_path / 'cubes.yaml'
    child = ('import asyncio, bleak\n'
             'async def main():\n'
             '    found = await bleak.BleakScanner.discover(timeout=1.0)\n'
             '    print(sorted(d.name for d in found))\n'
             'asyncio.run(main())\n')
    done = subprocess.run([sys.executable, '-m', 'toio_navigator.cli', 'fake-bluez', '--cubes', '3',
                           '--firmware', '2.3.0', '--params-out', str(params), '--', sys.executable, '-c', child],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "['toio Core Cube-a0a', 'toio Core Cube-b0a', 'toio Core Cube-c0a']" in done.stdout
    assert 'export DBUS_SYSTEM_BUS_ADDRESS=unix:path=' in done.stdout
    assert 'cubes: [cube1, cube2, cube3]' in params.read_text()
    assert '/cube3/cube_driver:\n  ros__parameters:\n    ble_name: "c0a"' in params.read_text()
    for bad, message in ((['--cubes', '0'], '--cubes must be 1..64'),
                         (['--firmware', '3.0.0'], '--firmware must be 2.0.0..2.5.0'),
                         (['--initial-poses', '1', '2'], 'x y heading per cube'),
                         (['--mat', 'moon'], "unknown mat 'moon'")):
        assert cli.main(['fake-bluez', *bad]) == 2
        assert message in capsys.readouterr().err
