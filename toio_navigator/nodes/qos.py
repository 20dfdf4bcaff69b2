"""The QoS profiles of the package's own topics, defined once (sensor streams use rclpy's qos_profile_sensor_data)."""
from __future__ import annotations

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

#: a process at the other end of the simulated BLE link that dies (even by SIGKILL) counts as gone after this
#: long: DDS liveliness, asserted by the middleware's own thread, so a busy process is not mistaken for a dead
#: one. Without a lease DDS notices a dead participant only after its discovery lease (about 20 s).
LINK_LEASE_S = 1.0

#: a latched topic: a late subscriber (rviz, the demo) still gets the last value
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: arena/state: latched and deep enough that a subscriber keeps up with the MDF after every move
STATE_QOS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: the simulated BLE link (and mat_sim/contacts): reliable and deep enough that a burst of notifications
#: (settings replay, 10 cubes) is not dropped; liveliness with a lease of LINK_LEASE_S
BLE_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                     liveliness=LivelinessPolicy.AUTOMATIC, liveliness_lease_duration=Duration(seconds=LINK_LEASE_S))
#: /tf as tf2's broadcasters offer it (reliable, volatile, deep enough for a burst of transforms)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /tf_static: latched, so rviz2 started later still gets the static frames
TF_STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
