#!/usr/bin/env python3
"""How much faster than real time the simulator runs: N cubes driven through the simulated transport.

Each cube is connected through a SimTransport with every notification subscribed and decoded (as the cube
driver does), gets a fresh random 0x02 motor command every 100 ms and the world advances in virtual time.
Prints, per cube count, simulated seconds per wall-clock second, next to the physics-only ratio (the same
world without firmware, transports or decoding) measured in the same run as the baseline.

    python tools/bench/sim_realtime.py                # 10 and 100 cubes
    python tools/bench/sim_realtime.py --cubes 30 --seconds 5
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.cube.sim_transport import sim_transports  # noqa: E402
from toio_navigator.sim.virtual_cube import VirtualCubes  # noqa: E402
from toio_navigator.sim.world import World, grid_poses  # noqa: E402

TARGETS = {10: 50.0, 100: 5.0}     # required real-time ratios (issue 4)
COMMAND_PERIOD_S = 0.1


def physics_only(n: int, seconds: float, seed: int) -> float:
    world = World(grid_poses(n, spacing=40 if n <= 100 else 30), seed=seed)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    while world.time < seconds:
        for i in range(n):
            world.set_wheels(i, int(rng.integers(-80, 81)), int(rng.integers(-80, 81)), 0.3)
        world.step(COMMAND_PERIOD_S)
    return world.time / (time.perf_counter() - start)


async def full_stack(n: int, seconds: float, seed: int) -> tuple[float, int]:
    world = World(grid_poses(n, spacing=40 if n <= 100 else 30), seed=seed)
    cubes = VirtualCubes(world)
    links = sim_transports(cubes)
    received = 0

    def on_notify(char: p.Characteristic, data: bytes) -> None:
        nonlocal received
        p.decode(char, data)
        received += 1

    for link in links:
        await link.connect()
        for char in ('id', 'motor', 'sensor', 'button', 'battery', 'config'):
            await link.start_notify(char, on_notify)
        await link.write('config', p.encode_motor_speed_notification(True))
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    while world.time < seconds:
        for link in links:
            await link.write('motor', p.encode_motor(int(rng.integers(-80, 81)), int(rng.integers(-80, 81)), 300))
        world.step(COMMAND_PERIOD_S)
    ratio = world.time / (time.perf_counter() - start)
    for link in links:
        await link.disconnect()
    return ratio, received


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--cubes', type=int, nargs='+', default=[10, 100], help='cube counts (default 10 100)')
    parser.add_argument('--seconds', type=float, default=10.0, help='simulated seconds per run (default 10)')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    if args.seconds <= 0 or any(n < 1 for n in args.cubes):
        print('sim_realtime: --seconds must be > 0 and --cubes >= 1', file=sys.stderr)
        return 2
    failed = False
    print(f'{"cubes":>5} {"physics only":>13} {"full stack":>11} {"notif/s sim":>12} {"target":>7}')
    for n in args.cubes:
        baseline = physics_only(n, args.seconds, args.seed)
        ratio, received = asyncio.run(full_stack(n, args.seconds, args.seed))
        target = TARGETS.get(n)
        verdict = '' if target is None else f'{target:>5.0f}x {"ok" if ratio >= target else "MISSED"}'
        failed |= target is not None and ratio < target
        print(f'{n:>5} {baseline:>12.1f}x {ratio:>10.1f}x {received / args.seconds:>12.0f} {verdict}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
