"""Run a simulated world in real time and the virtual BlueZ that serves its cubes, on a thread of their own.

:class:`BluezHost` is what tests, benchmarks and ``toio-nav fake-bluez`` use: a private ``dbus-daemon``, a
:class:`~toio_navigator.sim.world.World` stepped by wall-clock time (as mat_sim steps it), the virtual cube
firmware and :class:`~toio_navigator.sim.bluez.service.VirtualBluez`, all on one asyncio loop in a background
thread. Everything that touches the world or the service from outside goes through :meth:`BluezHost.call`, which
runs it on that loop.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from toio_navigator.sim.bluez.bus import PrivateBus
from toio_navigator.sim.bluez.service import LE_SUPERVISION_TIMEOUT_S, VirtualBluez
from toio_navigator.sim.virtual_cube import FirmwareParams, VirtualCubes, cube_name
from toio_navigator.sim.world import World, WorldParams


class RealTimeStepper:
    """Advances a World by wall-clock time x ``speed`` in its fixed physics steps.

    :meth:`arrival_time` is the firmware's clock: the simulated time of the last step plus the wall-clock time
    since, so a BLE write landing between two 20 ms steps is timed when it arrives (the 45 ms motor-write rule
    and the command delay hold at that resolution). A stalled loop advances at most ``max_catch_up_s``.
    """

    def __init__(self, world: World, speed: float = 1.0, tick_s: float | None = None,
                 max_catch_up_s: float = 0.25) -> None:
        tick_s = world.params.dt if tick_s is None else tick_s      # by default once per physics step, as mat_sim
        if not speed > 0 or not tick_s > 0 or not max_catch_up_s > 0:
            raise ValueError('speed, tick_s and max_catch_up_s must be > 0')
        self.world, self.speed, self.tick_s, self.max_catch_up_s = world, speed, tick_s, max_catch_up_s
        self._elapsed = world.time
        self._last = time.monotonic()

    def arrival_time(self) -> float:
        return self._elapsed + min((time.monotonic() - self._last) * self.speed, self.max_catch_up_s)

    def step(self) -> None:
        now = time.monotonic()
        advance = min((now - self._last) * self.speed, self.max_catch_up_s)
        self._last = now
        self._elapsed += advance
        self.world.step(advance)

    async def run(self) -> None:
        self._last = time.monotonic()
        while True:
            await asyncio.sleep(self.tick_s)
            self.step()


class BluezHost:
    """N virtual cubes on a mat, served as BLE devices by a virtual BlueZ on a private system bus.

    ``poses``: (N, 3) x, y (mat units), heading (rad, clockwise). ``bus_dir`` fixes the bus socket's directory
    (the address then survives restarts). Extra keyword arguments go to :class:`VirtualBluez` (``radio``: the
    adapters and the air, :class:`~toio_navigator.sim.bluez.radio.RadioParams`; its defaults include random link
    aborts and failed attempts, ``RadioParams().calm()`` has none). Attach world listeners (e.g. a contact
    tracker) before :meth:`start`.
    """

    def __init__(self, poses: Sequence[Sequence[float]] | np.ndarray, *, mat: str = 'collection',
                 firmware_version: str = '2.4.0', world_params: WorldParams | None = None, seed: int = 0,
                 bus_dir: str | Path | None = None, **bluez_options: Any) -> None:
        self.world = World(poses, mat=mat, params=world_params, seed=seed)
        self.stepper = RealTimeStepper(self.world)
        self.firmware = VirtualCubes(self.world, FirmwareParams(version=firmware_version),
                                     names=[cube_name(i) for i in range(self.world.n)],
                                     arrival_clock=self.stepper.arrival_time)
        self.bluez = VirtualBluez(self.firmware, **bluez_options)
        self.bus = PrivateBus(bus_dir)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stepping: asyncio.Task | None = None

    @property
    def address(self) -> str:
        return self.bus.address

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment in which bleak finds this BlueZ (DBUS_SYSTEM_BUS_ADDRESS)."""
        return self.bus.environment(base)

    @contextlib.contextmanager
    def as_system_bus(self) -> Iterator[BluezHost]:
        """Within: bleak in this process finds this BlueZ (DBUS_SYSTEM_BUS_ADDRESS is set, then restored)."""
        previous = os.environ.get('DBUS_SYSTEM_BUS_ADDRESS')
        os.environ['DBUS_SYSTEM_BUS_ADDRESS'] = self.address
        try:
            yield self
        finally:
            if previous is None:
                os.environ.pop('DBUS_SYSTEM_BUS_ADDRESS', None)
            else:
                os.environ['DBUS_SYSTEM_BUS_ADDRESS'] = previous

    # ------------------------------------------------------------------------------------ life cycle
    def start(self) -> str:
        """Start the bus, the world and the service; returns the bus address."""
        address = self.bus.start()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name='virtual_bluez', daemon=True)
        self._thread.start()
        try:
            self.call(self._begin)
        except BaseException:
            self.stop()
            raise
        return address

    async def _begin(self) -> None:
        self._stepping = asyncio.get_running_loop().create_task(self.stepper.run())
        await self.bluez.start(self.bus.address)

    def stop(self) -> None:
        """Stop the service (cleanly), the world and the bus. Safe to call twice."""
        if self.loop is not None and self._thread is not None and self._thread.is_alive():
            try:
                self.call(self._end, timeout=10.0)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(timeout=10)
                self.loop.close()
        self.loop = self._thread = None
        self.bus.stop()

    async def _end(self) -> None:
        await self.bluez.stop()
        if self._stepping is not None:
            self._stepping.cancel()

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float = 30.0) -> Any:
        """Run ``fn(*args)`` (a plain function or a coroutine function) on the host's loop; its result."""
        if self.loop is None:
            raise RuntimeError('the host is not running: call start() first')

        async def run() -> Any:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        future = asyncio.run_coroutine_threadsafe(run(), self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f'{getattr(fn, "__name__", fn)} did not finish within {timeout} s') from None

    # ------------------------------------------------------------------------------------ what tests do
    def kill_bluez(self, link_timeout_s: float = LE_SUPERVISION_TIMEOUT_S) -> None:
        """BlueZ crashes (the bus and the world go on); see :meth:`VirtualBluez.kill`."""
        self.call(self.bluez.kill, link_timeout_s)

    def restart_bluez(self) -> None:
        self.call(self.bluez.start, self.bus.address)

    def vanish(self, index: int, remove: bool = True) -> None:
        self.call(self.bluez.vanish, index, remove)

    def reappear(self, index: int) -> None:
        self.call(self.bluez.reappear, index)

    def poses(self) -> np.ndarray:
        """(N, 3) true poses now."""
        return self.call(lambda: self.world.poses.copy())

    def writes(self, index: int) -> list:
        """Every write that reached cube ``index`` so far (:class:`~toio_navigator.sim.bluez.service.Write`)."""
        return self.call(lambda: list(self.bluez.links[index].writes))

    def __enter__(self) -> 'BluezHost':
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()
