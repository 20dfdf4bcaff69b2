"""The bleak transport's own logic with an injected fake client and scanner (no Bluetooth adapter needed)."""
from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_transport import BleTransport, scan
from toio_navigator.cube.transport import BackoffPolicy, LinkState, TransportError
from toio_navigator.settings.driver import DriverConfig

FAST = BackoffPolicy(initial_s=0.001, factor=2.0, max_delay_s=0.004, max_attempts=5, connect_timeout_s=0.5)


class FakeClient:
    """Records what the transport asks of bleak; can fail to connect and drop the link."""

    def __init__(self, world: 'FakeRadio', on_disconnect):
        self.radio, self.on_disconnect = world, on_disconnect
        self.writes: list[tuple[str, bytes, bool]] = []
        self.notify: dict[str, object] = {}

    async def connect(self):
        self.radio.connect_attempts += 1
        if self.radio.failures_left > 0:
            self.radio.failures_left -= 1
            raise OSError('device not found')
        if self.radio.hang:
            await asyncio.sleep(3600)
        self.radio.clients.append(self)

    async def disconnect(self):
        self.on_disconnect(self)

    async def write_gatt_char(self, char, data, response):
        self.writes.append((char, bytes(data), response))

    async def read_gatt_char(self, char):
        return bytearray(b'\x50')

    async def start_notify(self, char, callback):
        self.notify[char] = callback

    async def stop_notify(self, char):
        self.notify.pop(char)

    def drop(self):
        self.on_disconnect(self)


class FakeRadio:
    def __init__(self, failures: int = 0, hang: bool = False):
        self.failures_left, self.hang = failures, hang
        self.connect_attempts = 0
        self.clients: list[FakeClient] = []

    def factory(self, target, on_disconnect):
        return FakeClient(self, on_disconnect)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5.0))


def test_backoff_schedule_doubles_up_to_the_cap():
    policy = BackoffPolicy(initial_s=0.5, factor=2.0, max_delay_s=8.0, max_attempts=7)
    assert list(policy.delays()) == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    with pytest.raises(ValueError):
        BackoffPolicy(initial_s=2.0, max_delay_s=1.0)


def test_jittered_backoff_spreads_drivers_that_failed_together():
    policy = BackoffPolicy(initial_s=0.5, max_delay_s=8.0, max_attempts=6, jitter=0.25)
    runs = [list(policy.delays()) for _ in range(20)]
    plain = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert all(0.75 * d <= j <= 1.25 * d for run in runs for j, d in zip(run, plain))
    assert len({run[0] for run in runs}) > 10          # twenty drivers do not retry at one moment
    with pytest.raises(ValueError, match='jitter'):
        BackoffPolicy(jitter=1.0)
    # the driver's settings: BLE drivers retry jittered, a simulated link as before
    assert DriverConfig.from_values({'transport': 'ble', 'ble_name': '*'}, '/c1').backoff.jitter == 0.25
    assert DriverConfig.from_values({'transport': 'sim'}, '/c1').backoff.jitter == 0.0


def test_writes_are_routed_by_characteristic_properties():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        with pytest.raises(TransportError, match='not connected'):
            await link.write('motor', p.MotorControl(10, 10).encode())
        await link.connect()
        await link.write('motor', p.MotorControl(10, 10).encode())
        await link.write('light', p.LightOn(255, 0, 0).encode())
        with pytest.raises(TransportError, match='does not support write with response'):
            await link.write('motor', p.MotorControl(0, 0).encode(), response=True)
        with pytest.raises(TransportError):
            await link.write('id', b'\x01')
        assert await link.read('battery') == b'\x50'
        return radio.clients[0].writes
    writes = run(scenario())
    assert writes == [(p.Characteristic.MOTOR_CONTROL.uuid, p.MotorControl(10, 10).encode(), False),
                      (p.Characteristic.LIGHT_CONTROL.uuid, p.LightOn(255, 0, 0).encode(), True)]


def test_reconnect_resubscribes_and_resends_settings_after_a_drop():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        states, received = [], []
        link.add_link_state_callback(states.append)
        await link.connect()
        await link.start_notify('id', lambda char, data: received.append(p.decode(char, data)))
        await link.write('config', p.ConfigWrite.id_notification(5, p.ID_ALWAYS).encode())
        await link.write('config', p.ConfigWrite.motor_speed_notification(True).encode())
        await link.write('config', p.ConfigWrite.id_notification(1, p.ID_ON_CHANGE).encode())  # replaces the 0x18
        await link.write('config', p.ConfigWrite.request_protocol_version().encode())  # a request, not a setting
        radio.failures_left = 2
        radio.clients[0].drop()
        assert link.link_state is LinkState.RECONNECTING
        assert await link.wait_connected(2.0)
        fresh = radio.clients[-1]
        fresh.notify[p.Characteristic.ID_INFORMATION.uuid](None, bytearray(b'\x03'))
        await link.disconnect()
        return radio, fresh, states, received, link
    radio, fresh, states, received, link = run(scenario())
    assert radio.connect_attempts == 4          # first connect, two failures, success
    assert [w[1] for w in fresh.writes] == [p.ConfigWrite.motor_speed_notification(True).encode(),
                                            p.ConfigWrite.id_notification(1, p.ID_ON_CHANGE).encode()]
    assert all(w[2] for w in fresh.writes)    # configuration is written with response
    assert received == [p.PositionIdMissed()]
    assert link.reconnect_count == 1
    assert states[:3] == [LinkState.CONNECTING, LinkState.CONNECTED, LinkState.RECONNECTING]
    assert states[-1] is LinkState.DISCONNECTED


