"""The toio BLE protocol codec and the transports (bleak, simulated). No ROS imports."""
