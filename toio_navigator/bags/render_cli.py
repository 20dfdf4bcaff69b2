"""`toio-nav render BAG --out run.png|run.gif`: draw a recorded run (mat, cubes, trajectories, waypoints, goals,
contacts; for explorer bags the belief grid, MDF progress and fastest path)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toio_navigator.bags.recording import ReplayError
from toio_navigator.bags.render import read_run, save_gif, save_png
from toio_navigator.input_files import InputError, check_output_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', type=Path, help='rosbag2 directory or .mcap file')
    parser.add_argument('--out', type=Path, required=True, help='picture to write: .png (the end) or .gif (animated)')
    parser.add_argument('--frames', type=int, default=40, help='GIF: number of frames (default 40)')
    parser.add_argument('--fps', type=float, default=8.0, help='GIF: frames per second (default 8)')


def run(args: argparse.Namespace) -> int:
    suffix = args.out.suffix.lower()
    if suffix not in ('.png', '.gif'):
        print(f'toio-nav render: --out {args.out}: use a .png or .gif file name', file=sys.stderr)
        return 2
    if not (2 <= args.frames <= 1000 and 0 < args.fps <= 60):
        print('toio-nav render: --frames must be within 2..1000 and --fps within 0..60', file=sys.stderr)
        return 2
    try:
        check_output_file(args.out, '--out')
        if not args.out.parent.is_dir():
            raise InputError(f'--out {args.out}: {args.out.parent} is not a directory')
        recorded = read_run(args.bag)
    except (ReplayError, InputError) as exc:
        print(f'toio-nav render: {exc}', file=sys.stderr)
        return 2
    try:
        if suffix == '.png':
            save_png(recorded, args.out)
        else:
            save_gif(recorded, args.out, args.frames, args.fps)
    except OSError as exc:
        print(f'toio-nav render: cannot write {args.out}: {exc.strerror or exc}', file=sys.stderr)
        return 1
    print(f'toio-nav render: {args.out} ({len(recorded.cubes)} cubes, {recorded.duration:.1f} s, '
          f'{len(recorded.contacts)} contacts' + (', arena' if recorded.arena is not None else '') + ')')
    return 0
