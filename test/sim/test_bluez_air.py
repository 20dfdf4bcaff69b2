"""The air of the virtual BlueZ, through real bleak and real D-Bus (no ROS): connection slots and the refusal of a
full adapter, one connection attempt per adapter, packets that move only at connection events (a bounded number
each), a cube's interval request granted within the adapter's limits, scanning starved by short intervals, and
the seeded aborts and failed attempts. The model's rules without a bus are at the end."""
from __future__ import annotations

import asyncio
import math
import time
from contextlib import contextmanager

import pytest

bleak = pytest.importorskip('bleak')

from support.bluez_rig import needs_dbus_daemon  # noqa: E402
from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.cube.ble_scan import scan  # noqa: E402
from toio_navigator.sim.bluez.host import BluezHost  # noqa: E402
from toio_navigator.sim.bluez.radio import (  # noqa: E402
    AdapterAir,
    Faults,
    LinkAir,
    RadioParams,
    grant_interval,
    parse_adapters,
)

C = p.Characteristic
ROW = [(80.0 + 50.0 * k, 250.0, 0.0) for k in range(7)]


@contextmanager
def air(cubes: int, adapters: str = 'hci0:7', **params):
    """A virtual BlueZ with these adapters and air (no random faults unless asked), bleak of this process on it."""
    radio = RadioParams(adapters=parse_adapters(adapters), **{'aborts_per_link_min': 0.0, 'failed_attempts': 0.0,
                                                              **params})
    host = BluezHost(ROW[:cubes], radio=radio)
    host.start()
    try:
        with host.as_system_bus():
            yield host
    finally:
        host.stop()


def run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def find(cube_id: str, adapter: str = 'hci0'):
    found = await scan(names=[cube_id], timeout_s=5.0, adapter=adapter)
    assert found, f'{cube_id} not heard on {adapter}'
    return found[0].device


def client(device, adapter: str = 'hci0') -> bleak.BleakClient:
    return bleak.BleakClient(device, timeout=10.0, bluez={'adapter': adapter})


def known_on(host: BluezHost, adapter: int, cube: int) -> bool:
    return host.call(lambda: host.bluez.adapters[adapter].devices[cube].device is not None)


@needs_dbus_daemon
def test_a_full_adapter_refuses_the_next_link_and_hides_the_device_for_a_while():
    with air(3, 'hci0:2,hci1:7', full_hide_s=1.0) as host:
        async def scenario():
            held = [client(await find(i)) for i in ('a0a', 'b0a')]
            for c in held:
                await c.connect()
            third = client(await find('c0a'))
            with pytest.raises(bleak.exc.BleakDBusError, match='le-connection-concurrent-connection-limit'):
                await third.connect()
            gone = not known_on(host, 0, 2)
            hidden = await scan(names=['c0a'], timeout_s=0.6, adapter='hci0')     # still hidden from hci0
            elsewhere = client(await find('c0a', 'hci1'), 'hci1')                  # the other adapter has room
            await elsewhere.connect()
            linked = host.call(lambda: [r.adapter for r in host.bluez.links])
            for c in (*held, elsewhere):
                await c.disconnect()
            return gone, hidden, linked
        gone, hidden, linked = run(scenario())
    assert gone, 'the refused device should disappear from the full adapter'
    assert hidden == []
    assert linked == ['hci0', 'hci0', 'hci1']


@needs_dbus_daemon
def test_one_connection_attempt_per_adapter_a_second_one_is_told_in_progress():
    with air(3, 'hci0:7,hci1:7', setup_s=0.4) as host:
        async def scenario():
            first, second = client(await find('a0a')), client(await find('b0a'))
            other = client(await find('c0a', 'hci1'), 'hci1')
            results = await asyncio.gather(first.connect(), second.connect(), other.connect(),
                                           return_exceptions=True)
            for c in (first, second, other):
                if c.is_connected:
                    await c.disconnect()
            return results
        results = run(scenario())
        attempts = host.call(lambda: [a.attempts for a in host.bluez.adapters])
    failed = [r for r in results[:2] if isinstance(r, Exception)]
    assert len(failed) == 1 and 'org.bluez.Error.InProgress' in str(failed[0]), results
    assert not isinstance(results[2], Exception), results[2]          # another adapter: its own attempt
    assert attempts == [1, 1]                                          # the refused one was no attempt


