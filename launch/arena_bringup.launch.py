"""`ros2 launch toio_navigator arena_bringup.launch.py layout:=/path/to/layout.json [rviz:=true]
[params_file:=my.yaml]`: mat_sim with one virtual cube and the layout's virtual IR sensors, its cube_driver
(transport sim), the navigator and the arena_explorer, from config/navigator.yaml and config/arena.yaml.
The node list is the `arena` profile of toio_navigator.launching.profiles, the same one `toio-nav demo --arena` and
`toio-nav bringup --profile arena` start. Then: `ros2 service call /arena_explorer/start_exploration
std_srvs/srv/Trigger`, `ros2 param set /arena_explorer waypoint "[7, 10]"`, `.../start_fastest_path`."""
from toio_navigator.nodes.launch_description import launch_description


def generate_launch_description():
    return launch_description('arena')
