"""What a launch file starts, decided from its arguments before anything starts (launching/launch_plan.py, no
ROS): the same nodes and files as toio-nav bringup, and every mistake refused with the argument and the reason.
test/system/test_ros2_launch.py runs the same through the real ros2 launch."""
from __future__ import annotations

import pytest

from toio_navigator.launching.launch_plan import SAMPLE_LAYOUT, LaunchError, launch_arguments, make_plan
from toio_navigator.launching.profiles import config_dir, plan, profile_files, read_cubes

DEFAULTS = {a.name: a.default for a in launch_arguments('arena')}
LAYOUT = config_dir().parent / 'toio_navigator' / 'data' / 'arenas' / '02_empty.json'


def values(**given) -> dict[str, str]:
    return {**DEFAULTS, **given}


@pytest.mark.parametrize('profile', ['sim', 'real', 'arena'])
def test_the_defaults_start_the_bringup_table_from_the_profile_files(profile):
    launch = make_plan(profile, values())
    files = tuple(str(p) for p in profile_files(profile))
    expected = plan(profile, read_cubes(profile_files(profile)))
    assert [(n.executable, n.namespace) for n in launch.nodes] == [(s.executable, ns) for s, ns in expected]
    assert all(n.parameters[:len(files)] == files for n in launch.nodes)
    assert all(n.parameters == files for n in launch.nodes if n.executable != 'mat_sim' or profile != 'arena')
    assert launch.rviz_config is None


def test_params_file_comes_last_and_layout_reaches_mat_sim_only(tmp_path):
    extra = tmp_path / 'two.yaml'
    extra.write_text('/**:\n  ros__parameters:\n    cubes: [cube1]\n')
    launch = make_plan('arena', values(params_file=str(extra), layout=str(LAYOUT), only='sim,navigator', rviz='1'))
    assert [n.name for n in launch.nodes] == ['/mat_sim', '/navigator']
    assert launch.nodes[0].parameters[-2:] == (str(extra), {'arena_layout': str(LAYOUT)})
    assert launch.nodes[1].parameters[-1] == str(extra)
    assert launch.rviz_config == config_dir() / 'toio_navigator_arena.rviz'


def test_a_section_for_no_node_of_the_package_is_a_warning(tmp_path):
    extra = tmp_path / 'other.yaml'
    extra.write_text('rviz2:\n  ros__parameters:\n    use_sim_time: false\n')
    assert "section 'rviz2' names no node of this package" in make_plan('sim', values(params_file=str(extra))) \
        .warnings[0]


@pytest.mark.parametrize('profile, given, configurations, reason', [
    ('sim', {}, {'cubes': '[a]'}, 'cubes:=[a]: a node parameter, not an argument of the sim launch file (its '
     'arguments: only, params_file, rviz, web; see --show-args)'),
    ('arena', {}, {'planner': 'orca', 'rate_hz': '5'}, 'planner:=orca, rate_hz:=5: a node parameter'),
    ('sim', {'only': 'lasers'}, {}, 'only:=lasers: unknown role lasers'),
    ('real', {'only': 'drivers,sim'}, {}, 'only:=drivers,sim: profile real has no sim node'),
    ('sim', {'rviz': 'maybe'}, {}, 'rviz:=maybe: expected true or false'),
    ('sim', {'params_file': 'nowhere.yaml'}, {}, 'params_file:=nowhere.yaml: no such file'),
    ('arena', {'layout': 'nowhere.json'}, {}, 'layout:=nowhere.json: no such file'),
])
def test_a_mistake_is_refused_with_the_argument_and_the_reason(profile, given, configurations, reason):
    with pytest.raises(LaunchError) as refused:
        make_plan(profile, values(**given), {**values(**given), **configurations})
    assert reason in str(refused.value)


@pytest.mark.parametrize('text, reason', [
    ('navigator:\n  ros__parameters:\n    rate_hz: -5.0\n', "section 'navigator': navigator: parameter rate_hz: must "
     'be a finite number 0.1..1000, got -5.0'),
    ('navigator:\n  ros__parameters:\n    rate_hx: 1.0\n', "node navigator has no parameter 'rate_hx' (did you mean "
     "'rate_hz'?)"),
    ('/**:\n  ros__parameters:\n    cubes: []\n', 'parameter cubes: must be a non-empty list of unique cube names'),
])
def test_a_bad_parameter_file_is_refused_by_the_nodes_rules_before_anything_starts(tmp_path, text, reason):
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text)
    with pytest.raises(LaunchError) as refused:
        make_plan('sim', values(params_file=str(bad)))
    assert str(refused.value).startswith(f'params_file: {bad}') and reason in str(refused.value)


def test_an_arena_launch_without_a_layout_senses_the_shipped_sample_arena():
    mat_sim = make_plan('arena', values()).nodes[0]
    assert mat_sim.executable == 'mat_sim' and mat_sim.parameters[-1] == {'arena_layout': str(SAMPLE_LAYOUT)}
