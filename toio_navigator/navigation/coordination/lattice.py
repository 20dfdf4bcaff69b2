"""The mat as a square lattice graph: free vertices, 8-connected edges that clear every wall, route fields.

A vertex is free when a cube centred on it keeps ``clearance`` from every wall and disc obstacle; an edge is
kept when the whole segment between two free vertices does (sampled every quarter spacing, which catches a thin
wall passing between them). Route fields are shortest path lengths over this graph to a goal point, computed
for all goals at once by relaxing every edge in one numpy operation until nothing changes (Bellman-Ford on a
lattice needs about as many rounds as the longest route has vertices). In open space the field is just the
straight-line distance, so nothing is computed there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.navigation.planners.common import nearest_on_walls

#: the 8 lattice steps, straight ones first
STEPS = np.array([(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)])
_FAR = 1e9


def wall_gap(points: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Distance from each point to the surface of the nearest wall or disc obstacle (inf without walls)."""
    if len(walls) == 0 or len(points) == 0:
        return np.full(len(points), np.inf)
    return nearest_on_walls(points, walls)[1].min(axis=1)


def segments_clear(a: np.ndarray, b: np.ndarray, walls: np.ndarray, clearance: float, step: float) -> np.ndarray:
    """For segments [a, b] (M, 2): does every point keep ``clearance`` from the walls (sampled every ``step``)?"""
    if len(walls) == 0 or len(a) == 0:
        return np.ones(len(a), bool)
    length = np.hypot(*(b - a).T)
    count = max(2, int(math.ceil(float(length.max(initial=0.0)) / step)) + 1)
    t = np.linspace(0.0, 1.0, count)
    samples = a[:, None, :] + t[None, :, None] * (b - a)[:, None, :]
    gaps = wall_gap(samples.reshape(-1, 2), walls).reshape(len(a), count)
    return gaps.min(axis=1) >= clearance


