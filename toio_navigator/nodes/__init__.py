"""The ROS 2 nodes: thin translators between topics/parameters and the core. rclpy is imported here (and in the
live record/replay parts of ``bags``), never in the core packages."""
