"""The vectorised swarm step equals N single Navigator queries, and its neighbour culling loses nothing."""
import math

import numpy as np
import pytest

from toio_navigator.reference.entities import Entity, border_walls, walls_array
from toio_navigator.reference.navigator import Mode, Navigator, Relation
from toio_navigator.reference.params import NavigatorParams
from toio_navigator.reference.swarm import neighbour_pairs, swarm_step


def random_swarm(n, side, seed):
    rng = np.random.default_rng(seed)
    pos = rng.uniform(30, side - 30, (n, 2))
    rad = rng.uniform(-math.pi, math.pi, n)
    spd = rng.uniform(-20, 160, n)
    vel = spd[:, None] * np.stack([np.cos(rad), np.sin(rad)], axis=1)
    w = rng.uniform(-2, 2, n)
    goals = rng.uniform(0, side, (n, 2))
    return pos, rad, spd, vel, w, goals


def single_queries(pos, rad, spd, vel, w, goals, walls, mode, direction, groups, prm):
    navs = [Navigator(Entity(*pos[i], rad[i], spd[i], *vel[i], w[i], margin=16.0), mode, prm)
            for i in range(len(pos))]
    for i, a in enumerate(navs):
        for j, b in enumerate(navs):
            a.add_other(b, Relation.BOIDS if groups[i] == groups[j] else Relation.NONE)
        a.add_walls(walls)
    ask = Navigator.get_waypoint_to if direction == 'towards' else Navigator.get_waypoint_away
    return [ask(a, tuple(goals[i])) for i, a in enumerate(navs)]


@pytest.mark.parametrize('mode,direction', [('AVOID', 'towards'), ('BOIDS', 'towards'),
                                            ('BOIDS_AVOID', 'towards'), ('AVOID', 'away')])
def test_swarm_step_equals_single_queries(mode, direction):
    pos, rad, spd, vel, w, goals = random_swarm(30, 400, seed=7)
    groups = np.arange(30) % 3
    walls = border_walls(20, 40, 460, 40, 460)
    prm = NavigatorParams()
    got = swarm_step(pos, rad, spd, vel, w, goals, prm, walls_array(walls), mode, direction, groups=groups)
    want = single_queries(pos, rad, spd, vel, w, goals, walls, Mode(mode), direction, groups, prm)
    for i, r in enumerate(want):
        assert np.allclose(got.waypoint[i], r.waypoint, atol=1e-9, rtol=0), i
        assert np.allclose(got.avoid_vector[i], r.avoid_vector, atol=1e-9, rtol=0), i
        assert np.allclose(got.boids_vector[i], r.boids_vector, atol=1e-9, rtol=0), i
        assert got.speed_limit[i] == pytest.approx(r.speed_limit, rel=1e-12), i
        assert got.speed_ratio[i] == pytest.approx(r.speed_ratio, rel=1e-12), i
        assert bool(got.collision[i]) == r.is_collision, i


def test_some_cubes_overlap_in_the_swarm_case():
    pos, rad, spd, vel, w, goals = random_swarm(30, 400, seed=7)
    res = swarm_step(pos, rad, spd, vel, w, goals)
    assert res.collision.any() and not res.collision.all()   # the equality test above covers both paths


def test_culling_keeps_every_pair_within_cutoff():
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 3000, (400, 2))          # above the all-pairs size: grid binning
    i, j = neighbour_pairs(pos, 244.0)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    want = {(a, b) for a, b in zip(*np.nonzero(d <= 244.0)) if a != b}
    assert set(zip(i.tolist(), j.tolist())) == want
    assert np.all(np.diff(i) >= 0)


def test_large_sparse_swarm_equals_queries_without_culling():
    pos, rad, spd, vel, w, goals = random_swarm(300, 2500, seed=11)
    prm = NavigatorParams()
    res = swarm_step(pos, rad, spd, vel, w, goals, prm)
    for i in range(0, 300, 37):                  # a sample of cubes, each against all 299 others
        nav = Navigator(Entity(*pos[i], rad[i], spd[i], *vel[i], w[i], margin=16.0), Mode.AVOID, prm)
        for j in (j for j in range(300) if j != i):
            nav.add_other(Navigator(Entity(*pos[j], rad[j], spd[j], *vel[j], w[j], margin=16.0)))
        r = nav.get_waypoint_to(tuple(goals[i]))
        assert np.allclose(res.waypoint[i], r.waypoint, atol=1e-9, rtol=0)
        assert res.speed_limit[i] == pytest.approx(r.speed_limit, rel=1e-12)


def test_swarm_rejects_non_finite_input():
    pos, rad, spd, vel, w, goals = random_swarm(5, 400, seed=1)
    pos[2, 0] = np.nan
    with pytest.raises(ValueError, match='finite'):
        swarm_step(pos, rad, spd, vel, w, goals)


def test_dense_swarm_spanning_many_pair_blocks_equals_single_queries():
    # ~100 neighbours per cube: thousands of pairs, processed in several blocks with egos split across blocks
    pos, rad, spd, vel, w, goals = random_swarm(150, 450, seed=5)
    prm = NavigatorParams()
    res = swarm_step(pos, rad, spd, vel, w, goals, prm, walls_array(border_walls()))
    assert res.collision.sum() >= 10
    for i in list(range(0, 150, 13)) + [149]:
        nav = Navigator(Entity(*pos[i], rad[i], spd[i], *vel[i], w[i], margin=16.0), Mode.AVOID, prm)
        for j in (j for j in range(150) if j != i):
            nav.add_other(Navigator(Entity(*pos[j], rad[j], spd[j], *vel[j], w[j], margin=16.0)))
        nav.add_border()
        r = nav.get_waypoint_to(tuple(goals[i]))
        assert np.allclose(res.waypoint[i], r.waypoint, atol=1e-9, rtol=0), i
        assert res.speed_limit[i] == pytest.approx(r.speed_limit, rel=1e-12), i
        assert bool(res.collision[i]) == r.is_collision, i
