"""The bringup's command line and profiles (no ROS started): no flag means one process per node, as documented;
the arena profile adds the arena_explorer to the simulated bringup."""
from __future__ import annotations

import argparse

from toio_navigator.launching import profiles
from toio_navigator.nodes import bringup


def _args(argv):
    parser = argparse.ArgumentParser()
    bringup.add_arguments(parser)
    return parser.parse_args(argv)


def test_no_flag_means_one_process_per_node():
    assert _args([]).single is False
    assert _args(['--processes']).single is False
    assert _args(['--single']).single is True


def test_the_arena_profile_runs_the_sim_nodes_and_the_explorer_with_its_yaml():
    plan = [(spec.executable, ns) for spec, ns in profiles.plan('arena', ['cube1'])]
    assert plan == [('mat_sim', ''), ('cube_driver', '/cube1'), ('navigator', ''), ('arena_explorer', '')]
    assert [p.name for p in profiles.profile_files('arena')] == ['navigator.yaml', 'arena.yaml']
    assert 'arena_explorer' not in [spec.executable for spec, _ns in profiles.plan('sim', ['cube1'])]
