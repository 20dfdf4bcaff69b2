"""`toio-nav repair BAG`: rebuild a bag whose recorder died before finalising it (like ``ros2 bag reindex``).

Reads every complete message of the bag's data file, writes a finalised bag (metadata.yaml, and for mcap the
summary), and says what was recovered and what was lost. A bag directory is repaired in place and its damaged
data file is kept beside the new one (``.damaged``); ``--out`` writes the repaired bag elsewhere instead.
Exit 0 when repaired, 2 when there is nothing to repair or the bag cannot be read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toio_navigator.bags.repair import RepairError, data_files, diagnose, repair


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', type=Path, help='rosbag2 directory, or an .mcap / .db3 file')
    parser.add_argument('-o', '--out', type=Path, default=None,
                        help='write the repaired bag as this new directory (default: repair a bag directory in '
                             'place; <name>_repaired beside a bare file)')
    parser.add_argument('--check', action='store_true', help='only say what is wrong and what can be recovered')


def run(args: argparse.Namespace) -> int:
    try:
        if args.check:
            data_files(args.bag)            # RepairError for something that is not a bag at all
            verdict = diagnose(args.bag)
            print(verdict or f'{args.bag}: finalised and whole, nothing to repair')
            return 0 if verdict is None else 1
        report = repair(args.bag, args.out)
    except RepairError as exc:
        print(f'toio-nav repair: {exc}', file=sys.stderr)
        return 2
    print(report.summary())
    return 0
