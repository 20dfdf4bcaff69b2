"""The controller: turns a planner's answer into wheel commands for every cube (SwarmController), with
the contact guard and the goal bookkeeping. No ROS imports."""
