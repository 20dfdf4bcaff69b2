"""Differential test: the vectorised kernels against a plain loop-by-loop rendering of docs/navigator.md (§2, §3).

The loop version below walks the reference's steps one direction, one robot and one wall at a time with
Python floats, so a vectorisation slip (slot overwrites in the sampling, masks in the casts, first-index ties)
shows up as a mismatch on random scenarios, including the rarely visible paths: useSafety = false, fleeing,
walls overlapped, headings outside [−π, π), tiny nsample.
"""
import math
import random

import numpy as np
import pytest

from toio_navigator.reference.batch import EgoBatch, PairBatch, empty_pairs
from toio_navigator.reference.navigator import navigate
from toio_navigator.reference.params import HLAVOID_FOV, NavigatorParams

PI = math.pi


def wrap(r):
    return math.fmod(r + PI * 3, PI * 2) - PI


def ang(x, y):
    return wrap(math.atan2(y, x))


def mag(x, y):
    return math.sqrt(x * x + y * y)


def unit(x, y):
    if x == 0 and y == 0:
        return 0.0, 0.0
    m = mag(x, y)
    return x / m, y / m


def clip(x, y, mx):
    m = mag(x, y)
    if m > mx:
        if x == 0 and y == 0:
            return 0.0, 0.0
        return x * mx / m, y * mx / m
    return x, y


def line(p1, p2):
    if p1[0] == p2[0]:
        return 1.0, 0.0, (0.0 if p1[0] == 0 else -p1[0])
    if p1[1] == p2[1]:
        return 0.0, 1.0, (0.0 if p1[1] == 0 else -p1[1])
    c = p1[0] * p2[1] - p2[0] * p1[1]
    a = p1[1] - p2[1]
    b = p2[0] - p1[0]
    m = math.sqrt(a * a + b * b)
    return a / m, b / m, c / m


def foot_on(p, p1, p2, end2=True):
    in1 = (p[0] - p1[0]) * (p2[0] - p1[0]) + (p[1] - p1[1]) * (p2[1] - p1[1]) >= 0
    in2 = (not end2) or (p[0] - p2[0]) * (p1[0] - p2[0]) + (p[1] - p2[1]) * (p1[1] - p2[1]) >= 0
    return in1 and in2


def cast_point(o, rad, r, p):
    """(hit, origin_hit, dist) of a disc cast from o along rad against point p."""
    if mag(o[0] - p[0], o[1] - p[1]) < r:
        return True, True, 0.0
    d = (math.cos(rad), math.sin(rad))
    o2 = (o[0] + d[0], o[1] + d[1])
    a, b, c = line(o, o2)
    if foot_on(p, o, o2, end2=False):
        k = a * p[0] + b * p[1] + c
        if abs(k) <= r:
            back = math.sqrt(r * r - k * k)
            f = (p[0] - k * a, p[1] - k * b)
            t = (f[0] - o[0]) * d[0] + (f[1] - o[1]) * d[1] - back
            h = (o[0] + d[0] * t, o[1] + d[1] * t)
            return True, False, mag(h[0] - o[0], h[1] - o[1])
    return False, False, -1.0


def cast_wall(o, rad, r, w):
    p1, p2 = (w[0], w[1]), (w[2], w[3])
    r = r + w[4]
    a, b, c = line(p1, p2)
    sd = a * o[0] + b * o[1] + c
    if abs(sd) < r:
        if foot_on(o, p1, p2):
            return True, True, 0.0
    else:
        s = math.copysign(1.0, sd) if sd != 0 else 0.0
        q1 = (p1[0] + s * r * a, p1[1] + s * r * b)
        q2 = (p2[0] + s * r * a, p2[1] + s * r * b)
        am, bm, cm = line(q1, q2)
        d = (math.cos(rad), math.sin(rad))
        o2 = (o[0] + d[0], o[1] + d[1])
        ac, bc, cc = line(o, o2)
        det = ac * bm - am * bc
        if det != 0:
            sec = ((bc * cm - bm * cc) / det, (am * cc - ac * cm) / det)
            if foot_on(sec, o, o2, end2=False) and foot_on(sec, q1, q2):
                return True, False, mag(sec[0] - o[0], sec[1] - o[1])
    h1 = cast_point(o, rad, r, p1)
    h2 = cast_point(o, rad, r, p2)
    if h1[0] and (not h2[0] or h1[2] < h2[2]):
        return h1
    return h2


