#!/usr/bin/env python3
"""Generate the unseen scenario families (toio_navigator/data/scenarios_unseen.yaml) from one fixed seed.

These families exist to measure planners on problems nobody tuned them on: corridors between rooms, doorways,
U-shaped traps, crowds up to 30 % area density, circles with jitter, crossings at odd angles, line reversals,
grid permutations, pillar fields, a four-way junction, ring rotations around a disc, block rotations and
gathering into a tight block. Every scenario has at most 64 cubes and is checked before it is written: starts and
goals at least ``MIN_SPACING`` apart, at least ``WALL_CLEARANCE`` from every obstacle, and every goal reachable
from its start by a disc that keeps that clearance (a shortest path on a grid, whose length also sets the time
limit: ceil(3 * longest shortest path / max_speed + 10), the packaged rule with the way round obstacles).

    python tools/bench/unseen_scenarios.py            # (re)write the packaged file
    python tools/bench/unseen_scenarios.py --check    # exit 1 if the packaged file is not what the seed gives
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from toio_navigator.bench.scenarios import parse_scenarios  # noqa: E402

SEED = 53_2026                 # fixed before any planner was run on these families; never change it
OUT = Path(__file__).resolve().parents[2] / 'toio_navigator' / 'data' / 'scenarios_unseen.yaml'
R = 16.5                       # agent radius (mat units)
V = 165.0                      # max speed (u/s)
MIN_SPACING = 39.0             # least centre distance of two starts (two goals): 2 r + 6, as the packaged crowds
WALL_CLEARANCE = R + 8.0       # least distance of a start, a goal and a reachable way from any obstacle
CELL = 6.0                     # grid of the reachability check (u)
MAT = (45.0, 455.0)            # the collection mat's area, for the crowds
MAX_N = 64


# ---------------------------------------------------------------------------------------------- geometry helpers
def seg(a, b) -> dict:
    return dict(type='segment', a=[round(float(a[0]), 1), round(float(a[1]), 1)],
                b=[round(float(b[0]), 1), round(float(b[1]), 1)])


def disc(c, r) -> dict:
    return dict(type='disc', center=[round(float(c[0]), 1), round(float(c[1]), 1)], radius=round(float(r), 1))


def box(x0, y0, x1, y1) -> list[dict]:
    """The four walls of an arena."""
    return [seg((x0, y0), (x1, y0)), seg((x1, y0), (x1, y1)), seg((x1, y1), (x0, y1)), seg((x0, y1), (x0, y0))]


def block(center, cols: int, rows: int, pitch: float) -> np.ndarray:
    """cols x rows points at ``pitch`` centred on ``center``, row by row."""
    xs = (np.arange(cols) - (cols - 1) / 2.0) * pitch
    ys = (np.arange(rows) - (rows - 1) / 2.0) * pitch
    gx, gy = np.meshgrid(xs, ys)
    return np.column_stack([gx.ravel(), gy.ravel()]) + np.asarray(center, float)


def spread(rng: np.random.Generator, n: int, lo, hi, spacing: float = MIN_SPACING + 1.0,
           avoid: list[dict] | None = None) -> np.ndarray:
    """n random points in the rectangle lo..hi at least ``spacing`` apart (and clear of ``avoid``): uniform
    draws pushed apart until they are (a dense crowd is out of reach of plain rejection sampling)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    pts = lo + rng.random((n, 2)) * (hi - lo)
    for _ in range(5000):
        d = pts[:, None, :] - pts[None, :, :]
        dist = np.hypot(d[..., 0], d[..., 1]) + np.eye(n) * 1e9
        close = dist < spacing
        bad_wall = obstacle_distance(pts, avoid or []) < WALL_CLEARANCE + 1.0
        if not close.any() and not bad_wall.any():
            return pts
        push = np.where(close[..., None], d / np.maximum(dist, 1e-9)[..., None] * (spacing - dist)[..., None],
                        0.0).sum(axis=1) * 0.55
        pts = pts + push + rng.normal(0.0, 0.3, pts.shape)
        if bad_wall.any():                       # a point on an obstacle jumps somewhere else
            pts[bad_wall] = lo + rng.random((int(bad_wall.sum()), 2)) * (hi - lo)
        pts = np.clip(pts, lo, hi)
    raise RuntimeError(f'cannot spread {n} points {spacing} apart in {lo}..{hi}')


