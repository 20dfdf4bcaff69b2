"""The QoS profiles of the package's own topics, defined once (sensor streams use rclpy's qos_profile_sensor_data)."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

#: a latched topic: a late subscriber (rviz, the demo) still gets the last value
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: arena/state: latched and deep enough that a subscriber keeps up with the MDF after every move
STATE_QOS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: the simulated BLE link (and mat_sim/contacts): reliable and deep enough that a burst of notifications
#: (settings replay, 10 cubes) is not dropped
BLE_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
#: /tf as tf2's broadcasters offer it (reliable, volatile, deep enough for a burst of transforms)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /tf_static: latched, so rviz2 started later still gets the static frames
TF_STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
