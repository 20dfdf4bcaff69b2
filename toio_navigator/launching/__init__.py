"""How a bringup starts: which nodes, from which parameter files, in which processes. No ROS imports."""
