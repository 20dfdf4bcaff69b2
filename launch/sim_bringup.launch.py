"""`ros2 launch toio_navigator sim_bringup.launch.py [rviz:=true] [params_file:=my.yaml] [only:=ROLES]`: mat_sim
with the simulated cubes, one cube_driver per cube (transport sim) and the navigator, from config/navigator.yaml
and config/sim.yaml. On a lab network each machine starts its share, e.g. `only:=sim,drivers` on one and
`only:=navigator` on another. The node list is toio_navigator.launching.profiles.NODES, shared with
`toio-nav bringup`."""
from toio_navigator.nodes.launch_description import launch_description


def generate_launch_description():
    return launch_description('sim')
