"""One cube per driver, without a radio: the claims on this machine, a scan that passes over connected and held
cubes, and which cube a BLE driver's settings lead to ("*": any free one)."""
from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from toio_navigator.cube import ble_adapters, ble_claims, ble_scan, ble_transport
from toio_navigator.cube import protocol as p
from toio_navigator.cube.ble_adapters import AdapterState
from toio_navigator.cube.ble_finder import open_ble_transport
from toio_navigator.cube.transport import TransportError
from toio_navigator.settings.driver import DriverConfig

TOIO = [p.SERVICE_UUID]


@pytest.fixture(autouse=True)
def private_claims(tmp_path, monkeypatch):
    """Claims of this test only (its own runtime directory and BlueZ), whose one adapter hci0 has no link."""
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    monkeypatch.setenv('DBUS_SYSTEM_BUS_ADDRESS', f'unix:path={tmp_path}/bus')

    async def one_adapter():
        return [AdapterState('hci0', 0)]
    monkeypatch.setattr(ble_adapters, 'bluez_adapters', one_adapter)


def test_a_claim_is_exclusive_says_who_holds_it_and_is_given_back():
    first = ble_claims.claim('5e:00:00:00:00:01', '/cube1/cube_driver')
    assert first is not None
    assert ble_claims.claim('5E:00:00:00:00:01', '/cube2/cube_driver') is None      # same cube, any case
    assert ble_claims.holder_of('5E:00:00:00:00:01') == f'/cube1/cube_driver (pid {os.getpid()})'
    other = ble_claims.claim('5E:00:00:00:00:02', '/cube2/cube_driver')
    assert other is not None
    first.release()
    again = ble_claims.claim('5E:00:00:00:00:01', '/cube2/cube_driver')
    assert again is not None
    again.release()
    other.release()


def test_claims_of_another_bluez_do_not_count(monkeypatch, tmp_path):
    mine = ble_claims.claim('5E:00:00:00:00:01', '/cube1/cube_driver')
    monkeypatch.setenv('DBUS_SYSTEM_BUS_ADDRESS', f'unix:path={tmp_path}/another_bus')
    theirs = ble_claims.claim('5E:00:00:00:00:01', '/cube1/cube_driver')
    assert mine is not None and theirs is not None
    mine.release()
    theirs.release()


class Radio:
    """Cubes advertising to a fake bleak scanner; ``connected`` ones are announced as BlueZ does (Connected)."""

    def __init__(self, cubes: list[tuple[str, str]], connected: tuple[str, ...] = ()) -> None:
        self.cubes, self.connected = cubes, set(connected)

    def factory(self, adapter=None):
        radio = self

        class Scanner:
            def __init__(self, callback, uuids) -> None:
                self.callback = callback

            async def start(self) -> None:
                for address, name in radio.cubes:
                    props = {'Address': address, 'Name': name, 'Connected': address in radio.connected}
                    self.callback(SimpleNamespace(address=address, name=name),
                                  SimpleNamespace(local_name=name, service_uuids=TOIO, rssi=-50,
                                                  platform_data=(f'/org/bluez/hci0/dev_{address}', props)))

            async def stop(self) -> None:
                pass
        return lambda callback, uuids: Scanner(callback, uuids)


def test_a_scan_passes_over_connected_cubes_and_asks_about_each_cube_once():
    radio = Radio([('00:01', 'toio-a1B'), ('00:02', 'toio-c3D'), ('00:03', 'toio-e5F')], connected=('00:01',))
    asked = []

    def accept(cube) -> bool:
        asked.append(cube.address)
        return cube.address == '00:03'
    found = asyncio.run(ble_transport.scan(count=1, timeout_s=1.0, scanner_factory=radio.factory(), accept=accept))
    assert [c.address for c in found] == ['00:03'] and asked == ['00:02', '00:03']
    by_name = asyncio.run(ble_transport.scan(names=['a1B'], timeout_s=0.05, scanner_factory=radio.factory()))
    assert by_name == []                                # connected (to someone): it does not advertise


def ble(**values):
    return DriverConfig.from_values({'transport': 'ble', 'ble_scan_timeout_s': 0.1, **values}, '/cube1').ble_target()


def test_drivers_asking_for_any_cube_each_get_a_different_one(monkeypatch):
    radio = Radio([('5E:00:00:00:00:01', 'toio-a1B'), ('5E:00:00:00:00:02', 'toio-c3D')])
    monkeypatch.setattr(ble_scan, 'bleak_scanner_factory', radio.factory)
    first = asyncio.run(open_ble_transport(ble(ble_name='*'), '/cube1/cube_driver'))
    second = asyncio.run(open_ble_transport(ble(ble_name='*'), '/cube2/cube_driver'))
    assert {first.transport.address, second.transport.address} == {'5E:00:00:00:00:01', '5E:00:00:00:00:02'}
    with pytest.raises(TransportError, match='no free toio cube advertising within 0.1 s on hci0'):
        asyncio.run(open_ble_transport(ble(ble_name='*'), '/cube3/cube_driver'))
    # a driver asking for a cube by its id or address that another driver holds is told who holds it
    taken = 'a1B' if first.transport.address.endswith('01') else 'c3D'
    with pytest.raises(TransportError, match=r'held by /cube1/cube_driver \(pid \d+\) on this machine'):
        asyncio.run(open_ble_transport(ble(ble_name=taken), '/cube4/cube_driver'))
    with pytest.raises(TransportError, match='held by /cube1/cube_driver'):
        asyncio.run(open_ble_transport(ble(ble_address=first.transport.address), '/cube4/cube_driver'))
    first.release()                                   # its driver ended: the cube is free again
    third = asyncio.run(open_ble_transport(ble(ble_name='*'), '/cube3/cube_driver'))
    assert third.transport.address == first.transport.address
    second.release()
    third.release()


def test_a_ble_driver_must_be_told_which_cube_to_drive():
    with pytest.raises(ValueError, match='parameter ble_name: .*neither ble_name nor ble_address is set'):
        DriverConfig.from_values({'transport': 'ble'}, '/cube1')
    assert ble(ble_name='*').name == '*'
    assert ble(ble_address='5E:00:00:00:00:01').address == '5E:00:00:00:00:01'
    assert DriverConfig.from_values({'transport': 'sim'}, '/cube1').ble_name == ''       # the simulator needs none


def test_a_cube_not_found_by_its_id_says_which_cubes_the_scan_heard(monkeypatch):
    """The usual causes, a wrong id or a cube still connected to something else, show in the error itself."""
    radio = Radio([('5E:00:00:00:00:01', 'toio-a1B'), ('5E:00:00:00:00:02', 'toio-c3D')],
                  connected=('5E:00:00:00:00:02',))
    monkeypatch.setattr(ble_scan, 'bleak_scanner_factory', radio.factory)
    with pytest.raises(TransportError) as failed:
        asyncio.run(open_ble_transport(ble(ble_name='c3d'), '/cube1/cube_driver'))
    assert str(failed.value) == ("no toio cube advertising with 'c3d' in its name within 0.1 s on hci0 (heard toio-a1B "
                                 "(5E:00:00:00:00:01), toio-c3D (5E:00:00:00:00:02, connected))")
    monkeypatch.setattr(ble_scan, 'bleak_scanner_factory', Radio([]).factory)
    with pytest.raises(TransportError, match=r"within 0.1 s on hci0 \(heard no toio cube at all\)$"):
        asyncio.run(open_ble_transport(ble(ble_name='c3d'), '/cube1/cube_driver'))
