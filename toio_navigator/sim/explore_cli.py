"""``toio-nav explore``: a full simulated exploration of a layout (docs/arena.md §7.1, toio-arena-explore/1)."""
from __future__ import annotations

import argparse

from toio_navigator.arena.cli_io import CliError, fail, read_layout, write_json
from toio_navigator.arena.explorer import ArenaExplorer, ExplorerConfig
from toio_navigator.arena.geometry import HEADING_LETTERS
from toio_navigator.arena.layout import grid_to_rows
from toio_navigator.sim.arena_run import run_exploration

RESULT_FORMAT = 'toio-arena-explore/1'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--arena', required=True, help='layout file (toio-arena-layout/1)')
    parser.add_argument('--out', required=True, help='result file to write (toio-arena-explore/1)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the simulated sensor noise (default 0)')
    parser.add_argument('--noise', type=float, default=0.0,
                        help='probability that an IR reading is off by one cell (default 0: ideal sensors)')
    parser.add_argument('--image-mode', choices=('auto', 'on', 'off'), default='auto',
                        help='photos and reverse hugging; auto = on when the layout has image cards')
    parser.add_argument('--max-moves', type=int, default=ExplorerConfig.max_moves,
                        help=f'stop after this many motion commands (default {ExplorerConfig.max_moves})')


def result_dict(explorer: ArenaExplorer) -> dict:
    mdf1, mdf2 = explorer.mdf()
    b = explorer.belief
    return {
        'format': RESULT_FORMAT,
        'mdf_part1': mdf1,
        'mdf_part2': mdf2,
        'explored_rows_top_first': grid_to_rows(b.explored),
        'obstacle_rows_top_first': grid_to_rows(b.obstacle),
        'actions': ''.join(explorer.actions),
        'moves': explorer.moves,
        'returned_to_start': explorer.returned_to_start,
        'images': [{'id': r.id, 'x': r.x, 'y': r.y, 'face': HEADING_LETTERS[r.face]} for r in explorer.images],
    }


def run(args) -> int:
    try:
        if not 0.0 <= args.noise <= 1.0:
            raise CliError(f'--noise must be a probability 0..1, got {args.noise}')
        if args.max_moves < 1:
            raise CliError(f'--max-moves must be >= 1, got {args.max_moves}')
        layout = read_layout(args.arena)
        image_mode = {'on': True, 'off': False, 'auto': bool(layout.images)}[args.image_mode]
        config = ExplorerConfig(image_mode=image_mode, max_moves=args.max_moves)
        explorer, _robot = run_exploration(layout, config, noise=args.noise, seed=args.seed)
        result = result_dict(explorer)
        write_json(args.out, result)
    except CliError as exc:
        return fail('explore', str(exc))
    explored = int(explorer.belief.explored.sum())
    print(f'explored {explored}/{explorer.belief.explored.size} cells in {result["moves"]} moves, '
          f'{"back at start" if result["returned_to_start"] else "NOT back at start"}, '
          f'{len(result["images"])} image(s) -> {args.out}')
    return 0
