"""The arena explorer: grid belief, MDF strings, wall hugging, images and the fastest path. No ROS imports."""
