"""The rviz2 configurations (toio-nav rviz-config, nodes/rviz_config.py): generated for the configured cubes, with
a Map and a Path display for the arena, TF, and a "2D Goal Pose" tool per cube; every topic a display or tool
reads or writes exists in the running bringup of its profile with the message type that display expects."""
from __future__ import annotations

import pytest
import yaml

from toio_navigator import cli
from toio_navigator.launching import profiles
from toio_navigator.nodes import rviz_config


def test_displays_and_goal_tools_follow_the_cubes_and_the_profile():
    sim = rviz_config.topics(rviz_config.render('sim', ['alpha', 'beta']))
    assert ('rviz_default_plugins/Pose', '/alpha/pose', 'geometry_msgs/msg/PoseStamped') in sim
    assert ('rviz_default_plugins/SetGoal', '/beta/goal_pose', 'geometry_msgs/msg/PoseStamped') in sim
    assert ('rviz_default_plugins/TF', '/tf', 'tf2_msgs/msg/TFMessage') in sim
    assert not any('cube1' in topic or topic.startswith('/arena') for _c, topic, _t in sim)
    arena = {t for _c, t, _ty in rviz_config.topics(rviz_config.render('arena', ['cube1']))}
    assert {'/arena/map', '/arena/fastest_path', '/mat_sim/ground_truth', '/cube1/goal_pose'} <= arena
    real = {t for _c, t, _ty in rviz_config.topics(rviz_config.render('real', ['cube1']))}
    assert '/mat_sim/ground_truth' not in real and '/arena/map' not in real
    data = yaml.safe_load(rviz_config.render('sim', ['alpha']))
    assert data['Visualization Manager']['Global Options']['Fixed Frame'] == 'mat'


@pytest.mark.parametrize('profile', profiles.PROFILES)
def test_the_files_in_config_are_the_generated_ones(profile, capsys):
    assert cli.main(['rviz-config', '--profile', profile, '--check']) == 0, capsys.readouterr().err
    text = (profiles.config_dir() / profiles.rviz_file(profile)).read_text()
    cubes = profiles.read_cubes(profiles.profile_files(profile))
    assert {t for _c, t, _ty in rviz_config.topics(text) if t.endswith('/goal_pose')} == \
        {f'/{c}/goal_pose' for c in cubes}


def test_bad_input_is_named(tmp_path, capsys):
    assert cli.main(['rviz-config', '--params-file', str(tmp_path / 'missing.yaml')]) == 2
    assert 'missing.yaml does not exist' in capsys.readouterr().err
    bad = tmp_path / 'bad.yaml'
    bad.write_text('/**:\n  ros__parameters:\n    cubes: []\n')
    assert cli.main(['rviz-config', '--params-file', str(bad)]) == 2
    assert '`cubes` must be a non-empty list' in capsys.readouterr().err
    assert cli.main(['rviz-config', '--params-file', str(bad.with_name('ok.yaml')), '-o',
                     str(tmp_path / 'no' / 'such' / 'dir.rviz')]) == 2
    with pytest.raises(ValueError, match='no known message type'):
        rviz_config.topics('Visualization Manager:\n  Displays:\n  - Class: x/Camera\n    Topic: {Value: /c}\n')


@pytest.mark.parametrize('profile, cubes', [('sim', ['cube1', 'cube2']), ('arena', ['cube1'])])
def test_every_topic_of_the_rviz_config_is_live_with_its_type(profile, cubes, tmp_path, child_env):
    pytest.importorskip('rclpy')
    pytest.importorskip('toio_navigator.msg')
    # optional: the probe needs rclpy, the other tests here run without ROS
    from support.goal_probe import start_bringup  # noqa: PLC0415 optional, see above

    poses = ', '.join(f'{100.0 + 100.0 * i}, 420.0, -1.5708' for i in range(len(cubes)))
    yaml_text = f'/**:\n  ros__parameters:\n    cubes: [{", ".join(cubes)}]\n' \
                f'mat_sim:\n  ros__parameters:\n    initial_poses: [{poses}]\n'
    expected = rviz_config.topics(rviz_config.render(profile, cubes))
    probe = start_bringup(tmp_path, child_env, profile, cubes, yaml_text)
    try:
        def live() -> dict[str, list[str]]:
            return dict(probe.node.get_topic_names_and_types())

        probe.spin_until(lambda: all(topic in live() for _c, topic, _t in expected), 90.0,
                         lambda: f'every rviz topic of the {profile} bringup: '
                                 f'{sorted({t for _c, t, _ty in expected} - set(live()))} missing')
        graph = live()
        wrong = [(cls, topic, want, graph[topic]) for cls, topic, want in expected if graph[topic] != [want]]
        assert not wrong, f'topics with another type than the display expects: {wrong}'
    finally:
        probe.close()
