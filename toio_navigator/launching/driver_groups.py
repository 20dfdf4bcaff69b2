"""``toio-nav bringup --driver-processes per-adapter``: the cube drivers of each Bluetooth adapter in one process.
Plain Python (the adapters are asked of BlueZ over D-Bus), no ROS.

The cubes are spread over the adapters BlueZ offers as the drivers would spread themselves (each takes, of the
adapters its ``ble_adapter`` allows, the one with a free slot and the fewest links:
:func:`toio_navigator.cube.ble_adapters.spread`); each adapter's drivers run in one process
(:mod:`toio_navigator.nodes.cube_driver_group`), pinned to that adapter by a generated override. Drivers of the
simulated link, drivers that no adapter has room for, and all of them when BlueZ cannot be asked, share one
unpinned process (a driver then says for itself what is missing).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from toio_navigator.cube.ble_adapters import AdapterState, bluez_adapters, parse_adapters, spread
from toio_navigator.cube.transport import TransportError
from toio_navigator.settings.bringup_params import Instance, node_values

#: how a bringup runs its cube drivers: a process each, one per adapter, or all of them in one process
DRIVER_PROCESSES = ('per-cube', 'per-adapter', 'one')
GROUP_MODULE = 'toio_navigator.nodes.cube_driver_group'


@dataclass(frozen=True)
class GroupSpec:
    """One process of several cube drivers (as a NodeSpec for the supervisor: executable, module, role)."""
    executable: str            # 'cube_drivers@hci0'
    cubes: tuple[str, ...]
    module: str = GROUP_MODULE
    role: str = 'drivers'
    per_cube: bool = False

    @property
    def args(self) -> list[str]:
        return ['--cubes', ','.join(self.cubes)]


def _wanted(files: list[Path], routed: dict, cube: str) -> tuple[str, tuple[str, ...]]:
    """(transport, adapters) of one cube's driver as the files and the ``-p`` overrides set them."""
    instance = Instance('cube_driver', f'/{cube}')
    values = {**node_values(files, instance), **routed.get(instance, {})}
    try:
        adapters = parse_adapters(values.get('ble_adapter', ''))
    except ValueError:
        adapters = ()           # the driver refuses it with the parameter's own message
    return str(values.get('transport', 'sim')), adapters


def plan_groups(nodes: list, files: list[Path], routed: dict, states: list[AdapterState] | None):
    """(nodes with each adapter's drivers replaced by one GroupSpec, {Instance: {'ble_adapter': name}} pins);
    ``routed``: the bringup's ``-p`` overrides by Instance."""
    drivers = [(spec, ns) for spec, ns in nodes if spec.executable == 'cube_driver']
    if not drivers:
        return nodes, {}
    wanted = {ns.strip('/'): _wanted(files, routed, ns.strip('/')) for _spec, ns in drivers}
    ble = [(cube, adapters) for cube, (transport, adapters) in wanted.items() if transport == 'ble']
    placed = spread(ble, states) if states else {}
    by_adapter: dict[str, list[str]] = {}
    for cube in wanted:
        by_adapter.setdefault(placed.get(cube) or '', []).append(cube)
    groups = [(GroupSpec(f'cube_drivers@{adapter}' if adapter else 'cube_drivers', tuple(cubes)), '')
              for adapter, cubes in sorted(by_adapter.items(), key=lambda item: (not item[0], item[0]))]
    pins = {Instance('cube_driver', f'/{cube}'): {'ble_adapter': adapter}
            for adapter, cubes in by_adapter.items() if adapter for cube in cubes}
    first = nodes.index(drivers[0])
    rest = [n for n in nodes if n not in drivers]
    return rest[:first] + groups + rest[first:], pins


def bluez_states(timeout_s: float = 5.0) -> tuple[list[AdapterState] | None, str]:
    """BlueZ's adapters now, or (None, why not)."""
    try:
        return asyncio.run(bluez_adapters(timeout_s)), ''
    except TransportError as exc:
        return None, str(exc)
    except ImportError as exc:          # no dbus-fast (not Linux): nothing to ask
        return None, f'cannot ask BlueZ: {exc}'
