"""TF: the navigator broadcasts ``mat -> <cube>/base_link`` for every cube on /tf (tf2_msgs/TFMessage, one message
per tick, each transform stamped with its cube's state) and ``map -> mat`` on /tf_static (latched); the TFMessage
type is the ROS one, type hash included, also where tf2_msgs was built from its public definition.

The navigator runs alone in a child process and this test publishes the cube states it reads, so every transform
is compared with the exact pose it came from.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')
tf2_msgs = pytest.importorskip('tf2_msgs.msg')

from support.goal_probe import cube_state, start_navigator, start_nodes, write_params  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402

#: tf2_msgs/msg/TFMessage's RIHS01 hash on ROS 2 Jazzy (as `ros2 topic info -v /tf` prints it on a ROS machine)
JAZZY_TFMESSAGE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'
CUBES = {'cube1': (100.0, 200.0, 0.5), 'cube2': (300.0, 350.0, -1.0)}


def test_the_installed_tfmessage_has_the_ros_type_name_and_hash():
    described = json.loads((Path(get_package_share_directory('tf2_msgs')) / 'msg' / 'TFMessage.json').read_text())
    assert described['type_hashes'][0] == {'type_name': 'tf2_msgs/msg/TFMessage', 'hash_string': JAZZY_TFMESSAGE_HASH}
    # an independent computation from the definitions (rosbags' own Jazzy type store) agrees
    rosbags = pytest.importorskip('rosbags.typesys')
    store = rosbags.get_typestore(rosbags.Stores.ROS2_JAZZY)
    assert store.hash_rihs01('tf2_msgs/msg/TFMessage') == JAZZY_TFMESSAGE_HASH


from ament_index_python.packages import get_package_share_directory  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from toio_navigator.msg import CubeState  # noqa: E402


def yaw(q) -> float:
    return units.quaternion_to_yaw(q.x, q.y, q.z, q.w)


def test_tf_carries_every_cube_from_its_pose_and_the_static_map_frame(tmp_path, child_env):
    probe = start_navigator(tmp_path, child_env, list(CUBES))
    try:
        node = probe.node
        messages, static = [], []
        node.create_subscription(tf2_msgs.TFMessage, '/tf', messages.append,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        pubs = {c: node.create_publisher(CubeState, f'{c}/state', 10) for c in CUBES}
        probe.spin_until(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()) and
                         node.count_publishers('/tf') > 0, 30.0, 'the navigator')
        sent = set()

        def publish_states():
            for cube, pose in CUBES.items():
                stamp = node.get_clock().now().to_msg()
                sent.add((cube, stamp.sec, stamp.nanosec))
                pubs[cube].publish(cube_state(cube, *pose, stamp))

        def both_seen() -> bool:
            publish_states()
            probe.spin_for(0.05)
            return any(len(m.transforms) == len(CUBES) for m in messages)

        probe.spin_until(both_seen, 30.0, 'one TFMessage with both cubes')
        latest = {t.child_frame_id: t for m in messages for t in m.transforms}
        assert set(latest) == {'cube1/base_link', 'cube2/base_link'}
        for cube, (x, y, theta) in CUBES.items():
            t = latest[f'{cube}/base_link']
            assert t.header.frame_id == 'mat'
            rx, ry = units.mat_to_ros_xy(x, y)
            assert (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z) == \
                pytest.approx((rx, ry, 0.0))
            assert yaw(t.transform.rotation) == pytest.approx(-theta)        # REP 103: counter-clockwise
        # each transform carries the stamp of the state it came from (not the tick's), and none is sent twice
        seen = [(t.child_frame_id.split('/')[0], t.header.stamp.sec, t.header.stamp.nanosec)
                for m in messages for t in m.transforms]
        assert set(seen) <= sent
        assert len(seen) == len(set(seen))
        # the live type hash is the ROS one
        infos = node.get_publishers_info_by_topic('/tf')
        assert infos and {str(i.topic_type_hash) for i in infos} == {JAZZY_TFMESSAGE_HASH}
        assert {i.topic_type for i in infos} == {'tf2_msgs/msg/TFMessage'}
        # /tf_static is latched: a subscriber that comes late still gets map -> mat
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(tf2_msgs.TFMessage, '/tf_static', static.append, latched)
        probe.spin_until(lambda: static, 30.0, 'the static map frame')
        (t,) = static[0].transforms
        assert (t.header.frame_id, t.child_frame_id) == ('map', 'mat')
        assert (t.transform.translation.x, t.transform.translation.y, t.transform.rotation.w) == (0.0, 0.0, 1.0)
    finally:
        probe.close()


def test_a_driver_with_publish_tf_broadcasts_its_own_cube(tmp_path, child_env):
    """For a cube run without a navigator (teleoperation): the driver's own TF, from the pose it publishes."""
    files = write_params(tmp_path / 'driver_tf.yaml',
                         '/**:\n  ros__parameters:\n    cubes: [cube1]\n'
                         '/**/cube_driver:\n  ros__parameters:\n    transport: sim\n    publish_tf: true\n'
                         'mat_sim:\n  ros__parameters:\n    initial_poses: [200.0, 300.0, 0.7]\n')
    nodes = [(spec, ns) for spec, ns in profiles.plan('sim', ['cube1']) if spec.executable != 'navigator']
    probe = start_nodes(tmp_path, child_env, nodes, files, 'driver_tf_probe')
    try:
        transforms, poses = [], []
        probe.node.create_subscription(tf2_msgs.TFMessage, '/tf', lambda m: transforms.extend(m.transforms),
                                       QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        probe.node.create_subscription(PoseStamped, 'cube1/pose', poses.append, 10)
        probe.spin_until(lambda: transforms and poses, 60.0, "the driver's TF and pose")
        t, pose = transforms[-1], poses[-1].pose
        assert (t.header.frame_id, t.child_frame_id) == ('mat', 'cube1/base_link')
        assert (t.transform.translation.x, t.transform.translation.y) == \
            pytest.approx((pose.position.x, pose.position.y), abs=0.002)
        assert yaw(t.transform.rotation) == pytest.approx(-0.7, abs=0.02)

        def driver_publishes_tf() -> bool:     # asking about a node not discovered yet raises
            return ('cube_driver', '/cube1') in probe.node.get_node_names_and_namespaces() and \
                ('/tf', ['tf2_msgs/msg/TFMessage']) in \
                probe.node.get_publisher_names_and_types_by_node('cube_driver', '/cube1')

        probe.spin_until(driver_publishes_tf, 30.0, 'the driver in the graph as the /tf publisher')
    finally:
        probe.close()
