#!/usr/bin/env python3
"""How much faster than real time the simulator runs: N cubes driven through the simulated transport.

Each cube is connected through a SimTransport with every notification subscribed and decoded (as the cube
driver does), gets a fresh random 0x02 motor command every 100 ms and the world advances in virtual time.
Prints, per cube count, simulated seconds per wall-clock second and per CPU second of this process (the best
of --repeat runs; CPU time is the fair number on a shared, loaded machine), next to the physics-only ratio
(the same world without firmware, transports or decoding) measured in the same run as the baseline.

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
from toio_navigator.sim.transport import sim_transports  # noqa: E402
from toio_navigator.sim.virtual_cube import VirtualCubes  # noqa: E402
from toio_navigator.sim.world import World, grid_poses  # noqa: E402

TARGETS = {10: 50.0, 100: 5.0}     # required real-time ratios (issue 4)
COMMAND_PERIOD_S = 0.1


class Clock:
    """Wall-clock and CPU seconds since creation."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def ratios(self, simulated: float) -> tuple[float, float]:
        wall = time.perf_counter() - self.wall
        cpu = max(time.process_time() - self.cpu, 1e-9)
        return simulated / wall, simulated / cpu


def physics_only(n: int, seconds: float, seed: int) -> tuple[float, float]:
    world = World(grid_poses(n, spacing=40 if n <= 100 else 30), seed=seed)
    rng = np.random.default_rng(seed)
    clock = Clock()
    while world.time < seconds:
        for i in range(n):
            world.set_wheels(i, int(rng.integers(-80, 81)), int(rng.integers(-80, 81)), 0.3)
        world.step(COMMAND_PERIOD_S)
    return clock.ratios(world.time)


async def full_stack(n: int, seconds: float, seed: int) -> tuple[float, float, int]:
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
        await link.write('config', p.ConfigWrite.motor_speed_notification(True).encode())
    rng = np.random.default_rng(seed)
    clock = Clock()
    while world.time < seconds:
        for link in links:
            left, right = int(rng.integers(-80, 81)), int(rng.integers(-80, 81))
            await link.write('motor', p.MotorControlTimed(left, right, 30).encode())
        world.step(COMMAND_PERIOD_S)
    wall, cpu = clock.ratios(world.time)
    for link in links:
        await link.disconnect()
    return wall, cpu, received


def best(runs: list[tuple]) -> tuple:
    return tuple(max(values) for values in zip(*runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--cubes', type=int, nargs='+', default=[10, 100], help='cube counts (default 10 100)')
    parser.add_argument('--seconds', type=float, default=10.0, help='simulated seconds per run (default 10)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--repeat', type=int, default=3, help='runs per measurement; the best counts (default 3)')
    args = parser.parse_args()
    if args.seconds <= 0 or args.repeat < 1 or any(n < 1 for n in args.cubes):
        print('sim_realtime: --seconds must be > 0, --repeat >= 1 and --cubes >= 1', file=sys.stderr)
        return 2
    failed = False
    print(f'{"cubes":>5} {"physics wall":>12} {"physics cpu":>11} {"full wall":>10} {"full cpu":>9} '
          f'{"notif/s":>8}  target (full stack, CPU time)')
    for n in args.cubes:
        base_wall, base_cpu = best([physics_only(n, args.seconds, args.seed) for _ in range(args.repeat)])
        wall, cpu, received = best([asyncio.run(full_stack(n, args.seconds, args.seed)) for _ in range(args.repeat)])
        target = TARGETS.get(n)
        verdict = '' if target is None else f'{target:>4.0f}x {"ok" if cpu >= target else "MISSED"}'
        failed |= target is not None and cpu < target
        print(f'{n:>5} {base_wall:>11.1f}x {base_cpu:>10.1f}x {wall:>9.1f}x {cpu:>8.1f}x '
              f'{received / args.seconds:>8.0f}  {verdict}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