@needs_dbus_daemon
def test_notifications_and_writes_move_at_connection_events_and_a_request_changes_the_interval():
    with air(1, min_interval_ms=15.0):
        async def scenario():
            arrivals, config = [], []
            async with client(await find('a0a')) as c:
                await c.start_notify(C.ID_INFORMATION.value, lambda _c, _d: arrivals.append(time.monotonic()))
                await c.start_notify(C.CONFIGURATION.value, lambda _c, d: config.append(bytes(d)))
                await c.write_gatt_char(C.CONFIGURATION.value, p.ConfigWrite.id_notification(1, p.ID_ALWAYS).encode(),
                                        response=True)
                await asyncio.sleep(0.3)
                arrivals.clear()
                started = time.monotonic()
                await c.write_gatt_char(C.CONFIGURATION.value, bytes.fromhex('32 00'), response=True)
                request_s = time.monotonic() - started
                await asyncio.sleep(1.0)
                at_30 = list(arrivals)
                # ask for 7.5 ms: the adapter's floor here is 15 ms (12 units), granted some events later
                await c.write_gatt_char(C.CONFIGURATION.value, bytes.fromhex('30 00 06 00 06 00'), response=True)
                await asyncio.sleep(0.5)
                await c.write_gatt_char(C.CONFIGURATION.value, bytes.fromhex('32 00'), response=True)
                await asyncio.sleep(0.1)
            return at_30, request_s, config
        at_30, request_s, config = run(scenario())
    gaps = [b - a for a, b in zip(at_30, at_30[1:])]
    # the cube notifies every 20 ms (each world step); they arrive at 30 ms connection events: one or two per event
    assert 45 <= len(at_30) <= 55, len(at_30)
    bunched = sum(g < 0.005 for g in gaps)
    assert bunched >= 8, f'no two notifications shared an event: {sorted(round(g * 1000) for g in gaps)}'
    assert sorted(gaps)[len(gaps) // 2] < 0.035, sorted(gaps)          # mostly one event apart
    assert 0.015 <= request_s <= 0.2, request_s     # carried at one event, answered at the next
    assert bytes.fromhex('b2 00 18 00') in config   # 24 x 1.25 = 30 ms
    assert config[-1] == bytes.fromhex('b2 00 0c 00')     # 15 ms: the request, within the adapter's limit


@needs_dbus_daemon
def test_a_connection_event_carries_a_bounded_number_of_packets_and_the_cube_drops_what_does_not_fit():
    with air(1, packets_per_event=1, queue_packets=4, initial_interval_ms=40.0) as host:
        async def scenario():
            arrivals = []
            async with client(await find('a0a')) as c:
                await c.start_notify(C.ID_INFORMATION.value, lambda _c, _d: arrivals.append(time.monotonic()))
                await c.write_gatt_char(C.CONFIGURATION.value, p.ConfigWrite.id_notification(1, p.ID_ALWAYS).encode(),
                                        response=True)
                await asyncio.sleep(0.3)
                arrivals.clear()
                dropped = host.call(lambda: host.bluez.adapters[0].devices[0].air.dropped)
                await asyncio.sleep(2.0)
                dropped = host.call(lambda: host.bluez.adapters[0].devices[0].air.dropped) - dropped
            return arrivals, dropped
        arrivals, dropped = run(scenario())
    # 50 positions a second, one packet per 40 ms event: 25 arrive, the rest is dropped by the cube's full queue
    assert 44 <= len(arrivals) <= 52, len(arrivals)
    assert 40 <= dropped <= 56, dropped


@needs_dbus_daemon
def test_links_at_short_intervals_leave_no_air_to_hear_another_cube():
    with air(4, 'hci0:7,hci1:7', initial_interval_ms=7.5) as host:
        async def scenario():
            held = [client(await find(i)) for i in ('a0a', 'b0a', 'c0a')]
            for c in held:
                await c.connect()
            loads = host.call(lambda: [a.air.load for a in host.bluez.adapters])
            starved = await scan(names=['d0a'], timeout_s=1.5, adapter='hci0')
            heard_elsewhere = await scan(names=['d0a'], timeout_s=1.5, adapter='hci1')
            for c in held:
                await c.disconnect()
            return loads, starved, heard_elsewhere
        loads, starved, heard_elsewhere = run(scenario())
    assert loads == [pytest.approx(1.0), 0.0]        # 3 x 2.5 ms per 7.5 ms
    assert starved == [] and [c.name for c in heard_elsewhere] == ['toio-d0a']


@needs_dbus_daemon
def test_seeded_faults_a_failed_attempt_is_retried_by_bleak_and_links_abort_at_their_drawn_times():
    def faults(seed: int) -> Faults:
        return Faults(RadioParams(failed_attempts=0.5, aborts_per_link_min=20.0, seed=seed))
    # a seed whose first attempt fails, whose second succeeds, and whose first link lasts less than 4 s
    seed = next(s for s in range(200) if faults(s).attempt_fails('hci0', 1) and not faults(s).attempt_fails('hci0', 2)
                and faults(s).abort_after_s('hci0', '5E:00:00:00:00:00', 1) < 4.0)
    lasts = faults(seed).abort_after_s('hci0', '5E:00:00:00:00:00', 1)
    with air(1, failed_attempts=0.5, aborts_per_link_min=20.0, seed=seed) as host:
        async def scenario():
            c = bleak.BleakClient(await find('a0a'), timeout=10.0)
            await c.connect()
            connected = time.monotonic()
            while c.is_connected and time.monotonic() < connected + lasts + 5.0:
                await asyncio.sleep(0.01)
            return time.monotonic() - connected
        lived = run(scenario(), timeout=lasts + 20.0)
        attempts, aborts = host.call(lambda: (host.bluez.adapters[0].attempts, host.bluez.adapters[0].aborts))
    assert attempts == 2, 'bleak should have tried again after the failed attempt'
    assert aborts == 1 and lived == pytest.approx(lasts, abs=0.5), (lived, lasts)


# ------------------------------------------------------------------------------------------------ the rules

def test_a_cube_request_is_honoured_within_the_adapters_limits():
    params = RadioParams(min_interval_ms=15.0, max_interval_ms=100.0)
    assert grant_interval(30.0, 10.0, 100.0, params) == 30.0        # the default request keeps the interval
    assert grant_interval(30.0, 7.5, 7.5, params) == 15.0           # below the floor: the floor
    assert grant_interval(30.0, 40.0, 50.0, params) == 40.0         # the nearest bound of the request
    assert grant_interval(30.0, None, 20.0, params) == 20.0         # no preference below 20 ms
    assert grant_interval(30.0, 200.0, 400.0, params) == 100.0      # above the ceiling: the ceiling


def test_the_air_of_an_adapter_is_shared_by_its_links_and_what_is_left_goes_to_scanning():
    class Link:
        def __init__(self, interval_ms):
            self.interval_ms = interval_ms
    adapter = AdapterAir(RadioParams())
    adapter.links.update(Link(30.0) for _ in range(7))
    assert adapter.load == pytest.approx(7 * 2.5 / 30) and adapter.scan_share == pytest.approx(1 - 7 / 12)
    heard = sum(adapter.heard('x') for _ in range(100))
    assert heard == pytest.approx(100 * adapter.scan_share, abs=1)    # the share of its adverts, deterministic
    adapter.links.update(Link(7.5) for _ in range(3))
    assert adapter.scan_share == 0.0 and not any(adapter.heard('y') for _ in range(50))


def test_a_loop_run_late_by_a_busy_host_thins_no_air_the_missed_events_carry_their_packets_at_once():
    async def scenario():
        link = LinkAir(AdapterAir(RadioParams(packets_per_event=3, queue_packets=16, initial_interval_ms=30.0)))
        moved: list[float] = []
        for _ in range(12):
            assert link.to_central(lambda: moved.append(time.monotonic()))
        t0 = time.monotonic()
        time.sleep(0.2)             # the host holds the loop for about six connection events
        await asyncio.sleep(0.1)
        link.close()
        return [t - t0 for t in moved]
    moved = asyncio.run(scenario())
    # a real controller delivered 3 packets at each of the events the loop missed: all 12 move at its first run
    assert len(moved) == 12 and max(moved) - min(moved) < 0.01, moved


def test_faults_depend_only_on_the_seed_and_what_they_are_drawn_for():
    one, same, other = (Faults(RadioParams(seed=s)) for s in (1, 1, 2))
    draws = [one.abort_after_s('hci0', 'A', k) for k in range(1, 6)]
    assert draws == [same.abort_after_s('hci0', 'A', k) for k in range(1, 6)]
    assert draws != [other.abort_after_s('hci0', 'A', k) for k in range(1, 6)]
    assert all(d > 0 and math.isfinite(d) for d in draws)
    rates = [sum(Faults(RadioParams(seed=s)).attempt_fails('hci0', n) for n in range(1, 1001)) for s in (1, 2)]
    assert all(30 <= r <= 70 for r in rates), rates        # 5 % by default
    assert Faults(RadioParams().calm()).abort_after_s('hci0', 'A', 1) == math.inf


def test_adapters_are_given_as_names_and_slots_and_bad_ones_are_refused():
    assert [(a.name, a.slots) for a in parse_adapters('hci0:7,hci1:7,hci2:5')] == \
        [('hci0', 7), ('hci1', 7), ('hci2', 5)]
    assert [(a.name, a.slots) for a in parse_adapters('hci3')] == [('hci3', 7)]
    for bad, message in (('hci0:0', 'must be 1..64'), ('hci0,hci0', 'named twice'), ('', 'not NAME'),
                         ('hci 0', 'not NAME')):
        with pytest.raises(ValueError, match=message):
            parse_adapters(bad)
    with pytest.raises(ValueError, match='initial_interval_ms'):
        RadioParams(initial_interval_ms=5.0)


@needs_dbus_daemon
def test_fake_bluez_takes_its_adapters_and_air_from_the_command_line(tmp_path, capsys):
    import subprocess  # noqa: PLC0415 (only this test runs the command)
    import sys  # noqa: PLC0415

    from toio_navigator import cli  # noqa: PLC0415
    child = ('import asyncio, bleak\n'
             'async def main():\n'
             '    found = await bleak.BleakScanner.discover(timeout=0.8, bluez={"adapter": "hci2"})\n'
             '    print(sorted(d.name for d in found))\n'
             'asyncio.run(main())\n')
    params = tmp_path / 'cubes.yaml'
    done = subprocess.run([sys.executable, '-m', 'toio_navigator.cli', 'fake-bluez', '--cubes', '2', '--adapters',
                           'hci0:7,hci1:7,hci2:5', '--calm', '--status-period', '0.4', '--params-out', str(params),
                           '--', sys.executable, '-c', child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "['toio-a0a', 'toio-b0a']" in done.stdout                       # heard on the third adapter
    assert 'adapters hci0:7,hci1:7,hci2:5 (name:slots)' in done.stdout and 'no random faults' in done.stdout
    status = [line for line in done.stdout.splitlines() if line.startswith('fake-bluez: toio-')]
    assert status and status[0].count(' free   (') == 2 and ' | ' in status[0]     # today's form, one per cube
    assert 'fake-bluez adapters: hci0 0/7 links, air 0%, hci1 0/7 links, air 0%, hci2 0/5 links, air 0%' \
        in done.stdout
    assert '    ble_adapter: "*"' in params.read_text()                 # several adapters: any with a free slot
    for bad, message in ((['--adapters', 'hci0:0'], 'the slots of hci0 must be 1..64'),
                         (['--failed-attempts', '1'], 'failed_attempts must be within [0, 1)'),
                         (['--interval-ms', '2'], 'initial_interval_ms')):
        assert cli.main(['fake-bluez', *bad]) == 2
        assert message in capsys.readouterr().err


@needs_dbus_daemon
def test_ble_check_lists_adapters_links_cubes_heard_and_how_a_parameter_file_spreads(tmp_path, capsys):
    from toio_navigator import cli  # noqa: PLC0415 (the command, in this process)
    from toio_navigator.sim.bluez.cli import driver_parameters  # noqa: PLC0415
    with air(3, 'hci0:7,hci1:7'):
        params = tmp_path / 'cubes.yaml'
        params.write_text(driver_parameters(['a0a', 'b0a', 'c0a', 'Zz9'], adapters=2))

        async def linked_and_checked():
            async with client(await find('a0a')):
                return await asyncio.to_thread(cli.main, ['ble-check', '--scan-s', '1.0', '--params-file',
                                                          str(params), '--ask-firmware'])
        assert run(linked_and_checked(), timeout=60) == 0
    out = capsys.readouterr().out
    assert 'hci0     00:00:5E:00:53:01  yes      1      not learned (taken as 7)' in out
    assert 'linked: toio-a0a (5E:00:00:00:00:00)' in out
    assert 'toio cubes heard in 1 s or linked: 3' in out
    assert 'toio-b0a             b0a  5E:00:00:00:00:01  hci0 -50, hci1 -54         2.4.0' in out   # asked
    assert 'toio-a0a             a0a  5E:00:00:00:00:00  linked (not advertising)   >= 2.4.0 (by its name)' \
        in out
    # hci0 has a link already: the first driver goes to hci1, the others alternate (ties by name)
    assert 'cube1      a0a                *                hci1               toio-a0a (linked)' in out
    assert 'cube4      Zz9                *                hci0               NOT heard' in out
