"""The mat world simulator, the virtual cube firmware and the arena robot's virtual IR sensors. No ROS imports."""
