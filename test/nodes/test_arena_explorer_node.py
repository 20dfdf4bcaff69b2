"""arena_explorer node, in process: what the map, state and path messages say (REP 103 geometry, MDF, status),
the parameters and the services' refusals. The full loop over DDS is in test_arena_loop.py."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from support.node_callbacks import call  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.arena import mdf  # noqa: E402
from toio_navigator.arena.explorer import ExplorerConfig  # noqa: E402
from toio_navigator.arena.geometry import Pose, centre_in_range  # noqa: E402
from toio_navigator.arena.layout import ImageCard, load_layout  # noqa: E402
from toio_navigator.msg import ArenaState  # noqa: E402
from toio_navigator.nodes.arena_demo import path_cost, run_arena_demo  # noqa: E402
from toio_navigator.nodes.arena_explorer import ArenaExplorerNode, arena_state  # noqa: E402
from toio_navigator.nodes.conversions import (  # noqa: E402
    grid_from_occupancy,
    occupancy_grid,
    poses_from_path,
    route_path,
)
from toio_navigator.settings.arena_explorer import (  # noqa: E402
    PARAMS,
    ArenaNodeError,
    parse_waypoint,
    settings_from_values,
)
from toio_navigator.sim.arena_run import run_exploration  # noqa: E402
from toio_navigator.sim.ir_sensors import ArenaMatMapping  # noqa: E402
from toio_navigator.srv import SetWaypoint  # noqa: E402

ARENAS = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'arenas'


@pytest.fixture(scope='module')
def explored_sample():
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    explorer, _robot = run_exploration(layout)
    return layout, explorer


def stamp():
    return Time(sec=5, nanosec=0)


def ros_cell_centre(grid, x: int, y: int) -> tuple[float, float]:
    res = grid.info.resolution
    return grid.info.origin.position.x + (x + 0.5) * res, grid.info.origin.position.y + (y + 0.5) * res


@pytest.mark.parametrize('mapping', [ArenaMatMapping(), ArenaMatMapping(60.0, 20.0, 12.5)])
def test_occupancy_grid_cells_sit_where_the_cube_sees_them_in_rep103_metres(explored_sample, mapping):
    layout, explorer = explored_sample
    b = explorer.belief
    grid = occupancy_grid(b.explored, b.obstacle, mapping, stamp())
    assert grid.header.frame_id == 'mat'
    assert (grid.info.width, grid.info.height) == (15, 20)
    assert grid.info.resolution == pytest.approx(mapping.cell_size * units.METRES_PER_UNIT)
    data = np.asarray(grid.data).reshape(20, 15)
    assert set(np.unique(data)) <= {-1, 0, 100}
    assert np.array_equal(data == 100, layout.obstacles)        # fully explored, noise-free: the true arena
    for x, y in [(0, 0), (14, 0), (0, 19), (7, 10), (13, 18)]:
        # the centre of grid cell (x, y) is the ROS position of the mat point the arena puts cell (x, y) at
        want = units.mat_to_ros_xy(*mapping.cell_to_mat(x, y))
        assert ros_cell_centre(grid, x, y) == pytest.approx(want, abs=1e-9)
        assert mapping.mat_to_cell(*units.ros_to_mat_xy(*ros_cell_centre(grid, x, y))) == (x, y)


def test_occupancy_grid_marks_unexplored_cells_unknown():
    explored = np.zeros((20, 15), bool)
    explored[0:3, 0:3] = True
    obstacle = np.zeros((20, 15), bool)
    obstacle[2, 1] = True
    obstacle[10, 10] = True            # not explored: must stay unknown
    data = np.asarray(occupancy_grid(explored, obstacle, ArenaMatMapping(), stamp()).data).reshape(20, 15)
    assert data[2, 1] == 100 and data[0, 0] == 0 and data[10, 10] == -1 and (data == -1).sum() == 300 - 9


def test_arena_state_carries_the_explorers_mdf_pose_and_status(explored_sample):
    _layout, explorer = explored_sample
    msg = arena_state(explorer, Pose(4, 7, 1), 'RETURNING', 'on the way', 42, stamp())
    assert (msg.mdf_part1, msg.mdf_part2) == explorer.mdf()
    explored, obstacle = mdf.decode(msg.mdf_part1, msg.mdf_part2)
    assert np.array_equal(explored, explorer.belief.explored)
    assert np.array_equal(obstacle & explored, explorer.belief.obstacle)
    assert (msg.robot_x, msg.robot_y, msg.heading) == (4, 7, 'E')
    assert msg.explored_count == explorer.explored_count == 300
    assert (msg.moves, msg.status, msg.status_text) == (42, ArenaState.RETURNING, 'on the way')
    assert msg.header.frame_id == 'mat'


def test_arena_state_lists_the_images_found():
    layout = load_layout(ARENAS / '01_sample_arena_1.json')
    obs = layout.obstacles
    # an obstacle cell inside the arena whose east face looks onto a free cell
    x, y = next((x, y) for y in range(20) for x in range(14) if obs[y, x] and not obs[y, x + 1])
    layout.images = (ImageCard(x, y, 1, 7),)
    explorer, _ = run_exploration(layout, ExplorerConfig(image_mode=True))
    msg = arena_state(explorer, explorer.pose, 'DONE', '', explorer.moves, stamp())
    assert [(i.id, i.x, i.y, i.face) for i in msg.images] == [(7, x, y, 'E')]


def test_fastest_path_message_follows_the_route_through_cell_centres(explored_sample):
    layout, explorer = explored_sample
    route = explorer.fastest_path(layout.waypoint)
    mapping = ArenaMatMapping()
    path = route_path(route.poses, mapping, stamp())
    assert path.header.frame_id == 'mat' and len(path.poses) == len(route.poses) == len(route.actions) + 1
    for pose, ps in zip(route.poses, path.poses):
        assert (ps.pose.position.x, ps.pose.position.y) == pytest.approx(
            units.mat_to_ros_xy(*mapping.cell_to_mat(pose.x, pose.y)))
        q = ps.pose.orientation
        yaw = units.quaternion_to_yaw(q.x, q.y, q.z, q.w)
        # arena north is ROS +y (yaw +90 deg), east is +x (yaw 0)
        want = {0: math.pi / 2, 1: 0.0, 2: -math.pi / 2, 3: math.pi}[pose.heading]
        assert abs((yaw - want + math.pi) % (2 * math.pi) - math.pi) < 1e-9
    assert any((p.x, p.y) == layout.waypoint for p in route.poses)
    assert (route.poses[-1].x, route.poses[-1].y) == (13, 18)


def defaults(**changes):
    values = PARAMS.defaults()
    values.update(changes)
    return values


@pytest.mark.parametrize('changes, named', [
    (dict(waypoint=[15, 3]), 'waypoint'),
    (dict(waypoint=[1, 2, 3]), 'waypoint'),
    (dict(waypoint=[0, 5]), 'robot centre'),
    (dict(cube='1cube'), 'cube'),
    (dict(arena_cell_size=0.0), 'arena_cell_size'),
    (dict(goal_tolerance=12.0), 'goal_tolerance'),       # more than half a 20-unit cell: could stop in the next cell
    (dict(turn_speed=5), 'turn_speed'),
    (dict(turn_cost=float('nan')), 'turn_cost'),
    (dict(max_moves=0), 'max_moves'),
    (dict(image_mode='yes'), 'image_mode'),
])
def test_bad_parameters_are_refused_with_their_name(changes, named):
    with pytest.raises(ArenaNodeError, match=named):
        settings_from_values(defaults(**changes))


def test_waypoint_values():
    assert parse_waypoint([7, 10]) == (7, 10)
    assert parse_waypoint([-1, -1]) is None and parse_waypoint([]) is None
    s = settings_from_values(defaults(waypoint=[3, 4], arena_cell_size=30.0))
    assert s.waypoint == (3, 4) and s.mapping.cell_size == 30.0


@pytest.fixture
def node(ros_domain):
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    n = ArenaExplorerNode(context=context, parameter_overrides=[Parameter('waypoint', value=[7, 10])])
    yield n
    n.destroy_node()
    rclpy.try_shutdown(context=context)


def test_node_refuses_to_start_without_a_cube_and_names_what_is_missing(node):
    assert node.settings.waypoint == (7, 10)
    r = call(node, 'arena_explorer/start_exploration', Trigger.Request(), Trigger.Response())
    assert not r.success and 'cube1/state' in r.message
    r = call(node, 'arena_explorer/start_fastest_path', Trigger.Request(), Trigger.Response())
    assert not r.success and 'start_exploration' in r.message
    r = call(node, 'arena_explorer/terminate', Trigger.Request(), Trigger.Response())
    assert not r.success and 'nothing to terminate' in r.message
    assert node.arena.mode == 'IDLE'


def test_waypoint_parameter_changes_at_run_time_and_bad_values_are_refused(node):
    result = node.set_parameters([Parameter('waypoint', value=[20, 3])])[0]
    assert not result.successful and 'outside the arena' in result.reason
    assert node.settings.waypoint == (7, 10)
    assert node.set_parameters([Parameter('waypoint', value=[2, 15])])[0].successful
    assert node.settings.waypoint == (2, 15)
    assert node.set_parameters([Parameter('waypoint', value=[-1, -1])])[0].successful
    assert node.settings.waypoint is None
    result = node.set_parameters([Parameter('cube', value='cube2')])[0]     # declared read-only
    assert not result.successful and 'read-only parameter: cube' in result.reason
    assert node.settings.cube == 'cube1'


def test_demo_reads_back_the_map_and_path_it_gets_over_ros(explored_sample):
    layout, explorer = explored_sample
    mapping = ArenaMatMapping()
    b = explorer.belief
    explored, obstacle = grid_from_occupancy(occupancy_grid(b.explored, b.obstacle, mapping, stamp()))
    assert np.array_equal(explored, b.explored) and np.array_equal(obstacle, b.obstacle)
    route = explorer.fastest_path(layout.waypoint)
    poses = poses_from_path(route_path(route.poses, mapping, stamp()), mapping)
    assert poses == route.poses
    assert path_cost(poses, 2.0) == route.cost and path_cost(poses, 5.0) == route.actions.count('F') + 5.0 * (
        len(route.actions) - route.actions.count('F'))


@pytest.mark.parametrize('change, named', [
    (lambda d: d['grid_rows_top_first'].pop(), 'has 19 rows'),
    (lambda d: d.update(start={'centre': [2, 2], 'heading': 'N'}), 'start (2,2,N)'),
    (lambda d: d.update(goal={'centre': [12, 17]}), 'goal (12, 17)'),
])
def test_demo_refuses_a_layout_it_cannot_run_and_names_the_problem(tmp_path, capsys, change, named):
    data = json.loads((ARENAS / '02_empty.json').read_text())
    change(data)
    path = tmp_path / 'bad.json'
    path.write_text(json.dumps(data))
    assert run_arena_demo(path, tmp_path / 'out') == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize('arg, named', [('waypoint:=[20,3]', 'waypoint'), ('arena_cell_size:=-5.0', 'arena_cell_size'),
                                        ('image_mode:=true', None)])
def test_node_process_exits_2_naming_a_bad_parameter(child_env, tmp_path, arg, named):
    extra = []
    if named is None:           # image mode with a camera layout that does not exist
        extra, named = ['-p', f'camera_layout:={tmp_path / "missing.json"}'], 'camera_layout'
    proc = subprocess.run([sys.executable, '-m', 'toio_navigator.nodes.arena_explorer', '--ros-args', '-p', arg,
                           *extra], env=child_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert named in proc.stderr and 'Traceback' not in proc.stderr


def test_a_waypoint_must_be_a_robot_centre_whose_footprint_stays_in_the_arena():
    for bad in ([0, 5], [14, 5], [5, 0], [5, 19]):
        with pytest.raises(ArenaNodeError, match='not a valid robot centre'):
            parse_waypoint(bad)
    assert parse_waypoint([1, 1]) == (1, 1) and parse_waypoint([13, 18]) == (13, 18)


def test_set_waypoint_service_over_dds_sets_the_parameter_and_refuses_bad_cells(node, explored_sample):
    user = Node('user', context=node.context)
    client = user.create_client(SetWaypoint, '/arena_explorer/set_waypoint')
    ex = SingleThreadedExecutor(context=node.context)
    ex.add_node(node)
    ex.add_node(user)

    def call(x: int, y: int):
        future = client.call_async(SetWaypoint.Request(x=x, y=y))
        ex.spin_until_future_complete(future, timeout_sec=10.0)
        assert future.done(), 'arena_explorer/set_waypoint did not answer'
        return future.result()

    try:
        assert client.wait_for_service(timeout_sec=10.0)
        r = call(3, 4)
        assert r.success and '(3,4)' in r.message
        assert node.settings.waypoint == (3, 4) and list(node.get_parameter('waypoint').value) == [3, 4]
        for x, y, why in [(15, 3, 'outside the arena'), (0, 5, 'not a valid robot centre'),
                          (-1, 7, 'outside the arena')]:
            r = call(x, y)
            assert not r.success and why in r.message
            assert node.settings.waypoint == (3, 4)          # a refusal changes nothing
        layout, explorer = explored_sample
        node.arena.explorer = explorer                       # an explored map: obstacles it knows are refused
        oy, ox = next((y, x) for y, x in zip(*np.nonzero(layout.obstacles)) if centre_in_range(x, y))
        r = call(int(ox), int(oy))
        assert not r.success and 'obstacle' in r.message and f'({ox},{oy})' in r.message
        assert node.settings.waypoint == (3, 4)
        r = call(-1, -1)
        assert r.success and node.settings.waypoint is None
        assert list(node.get_parameter('waypoint').value) == [-1, -1]
    finally:
        user.destroy_node()
