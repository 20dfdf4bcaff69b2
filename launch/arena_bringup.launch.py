"""`ros2 launch toio_navigator arena_bringup.launch.py layout:=/path/to/layout.json [rviz:=true]
[params_file:=my.yaml]`: mat_sim with one virtual cube and the layout's virtual IR sensors, its cube_driver
(transport sim), the navigator and the arena_explorer, from config/navigator.yaml and config/arena.yaml.
The node list is toio_navigator.nodes.arena_demo.arena_plan (the bringup table's sim nodes plus the explorer),
the same one `toio-nav demo --arena` starts. Then: `ros2 service call /arena_explorer/start_exploration
std_srvs/srv/Trigger`, `ros2 param set /arena_explorer waypoint "[7, 10]"`, `.../start_fastest_path`."""
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from toio_navigator.nodes.arena_demo import ARENA_FILES, arena_plan
from toio_navigator.nodes.bringup import PACKAGE, config_dir, read_cubes


def _nodes(context):
    files = [str(config_dir() / name) for name in ARENA_FILES]
    extra = LaunchConfiguration('params_file').perform(context)
    if extra:
        files.append(extra)
    layout = LaunchConfiguration('layout').perform(context)
    cube = read_cubes([Path(f) for f in files])[0]
    nodes = []
    for spec, ns in arena_plan(cube):
        params = list(files)
        if spec.executable == 'mat_sim' and layout:
            params.append({'arena_layout': str(Path(layout).resolve())})
        nodes.append(Node(package=PACKAGE, executable=spec.executable, name=spec.executable, namespace=ns or '',
                          parameters=params, output='screen'))
    return nodes


def generate_launch_description():
    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', str(config_dir() / 'toio_navigator.rviz')],
                condition=IfCondition(LaunchConfiguration('rviz')))
    return LaunchDescription([
        DeclareLaunchArgument('layout', default_value='', description='arena layout JSON (toio-arena-layout/1)'),
        DeclareLaunchArgument('params_file', default_value='', description='extra parameter YAML, applied last'),
        DeclareLaunchArgument('rviz', default_value='false', description='also start rviz2'),
        OpaqueFunction(function=_nodes),
        rviz,
    ])
