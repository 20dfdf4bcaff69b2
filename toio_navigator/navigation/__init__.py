"""The reference Navigator (HLAvoid, Boids, modes, CubeHandle) and the swarm step. No ROS imports."""