def obstacle_distance(pts: np.ndarray, obstacles: list[dict]) -> np.ndarray:
    """(P,) distance of each point to the nearest obstacle surface (inf without obstacles)."""
    out = np.full(len(pts), np.inf)
    for o in obstacles:
        if o['type'] == 'disc':
            d = np.hypot(*(pts - np.array(o['center'])).T) - o['radius']
        else:
            a, b = np.array(o['a']), np.array(o['b'])
            ab = b - a
            t = np.clip(((pts - a) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
            d = np.hypot(*(pts - (a + t[:, None] * ab)).T)
        out = np.minimum(out, d)
    return out


def shortest_paths(starts: np.ndarray, goals: np.ndarray, obstacles: list[dict]) -> np.ndarray:
    """(N,) length of each cube's shortest way start -> goal keeping WALL_CLEARANCE from every obstacle (octile
    distance on a CELL grid; straight-line where there are no obstacles); ValueError if a goal is unreachable."""
    straight = np.hypot(*(goals - starts).T)
    if not obstacles:
        return straight
    pts = np.vstack([starts, goals])
    ends = [np.array([o['a'], o['b']]) if o['type'] == 'segment' else np.array(o['center'])[None] for o in obstacles]
    pts = np.vstack([pts, *ends])
    lo, hi = pts.min(axis=0) - 60.0, pts.max(axis=0) + 60.0      # the trial's mat: all of it and 60 round
    nx, ny = (np.ceil((hi - lo) / CELL).astype(int) + 1)
    gx, gy = np.meshgrid(lo[0] + CELL * np.arange(nx), lo[1] + CELL * np.arange(ny), indexing='ij')
    free = (obstacle_distance(np.column_stack([gx.ravel(), gy.ravel()]), obstacles)
            >= WALL_CLEARANCE - CELL).reshape(nx, ny)
    cell_of = lambda p: tuple(np.round((p - lo) / CELL).astype(int))   # noqa: E731
    out = np.zeros(len(starts))
    fields: dict[tuple, np.ndarray] = {}
    for k, (s, g) in enumerate(zip(starts, goals)):
        key = cell_of(g)
        if key not in fields:
            fields[key] = _distance_field(free, key)
        d = fields[key][cell_of(s)]
        if not np.isfinite(d):
            raise ValueError(f'cube {k}: goal {g.tolist()} unreachable from {s.tolist()}')
        out[k] = max(d * CELL, straight[k])
    return out


def _distance_field(free: np.ndarray, goal: tuple) -> np.ndarray:
    """Octile grid distance (cells) of every free cell to ``goal`` (inf: unreachable), by relaxation sweeps."""
    dist = np.full(free.shape, np.inf)
    dist[goal] = 0.0
    nx, ny = free.shape
    steps = [(dx, dy, math.hypot(dx, dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
    views = [((slice(max(-dx, 0), nx + min(-dx, 0)), slice(max(-dy, 0), ny + min(-dy, 0))),
              (slice(max(dx, 0), nx + min(dx, 0)), slice(max(dy, 0), ny + min(dy, 0))), w) for dx, dy, w in steps]
    blocked = ~free
    total = math.inf
    while True:
        for dst, src, w in views:
            np.minimum(dist[dst], dist[src] + w, out=dist[dst])
        dist[blocked] = np.inf
        reached = np.isfinite(dist)
        now = float(dist[reached].sum()) + float(reached.sum()) * 1e6
        if now == total:
            return dist
        total = now


# ---------------------------------------------------------------------------------------------- the families
def corridor(rng, width: float, length: float, k: int) -> dict:
    """Two rooms joined by a corridor through a thick wall; k cubes in each room swap rooms."""
    x0, x1 = 250.0 - length / 2, 250.0 + length / 2
    y_lo, y_hi = 250.0 - width / 2, 250.0 + width / 2
    room = 260.0
    obstacles = box(x0 - room, 30.0, x1 + room, 470.0) + [
        seg((x0, 30.0), (x0, y_lo)), seg((x0, y_hi), (x0, 470.0)), seg((x1, 30.0), (x1, y_lo)),
        seg((x1, y_hi), (x1, 470.0)), seg((x0, y_lo), (x1, y_lo)), seg((x0, y_hi), (x1, y_hi))]
    left = spread(rng, k, (x0 - room + 40, 80.0), (x0 - 40, 420.0), avoid=obstacles)
    right = spread(rng, k, (x1 + 40, 80.0), (x1 + room - 40, 420.0), avoid=obstacles)
    starts = np.vstack([left, right])
    goals = np.vstack([right[rng.permutation(k)], left[rng.permutation(k)]])
    return dict(name=f'corridor_rooms_w{width:.0f}_l{length:.0f}_{k}v{k}', category='corridor_rooms',
                description=f'two rooms joined by a corridor {length:.0f} long and {width:.0f} wide through a wall; '
                            f'{k} cubes in each room swap rooms (goals shuffled)',
                starts=starts, goals=goals, obstacles=obstacles, groups=[0] * k + [1] * k)


def doorway(rng, width: float, k: int, door_y: float, doors: int = 1) -> dict:
    """An arena split by a wall with one or two doors; k cubes on each side swap sides."""
    x_wall, y0, y1 = 250.0, 50.0, 450.0
    obstacles = box(0.0, y0, 500.0, y1)
    edges = [y0]
    centres = [door_y] if doors == 1 else [door_y, 500.0 - door_y]
    for c in sorted(centres):
        edges += [c - width / 2, c + width / 2]
    edges.append(y1)
    obstacles += [seg((x_wall, a), (x_wall, b)) for a, b in zip(edges[0::2], edges[1::2])]
    left = spread(rng, k, (40.0, y0 + 35), (x_wall - 45, y1 - 35), avoid=obstacles)
    right = spread(rng, k, (x_wall + 45, y0 + 35), (460.0, y1 - 35), avoid=obstacles)
    starts = np.vstack([left, right])
    goals = np.vstack([right[rng.permutation(k)], left[rng.permutation(k)]])
    where = f'door {width:.0f} wide at y {door_y:.0f}' if doors == 1 else \
        f'two doors {width:.0f} wide at y {door_y:.0f} and {500 - door_y:.0f}'
    return dict(name=f'doorway{doors}_w{width:.0f}_y{door_y:.0f}_{k}v{k}', category='doorway',
                description=f'arena 500 x 400 split by a wall at x 250 with a {where}; {k} cubes on each side swap '
                            'sides (goals shuffled)',
                starts=starts, goals=goals, obstacles=obstacles, groups=[0] * k + [1] * k)


def u_trap(rng, k: int, both_ways: bool) -> dict:
    """A U-shaped wall whose mouth faces the starts: the straight way to each goal leads into the U."""
    base_x, arm_x, y_lo, y_hi = 320.0, 200.0, 150.0, 350.0
    obstacles = [seg((arm_x, y_lo), (base_x, y_lo)), seg((base_x, y_lo), (base_x, y_hi)),
                 seg((base_x, y_hi), (arm_x, y_hi))]
    inside = spread(rng, min(k, 3), (arm_x + 10, y_lo + 30), (base_x - 30, y_hi - 30), avoid=obstacles)
    outside = spread(rng, k - len(inside), (40.0, 170.0), (arm_x - 40, 330.0), avoid=obstacles)
    starts = np.vstack([inside, outside])
    goals = spread(rng, k, (base_x + 60, 170.0), (460.0, 330.0), avoid=obstacles)
    groups = [0] * k
    if both_ways:                          # the same number coming back from behind the U
        back = spread(rng, k, (base_x + 60, 40.0), (480.0, 140.0), avoid=obstacles)
        home = spread(rng, k, (20.0, 360.0), (arm_x - 20, 470.0), avoid=obstacles)
        starts, goals, groups = np.vstack([starts, back]), np.vstack([goals, home]), groups + [1] * k
    name = f'trap_u_{len(starts)}' + ('_two_way' if both_ways else '')
    return dict(name=name, category='trap_u',
                description=f'U-shaped wall (mouth at x {arm_x:.0f} facing -x, base at x {base_x:.0f}, '
                            f'{y_hi - y_lo:.0f} wide); {k} cubes in and in front of the mouth go to goals behind '
                            'the base' + ('; as many behind it go round it the other way' if both_ways else ''),
                starts=starts, goals=goals, obstacles=obstacles, groups=groups)


def crowd(rng, density: float, tag: str, side: tuple[float, float] = (410.0, 410.0)) -> dict:
    """A random permutation of random positions at ``density`` (N pi r^2 / area) in a rectangle."""
    n = int(round(density * side[0] * side[1] / (math.pi * R * R)))
    lo = np.array([250.0 - side[0] / 2 + R, 250.0 - side[1] / 2 + R])
    hi = np.array([250.0 + side[0] / 2 - R, 250.0 + side[1] / 2 - R])
    starts = spread(rng, n, lo, hi)
    goals = starts[rng.permutation(n)]
    shape = 'square' if side[0] == side[1] else 'rect'
    return dict(name=f'crowd_{shape}_d{round(density * 100):02d}_n{n}_{tag}', category='crowd',
                description=f'random start/goal permutation in a {side[0]:.0f} x {side[1]:.0f} rectangle centred on '
                            f'(250, 250); area density {density:.2f} (N pi r^2 / area)',
                starts=starts, goals=goals, obstacles=[], groups=[0] * n)


def circle_jitter(rng, n: int) -> dict:
    """An antipodal circle swap with each cube's angle and radius jittered (no exact symmetry left)."""
    radius = max(150.0, math.ceil(n * 52.8 / (2 * math.pi)))
    for _ in range(1000):
        a = 2 * math.pi * (np.arange(n) + rng.uniform(-0.15, 0.15, n)) / n
        rr = radius + rng.uniform(-12.0, 12.0, n)
        starts = 250.0 + rr[:, None] * np.column_stack([np.cos(a), np.sin(a)])
        goals = 250.0 - (rr + rng.uniform(-12.0, 12.0, n))[:, None] * np.column_stack([np.cos(a), np.sin(a)])
        if _min_spacing(starts) >= MIN_SPACING and _min_spacing(goals) >= MIN_SPACING:
            break
    return dict(name=f'circle_jitter_{n}', category='circle_jitter',
                description=f'antipodal circle swap of {n} cubes, radius {radius:.0f}, each angle jittered by up '
                            'to 0.15 of the spacing and each start and goal radius by up to 12',
                starts=starts, goals=goals, obstacles=[], groups=[0] * n)


def crossing(rng, angles_deg: list[float], side: int, pitch: float = 60.0) -> dict:
    """Blocks of side x side cubes crossing the centre, each along its own direction, at the same time."""
    starts, goals, groups = [], [], []
    travel = 520.0
    for g, ang in enumerate(angles_deg):
        u = np.array([math.cos(math.radians(ang)), math.sin(math.radians(ang))])
        pts = block((0.0, 0.0), side, side, pitch)
        rot = np.array([[u[0], -u[1]], [u[1], u[0]]])
        pts = pts @ rot.T
        starts.append(250.0 - u * travel / 2 + pts)
        goals.append(250.0 + u * travel / 2 + pts)
        groups += [g] * len(pts)
    jitter = lambda p: p + rng.uniform(-3.0, 3.0, p.shape)   # noqa: E731 - breaks exact symmetry
    return dict(name=f'crossing_{len(angles_deg)}way_' + '_'.join(f'{a:.0f}' for a in angles_deg) + f'_{side}x{side}',
                category='crossing_angle',
                description=f'{len(angles_deg)} blocks of {side}x{side} cubes (pitch {pitch:.0f}) crossing the centre '
                            f'along directions {", ".join(f"{a:.0f}" for a in angles_deg)} degrees, {travel:.0f} each',
                starts=jitter(np.vstack(starts)), goals=jitter(np.vstack(goals)), obstacles=[], groups=groups)


def line_reverse(rng, n: int, rows: int) -> dict:
    """rows lines of cubes 45 apart; every line reverses its order (cube i goes to slot n-1-i of its line)."""
    starts, goals, groups = [], [], []
    for row in range(rows):
        y = 250.0 + (row - (rows - 1) / 2) * 70.0
        xs = 250.0 + (np.arange(n) - (n - 1) / 2) * 45.0
        starts.append(np.column_stack([xs, np.full(n, y)]))
        goals.append(np.column_stack([xs[::-1], np.full(n, y)]))
        groups += [row] * n
    return dict(name=f'line_reverse_{rows}x{n}', category='line_reverse',
                description=f'{rows} line(s) of {n} cubes 45 apart (lines 70 apart); each line reverses its order',
                starts=np.vstack(starts), goals=np.vstack(goals), obstacles=[], groups=groups)


def grid_permutation(rng, side: int, how: str) -> dict:
    """A side x side block (pitch 50) rearranged within itself: transposed, rotated by 90 degrees, or shuffled."""
    pts = block((250.0, 250.0), side, side, 50.0)
    idx = np.arange(side * side).reshape(side, side)
    perm = {'transpose': idx.T, 'rotate': np.rot90(idx), 'shuffle': rng.permutation(side * side).reshape(side, side)
            }[how].ravel()
    return dict(name=f'grid_{how}_{side}x{side}', category='grid_permutation',
                description=f'{side}x{side} block of cubes 50 apart at the centre; every cube goes to the place of '
                            f'the cube the block {how} puts there',
                starts=pts, goals=pts[perm], obstacles=[], groups=[0] * (side * side))


def pillars(rng, n_pillars: int, k: int, four_way: bool) -> dict:
    """A random field of disc pillars at the centre; groups of k cross it left-right (and top-bottom)."""
    centres = spread(rng, n_pillars, (140.0, 140.0), (360.0, 360.0), spacing=80.0)
    obstacles = [disc(c, rng.uniform(12.0, 30.0)) for c in centres]
    ys = spread(rng, k, (30.0, 120.0), (90.0, 380.0), avoid=obstacles)
    starts = [ys, ys + [380.0, 0.0]]
    goals = [ys[rng.permutation(k)] + [380.0, 0.0], ys[rng.permutation(k)]]
    groups = [0] * k + [1] * k
    if four_way:
        xs = ys[:, ::-1]
        starts += [xs, xs + [0.0, 380.0]]
        goals += [xs[rng.permutation(k)] + [0.0, 380.0], xs[rng.permutation(k)]]
        groups += [2] * k + [3] * k
    starts, goals = np.vstack(starts), np.vstack(goals)
    return dict(name=f'pillars_{n_pillars}_{len(starts)}', category='pillars',
                description=f'{n_pillars} disc pillars (radius 12-30, random) around the centre; {k} cubes from each '
                            f'of {4 if four_way else 2} sides cross to the opposite side (goals shuffled)',
                starts=starts, goals=goals, obstacles=obstacles, groups=groups)


def junction(rng, k: int, width: float, turn: int) -> dict:
    """A plus-shaped junction of four corridors; k cubes in each arm go to the arm ``turn`` quarters on."""
    c, h, arm = 250.0, width / 2, 230.0
    corners = [(c - h, c - h), (c + h, c - h), (c + h, c + h), (c - h, c + h)]
    obstacles = []
    for (x, y), (dx, dy) in zip(corners, [(-1, -1), (1, -1), (1, 1), (-1, 1)]):
        obstacles += [seg((x, y), (x + dx * arm, y)), seg((x, y), (x, y + dy * arm))]
    end = c + h + arm
    obstacles += [seg((c - h, c - h - arm), (c + h, c - h - arm)), seg((end, c - h), (end, c + h)),
                  seg((c - h, end), (c + h, end)), seg((c - h - arm, c - h), (c - h - arm, c + h))]
    arms = []
    for d in [(1, 0), (0, 1), (-1, 0), (0, -1)]:
        along = c + np.outer(h + arm - 30.0 - 50.0 * np.arange(k), d)
        across = np.outer(rng.uniform(-h + WALL_CLEARANCE + 1, h - WALL_CLEARANCE - 1, k), (-d[1], d[0]))
        arms.append(along + across)
    starts = np.vstack(arms)
    goals = np.vstack([arms[(a + turn) % 4][rng.permutation(k)] for a in range(4)])
    return dict(name=f'junction_w{width:.0f}_{k}x4_turn{turn}', category='junction',
                description=f'plus-shaped junction of four corridors {width:.0f} wide and {arm:.0f} long; {k} cubes in '
                            f'each arm go to the arm {turn} quarter turn(s) on',
                starts=starts, goals=goals, obstacles=obstacles, groups=sum(([a] * k for a in range(4)), []))


def ring_rotate(rng, n: int, shift: int, hub: float) -> dict:
    """Cubes on a ring around a central disc; each goes to the place ``shift`` slots on."""
    radius = max(hub + 70.0, math.ceil(n * 60.0 / (2 * math.pi)))
    a = 2 * math.pi * np.arange(n) / n + rng.uniform(0, 2 * math.pi)
    starts = 250.0 + radius * np.column_stack([np.cos(a), np.sin(a)])
    goals = np.roll(starts, -shift, axis=0)
    return dict(name=f'ring_rotate_{n}_by{shift}', category='ring_rotate',
                description=f'{n} cubes on a ring of radius {radius:.0f} around a disc of radius {hub:.0f}; each goes '
                            f'to the place {shift} slots on',
                starts=starts, goals=goals, obstacles=[disc((250.0, 250.0), hub)], groups=[0] * n)


def block_rotate(rng, side: int, blocks: int) -> dict:
    """Dense blocks (pitch 45) at the corners (or two opposite sides) each moving to the next block's place."""
    places = [(110.0, 110.0), (390.0, 110.0), (390.0, 390.0), (110.0, 390.0)] if blocks == 4 else \
        [(110.0, 250.0), (390.0, 250.0)]
    parts = [block(p, side, side, 45.0) for p in places]
    starts = np.vstack(parts)
    goals = np.vstack([parts[(b + 1) % blocks][rng.permutation(side * side)] for b in range(blocks)])
    what = 'rotate to the next corner' if blocks == 4 else 'swap places'
    return dict(name=f'blocks_{blocks}x{side}x{side}', category='block_rotate',
                description=f'{blocks} blocks of {side}x{side} cubes 45 apart; the blocks {what} (places inside a '
                            'block shuffled)',
                starts=starts, goals=goals, obstacles=[], groups=sum(([b] * side * side for b in range(blocks)), []))


def gather(rng, n: int, disperse: bool) -> dict:
    """Scattered cubes gather into a tight hexagonal block at the centre (or the block disperses)."""
    rows = []
    cols = int(math.ceil(math.sqrt(n)))
    for r in range(cols + 1):
        for q in range(cols):
            rows.append((q * 41.0 + (20.5 if r % 2 else 0.0), r * 41.0 * math.sqrt(3) / 2))
    tight = np.array(rows[:n])
    tight = tight - tight.mean(axis=0) + 250.0
    scattered = spread(rng, n, (MAT[0] + R, MAT[0] + R), (MAT[1] - R, MAT[1] - R), spacing=60.0)
    starts, goals = (tight, scattered) if disperse else (scattered, tight)
    return dict(name=f'{"disperse" if disperse else "gather"}_{n}', category='gather',
                description=f'{n} cubes ' + ('in a hexagonal block (41 apart) at the centre spread to random places '
                                             'on the mat' if disperse else
                                             'at random places on the mat gather into a hexagonal block 41 apart at '
                                             'the centre'),
                starts=starts, goals=goals, obstacles=[], groups=[0] * n)


def families(rng: np.random.Generator) -> list[dict]:
    """Every scenario, in file order (each family draws from the one generator in this order)."""
    return [
        corridor(rng, 60.0, 200.0, 3), corridor(rng, 80.0, 300.0, 5), corridor(rng, 110.0, 150.0, 8),
        doorway(rng, 70.0, 6, 250.0), doorway(rng, 90.0, 10, 150.0), doorway(rng, 80.0, 12, 160.0, doors=2),
        u_trap(rng, 6, False), u_trap(rng, 8, True),
        crowd(rng, 0.15, 'a'), crowd(rng, 0.25, 'a'), crowd(rng, 0.30, 'a'), crowd(rng, 0.30, 'b'),
        crowd(rng, 0.25, 'a', (600.0, 280.0)),
        circle_jitter(rng, 12), circle_jitter(rng, 24), circle_jitter(rng, 48),
        crossing(rng, [0.0, 60.0], 3), crossing(rng, [0.0, 120.0, 240.0], 3),
        line_reverse(rng, 8, 1), line_reverse(rng, 7, 3),
        grid_permutation(rng, 5, 'transpose'), grid_permutation(rng, 6, 'rotate'), grid_permutation(rng, 6, 'shuffle'),
        pillars(rng, 7, 6, False), pillars(rng, 9, 5, True),
        junction(rng, 3, 120.0, 2), junction(rng, 3, 110.0, 1),
        ring_rotate(rng, 16, 5, 80.0), ring_rotate(rng, 28, 9, 120.0),
        block_rotate(rng, 3, 4), block_rotate(rng, 4, 2),
        gather(rng, 24, False), gather(rng, 30, True),
    ]


# ---------------------------------------------------------------------------------------------- checks and output
def _min_spacing(pts: np.ndarray) -> float:
    if len(pts) < 2:
        return math.inf
    d = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1)) + np.eye(len(pts)) * 1e9
    return float(d.min())


def finish(s: dict) -> dict:
    """The scenario as a file entry, after its checks (ValueError naming the scenario and the problem)."""
    name, starts, goals, obstacles = s['name'], np.round(s['starts'], 1), np.round(s['goals'], 1), s['obstacles']
    n = len(starts)
    if not 1 <= n <= MAX_N or len(goals) != n:
        raise ValueError(f'{name}: {n} starts, {len(goals)} goals (at most {MAX_N})')
    for what, pts in (('starts', starts), ('goals', goals)):
        if _min_spacing(pts) < MIN_SPACING - 0.2:
            raise ValueError(f'{name}: two {what} {_min_spacing(pts):.1f} apart (< {MIN_SPACING})')
        near = obstacle_distance(pts, obstacles).min() if obstacles else math.inf
        if near < WALL_CLEARANCE - 0.2:
            raise ValueError(f'{name}: {what} {near:.1f} from an obstacle (< {WALL_CLEARANCE})')
    way = shortest_paths(starts, goals, obstacles)
    entry = dict(name=name, category=s['category'], description=s['description'], generator='explicit',
                 n_agents=n, time_limit=int(math.ceil(3.0 * float(way.max()) / V + 10.0)),
                 starts=starts.tolist(), goals=goals.tolist(), groups=[int(g) for g in s['groups']])
    if obstacles:
        entry['obstacles'] = obstacles
    return entry


HEADER = f"""\
# Unseen benchmark scenario families for toio Core Cube swarms (format: docs/metrics.md section 9).
# Generated by tools/bench/unseen_scenarios.py from its fixed seed ({SEED}); do not edit by hand, and do not tune
# any planner on these scenarios: they measure how a planner does on problems nobody tuned it on.
"""


def document() -> str:
    rng = np.random.default_rng(SEED)
    entries = [finish(s) for s in families(rng)]
    doc = dict(version=1, units=dict(length='toio mat unit (1 u = 1.3625 mm)', time='s'),
               defaults=dict(agent_radius=R, max_speed=V, dt=0.05, goal_tolerance=10.0, contact_tolerance=0.5),
               notes=[f'starts (and goals) at least {MIN_SPACING:g} apart and at least {WALL_CLEARANCE:g} from every '
                      'obstacle; every goal reachable from its start keeping that clearance',
                      'time_limit = ceil(3 * longest shortest way (round obstacles) / max_speed + 10) seconds',
                      'obstacles: segments are zero-thickness two-sided walls, discs solid; arenas are closed by '
                      'four segments where a family needs it'],
               scenarios=entries)
    head = {k: v for k, v in doc.items() if k != 'scenarios'}
    text = yaml.safe_dump(head, sort_keys=False, default_flow_style=False, width=118) + yaml.safe_dump(
        dict(scenarios=entries), sort_keys=False, default_flow_style=None, width=118)
    parse_scenarios(doc, source='scenarios_unseen.yaml')     # the packaged reader accepts it
    return HEADER + text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--check', action='store_true', help='exit 1 if the packaged file differs from the seed')
    parser.add_argument('--out', type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = document()
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding='utf-8') == text
        print(f'{args.out}: ' + ('as generated' if same else 'differs from what the seed gives'))
        return 0 if same else 1
    args.out.write_text(text, encoding='utf-8')
    entries = yaml.safe_load(text)['scenarios']
    n = [e['n_agents'] for e in entries]
    print(f'{args.out}: {len(n)} scenarios, {len({e["category"] for e in entries})} families, {min(n)}-{max(n)} '
          'cubes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
