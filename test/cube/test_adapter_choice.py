"""Which adapter a BLE driver takes, without a radio: the ``ble_adapter`` forms, a free slot and the fewest links,
the one line when every adapter is full, a plan of how a bringup's cubes spread, limits learned from a refusal,
one connection attempt per adapter across drivers, and the line that names a machine without a system bus or
without BlueZ. (Through real bleak: test/system/test_ble_adapters.py.)"""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from toio_navigator.cube import ble_adapters
from toio_navigator.cube.ble_adapters import AdapterState, choose, full_line, parse_adapters, spread
from toio_navigator.cube.transport import RadioUnavailable, TransportError
from toio_navigator.sim.bluez.bus import PrivateBus, find_dbus_daemon

THREE = [AdapterState('hci0', 7, limit=7), AdapterState('hci1', 3), AdapterState('hci2', 3, limit=5)]


@pytest.fixture(autouse=True)
def private_bluez(tmp_path, monkeypatch):
    """Lock and limit files of this test only."""
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    monkeypatch.setenv('DBUS_SYSTEM_BUS_ADDRESS', f'unix:path={tmp_path}/no_bus')


def test_ble_adapter_is_a_name_a_list_or_any():
    assert parse_adapters('') == () and parse_adapters(('',)) == ()
    assert parse_adapters('hci1') == ('hci1',)
    assert parse_adapters('hci0, hci1') == parse_adapters(['hci0', 'hci1']) == ('hci0', 'hci1')
    assert parse_adapters(['*']) == ('*',)
    for bad, message in (('hci0,*', 'give it alone'), ('hci 0', 'not an adapter name'), ('hci0,hci0', 'twice')):
        with pytest.raises(ValueError, match=message):
            parse_adapters(bad)


def test_a_driver_takes_a_free_slot_with_the_fewest_links_and_says_in_one_line_when_all_are_full():
    assert choose(THREE, ('*',)).name in ('hci1', 'hci2')
    assert {choose(THREE, ('*',)).name for _ in range(40)} == {'hci1', 'hci2'}    # ties drawn, not by name
    assert choose(THREE, ('*',), busy=lambda name: name == 'hci1').name == 'hci2'    # an idle adapter first
    with pytest.raises(TransportError, match=r'\(hci0 7/7 links\)'):
        choose(THREE, ())                                   # BlueZ's default adapter only: full
    with pytest.raises(TransportError) as failed:
        choose(THREE, ('hci0',))
    assert str(failed.value) == ('every adapter of this driver is full (hci0 7/7 links): add another adapter to '
                                 'ble_adapter (a list, e.g. "hci0,hci1", or "*" for any), or run fewer cubes here; '
                                 'retrying')
    assert '\n' not in full_line(THREE)
    with pytest.raises(TransportError, match=r'BlueZ has no adapter hci7 \(it has: hci0, hci1, hci2\)'):
        choose(THREE, ('hci7',))


def test_a_plan_spreads_cubes_as_the_drivers_would_and_leaves_out_what_does_not_fit():
    empty = [AdapterState('hci0', 0), AdapterState('hci1', 0), AdapterState('hci2', 0, limit=5)]
    drivers = [(f'cube{k}', ('*',)) for k in range(1, 17)]
    placed = spread(drivers, empty)
    counts = {a: list(placed.values()).count(a) for a in ('hci0', 'hci1', 'hci2')}
    assert counts == {'hci0': 6, 'hci1': 5, 'hci2': 5}
    assert spread(drivers, empty) == placed                    # the same plan every time
    crowded = spread([(f'c{k}', ('hci2',)) for k in range(7)], empty)
    assert list(crowded.values()) == ['hci2'] * 5 + [None, None]
    assert spread([('c1', ())], empty) == {'c1': 'hci0'}       # BlueZ's default adapter


def test_a_refusal_teaches_every_driver_the_adapters_limit():
    assert ble_adapters.learned_limit('hci3') is None
    ble_adapters.learn_limit('hci3', 5)
    assert ble_adapters.learned_limit('hci3') == 5
    states = ble_adapters.adapter_states({'/org/bluez/hci3': {'org.bluez.Adapter1': {}}})
    assert states == [AdapterState('hci3', 0, True, 5, '')]


def test_one_connection_attempt_per_adapter_across_drivers_of_this_machine(tmp_path):
    held_by_other = subprocess.Popen(
        [sys.executable, '-c', 'import asyncio, sys\n'
         'from toio_navigator.cube.ble_adapters import attempt_lock\n'
         'async def hold():\n'
         '    async with attempt_lock("hci0", "/other/cube_driver", 5.0):\n'
         '        print("held", flush=True); await asyncio.sleep(1.0)\n'
         'asyncio.run(hold())\n'], stdout=subprocess.PIPE, text=True)
    try:
        assert held_by_other.stdout.readline().strip() == 'held'

        async def mine():
            loop = asyncio.get_running_loop()
            started = loop.time()
            assert ble_adapters.attempt_running('hci0') and not ble_adapters.attempt_running('hci1')
            async with ble_adapters.attempt_lock('hci1', '/cube1/cube_driver', 1.0):
                pass                                          # another adapter: at once
            async with ble_adapters.attempt_lock('hci0', '/cube1/cube_driver', 5.0):
                return loop.time() - started
        waited = asyncio.run(mine())
    finally:
        held_by_other.wait(timeout=10)
    assert 0.5 < waited < 3.0, waited

    async def too_long():
        async with ble_adapters.attempt_lock('hci0', '/a', 1.0):
            async with ble_adapters.attempt_lock('hci0', '/b', 0.2):
                pass
    with pytest.raises(TransportError, match="adapter hci0 was busy with other drivers' connection attempts"):
        asyncio.run(too_long())


def test_a_machine_without_a_system_bus_or_without_bluez_is_named_as_such(tmp_path, monkeypatch):
    with pytest.raises(RadioUnavailable) as failed:
        asyncio.run(ble_adapters.bluez_adapters(2.0))
    assert 'no D-Bus system bus at unix:path=' in str(failed.value)
    assert 'run `toio-nav fake-bluez`' in str(failed.value)
    if find_dbus_daemon() is None:
        pytest.skip('dbus-daemon is not installed: no bus without BlueZ to try')
    with PrivateBus(tmp_path / 'bus') as bus:
        monkeypatch.setenv('DBUS_SYSTEM_BUS_ADDRESS', bus.address)
        with pytest.raises(RadioUnavailable) as failed:
            asyncio.run(ble_adapters.bluez_adapters(2.0))
    assert f'BlueZ (org.bluez) is not running on the system bus {bus.address}' in str(failed.value)
    assert 'apt install bluez' in str(failed.value) and 'toio-nav fake-bluez' in str(failed.value)
