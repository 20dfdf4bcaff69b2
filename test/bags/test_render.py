"""`toio-nav render`: pictures of swarm bags (trajectories, waypoints, goals, contacts) and explorer bags (belief
grid, MDF progress, fastest path)."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from toio_navigator.bags import render_cli
from toio_navigator.bags.record import BagWriter, typestore
from toio_navigator.bags.render import BODY_RADIUS, read_run
from toio_navigator.units import METRES_PER_UNIT, mat_to_ros_xy

FIXTURES = Path(__file__).resolve().parents[1] / 'data' / 'bags'


def _stamp(store, ns):
    return store.types['std_msgs/msg/Header'](stamp=store.types['builtin_interfaces/msg/Time'](
        sec=ns // 10**9, nanosec=ns % 10**9), frame_id='mat')


def _state(store, ns, cube, x, y):
    return store.types['toio_navigator/msg/CubeState'](
        header=_stamp(store, ns), cube=cube, x=x, y=y, theta=0.0, on_mat=True, standard_id=0, battery=90,
        button=False, flat=True, collision=False, double_tap=False, posture=1, shake=0, speed_left=0.0,
        speed_right=0.0, link_state=2, firmware_version='')


def write_collision_bag(path: Path) -> Path:
    """Two cubes driving head-on until they touch once at x = 250."""
    store = typestore()
    with BagWriter(path, 'mcap', store) as bag:
        for k in range(40):
            ns = 1_000_000_000 + k * 50_000_000
            gap = max(2 * BODY_RADIUS - 2.0, 150.0 - 5.0 * k)       # they meet, overlap a little, then stay
            for cube, x in (('cube1', 250.0 - gap / 2), ('cube2', 250.0 + gap / 2)):
                bag.write_message(f'/{cube}/state', 'toio_navigator/msg/CubeState', ns, _state(store, ns, cube, x,
                                                                                                 200.0))
    return path


def write_explorer_bag(path: Path) -> Path:
    """An arena explorer bag: a 15 x 20 belief that fills up over three moves, then a fastest path."""
    store = typestore()
    T = store.types
    rows, cols, cell = 20, 15, 20.0
    origin_mat = (100.0, 50.0)
    with BagWriter(path, 'mcap', store) as bag:
        for move in range(3):
            ns = 1_000_000_000 + move * 500_000_000
            grid = np.full((rows, cols), -1, dtype=np.int8)
            grid[: 5 * (move + 1), :] = 0
            grid[2, 3] = 100
            x0, y0 = mat_to_ros_xy(origin_mat[0], origin_mat[1] + rows * cell)
            info = T['nav_msgs/msg/MapMetaData'](
                map_load_time=T['builtin_interfaces/msg/Time'](sec=1, nanosec=0), resolution=cell * METRES_PER_UNIT,
                width=cols, height=rows, origin=T['geometry_msgs/msg/Pose'](
                    position=T['geometry_msgs/msg/Point'](x=x0, y=y0, z=0.0),
                    orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0)))
            bag.write_message('/arena/map', 'nav_msgs/msg/OccupancyGrid', ns, T['nav_msgs/msg/OccupancyGrid'](
                header=_stamp(store, ns), info=info, data=grid.ravel()))
            bag.write_message('/arena/state', 'toio_navigator/msg/ArenaState', ns, T['toio_navigator/msg/ArenaState'](
                header=_stamp(store, ns), mdf_part1='F' * 76, mdf_part2='0', robot_x=1, robot_y=1 + move,
                heading='N', explored_count=75 * (move + 1), moves=move + 1, status=1, status_text='exploring',
                images=[]))
        poses = []
        for cx, cy in ((1, 1), (1, 10), (13, 10), (13, 18)):
            x, y = mat_to_ros_xy(origin_mat[0] + (cx + 0.5) * cell, origin_mat[1] + (rows - cy - 0.5) * cell)
            poses.append(T['geometry_msgs/msg/PoseStamped'](header=_stamp(store, 3_000_000_000), pose=T[
                'geometry_msgs/msg/Pose'](position=T['geometry_msgs/msg/Point'](x=x, y=y, z=0.0),
                                          orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0,
                                                                                        w=1.0))))
        bag.write_message('/arena/fastest_path', 'nav_msgs/msg/Path', 3_000_000_000,
                          T['nav_msgs/msg/Path'](header=_stamp(store, 3_000_000_000), poses=poses))
    return path


def _render(args) -> int:
    parser = argparse.ArgumentParser()
    render_cli.add_arguments(parser)
    return render_cli.run(parser.parse_args([str(a) for a in args]))


def test_fixture_bag_renders_trajectories_goals_and_waypoints(tmp_path):
    bag = FIXTURES / 'swap3_mcap'
    run = read_run(bag)
    assert run.cubes == ['cube1', 'cube2', 'cube3']
    assert run.truth is not None and len(run.truth.xy[0]) == 3
    assert all(len(run.goals[c]) == 1 for c in run.cubes)
    end = np.asarray(run.truth.xy[-1])
    goals = np.array([run.goals[c][0] for c in run.cubes])
    assert np.all(np.hypot(*(end - goals).T) < 30)         # the run ends with every cube near its goal
    out = tmp_path / 'run.png'
    assert _render([bag, '--out', out]) == 0
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_contacts_are_found_once_where_the_bodies_touch(tmp_path):
    run = read_run(write_collision_bag(tmp_path / 'bump'))
    assert len(run.contacts) == 1
    t, x, y, pair = run.contacts[0]
    assert pair == 'cube1-cube2' and x == pytest.approx(250.0) and y == pytest.approx(200.0)
    gif = tmp_path / 'bump.gif'
    assert _render([tmp_path / 'bump', '--out', gif, '--frames', '5']) == 0
    assert gif.read_bytes()[:6] == b'GIF89a'


def test_explorer_bag_draws_grid_progress_and_fastest_path(tmp_path):
    run = read_run(write_explorer_bag(tmp_path / 'arena'))
    a = run.arena
    assert a is not None and a.grid.shape == (20, 15)
    assert a.explored == [75, 150, 225]
    assert (a.grid[-15:] == 0).sum() >= 14 * 15          # row 0 is the top: the explored rows are at the bottom
    assert a.extent[0] == pytest.approx(100.0) and a.extent[3] == pytest.approx(50.0)
    assert a.path_xy.shape == (4, 2) and a.path_xy[0] == pytest.approx((130.0, 420.0))
    out = tmp_path / 'arena.png'
    assert _render([tmp_path / 'arena', '--out', out]) == 0 and out.stat().st_size > 1000


def test_bad_render_requests_are_refused_by_name(tmp_path, capsys):
    assert _render([FIXTURES / 'swap3_mcap', '--out', tmp_path / 'run.jpg']) == 2
    assert '.png or .gif' in capsys.readouterr().err
    assert _render([tmp_path / 'missing', '--out', tmp_path / 'x.png']) == 2
    assert 'no such bag' in capsys.readouterr().err
    assert _render([FIXTURES / 'swap3_mcap', '--out', tmp_path / 'no' / 'x.png']) == 2
    assert 'not a directory' in capsys.readouterr().err
    store = typestore()
    with BagWriter(tmp_path / 'other', 'mcap', store) as bag:
        bag.write_message('/chatter', 'std_msgs/msg/String', 1, store.types['std_msgs/msg/String'](data='hi'))
    assert _render([tmp_path / 'other', '--out', tmp_path / 'x.png']) == 2
    assert 'nothing to draw' in capsys.readouterr().err
