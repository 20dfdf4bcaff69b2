"""Turn recorded bags into regression tests (pytest).

    from toio_navigator.bags.testing import assert_replays, bags_in

    @pytest.mark.parametrize('bag', bags_in('test/data/my_lab_bags'), ids=lambda p: p.name)
    def test_lab_run_still_replays(bag):
        assert_replays(bag)                       # fails naming the first divergent message

``assert_replays`` accepts the same options as ``toio-nav replay``: parameter files, ``overrides`` such as
``{'avoid.margin': 30}``, per-field ``tolerances`` such as ``{'waypoint_x': 0.5}``.
"""
from __future__ import annotations

from pathlib import Path

from toio_navigator.bags.replay import ReplayReport, replay_bag


def bags_in(folder: str | Path) -> list[Path]:
    """Every bag in ``folder``: rosbag2 directories (with metadata.yaml) and bare .mcap files, sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f'{folder}: no such folder of bags')
    found = [p for p in folder.iterdir() if (p.is_dir() and (p / 'metadata.yaml').is_file())
             or (p.is_file() and p.suffix == '.mcap')]
    return sorted(found)


def assert_replays(bag: str | Path, *, parameter_files=(), overrides: dict | None = None,
                   tolerances: dict | None = None) -> ReplayReport:
    """Replay ``bag`` offline; AssertionError with the first divergence (time, topic, field, both values) unless
    the navigator's outputs equal the recorded ones. Returns the report (ticks and messages compared)."""
    report = replay_bag(bag, parameter_files=parameter_files, overrides=overrides, tolerances=tolerances)
    if not report.ok:
        raise AssertionError(report.summary())
    if report.ticks == 0:
        raise AssertionError(f'{bag}: no tick could be compared\n{report.summary()}')
    return report
