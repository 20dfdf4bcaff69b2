"""`toio-nav bringup --driver-processes per-adapter` (the real profile's default), without ROS and without BlueZ:
the cubes are spread over the adapters as their drivers would spread themselves, each adapter's drivers go into
one process pinned to it, and what no adapter can take (or everything, when BlueZ cannot be asked) shares one
unpinned process. (Live, with 16 cubes on three adapters: test/system/test_ble_lab.py.)"""
from __future__ import annotations

from toio_navigator.cube.ble_adapters import AdapterState
from toio_navigator.launching.driver_groups import plan_groups
from toio_navigator.launching.profiles import plan
from toio_navigator.launching.supervisor import child_command
from toio_navigator.settings.bringup_params import Instance

CUBES = [f'cube{k}' for k in range(1, 7)]


def params(tmp_path, extra: str = ''):
    path = tmp_path / 'lab.yaml'
    path.write_text('/**:\n  ros__parameters:\n    cubes: [' + ', '.join(CUBES) + ']\n'
                    '/**/cube_driver:\n  ros__parameters:\n    transport: ble\n    ble_name: "*"\n'
                    '    ble_adapter: "*"\n' + extra)
    return [path]


def test_each_adapters_drivers_share_one_process_pinned_to_it(tmp_path):
    files = params(tmp_path, '/cube6/cube_driver:\n  ros__parameters:\n    ble_adapter: [hci2]\n')
    states = [AdapterState('hci0', 0), AdapterState('hci1', 1), AdapterState('hci2', 0, limit=1)]
    nodes, pins = plan_groups(plan('real', CUBES), files, {}, states)
    assert [(spec.executable, getattr(spec, 'cubes', ())) for spec, _ns in nodes] == [
        ('cube_drivers@hci0', ('cube1', 'cube2', 'cube4')), ('cube_drivers@hci1', ('cube3', 'cube5')),
        ('cube_drivers@hci2', ('cube6',)), ('navigator', ())]       # the driver with one adapter placed first
    assert pins[Instance('cube_driver', '/cube6')] == {'ble_adapter': 'hci2'}
    assert child_command(nodes[0][0], '', files)[1:5] == ['-m', 'toio_navigator.nodes.cube_driver_group',
                                                          '--cubes', 'cube1,cube2,cube4']


def test_drivers_no_adapter_can_take_and_drivers_without_bluez_share_one_unpinned_process(tmp_path):
    files = params(tmp_path)
    full = [AdapterState('hci0', 3, limit=5)]
    nodes, pins = plan_groups(plan('real', CUBES), files, {}, full)
    assert [(spec.executable, getattr(spec, 'cubes', ())) for spec, _ns in nodes] == [
        ('cube_drivers@hci0', ('cube1', 'cube2')), ('cube_drivers', ('cube3', 'cube4', 'cube5', 'cube6')),
        ('navigator', ())]
    nodes, pins = plan_groups(plan('real', CUBES), files, {}, None)
    assert [spec.executable for spec, _ns in nodes] == ['cube_drivers', 'navigator'] and pins == {}
    # a -p override of the bringup counts as the files do
    routed = {Instance('cube_driver', f'/{c}'): {'ble_adapter': 'hci1'} for c in CUBES}
    nodes, _ = plan_groups(plan('real', CUBES), files, routed, [AdapterState('hci0', 0), AdapterState('hci1', 0)])
    assert [spec.executable for spec, _ns in nodes] == ['cube_drivers@hci1', 'navigator']
