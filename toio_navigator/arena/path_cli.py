"""``toio-nav fastest-path``: the optimal start -> waypoint -> goal route on a layout (toio-arena-path/1)."""
from __future__ import annotations

import argparse

from toio_navigator.arena.cli_io import CliError, fail, read_layout, write_json
from toio_navigator.arena.fastest_path import DEFAULT_TURN_COST, fastest_path
from toio_navigator.arena.geometry import inside

RESULT_FORMAT = 'toio-arena-path/1'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--arena', required=True, help='layout file (toio-arena-layout/1)')
    parser.add_argument('--waypoint', help="X,Y robot-centre cell to pass (default: the layout's waypoint)")
    parser.add_argument('--no-waypoint', action='store_true', help="ignore the layout's waypoint")
    parser.add_argument('--turn-cost', type=float, default=DEFAULT_TURN_COST,
                        help=f'cost P of each 90-degree turn; a forward cell costs 1 (default {DEFAULT_TURN_COST:g})')
    parser.add_argument('--allow-reverse', action='store_true',
                        help='also allow B (reverse one cell, cost 1); off by default')
    parser.add_argument('--out', required=True, help='result file to write (toio-arena-path/1)')


def parse_waypoint(text: str, cols: int, rows: int) -> tuple[int, int]:
    parts = text.replace(' ', '').split(',')
    try:
        if len(parts) != 2:
            raise ValueError
        x, y = int(parts[0]), int(parts[1])
    except ValueError:
        raise CliError(f'--waypoint must be X,Y with two integers, got {text!r}') from None
    if not inside(x, y, cols, rows):
        raise CliError(f'--waypoint ({x},{y}) is outside the arena (0..{cols - 1} x 0..{rows - 1})')
    return x, y


def run(args) -> int:
    try:
        if args.waypoint is not None and args.no_waypoint:
            raise CliError('--waypoint and --no-waypoint exclude each other')
        if not args.turn_cost >= 0 or args.turn_cost == float('inf'):
            raise CliError(f'--turn-cost must be a finite number >= 0, got {args.turn_cost}')
        layout = read_layout(args.arena, require_free_goal=False)  # a blocked goal is just "no path"
        waypoint = layout.waypoint
        if args.no_waypoint:
            waypoint = None
        elif args.waypoint is not None:
            waypoint = parse_waypoint(args.waypoint, layout.cols, layout.rows)
        route = fastest_path(layout.obstacles, layout.start, layout.goal, waypoint, args.turn_cost,
                             args.allow_reverse)
        write_json(args.out, {
            'format': RESULT_FORMAT,
            'found': route.found,
            'cost': route.cost_value,
            'actions': route.actions,
            'poses': [p.as_list() for p in route.poses],
        })
    except CliError as exc:
        return fail('fastest-path', str(exc))
    via = f' via {waypoint}' if waypoint is not None else ''
    if route.found:
        cost = str(route.cost_value)
        if len(cost) > 15:     # exact but unreadable: say what it is made of
            turns = sum(1 for a in route.actions if a in 'LR')
            cost = f'{turns} turns x {args.turn_cost:g} + {len(route.actions) - turns} moves'
        print(f'fastest path{via}: cost {cost}, {len(route.actions)} actions -> {args.out}')
    else:
        print(f'no path from the start to the goal{via} -> {args.out}')
    return 0
