"""Local planners beside HLAvoid: social force, time-to-collision, velocity obstacles, ORCA. No ROS imports."""
