"""`toio-nav replay BAG`: feed a recorded run into a fresh navigator and compare its outputs with the recording.

Offline (default): through the core, at the recorded tick times; exit 0 on zero divergence, 1 on a divergence
(the first one is printed: time, topic, field, both values), 2 on unusable input. ``--live``: publish the
recorded inputs on real topics at the recorded timing into a running navigator and compare what comes back
(:mod:`toio_navigator.bags.replay_live`, the only part that needs ROS).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toio_navigator.bags.replay import ReplayError, parse_override, replay_bag


def _tolerance(text: str) -> tuple[str, float]:
    name, sep, value = text.rpartition('=')
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r}: expected FIELD=NUMBER or NUMBER') from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f'{text!r}: a tolerance must be >= 0')
    return (name if sep else '*'), v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', type=Path, help='rosbag2 directory or .mcap file')
    parser.add_argument('--params-file', action='append', type=Path, default=None, metavar='YAML',
                        help='navigator parameter files (default: the parameters stored in the bag by '
                             '`toio-nav record`, else config/navigator.yaml)')
    parser.add_argument('--set', dest='overrides', action='append', default=[], metavar='NAME=VALUE',
                        help='change one navigator parameter for the replay, e.g. --set avoid.margin=30')
    parser.add_argument('--tol', action='append', type=_tolerance, default=[], metavar='[FIELD=]VALUE',
                        help='absolute tolerance of a float field (waypoint_x, speed_limit, ...) or of every float '
                             'field; motor fields (left, right, duration_ms) default to exact')
    parser.add_argument('--show', type=int, default=5, help='how many divergent fields to list (default 5)')
    parser.add_argument('--live', action='store_true',
                        help='publish the recorded inputs into a running navigator and compare its outputs')
    parser.add_argument('--rate', type=float, default=1.0, help='--live: playback speed factor (default 1)')


def run(args: argparse.Namespace) -> int:
    try:
        overrides = dict(parse_override(o) for o in args.overrides)
        tolerances = dict(args.tol)
        if args.live:
            if not 0 < args.rate <= 10:
                raise ReplayError('--rate must be within 0..10')
            # only --live talks to a running navigator: the offline replay runs without ROS
            from toio_navigator.bags.replay_live import replay_live  # noqa: PLC0415 --live only, see above
            report = replay_live(args.bag, tolerances=tolerances, rate=args.rate)
        else:
            report = replay_bag(args.bag, parameter_files=args.params_file or (), overrides=overrides,
                                tolerances=tolerances, keep=max(1, args.show))
    except ReplayError as exc:
        print(f'toio-nav replay: {exc}', file=sys.stderr)
        return 2
    print(report.summary())
    if not report.ok:
        for d in report.divergences[1:args.show]:
            print(f'  then t={d.time_s:.3f} s {d.topic} {d.field}: recorded {d.recorded}, replayed {d.replayed}')
        return 1
    return 0
