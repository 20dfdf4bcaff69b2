"""Planners beside HLAvoid: social force, time-to-collision, velocity obstacles, ORCA, and the coordinated planner
for the whole swarm (navigation/coordination). No ROS imports.

``PLANNERS`` maps a planner name to a factory returning a fresh LocalPlanner; ``make_planner(name)`` builds one.
"""
from __future__ import annotations

from typing import Callable


def _sfm():
    from toio_navigator.navigation.planners.sfm import SfmPlanner
    return SfmPlanner()


def _ttc():
    from toio_navigator.navigation.planners.ttc import TtcPlanner
    return TtcPlanner()


def _vo():
    from toio_navigator.navigation.planners.vo import VoPlanner
    return VoPlanner()


def _orca():
    from toio_navigator.navigation.planners.orca import OrcaPlanner
    return OrcaPlanner()


def _orca_kr():
    from toio_navigator.navigation.planners.orca import OrcaKeepRightPlanner
    return OrcaKeepRightPlanner()


def _orca_kr_diff():
    from toio_navigator.navigation.planners.orca import OrcaKeepRightDiffDrivePlanner
    return OrcaKeepRightDiffDrivePlanner()


def _coordinated():
    from toio_navigator.navigation.planners.coordinated import CoordinatedPlanner
    return CoordinatedPlanner()


def _hlavoid():
    # written by the navigator-core engineer; imported only when asked for, so this registry works without it
    from toio_navigator.navigation.hlavoid_planner import HLAvoidPlanner
    return HLAvoidPlanner()


PLANNERS: dict[str, Callable[[], object]] = {
    'sfm': _sfm,
    'ttc': _ttc,
    'vo': _vo,
    'orca': _orca,
    'orca_kr': _orca_kr,
    'orca_kr_diff': _orca_kr_diff,
    'hlavoid': _hlavoid,
    'coordinated': _coordinated,
}

#: planners tuned for the differential-drive model (`toio-nav bench --model diff_drive`)
DIFF_DRIVE_PLANNERS = ('orca_kr_diff',)

#: the best local planner: meets the acceptance criteria of issue 7 (see docs/planners.md)
BEST_PLANNER = 'orca_kr'

#: the planner that coordinates the whole swarm so that it does not dead-lock (issue 13, docs/planners.md)
COORDINATED = 'coordinated'


def make_planner(name: str):
    """A fresh planner by registry name; ValueError naming the known planners otherwise."""
    try:
        factory = PLANNERS[name]
    except KeyError:
        raise ValueError(f'unknown planner {name!r} (known: {", ".join(sorted(PLANNERS))})') from None
    try:
        return factory()
    except ImportError as exc:
        raise ValueError(f'planner {name!r} is not available: {exc}') from None
