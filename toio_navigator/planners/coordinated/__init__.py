"""`coordinated`: a plan for the whole swarm at once, executed through its dependency graph (docs/planners.md).
No ROS imports; the planner itself is `planner.CoordinatedPlanner`."""
