"""A lab of cubes on several adapters, through real bleak, real D-Bus and the virtual BlueZ's air.

Sixteen cubes on three adapters (hci0:7, hci1:7, hci2:5): the real bringup, every driver started at the same
moment, connects every cube from cold within 30 s, then the navigator swaps all 16 across the mat without a
contact, with the drivers of each adapter in one process (the real profile's default) and with ``--single``.
Six cubes on two adapters with the model's default random faults (link aborts, failed attempts; a seed whose
first links abort while the swarm drives): every aborted link comes back and the swarm completes."""
from __future__ import annotations

import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from support.ble_lab import Lab, circle  # noqa: E402
from support.bluez_rig import needs_dbus_daemon  # noqa: E402
from support.lifecycle_probe import bad_lines  # noqa: E402
from toio_navigator.sim.bluez.radio import Faults, RadioParams, parse_adapters  # noqa: E402

pytestmark = [needs_dbus_daemon, pytest.mark.ros]

ADAPTERS = parse_adapters('hci0:7,hci1:7,hci2:5')
CONNECT_S = 30.0


def connect_and_swap(lab: Lab, adapters) -> None:
    assert lab.probe.spin_until(lab.all_connected_once, CONNECT_S + 5), \
        {c: lab.links[c][-1:] for c in lab.cubes if c not in lab.first_connected}
    slowest = max(lab.first_connected.values())
    assert slowest <= CONNECT_S, f'the last cube connected {slowest:.1f} s after the start'
    linked = lab.adapters()
    assert all(linked.count(a.name) <= a.slots for a in adapters) and set(linked) <= {a.name for a in adapters}
    assert lab.probe.spin_until(lab.all_connected, 20)          # (an abort meanwhile: it comes back)
    late = lab.swap(100, 120)
    assert not late, f'not arrived: {late}'
    assert lab.contact_count() == 0, lab.host.call(lambda: list(lab.contacts.events))   # (time, i, j, x, y, speed)


def run_lab(tmp_path, cubes: int, radio: RadioParams, bringup_args: tuple[str, ...] = ()) -> Lab:
    lab = Lab(tmp_path, circle(cubes), radio, bringup_args)
    try:
        connect_and_swap(lab, radio.adapters)
    except BaseException:
        print(lab.close()[-6000:])      # the bringup's last words, for the failure's report
        raise
    return lab


def test_sixteen_cubes_on_three_adapters_connect_from_cold_and_swap_without_contact(tmp_path):
    lab = run_lab(tmp_path, 16, RadioParams(adapters=ADAPTERS).calm())
    assert lab.probe.spin_until(lambda: len(lab.diagnostics) == len(lab.cubes), 10)
    quality = dict(lab.diagnostics)
    err = lab.close()
    assert not bad_lines(err), err[-3000:]
    # each driver's diagnostics carry its link's quality: adapter, interval, positions, latencies, aborts
    for cube, q in quality.items():
        assert q['ble_adapter'] in ('hci0', 'hci1', 'hci2') and q['connection_interval_ms'] == '30', (cube, q)
        assert q['link_aborts'] == '0' and {'write_latency_ms', 'command_latency_ms'} <= set(q), (cube, q)
        assert 40.0 <= float(q['position_rate_hz']) <= 55.0, (cube, q)          # 50 Hz asked


def test_sixteen_cubes_in_one_process_connect_from_cold_and_swap_without_contact(tmp_path):
    lab = run_lab(tmp_path, 16, RadioParams(adapters=ADAPTERS).calm(), ('--single',))
    err = lab.close()
    assert not bad_lines(err), err[-3000:]


#: a seed under which four of the six first links abort 5-14 s after they came up (the bringup's plan puts cube k
#: on hci0 for odd k, hci1 for even k): while the swarm waits for its plan and drives
SEED = 15


def test_links_that_abort_at_the_default_rate_come_back_and_the_swarm_completes(tmp_path):
    radio = RadioParams(adapters=parse_adapters('hci0:7,hci1:7'), seed=SEED)      # the default fault rates
    faults = Faults(radio)
    drawn = [faults.abort_after_s('hci1' if k % 2 else 'hci0', f'5E:00:00:00:00:{k:02X}', 1) for k in range(6)]
    assert sorted(drawn)[3] < 15.0, drawn
    lab = run_lab(tmp_path, 6, radio)
    aborted = lab.host.call(lambda: sum(a.aborts for a in lab.host.bluez.adapters))
    assert lab.probe.spin_until(lambda: len(lab.diagnostics) == len(lab.cubes) and lab.all_connected(), 20)
    quality = dict(lab.diagnostics)
    reconnects = {c: lab.links[c][-1].reconnects for c in lab.cubes}
    err = lab.close()
    assert not bad_lines(err), err[-3000:]
    assert aborted >= 2, aborted
    lost = {c: int(q['link_aborts']) for c, q in quality.items() if int(q['link_aborts'])}
    assert sum(lost.values()) >= 2 and all(reconnects[c] >= n for c, n in lost.items()), (lost, reconnects)