def sample(ego, tar, n):
    rads = [0.0] * (n + 1)
    rt = ang(tar[0] - ego['x'], tar[1] - ego['y'])
    s = HLAVOID_FOV / (n - 1)
    for i in range(n):
        ri = ego['rad'] - HLAVOID_FOV / 2 + s * i
        dt, di = wrap(rt - ego['rad']), wrap(ri - ego['rad'])
        if dt > di:
            rads[i] = ri
        elif dt + s > di:
            rads[i], rads[i + 1] = rt, ri
        else:
            rads[i + 1] = ri
    return rads, rt


def hlavoid(ego, others, walls, tar, prm, away):
    n, r1 = prm.n, prm.range + 1
    rads, rt = sample(ego, tar, n)
    k = len(rads)
    D, CD, CS = [r1] * k, [r1] * k, [1.0] * k      # free distance, distance and safety in collision
    for i in range(k):
        if rads[i] == rt:
            D[i] = min(r1, mag(tar[0] - ego['x'], tar[1] - ego['y']))
            break
    col_others = scan_others(ego, others, rads, prm, D, CD, CS)
    col_walls = scan_walls(ego, walls, rads, prm, D, CD, CS)
    col = col_others or col_walls
    pts = [(abs(d) * math.cos(r), abs(d) * math.sin(r)) for d, r in zip(D, rads)]
    if away:
        idx, wp = choose_away(ego, tar, rads, pts, CS, prm)
    else:
        idx, wp = choose_towards(ego, tar, rads, rt, pts, CD, CS, col, prm)
    return wp, col, speed_limit(ego, rads, idx, D, CS, col, prm, away), idx


def scan_others(ego, others, rads, prm, D, CD, CS):
    """Time to contact with every robot seen, per direction, into D (or CD and CS when overlapping now);
    whether the ego overlaps one."""
    r1, m, col = prm.range + 1, prm.margin, False
    for o in others:
        dx, dy = ego['x'] - o['x'], ego['y'] - o['y']
        if not (mag(dx, dy) < prm.range + m + o['avoid_margin']
                and abs(wrap(ang(o['x'] - ego['x'], o['y'] - ego['y']) - ego['rad'])) < HLAVOID_FOV / 2):
            continue
        ms, vm = m + o['avoid_margin'], max(ego['spd'], 20)
        dist, hitnow = [], False
        for rad in rads:
            vx, vy = vm * math.cos(rad), vm * math.sin(rad)
            dvx, dvy = vx - o['vx'], vy - o['vy']
            a = dvx * dvx + dvy * dvy
            b = 2 * (dvx * dx + dvy * dy)
            c = dx * dx + dy * dy - ms * ms
            disc = b * b - 4 * a * c
            if disc < 0 or abs(a) < 1:
                dist.append(r1)
                continue
            t1, t2 = (-b - math.sqrt(disc)) / 2 / a, (-b + math.sqrt(disc)) / 2 / a
            if t2 <= 0:
                dist.append(r1)
            elif t1 > 0:
                dist.append(t1 * vm)
            else:
                dist.append((vx * dx + vy * dy) / vm / math.sqrt(dx * dx + dy * dy) * 100)
                hitnow = True
        if hitnow:
            col = True
            sev = max(0, m + o['margin'] - mag(dx, dy)) / m
            for i, rad in enumerate(rads):
                CD[i] = min(CD[i], dist[i])
                CS[i] = min(CS[i], math.cos(abs(wrap(rad - ang(dx, dy)))) * (1 + sev))
        else:
            D[:] = [min(a, b) for a, b in zip(D, dist)]
    return col


