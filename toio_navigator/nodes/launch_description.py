"""The launch_ros description of a bringup profile, for the launch files in launch/ (``ros2 launch``).

Needs launch_ros, which only a ROS install has: nothing else in the package imports this module. The nodes, their
order and their parameter files come from :mod:`toio_navigator.launching.profiles`, as for ``toio-nav bringup``.
"""
from __future__ import annotations

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from toio_navigator.launching.profiles import (
    PACKAGE,
    ROLES,
    config_dir,
    parse_roles,
    plan,
    profile_files,
    read_cubes,
    rviz_file,
)


def launch_description(profile: str):
    """The launch_ros LaunchDescription of a profile (launch/*.launch.py call this; needs launch_ros).

    Arguments: ``params_file`` (extra YAML applied last), ``rviz`` (true: also start rviz2 with the profile's
    :func:`rviz_file`), ``web`` (true: also start the web console), ``only`` (roles of this host, e.g.
    ``sim,drivers``; '' = every node) and, for the ``arena`` profile, ``layout`` (the arena layout mat_sim senses)."""
    def nodes(context):
        files = [str(p) for p in profile_files(profile)]
        extra = LaunchConfiguration('params_file').perform(context)
        if extra:
            files.append(extra)
        layout = LaunchConfiguration('layout').perform(context) if profile == 'arena' else ''
        cubes = read_cubes([Path(f) for f in files])
        only = parse_roles(LaunchConfiguration('only').perform(context), profile)
        web = LaunchConfiguration('web').perform(context).lower() in ('true', '1', 'yes')
        launched = []
        for spec, ns in plan(profile, cubes, only, web):
            params = list(files)
            if layout and spec.executable == 'mat_sim':
                params.append({'arena_layout': str(Path(layout).resolve())})
            launched.append(Node(package=PACKAGE, executable=spec.executable, name=spec.executable,
                                 namespace=ns or '', parameters=params, output='screen'))
        return launched

    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', str(config_dir() / rviz_file(profile))],
                condition=IfCondition(LaunchConfiguration('rviz')))
    arguments = [
        DeclareLaunchArgument('params_file', default_value='', description='extra parameter YAML, applied last'),
        DeclareLaunchArgument('rviz', default_value='false', description='also start rviz2'),
        DeclareLaunchArgument('web', default_value='false', description='also start the web console '
                              '(docs/web_console.md)'),
        DeclareLaunchArgument('only', default_value='',
                              description=f'start only these roles, comma-separated ({", ".join(ROLES)}); '
                                          '"" = every node of the profile'),
    ]
    if profile == 'arena':
        arguments.append(DeclareLaunchArgument('layout', default_value='',
                                               description='arena layout JSON (toio-arena-layout/1)'))
    return LaunchDescription(arguments + [OpaqueFunction(function=nodes), rviz])
