"""`ros2 launch toio_navigator real_bringup.launch.py [rviz:=true] [params_file:=my_cubes.yaml] [only:=ROLES]`:
one BLE cube_driver per cube and the navigator, from config/navigator.yaml and config/real.yaml. On a lab network
the machine with the BLE adapter runs `only:=drivers` and another `only:=navigator`. The node list is
toio_navigator.launching.profiles.NODES, shared with `toio-nav bringup --profile real`."""
from toio_navigator.nodes.launch_description import launch_description


def generate_launch_description():
    return launch_description('real')