def scan_walls(ego, walls, rads, prm, D, CD, CS):
    """Every wall near enough: a ray cast per direction into D, or, overlapping it, its push into CS (CD without
    useSafety); whether the ego overlaps one."""
    r1, m, col = prm.range + 1, prm.margin, False
    for w in walls:
        a, b, c = line((w[0], w[1]), (w[2], w[3]))
        if abs(a * ego['x'] + b * ego['y'] + c) - w[4] > r1:
            continue
        o = (ego['x'], ego['y'])
        if not cast_wall(o, 0.0, m, w)[1]:
            for i, rad in enumerate(rads):
                h = cast_wall(o, rad, m, w)
                if h[0]:
                    D[i] = min(D[i], h[2])
            continue
        col = True
        p1, p2 = (w[0], w[1]), (w[2], w[3])
        d1, d2 = mag(o[0] - p1[0], o[1] - p1[1]), mag(o[0] - p2[0], o[1] - p2[1])
        if foot_on(o, p1, p2):
            sd = a * o[0] + b * o[1] + c
            s = (sd > 0) - (sd < 0)
            ds, rep = abs(sd), (s * a, s * b)
        else:
            ds, pp = (d1, p1) if d1 < d2 else (d2, p2)
            rep = unit(o[0] - pp[0], o[1] - pp[1])
        sev = max(0, m + w[4] - ds) / m
        for i, rad in enumerate(rads):
            if prm.useSafety:
                CS[i] = min(CS[i], math.cos(abs(wrap(rad - ang(*rep)))) * (1 + sev))
            else:
                CD[i] = min(CD[i], max(0.1, (math.cos(rad) * rep[0] + math.sin(rad) * rep[1]) * 100))
    return col


def choose_towards(ego, tar, rads, rt, pts, CD, CS, col, prm):
    """(index, waypoint) of the best direction towards the target."""
    k, idx, wp = len(rads), 0, (0.0, 0.0)
    td = mag(ego['x'] - tar[0], ego['y'] - tar[1])
    cost = []
    for i, r in enumerate(rads):
        pts[i] = clip(*pts[i], max(math.cos(rt - r) * td, 1))
        c = mag(tar[0] - (ego['x'] + pts[i][0]), tar[1] - (ego['y'] + pts[i][1]))
        psi = abs(wrap(ego['rad'] - r))
        c += max(psi, 0.5) * 0.1
        c += max(psi - PI / 2, 0) * 2
        cost.append(c)
    if prm.useSafety:
        best = float('inf')
        for i in range(k):
            if cost[i] < best and CS[i] > prm.p_waypoint_safety_threshold:
                best, idx = cost[i], i
        if best < float('inf'):
            wp = pts[idx]
    elif not col:
        idx = min(range(k), key=lambda i: (cost[i], i))
        wp = pts[idx]
    else:
        best = CD[0]
        for i in range(k):
            if CD[i] > best:
                best, idx = CD[i], i
        wp = (abs(CD[idx]) * math.cos(rads[idx]), abs(CD[idx]) * math.sin(rads[idx]))
    return idx, wp


def choose_away(ego, tar, rads, pts, CS, prm):
    """(index, waypoint) of the best direction away from the target (fleeing)."""
    idx, wp, best = 0, (0.0, 0.0), 0.0
    pf = (tar[0] + tar[2] * 0.5, tar[1] + tar[3] * 0.5)
    aw = ang(ego['x'] - tar[0] - tar[2] * 0.2, ego['y'] - tar[1] - tar[3] * 0.2)
    a0 = ang(ego['x'] - tar[0], ego['y'] - tar[1])
    for i, r in enumerate(rads):
        px = pts[i][0] * prm.p_runaway_range / prm.range + ego['x']
        py = pts[i][1] * prm.p_runaway_range / prm.range + ego['y']
        sc = mag(px - pf[0], py - pf[1])
        sc -= (-PI + abs(wrap(r - aw))) * prm.p_runaway_penalty_away_k
        sc -= (-PI + abs(wrap(r - ego['rad']))) * prm.p_runaway_penalty_keeprad_k
        if abs(wrap(r - a0)) - PI + (PI / 4 - 0.15) > 0:
            sc = 0
        if best < sc and CS[i] > prm.p_waypoint_safety_threshold:
            best, idx = sc, i
    if best > 0:
        wp = pts[idx]
    return idx, wp


