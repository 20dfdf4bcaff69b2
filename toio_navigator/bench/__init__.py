"""Swarm benchmark scenarios, metrics (docs/metrics.md) and the runner. No ROS imports."""
