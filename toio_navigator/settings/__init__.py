"""Node parameters without ROS: what each parameter is, its rules, and the typed settings made from the values."""