@dataclass
class Lattice:
    """Vertices ``points`` (V, 2) on a square lattice of ``spacing``; ``neighbours`` (V, 8) index of the vertex
    one step away (-1 where that edge is not usable) and ``lengths`` (V, 8) the edge lengths."""
    spacing: float
    origin: np.ndarray
    shape: tuple[int, int]
    points: np.ndarray
    free: np.ndarray
    neighbours: np.ndarray
    lengths: np.ndarray
    walls: np.ndarray
    clearance: float

    @property
    def size(self) -> int:
        return len(self.points)

    @classmethod
    def build(cls, bounds, spacing: float, walls: np.ndarray, clearance: float, offsets: int = 6) -> 'Lattice':
        """A lattice covering ``bounds`` (x0, y0, x1, y1). With walls, the lattice origin is shifted in steps of
        spacing/``offsets`` to the position that keeps the most free vertices, the ones farther from walls
        counting a little more (so a corridor that fits two lanes gets two, and a corridor that fits one gets it
        in its middle, whatever its coordinates)."""
        x0, y0, x1, y1 = (float(v) for v in bounds)
        walls = np.asarray(walls, float).reshape(-1, 5)
        best = (0.0, 0.0)
        if len(walls) and offsets > 1:
            shifts = [(i * spacing / offsets, j * spacing / offsets) for i in range(offsets) for j in range(offsets)]
            scores = []
            for shift in shifts:
                room = wall_gap(_lattice_points(x0, y0, x1, y1, spacing, shift)[0], walls) - clearance
                scores.append(float(np.sum(np.where(room >= 0.0, 1.0 + np.minimum(room, spacing / 2) / spacing, 0.0))))
            best = shifts[int(np.argmax(scores))]
        points, shape, origin = _lattice_points(x0, y0, x1, y1, spacing, best)
        free = wall_gap(points, walls) >= clearance
        nx, ny = shape
        ix, iy = np.divmod(np.arange(len(points)), ny)
        neighbours = np.full((len(points), 8), -1, np.int64)
        lengths = np.full((len(points), 8), np.inf)
        for k, (dx, dy) in enumerate(STEPS):
            jx, jy = ix + dx, iy + dy
            inside = (jx >= 0) & (jx < nx) & (jy >= 0) & (jy < ny)
            j = np.where(inside, jx * ny + jy, 0)
            ok = inside & free & free[j]
            rows = np.nonzero(ok)[0]
            clear = segments_clear(points[rows], points[j[rows]], walls, clearance, spacing / 4.0)
            rows = rows[clear]
            neighbours[rows, k] = j[rows]
            lengths[rows, k] = spacing * math.hypot(dx, dy)
        return cls(spacing=spacing, origin=origin, shape=shape, points=points, free=free, neighbours=neighbours,
                   lengths=lengths, walls=walls, clearance=clearance)

    def near(self, point: np.ndarray, reach: float) -> np.ndarray:
        """Indices of the vertices within ``reach`` of ``point`` (found from the lattice indices, not by
        measuring every vertex)."""
        nx, ny = self.shape
        k = int(math.ceil(reach / self.spacing))
        cx, cy = np.floor((np.asarray(point, float) - self.origin) / self.spacing).astype(int)
        xs = np.arange(max(cx - k, 0), min(cx + k + 2, nx))
        ys = np.arange(max(cy - k, 0), min(cy + k + 2, ny))
        idx = (xs[:, None] * ny + ys[None, :]).ravel()
        return idx[np.hypot(*(self.points[idx] - point).T) <= reach]

    def attach(self, point: np.ndarray, blocked: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Vertices a cube at ``point`` can drive to in a straight line (free, not blocked, segment clear of
        walls), nearest first, within 1.5 spacings (widened up to 4 if none): (indices, distances)."""
        for reach in (1.5, 2.5, 4.0):
            near = self.near(point, reach * self.spacing)
            near = near[self.free[near]]
            if blocked is not None:
                near = near[~blocked[near]]
            if near.size:
                # a point closer to a wall than the clearance (a cube pushed or drifted there) may still leave
                clearance = min(self.clearance, float(wall_gap(point[None], self.walls)[0]) - 0.5)
                clear = segments_clear(np.repeat(point[None], near.size, axis=0), self.points[near], self.walls,
                                       clearance, self.spacing / 4.0)
                near = near[clear]
            if near.size:
                d = np.hypot(*(self.points[near] - point).T)
                order = np.argsort(d, kind='stable')
                return near[order], d[order]
        return np.zeros(0, np.int64), np.zeros(0)

    def route_fields(self, goals: np.ndarray, blocked: np.ndarray) -> np.ndarray:
        """(G, V) shortest route length from every vertex to each goal point over free, unblocked vertices
        (inf where the goal cannot be reached)."""
        v = self.size
        usable = self.free & ~blocked
        nbr = np.where(self.neighbours >= 0, self.neighbours, v)
        length = np.where((self.neighbours >= 0) & usable[:, None] & np.append(usable, False)[nbr], self.lengths,
                          np.inf)
        dist = np.full((len(goals), v + 1), np.inf)
        for g, goal in enumerate(goals):
            idx, d = self.attach(goal, blocked)
            dist[g, idx] = d
        for _ in range(4 * v):
            relaxed = np.minimum(dist[:, :v], (dist[:, nbr] + length[None]).min(axis=2))
            if np.array_equal(relaxed, dist[:, :v]):
                break
            dist[:, :v] = relaxed
        return dist[:, :v]


def _lattice_points(x0, y0, x1, y1, spacing, shift):
    ox = math.floor((x0 - shift[0]) / spacing) * spacing + shift[0]
    oy = math.floor((y0 - shift[1]) / spacing) * spacing + shift[1]
    nx = int(math.ceil((x1 - ox) / spacing)) + 1
    ny = int(math.ceil((y1 - oy) / spacing)) + 1
    gx, gy = np.meshgrid(ox + spacing * np.arange(nx), oy + spacing * np.arange(ny), indexing='ij')
    return np.column_stack([gx.ravel(), gy.ravel()]), (nx, ny), np.array([ox, oy])
