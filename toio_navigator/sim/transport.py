"""The simulated transport: the same bytes as the BLE transport, delivered to a virtual cube in a World.

Routing, reconnects with backoff and the re-sending of settings are inherited from :class:`Transport`, so a
driver cannot tell this link from a bleak one. Who advances the world is up to the caller: a test or the
simulator node calls ``world.step(...)``; an asyncio program runs ``sim.world.run_realtime(world)`` as a task.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from toio_navigator.cube.protocol import Characteristic
from toio_navigator.cube.transport import BackoffPolicy, Transport, TransportError
from toio_navigator.sim.virtual_cube import VirtualCube, VirtualCubes


class SimTransport(Transport):
    """A link to one :class:`VirtualCube`."""

    def __init__(self, cube: VirtualCube, *, backoff: BackoffPolicy | None = None, auto_reconnect: bool = True,
                 io_timeout_s: float = 5.0) -> None:
        super().__init__(backoff=backoff, auto_reconnect=auto_reconnect, io_timeout_s=io_timeout_s)
        self.cube = cube

    @property
    def address(self) -> str:
        return self.cube.address

    async def _open(self) -> None:
        await asyncio.sleep(0)   # a real connect yields to the loop; so does this one
        try:
            self.cube.connect(on_link_lost=self._link_lost)
        except ConnectionRefusedError as exc:
            raise TransportError(str(exc)) from None

    async def _close(self) -> None:
        self.cube.disconnect()

    async def _write(self, char: Characteristic, data: bytes, response: bool) -> None:
        try:
            self.cube.write(char, data)
        except ConnectionError as exc:
            raise TransportError(str(exc)) from None
        await asyncio.sleep(0)

    async def _read(self, char: Characteristic) -> bytes:
        try:
            return self.cube.read(char)
        except ConnectionError as exc:
            raise TransportError(str(exc)) from None

    async def _subscribe(self, char: Characteristic, deliver: Callable[[bytes], None]) -> None:
        self.cube.subscribe(char, deliver)

    async def _unsubscribe(self, char: Characteristic) -> None:
        self.cube.unsubscribe(char)


def sim_transports(cubes: VirtualCubes, **options) -> list[SimTransport]:
    """One (unconnected) transport per simulated cube."""
    return [SimTransport(cube, **options) for cube in cubes.cubes]
