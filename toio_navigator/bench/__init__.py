"""Swarm benchmark scenarios, metrics (METRICS.md) and the runner. No ROS imports."""
