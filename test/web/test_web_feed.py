"""What each topic's message means for the web console's view, with the nodes' own messages (as the explorer and the
drivers fill them) and with a recorded bag read the way ``toio-nav web`` reads it."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from toio_navigator.arena.geometry import Pose
from toio_navigator.sim.ir_sensors import ArenaMatMapping
from toio_navigator.web.feed import Feed, topics
from toio_navigator.web.replay import Player, load
from toio_navigator.web.view import ViewState

BAG = Path(__file__).resolve().parents[1] / 'data' / 'bags' / 'swap3_mcap'


def test_the_topics_of_a_bringup():
    t = topics(['cube1', 'cube2'])
    assert t['cube2/state'] == 'toio_navigator/msg/CubeState' and t['arena/state'] == 'toio_navigator/msg/ArenaState'
    assert len(t) == 2 * 3 + 4


def test_the_explorers_map_state_and_path_as_the_page_gets_them():
    pytest.importorskip('toio_navigator.msg')
    # the node's own conversions: what the arena_explorer publishes
    from builtin_interfaces.msg import Time  # noqa: PLC0415 needs the built messages, see above

    from toio_navigator.msg import ArenaImage, ArenaState  # noqa: PLC0415 see above
    from toio_navigator.nodes.conversions import occupancy_grid, route_path  # noqa: PLC0415 see above
    mapping = ArenaMatMapping(origin_x=110.0, origin_y=40.0, cell_size=20.0)
    explored = np.zeros((20, 15), dtype=bool)
    obstacle = np.zeros((20, 15), dtype=bool)
    explored[:3, :3] = True
    explored[5, 7] = obstacle[5, 7] = True
    feed, view = Feed(), ViewState(['cube1'])
    view.feed(0.0, feed.events('/arena/map', occupancy_grid(explored, obstacle, mapping, Time())))
    state = ArenaState(mdf_part1='F' * 76, mdf_part2='0' * 76, robot_x=1, robot_y=2, heading='E', explored_count=10,
                       moves=3, status=ArenaState.EXPLORING, status_text='exploring')
    state.images = [ArenaImage(id=4, x=7, y=5, face='S')]
    view.feed(0.1, feed.events('/arena/state', state))                 # (not taken for a cube named "arena")
    route = [Pose(1, 1, 0), Pose(1, 2, 0), Pose(1, 2, 1), Pose(4, 2, 1)]
    view.feed(0.2, feed.events('arena/fastest_path', route_path(route, mapping, Time())))
    a = view.snapshot(0.2)['arena']
    assert a['mapping'] == [110.0, 40.0, 20.0]
    assert a['cells'][5 * 15 + 7] == 'o' and a['cells'][:3] == 'fff' and a['cells'][3] == 'u'
    assert a['cells'].count('f') == 9 and a['cells'].count('o') == 1
    assert (a['robot'], a['status'], a['explored'], a['moves'], a['images']) == ([1, 2, 'E'], 'EXPLORING', 10, 3,
                                                                                 [[4, 7, 5, 'S']])
    assert a['path'] == [[1, 1, 'N'], [1, 2, 'N'], [1, 2, 'E'], [4, 2, 'E']]
    assert view.snapshot(0.2)['cubes'][0]['health'] == 'unseen'


def test_a_bag_read_as_the_replay_reads_it_ends_with_every_cube_at_its_last_state():
    timeline = load(BAG)
    assert timeline.cubes == ['cube1', 'cube2', 'cube3'] and 7.0 < timeline.duration < 8.0
    player = Player(timeline)
    player.seek(timeline.duration)
    end = {c['name']: c for c in player.snapshot()['cubes']}
    assert all(c['status'] == 'reached' and c['health'] == 'ok' for c in end.values())
    # the same view whichever way the playhead got there: straight, or back from the end through a key frame
    player.seek(3.3)
    back = player.snapshot()
    straight = Player(timeline)
    straight.seek(3.3)
    assert back == straight.snapshot()
    assert math.isclose(back['t'], 3.3)


def test_a_file_that_is_no_bag_is_refused_with_the_reason(tmp_path):
    from toio_navigator.bags.replay import ReplayError  # noqa: PLC0415 the error type of every bag reader here
    with pytest.raises(ReplayError, match='no such bag'):
        load(tmp_path / 'missing')
    (tmp_path / 'empty').mkdir()
    with pytest.raises(ReplayError):
        load(tmp_path / 'empty')