def test_reconnect_gives_up_after_max_attempts():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        await link.connect()
        radio.failures_left = 100
        radio.clients[0].drop()
        ok = await link.wait_connected(2.0)
        return ok, link.link_state, radio.connect_attempts
    ok, state, attempts = run(scenario())
    assert not ok and state is LinkState.FAILED and attempts == 1 + FAST.max_attempts


def test_deliberate_disconnect_does_not_reconnect():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        await link.connect()
        await link.disconnect()
        await asyncio.sleep(0.02)
        return radio.connect_attempts, link.link_state
    assert run(scenario()) == (1, LinkState.DISCONNECTED)


def test_connect_that_hangs_times_out_with_transport_error():
    async def scenario():
        link = BleTransport('AA:BB', client_factory=FakeRadio(hang=True).factory, backoff=FAST)
        with pytest.raises(TransportError, match='timed out'):
            await link.connect(timeout=0.05)
        return link.link_state
    assert run(scenario()) is LinkState.DISCONNECTED


class FakeScanner:
    def __init__(self, callback, service_uuids, adverts, fail=False):
        self.callback, self.adverts, self.fail = callback, adverts, fail
        self.stopped = False
        assert service_uuids == [p.SERVICE_UUID]

    async def start(self):
        if self.fail:
            raise OSError('No Bluetooth adapters found')
        for address, name, uuids in self.adverts:
            self.callback(SimpleNamespace(address=address, name=name),
                          SimpleNamespace(local_name=name, service_uuids=uuids, rssi=-50))

    async def stop(self):
        self.stopped = True


def _scanner(adverts, fail=False):
    made = []

    def factory(callback, uuids):
        made.append(FakeScanner(callback, uuids, adverts, fail))
        return made[-1]
    return factory, made


def test_scan_matches_ids_as_substrings_ignores_others_and_exits_early():
    toio = [p.SERVICE_UUID.upper()]
    adverts = [('00:01', 'toio-a1B', toio), ('00:02', 'other', ['180f']), ('00:03', '31j', toio),
               ('00:04', 'toio Core Cube-c3D', toio), ('00:05', 'toio-e5F', toio)]
    factory, made = _scanner(adverts)

    async def scenario():
        loop = asyncio.get_running_loop()
        start = loop.time()
        found = await scan(names=['a1B', 'c3D'], timeout_s=3.0, scanner_factory=factory)
        return found, loop.time() - start
    found, _elapsed = run(scenario())
    assert [c.address for c in found] == ['00:01', '00:04']
    assert made[0].stopped
    by_address, _ = _scanner(adverts)
    assert [c.name for c in run(scan(addresses=['00:05'], timeout_s=3.0, scanner_factory=by_address))] == ['toio-e5F']
    everything, _ = _scanner(adverts)
    assert len(run(scan(timeout_s=0.05, scanner_factory=everything))) == 3


def test_scan_without_an_adapter_is_a_transport_error():
    factory, _ = _scanner([], fail=True)
    with pytest.raises(TransportError, match='cannot start a BLE scan'):
        run(scan(names=['a1B'], timeout_s=0.5, scanner_factory=factory))


def test_a_failing_notification_callback_does_not_break_the_link():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        await link.connect()
        await link.start_notify('battery', lambda char, data: 1 / 0)
        radio.clients[0].notify[p.Characteristic.BATTERY_INFORMATION.uuid](None, bytearray(b'\x50'))
        return link.is_connected
    assert run(scenario())


def test_a_disconnect_reported_from_another_thread_still_reconnects():
    async def scenario():
        radio = FakeRadio()
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=FAST)
        await link.connect()
        worker = threading.Thread(target=radio.clients[0].drop)
        worker.start()
        worker.join()
        await asyncio.sleep(0)          # let the loop run the hand-over from the foreign thread
        assert link.link_state is LinkState.RECONNECTING
        return await link.wait_connected(2.0), radio.connect_attempts
    assert run(scenario()) == (True, 2)


def test_an_explicit_connect_takes_over_from_a_running_reconnect():
    async def scenario():
        radio = FakeRadio()
        slow = BackoffPolicy(initial_s=10.0, max_delay_s=10.0, connect_timeout_s=0.5)
        link = BleTransport('AA:BB', client_factory=radio.factory, backoff=slow)
        await link.connect()
        radio.clients[0].drop()
        assert link.link_state is LinkState.RECONNECTING
        await link.connect()                 # does not wait 10 s for the backoff, and does not connect twice
        await asyncio.sleep(0.01)
        return link.link_state, radio.connect_attempts
    assert run(scenario()) == (LinkState.CONNECTED, 2)
