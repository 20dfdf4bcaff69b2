"""rosbag2 record, replay comparison and rendering through the pure-Python rosbags library."""
