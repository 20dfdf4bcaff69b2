"""The simulated transport: same bytes and same behaviour as the BLE one, reconnects that restore settings."""
from __future__ import annotations

import asyncio

import pytest

from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_transport import BleTransport
from toio_navigator.cube.transport import BackoffPolicy, LinkState, TransportError
from toio_navigator.sim.transport import SimTransport, sim_transports
from toio_navigator.sim.virtual_cube import VirtualCubes
from toio_navigator.sim.world import World, run_realtime

FAST = BackoffPolicy(initial_s=0.001, factor=2.0, max_delay_s=0.004, max_attempts=6, connect_timeout_s=0.5)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5.0))


def make(n=1):
    world = World([[100 + 60 * i, 250, 0] for i in range(n)])
    return world, VirtualCubes(world)


async def driver_session(link) -> None:
    """What a driver does after connecting: subscribe, configure, drive, light up."""
    await link.connect()
    for char in ('id', 'motor', 'sensor', 'button', 'battery', 'config'):
        await link.start_notify(char, lambda c, d: None)
    await link.write('config', p.ConfigWrite.request_protocol_version().encode())
    await link.write('config', p.ConfigWrite.id_notification(2, p.ID_ON_CHANGE).encode())
    await link.write('config', p.ConfigWrite.motor_speed_notification(True).encode())
    await link.write('motor', p.MotorControlTimed(40, -40, 30).encode())
    await link.write('light', p.LightOn(0, 0, 255).encode())


def test_the_same_driver_sends_the_same_bytes_to_ble_and_to_the_simulator():
    ble_writes: list[tuple[str, bytes, bool]] = []

    class Client:
        def __init__(self, target, on_disconnect):
            pass

        async def connect(self):
            pass

        async def disconnect(self):
            pass

        async def start_notify(self, char, callback):
            pass

        async def write_gatt_char(self, char, data, response):
            ble_writes.append((char, bytes(data), response))

    world, cubes = make()
    sim_writes: list[tuple[str, bytes]] = []
    original = cubes[0].write
    cubes[0].write = lambda char, data: (sim_writes.append((p.characteristic(char).uuid, bytes(data))),
                                         original(char, data))
    run(driver_session(BleTransport('AA', client_factory=Client)))
    run(driver_session(SimTransport(cubes[0])))
    assert [(c, d) for c, d, _ in ble_writes] == sim_writes
    assert [r for *_, r in ble_writes] == [True, True, True, False, True]


def test_simulated_link_errors_match_the_ble_ones():
    async def scenario():
        world, cubes = make()
        link = SimTransport(cubes[0])
        with pytest.raises(TransportError, match='not connected'):
            await link.write('motor', p.MotorControl(0, 0).encode())
        await link.connect()
        with pytest.raises(TransportError, match='does not support write with response'):
            await link.write('motor', p.MotorControl(0, 0).encode(), response=True)
        with pytest.raises(TransportError, match='does not support notify'):
            await link.start_notify('light', lambda c, d: None)
        other = SimTransport(cubes[0], auto_reconnect=False)
        with pytest.raises(TransportError, match='does not advertise'):
            await other.connect()
        assert p.decode('battery', await link.read('battery')) == p.BatteryLevel(100)
    run(scenario())


def test_reconnect_restores_subscriptions_and_settings_on_the_virtual_cube():
    async def scenario():
        world, cubes = make()
        link = SimTransport(cubes[0], backoff=FAST)
        speeds: list[p.MotorSpeed] = []
        await link.connect()
        await link.start_notify('motor', lambda c, d: speeds.append(p.decode(c, d)))
        await link.write('config', p.ConfigWrite.motor_speed_notification(True).encode())
        await link.write('config', p.ConfigWrite.id_notification(3, p.ID_ALWAYS).encode())
        cubes[0].refuse_connections = 2          # the first two reconnect attempts fail
        cubes[0].drop_link()                     # the cube forgets everything
        assert link.link_state is LinkState.RECONNECTING
        assert cubes.id_condition[0] == p.ID_BALANCED and not cubes.speed_notify[0]
        assert await link.wait_connected(2.0)
        speeds.clear()
        await link.write('motor', p.MotorControl(60, 60).encode())
        world.step(0.5)
        restored = (float(cubes.id_interval[0]), int(cubes.id_condition[0]))
        await link.disconnect()
        return restored, speeds, link
    restored, speeds, link = run(scenario())
    assert link.reconnect_count == 1
    assert restored == (pytest.approx(0.03), p.ID_ALWAYS)
    assert speeds and max(s.left for s in speeds) >= 55      # 0xE0 flows again: 0x1C was re-sent


def test_run_realtime_drives_notifications_through_the_transport():
    async def scenario():
        world, cubes = make(3)
        links = sim_transports(cubes, backoff=FAST)
        poses: list[p.PositionId] = []
        for link in links:
            await link.connect()
            await link.start_notify('id', lambda c, d: poses.append(p.decode(c, d)))
        stop = asyncio.Event()
        runner = asyncio.create_task(run_realtime(world, speed=20.0, stop=stop, tick_s=0.005))
        await links[0].write('motor', p.MotorControlTimed(50, 50, 50).encode())
        while world.time < 1.0:
            await asyncio.sleep(0.005)
        stop.set()
        await runner
        return world, poses
    world, poses = run(scenario())
    assert world.time >= 1.0
    assert {round(pose.y) for pose in poses} == {250}
    assert max(pose.x for pose in poses) > 140


def test_bad_realtime_arguments():
    world, _ = make()
    with pytest.raises(ValueError):
        run(run_realtime(world, speed=0))
