"""The `coordinated` planner: its lattice and route fields, the PIBT rounds over claims, the dead-lock patterns it
solves where plain ORCA does not, and its use through the navigator's controller."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toio_navigator.bench.runner import run_scenario
from toio_navigator.bench.scenarios import Scenario, load_scenarios
from toio_navigator.bench.trial.profiles import get_profile
from toio_navigator.bench.trial.runner import run_trial
from toio_navigator.navigation.controller import NavigatorSettings, SwarmController
from toio_navigator.navigation.coordination.lattice import Lattice
from toio_navigator.navigation.planner import SwarmState
from toio_navigator.navigation.planners import make_planner
from toio_navigator.navigation.planners.coordinated import CoordinatedPlanner

R = 16.5


def scenario(name, starts, goals, segments=(), time_limit=10.0) -> Scenario:
    return Scenario(name=name, category='deadlock', n_agents=len(starts), time_limit=time_limit,
                    starts=np.array(starts, float), goals=np.array(goals, float),
                    segments=np.array(segments, float).reshape(-1, 4))


GRID3 = np.array([[x, y] for y in (208.0, 250.0, 292.0) for x in (208.0, 250.0, 292.0)])

#: each a situation no local planner gets out of; starts and goals in mat units
PATTERNS = {
    # a corridor one cube wide (walls 50 apart, open ends), one cube at each end, swapping ends
    'corridor_swap': scenario('corridor_swap', [[150, 250], [350, 250]], [[350, 250], [150, 250]],
                              [[100, 225, 400, 225], [100, 275, 400, 275]], time_limit=12.0),
    # a wall with a doorway one cube wide, two cubes on each side swapping sides
    'doorway': scenario('doorway', [[170, 225], [170, 275], [330, 225], [330, 275]],
                        [[330, 225], [330, 275], [170, 225], [170, 275]],
                        [[250, 100, 250, 225], [250, 275, 250, 400]], time_limit=8.0),
    # a cube inside a U whose closed end lies between it and its goal
    'u_trap': scenario('u_trap', [[260, 250]], [[420, 250]],
                       [[200, 180, 300, 180], [300, 180, 300, 320], [200, 320, 300, 320]], time_limit=6.0),
    # nine cubes packed 42 apart (9 units of gap), each going to the mirror point through the centre
    'dense_crowd': scenario('dense_crowd', GRID3, 500.0 - GRID3, time_limit=8.0),
}


@pytest.mark.parametrize('name', sorted(PATTERNS))
def test_each_dead_lock_pattern_is_solved_by_coordinated_and_not_by_plain_orca(name):
    sc = PATTERNS[name]
    ours = run_scenario(sc, make_planner('coordinated')).metrics
    assert ours['success_collision_free'], (name, ours['fraction_arrived'], ours['collisions'])
    assert all(ours[k] is None or ours[k] > 0.0 for k in ('min_clearance', 'min_obstacle_clearance'))
    orca = run_scenario(sc, make_planner('orca')).metrics
    assert not orca['success_collision_free'], name


def swarm(pos, goal, walls=(), radius=R) -> SwarmState:
    pos = np.asarray(pos, float)
    n = len(pos)
    return SwarmState(pos=pos, vel=np.zeros((n, 2)), heading=np.zeros(n), radius=np.full(n, radius),
                      goal=np.asarray(goal, float), max_speed=np.full(n, 165.0), active=np.ones(n, bool),
                      walls=np.asarray(walls, float).reshape(-1, 5))


def edge_waits_are_acyclic(claims) -> bool:
    """The wait-for relation between edges (an edge waits for the edges in its gates; a cube's next edge comes
    after its current one) must never close a cycle: a cycle would be a dead-lock."""
    graph: dict[int, set[int]] = {}
    for i in range(claims.n):
        cur, nxt = int(claims.seq_cur[i]), int(claims.seq_next[i])
        graph.setdefault(cur, set()).update(g[1] for g in claims.gates_cur[i])
        if nxt:
            graph.setdefault(nxt, set()).update(g[1] for g in claims.gates_next[i])
            graph[nxt].add(cur)
    state: dict[int, int] = {}

    def cyclic(node) -> bool:
        state[node] = 1
        for nb in graph.get(node, ()):
            if state.get(nb) == 1 or (state.get(nb) is None and cyclic(nb)):
                return True
        state[node] = 2
        return False
    return not any(state.get(node) is None and cyclic(node) for node in list(graph))


def test_pibt_rounds_keep_every_pair_apart_and_never_close_a_wait_cycle():
    # a crowd on an open mat: 12 cubes packed 40 apart, goals a random permutation of the starts
    rng = np.random.default_rng(4)
    starts = np.array([[x, y] for y in (170.0, 210.0, 250.0) for x in (170.0, 210.0, 250.0, 290.0)])
    goals = starts[rng.permutation(len(starts))]
    planner = CoordinatedPlanner()
    planner.reset(len(starts), seed=2)
    pos = starts.copy()
    pair = 2 * R + planner.params.margin
    closest = np.inf
    for _ in range(120):
        out = planner.step(swarm(pos, goals), 0.05)
        pos = pos + out.velocity * 0.05
        d = np.hypot(*(pos[:, None] - pos[None]).transpose(2, 0, 1))
        closest = min(closest, float(d[np.triu_indices(len(pos), 1)].min()))
        assert edge_waits_are_acyclic(planner.claims)
        if np.all(np.hypot(*(pos - goals).T) < 1e-6):
            break
    assert closest >= pair - 0.5          # no two cubes ever share a lattice cell (spacing = pair distance)
    assert np.all(np.hypot(*(pos - goals).T) < 1e-6)


def test_two_cubes_on_adjacent_vertices_swap_without_passing_through_each_other():
    planner = CoordinatedPlanner()
    planner.reset(2)
    pos = np.array([[180.0, 252.0], [216.0, 252.0]])          # 36 apart: exactly the pair distance
    goals = pos[::-1].copy()
    path = [pos.copy()]
    for _ in range(80):
        out = planner.step(swarm(pos, goals), 0.05)
        pos = pos + out.velocity * 0.05
        path.append(pos.copy())
    path = np.array(path)
    gap = np.hypot(*(path[:, 0] - path[:, 1]).T)
    assert np.allclose(path[-1], goals)
    assert gap.min() >= 2 * R + planner.params.margin - 0.5   # one went round the other, never through it


def test_lattice_drops_vertices_and_edges_a_wall_blocks_and_routes_around_it():
    wall = np.array([[100.0, 200.0, 300.0, 200.0, 0.0]])       # a horizontal wall segment, zero thickness
    lat = Lattice.build((0, 100, 400, 300), 36.0, wall, R + 1.0, offsets=1)
    free_gap = np.abs(lat.points[lat.free, 1] - 200.0)
    inside = (lat.points[lat.free, 0] >= 100) & (lat.points[lat.free, 0] <= 300)
    assert np.all(free_gap[inside] >= R + 1.0)
    crossing = [(v, n) for v in range(lat.size) for n in lat.neighbours[v] if n >= 0
                and 100 < lat.points[v, 0] < 300 and (lat.points[v, 1] - 200) * (lat.points[n, 1] - 200) < 0]
    assert crossing == []                                      # no edge passes through the wall
    field = lat.route_fields(np.array([[200.0, 140.0]]), np.zeros(lat.size, bool))[0]
    below = int(np.argmin(np.hypot(*(lat.points - [200.0, 260.0]).T)))
    assert field[below] > 2 * 100.0                            # round an end of the wall, not straight through


def test_a_stopped_cube_is_routed_around():
    # cube 1 is inactive (stopped) in the middle of a one-lane corridor: cube 0 must go round the outside
    walls = [[100, 225, 400, 225, 0], [100, 275, 400, 275, 0]]
    planner = CoordinatedPlanner()
    planner.reset(2)
    pos = np.array([[60.0, 250.0], [250.0, 250.0]])
    goals = np.array([[440.0, 250.0], [250.0, 250.0]])
    state = swarm(pos, goals, walls)
    state.active = np.array([True, False])
    for _ in range(200):
        state.pos = pos
        out = planner.step(state, 0.05)
        pos = pos + out.velocity * 0.05
        assert np.hypot(*(pos[0] - pos[1])) >= 2 * R
    assert np.hypot(*(pos[0] - goals[0])) < 1e-6
    assert np.all(pos[1] == [250.0, 250.0])


def test_the_controller_drives_coordinated_cubes_and_leaves_their_dead_locks_to_it():
    settings = NavigatorSettings(cubes=('a', 'b'), planner='coordinated', stuck_time_s=0.3,
                                 mat_rect=(45.0, 45.0, 455.0, 455.0))
    now = [0.0]
    controller = SwarmController(settings, clock=lambda: now[0])
    for cube, x in (('a', 150.0), ('b', 350.0)):
        controller.update_state(cube, x, 250.0, 0.0, True, 2, stamp_ns=0)
    assert controller.set_goal('a', 1, 350.0, 250.0, 0, 0.0, 0.0) == ''
    assert controller.set_goal('b', 1, 150.0, 250.0, 0, 0.0, 0.0) == ''
    for k in range(40):                      # the cubes stand still: no progress for 2 s
        now[0] = k * 0.05
        for cube, x in (('a', 150.0), ('b', 350.0)):
            controller.update_state(cube, x, 250.0, 0.0, True, 2, stamp_ns=int(now[0] * 1e9))
        commands = controller.step(now[0])
    assert all(c.motor is not None and c.motor[:2] != (0, 0) for c in commands)
    assert controller.sidesteps.sum() == 0   # its own breaker, not the controller's side-steps
    assert controller.planner.waits() is not None


def test_coordinated_in_closed_loop_with_ble_timing_reaches_both_goals_without_contact():
    sc = {s.name: s for s in load_scenarios(Path(__file__).resolve().parents[1] / 'toio_navigator' / 'data'
                                            / 'scenarios.yaml')}['head_on_pair']
    record = run_trial(sc, 'coordinated', get_profile('ble'), seed=0).record
    assert record['success_collision_free'], record['failure']
