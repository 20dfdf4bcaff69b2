"""``toio-nav web BAG``: a recorded run in the web console's page, with a time slider (play, pause, speed, seek).

The same page, drawing code and view as the live console (``ros2 run toio_navigator web_console``); no ROS is
needed, the bag is read with rosbags. Runs until Ctrl-C.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from toio_navigator.bags.replay import ReplayError
from toio_navigator.lifecycle import StopRequest
from toio_navigator.settings.spec import SettingError
from toio_navigator.settings.web_console import DEFAULT_PORT, PARAMS, web_settings
from toio_navigator.web.commands import REPLAY_OPS, Command
from toio_navigator.web.replay import Player, load
from toio_navigator.web.server import ConsoleServer, ServerError, lab_addresses, write_address

SPEEDS = (0.1, 16.0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', type=Path, help='rosbag2 directory or .mcap file (e.g. out/demo/bag)')
    parser.add_argument('--port', type=int, default=DEFAULT_PORT,
                        help=f'TCP port of the page (default {DEFAULT_PORT}; 0 = any free port)')
    parser.add_argument('--lab-network', action='store_true',
                        help='serve every network interface, not only this machine (127.0.0.1)')
    parser.add_argument('--rate', type=float, default=25.0, help='views per second sent to a page (default 25)')
    parser.add_argument('--speed', type=float, default=1.0, help='playback speed (default 1)')
    parser.add_argument('--paused', action='store_true', help='start paused at the beginning (default: playing)')
    parser.add_argument('--address-file', type=Path, default=None, help='write the page\'s address into this file')


class ReplayCommands:
    """The page's replay commands on a :class:`Player` (called in the server's thread)."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self.last = time.monotonic()

    def view(self) -> dict:
        now = time.monotonic()
        self.player.advance(now - self.last)
        self.last = now
        return self.player.snapshot()

    async def handle(self, command: Command) -> tuple[bool, str]:
        p = self.player
        if command.op == 'seek':
            p.seek(command.value)
            return True, f'at {p.t:.1f} s'
        if command.op == 'speed':
            if not SPEEDS[0] <= command.value <= SPEEDS[1]:
                return False, f'speed must be within {SPEEDS[0]:g}..{SPEEDS[1]:g}, got {command.value:g}'
            p.speed = command.value
            return True, f'speed {p.speed:g}x'
        if command.op == 'play':
            p.play()
            return True, 'playing'
        p.playing = False
        return True, f'paused at {p.t:.1f} s'


def run(args: argparse.Namespace) -> int:
    try:
        settings = web_settings({'cubes': ['cube1'], 'port': args.port, 'lab_network': args.lab_network,
                                 'rate_hz': args.rate})
        if not SPEEDS[0] <= args.speed <= SPEEDS[1]:
            raise SettingError('speed', f'must be within {SPEEDS[0]:g}..{SPEEDS[1]:g}, got {args.speed:g}')
        timeline = load(args.bag)
    except (SettingError, ReplayError) as exc:
        print(f'toio-nav web: {str(exc).replace("parameter ", "--").replace("rate_hz", "rate")}', file=sys.stderr)
        return 2
    stale = PARAMS['stale_s'].default
    player = Player(timeline, stale, PARAMS['lost_s'].default, args.speed)
    player.playing = not args.paused
    commands = ReplayCommands(player)
    hello = {'kind': 'replay', 'source': Path(args.bag).name, 'duration': timeline.duration, 'cubes': timeline.cubes}
    server = ConsoleServer(commands.view, commands.handle, hello, timeline.cubes, REPLAY_OPS, settings.host,
                           settings.port, settings.rate_hz)
    stop = StopRequest().install()
    try:
        server.start()
    except ServerError as exc:
        print(f'toio-nav web: {exc}', file=sys.stderr)
        return 2
    try:
        where = server.url()
        if args.lab_network:
            where = ', '.join(server.url(a) for a in lab_addresses()) or where
        scope = 'every network interface' if args.lab_network else 'this machine only'
        print(f'toio-nav web: {timeline.source}: {len(timeline.cubes)} cubes, {timeline.duration:.1f} s, '
              f'{timeline.messages} messages; the page: {where} ({scope}); Ctrl-C stops', flush=True)
        if args.address_file:
            write_address(args.address_file, server.url())
        while not stop:
            stop.wait(0.5)
    finally:
        server.stop()
        stop.restore()
    return 0