def speed_limit(ego, rads, idx, D, CS, col, prm, away):
    """The turn's speed limit, and the stop rule for a robot in collision heading into it."""
    wr, minr = rads[idx], 1e10
    for i, r in enumerate(rads):
        between = (wrap(r - ego['rad']) > 0.1 and wrap(wr - r) > 0.1) or \
                  (wrap(ego['rad'] - r) > 0.1 and wrap(r - wr) > 0.1)
        if between and (away or D[i] < 50):
            minr = min(minr, (D[i] + 20) / (2 * math.sin(abs(r - ego['rad']))))
    limit = max(8, minr * max(1, abs(ego['w'])))
    if col:
        for i, r in enumerate(rads):
            if abs(wrap(r - ego['rad'])) < PI * 2 / prm.n and CS[i] <= 0:
                limit = 100 * max(0, CS[i] * 2 + 1)
                break
    return limit


def random_scene(rng):
    ego = dict(x=rng.uniform(20, 480), y=rng.uniform(20, 480), rad=rng.uniform(-9, 12), spd=rng.uniform(-30, 150),
               w=rng.uniform(-3, 3))
    others = []
    for _ in range(rng.randint(0, 7)):
        near = rng.random() < 0.4
        others.append(dict(x=ego['x'] + rng.uniform(-50, 50) if near else rng.uniform(0, 500),
                           y=ego['y'] + rng.uniform(-50, 50) if near else rng.uniform(0, 500),
                           vx=rng.uniform(-100, 100) * (rng.random() < 0.7), vy=rng.uniform(-100, 100),
                           margin=16.0, avoid_margin=rng.choice([22.0, 30.0, 10.0])))
    walls = []
    if rng.random() < 0.6:
        walls += [(40, 40, 40, 460, 20), (460, 40, 460, 460, 20), (40, 40, 460, 40, 20), (40, 460, 460, 460, 20)]
    for _ in range(rng.randint(0, 3)):
        walls.append((rng.uniform(0, 500), rng.uniform(0, 500), rng.uniform(0, 500), rng.uniform(0, 500),
                      rng.uniform(0, 15)))
    tar = (rng.uniform(0, 500), rng.uniform(0, 500), rng.uniform(-60, 60), rng.uniform(-60, 60))
    return ego, others, walls, tar


def vectorised(ego, others, walls, tar, prm, away):
    egos = EgoBatch(*(np.array([v], dtype=float) for v in (
        ego['x'], ego['y'], ego['rad'], ego['spd'], ego['w'], prm.avoid.margin, prm.boids.margin, *tar)))
    if others:
        def col(k):
            return np.array([o[k] for o in others], dtype=float)
        pairs = PairBatch(np.zeros(len(others), dtype=np.intp), col('x'), col('y'), col('vx'), col('vy'),
                          col('margin'), col('avoid_margin'), np.full(len(others), 25.0), np.ones(len(others), bool))
    else:
        pairs = empty_pairs()
    with np.errstate(all='ignore'):
        return navigate(egos, pairs, np.array(walls, dtype=float).reshape(-1, 5), prm, 'AVOID',
                        'away' if away else 'towards')


@pytest.mark.parametrize('use_safety', [True, False])
@pytest.mark.parametrize('away', [False, True])
def test_vectorised_equals_loop_port(use_safety, away):
    rng = random.Random(1234 + 2 * use_safety + away)
    for trial in range(60):
        ego, others, walls, tar = random_scene(rng)
        prm = NavigatorParams().with_overrides(avoid=dict(useSafety=use_safety, nsample=rng.choice([19, 19, 7, 2]),
                                                          range=rng.choice([200.0, 150.0])))
        wp, col, limit, idx = hlavoid(ego, others, walls, tar, prm.avoid, away)
        res = vectorised(ego, others, walls, tar, prm, away)
        ctx = (trial, ego, others, walls, tar)
        assert int(res.avoid.index[0]) == idx, ctx
        assert bool(res.collision[0]) == col, ctx
        assert np.allclose(res.avoid_vector[0], wp, atol=1e-9), ctx
        assert res.speed_limit[0] == pytest.approx(limit, rel=1e-12), ctx
