"""Planners beside HLAvoid: social force, time-to-collision, velocity obstacles, ORCA, and the coordinated planner
for the whole swarm (planners/coordinated). No ROS imports.

``PLANNERS`` maps a planner name to a factory returning a fresh LocalPlanner; ``make_planner(name)`` builds one.

Each factory imports its planner when called, not this package at load: Python runs this ``__init__`` for every
import of a module under planners/, and coordination/ imports planners.common, so an eager import of the
coordinated planner here would come back to a half-loaded coordination module (an import circle at run time
that the static import graph does not show).
"""
from __future__ import annotations

from typing import Callable


def _sfm():
    from toio_navigator.planners import sfm  # noqa: PLC0415 lazy, see the docstring
    return sfm.SfmPlanner()


def _ttc():
    from toio_navigator.planners import ttc  # noqa: PLC0415 lazy, see the docstring
    return ttc.TtcPlanner()


def _vo():
    from toio_navigator.planners import vo  # noqa: PLC0415 lazy, see the docstring
    return vo.VoPlanner()


def _orca():
    from toio_navigator.planners import orca  # noqa: PLC0415 lazy, see the docstring
    return orca.OrcaPlanner()


def _orca_kr():
    from toio_navigator.planners import orca  # noqa: PLC0415 lazy, see the docstring
    return orca.OrcaKeepRightPlanner()


def _orca_kr_diff():
    from toio_navigator.planners import orca  # noqa: PLC0415 lazy, see the docstring
    return orca.OrcaKeepRightDiffDrivePlanner()


def _coordinated():
    from toio_navigator.planners.coordinated import planner as coordinated  # noqa: PLC0415 lazy, see the docstring
    return coordinated.CoordinatedPlanner()


def _hlavoid():
    from toio_navigator.planners import reference  # noqa: PLC0415 lazy, see the docstring
    return reference.HLAvoidPlanner()


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
