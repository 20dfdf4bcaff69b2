"""The mat as a triangular lattice: free vertices, the six edges of each that clear every wall, route fields.

Why triangular: every vertex has six neighbours one ``spacing`` apart, and a vertex lies at least
``spacing * sqrt(3) / 2`` from every edge that does not end at it. With that distance at least the distance two
cubes must keep, two cubes on different vertices or on edges without a common vertex never come too close,
whatever they do on them; so the coordination above only has to look at shared vertices. A route along lattice
directions is at most 2/sqrt(3) (15 %) longer than the straight line, and turns are 60 or 120 degrees.

A vertex is free when a cube centred on it keeps ``clearance`` from every wall and disc obstacle; an edge is kept
when the whole segment between two free vertices does. Orientation (rows along x or along y) and the position of
the lattice are chosen to fit the walls best: passages between walls get as many lanes as fit, each in the middle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import nearest_on_walls, pairs_within

ROW = math.sqrt(3.0) / 2.0      # row distance / spacing (also the least distance of a vertex to a foreign edge)
SHIFTS = 8                      # offsets along the rows tried when walls are present
ROW_STEP = 1.0                  # resolution (mat units) of row positions
ALIGN_GAP = 1.3                 # rows farther apart than this many row distances are not offset
FINE = 8.0                      # cell size of the free-space grid the candidate lattices are compared on


def wall_gap(points: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Distance from each point to the surface of the nearest wall or disc obstacle (inf without walls)."""
    if len(walls) == 0 or len(points) == 0:
        return np.full(len(points), np.inf)
    return nearest_on_walls(points, walls)[1].min(axis=1)


def segments_gap(a: np.ndarray, b: np.ndarray, walls: np.ndarray, step: float) -> np.ndarray:
    """For segments [a, b] (M, 2): the least distance of their points to a wall surface (sampled every ``step``)."""
    if len(walls) == 0 or len(a) == 0:
        return np.full(len(a), np.inf)
    length = np.hypot(*(b - a).T)
    count = max(2, int(math.ceil(float(length.max(initial=0.0)) / step)) + 1)
    t = np.linspace(0.0, 1.0, count)
    samples = a[:, None, :] + t[None, :, None] * (b - a)[:, None, :]
    return wall_gap(samples.reshape(-1, 2), walls).reshape(len(a), count).min(axis=1)


def segments_clear(a: np.ndarray, b: np.ndarray, walls: np.ndarray, clearance: float, step: float) -> np.ndarray:
    """For segments [a, b] (M, 2): does every point keep ``clearance`` from the walls (sampled every ``step``)?"""
    return segments_gap(a, b, walls, step) >= clearance


@dataclass
class Lattice:
    """Vertices ``points`` (V, 2); ``neighbours`` (V, 6) the vertices one edge away (-1: none, or the edge or a
    vertex is not free); ``walls`` and ``clearance`` as built."""
    spacing: float
    points: np.ndarray
    free: np.ndarray
    neighbours: np.ndarray
    walls: np.ndarray
    clearance: float
    build_work: int = 0             # free-space cells and vertices of every candidate tried (deterministic work)
    convex: bool = False            # the free space is a rectangle (only a mat's edges): every straight way is clear
    field_work: int = 0             # relaxations of the last route fields

    @property
    def size(self) -> int:
        return len(self.points)

    @classmethod
    def build(cls, bounds, spacing: float, walls: np.ndarray, clearance: float) -> 'Lattice':
        """A lattice over ``bounds`` (x0, y0, x1, y1). Rows are straight lines at least ``spacing * ROW`` apart,
        with vertices ``spacing`` apart on them, every other row offset by half a spacing. Without walls the rows
        are evenly spaced from the origin. With walls the rows are placed where cubes fit best (:func:`_rows`),
        so a passage between walls gets as many lanes as fit, each in its middle, even where passages are not a
        row distance apart; of both orientations and four offsets along the rows, the one that best represents
        the free space (every passage passable, every free place near a vertex) is kept."""
        walls = np.asarray(walls, float).reshape(-1, 5)
        bounds = tuple(float(v) for v in bounds)
        if not len(walls):
            x0, y0, x1, y1 = bounds
            h = spacing * ROW
            rows = h * np.arange(math.ceil(y0 / h), math.floor(y1 / h) + 1)
            return cls._make(_grid(bounds, rows, spacing, 0.0, False), spacing, walls, clearance)
        regular = _regular(bounds, walls, spacing, clearance)
        if regular is not None:
            lattice = cls._make(regular, spacing, walls, clearance, convex=True)
            lattice.convex = True
            return lattice
        space = FreeSpace(bounds, walls, clearance, spacing)
        tried = 0
        best, best_score = None, None
        for transposed in (False, True):
            rows = _rows(bounds, spacing, walls, clearance, transposed)
            for k in range(SHIFTS):
                lattice = cls._make(_grid(bounds, rows, spacing, k * spacing / SHIFTS, transposed), spacing,
                                    walls, clearance)
                score = space.fit(lattice)
                tried += len(space.cells) + lattice.size
                if best_score is None or score > best_score:
                    best, best_score = lattice, score
        best.build_work = tried
        return best

    @classmethod
    def _make(cls, points: np.ndarray, spacing: float, walls: np.ndarray, clearance: float,
              convex: bool = False) -> 'Lattice':
        """Edges between free vertices up to 1.5 spacings apart whose segment clears the walls and passes every
        other vertex at ``spacing * ROW`` at least: the property the coordination relies on (a regular lattice
        keeps all its edges). Two such edges cannot cross: half of one would bring its end closer than that.
        ``convex``: a regular lattice in a free space without holes (every edge between free vertices is kept)."""
        free = wall_gap(points, walls) >= clearance
        q, p, _d = pairs_within(points, 1.5 * spacing)
        keep = (q < p) & free[q] & free[p]
        q, p = q[keep], p[keep]
        if len(walls) and len(q) and not convex:
            clear = segments_clear(points[q], points[p], walls, clearance, spacing / 6.0)
            q, p = q[clear], p[clear]
        if len(q) and not convex:
            mid = 0.5 * (points[q] + points[p])
            e, w, _d = pairs_within(np.vstack([mid, points]), 1.5 * spacing, query=np.arange(len(q)))
            w = w - len(q)
            inner = (w >= 0) & (w != q[e]) & (w != p[e])
            e, w = e[inner], w[inner]
            a, b = points[q[e]], points[p[e]]
            ab = b - a
            t = np.clip(np.einsum('kd,kd->k', points[w] - a, ab) / np.maximum(np.einsum('kd,kd->k', ab, ab), 1e-12),
                        0.0, 1.0)
            gap = np.hypot(*(points[w] - (a + t[:, None] * ab)).T)
            bad = np.zeros(len(q), bool)
            bad[e[gap < spacing * ROW * (1.0 - 1e-6)]] = True
            q, p = q[~bad], p[~bad]
        both = np.concatenate([q, p])
        other = np.concatenate([p, q])
        order = np.argsort(both, kind='stable')
        both, other = both[order], other[order]
        degree = np.bincount(both, minlength=len(points))
        neighbours = np.full((len(points), max(6, int(degree.max(initial=0)))), -1, np.int64)
        first = np.concatenate([[0], np.cumsum(degree)[:-1]])
        neighbours[both, np.arange(len(both)) - first[both]] = other
        return cls(spacing=spacing, points=points, free=free, neighbours=neighbours, walls=walls,
                   clearance=clearance)

    def near(self, point: np.ndarray, reach: float) -> np.ndarray:
        """Indices of the vertices within ``reach`` of ``point``, nearest first."""
        d = np.hypot(*(self.points - np.asarray(point, float)).T)
        idx = np.nonzero(d <= reach)[0]
        return idx[np.argsort(d[idx], kind='stable')]

    def straight_clear(self, a: np.ndarray, b: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """For segments [a, b] (M, 2): does each keep the clearance from the walls, or the distance the points
        ``ends`` (K, 2) have now if that is less (a cube that starts or ends nearer a wall)?"""
        if len(self.walls) == 0 or self.convex:
            return np.ones(len(a), bool)
        clearance = min(self.clearance, float(wall_gap(ends, self.walls).min()) - 0.5)
        return segments_clear(a, b, self.walls, clearance, self.spacing / 6.0)

    def straight_clear_from(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """For segments from the point ``a`` to each of ``b`` (M, 2): :meth:`straight_clear` of each with its own
        two ends, all at once."""
        if len(self.walls) == 0 or self.convex or len(b) == 0:
            return np.ones(len(b), bool)
        gaps = wall_gap(np.vstack([a[None], b]), self.walls) - 0.5
        clearance = np.minimum(self.clearance, np.minimum(gaps[0], gaps[1:]))
        return segments_gap(np.repeat(a[None], len(b), axis=0), b, self.walls, self.spacing / 6.0) >= clearance

    def attach(self, point: np.ndarray, usable: np.ndarray, reach: float, most: int = 3) -> np.ndarray:
        """Up to ``most`` usable vertices a cube at ``point`` can drive to in a straight line (the segment keeps
        the clearance from walls, or the distance the point has now if that is less), nearest first, within
        ``reach`` (widened step by step to four spacings if none)."""
        point = np.asarray(point, float)
        for r in [reach] + [f * self.spacing for f in (1.5, 2.0, 3.0, 4.0) if f * self.spacing > reach]:
            idx = self.near(point, r)
            idx = idx[usable[idx]]
            if idx.size:
                idx = idx[self.straight_clear(np.repeat(point[None], idx.size, axis=0), self.points[idx], point[None])]
            if idx.size:
                return idx[:most]
        return np.zeros(0, np.int64)

    def route_fields(self, sources: list[tuple[np.ndarray, np.ndarray]], usable: np.ndarray) -> np.ndarray:
        """(G, V) shortest route length over usable vertices and edges from every vertex to each target, a
        target given as (vertices, their distances to it) (inf where it cannot be reached). All targets at once:
        every edge relaxed in one numpy operation until nothing changes."""
        v = self.size
        nbr = np.where(self.neighbours >= 0, self.neighbours, v)
        ok = (self.neighbours >= 0) & usable[:, None] & np.append(usable, False)[nbr]
        length = np.where(ok, self.spacing, np.inf)
        dist = np.full((len(sources), v + 1), np.inf)
        for g, (idx, d) in enumerate(sources):
            dist[g, idx] = d
        self.field_work = 0              # (target, vertex, neighbour) relaxations done (deterministic work)
        for _ in range(4 * v + 4):
            relaxed = np.minimum(dist[:, :v], (dist[:, nbr] + length[None]).min(axis=2))
            self.field_work += dist.shape[0] * nbr.size
            if np.array_equal(relaxed, dist[:, :v]):
                break
            dist[:, :v] = relaxed
        return dist[:, :v]


class FreeSpace:
    """Where a cube's centre may be: a fine grid of cells at least ``clearance`` from every wall, to compare
    candidate lattices with."""

    def __init__(self, bounds, walls: np.ndarray, clearance: float, spacing: float) -> None:
        x0, y0, x1, y1 = bounds
        xs = np.arange(x0 + FINE / 2, x1, FINE)
        ys = np.arange(y0 + FINE / 2, y1, FINE)
        gx, gy = np.meshgrid(xs, ys, indexing='ij')
        cells = np.column_stack([gx.ravel(), gy.ravel()])
        free = (wall_gap(cells, walls) >= clearance).reshape(gx.shape)
        self.cells = cells[free.ravel()]
        index = np.full(free.shape, -1, np.int64)
        index[free] = np.arange(len(self.cells))
        # pairs of neighbouring free cells (right and down)
        right = free[:-1, :] & free[1:, :]
        down = free[:, :-1] & free[:, 1:]
        self.touching = np.vstack([np.column_stack([index[:-1, :][right], index[1:, :][right]]),
                                   np.column_stack([index[:, :-1][down], index[:, 1:][down]])])
        self.reach = 0.6 * spacing

    def fit(self, lattice: 'Lattice') -> float:
        """How well the lattice represents the free space (larger is better): the share of free places within
        0.6 spacings of a usable vertex, less 2 % per connection it misses: two vertices nearest to neighbouring
        free places (so the free space joins them directly) that are not joined within two edges."""
        usable = lattice.free & (lattice.neighbours >= 0).any(axis=1)
        pts_idx = np.nonzero(usable)[0]
        m = len(self.cells)
        if len(pts_idx) == 0 or m == 0:
            return -math.inf
        q, p, d = pairs_within(np.vstack([self.cells, lattice.points[pts_idx]]), lattice.spacing,
                               query=m + np.arange(len(pts_idx)))
        cell_side = p < m
        q, p, d = pts_idx[q[cell_side] - m], p[cell_side], d[cell_side]
        nearest = np.full(m, -1, np.int64)
        distance = np.full(m, np.inf)
        order = np.argsort(-d, kind='stable')           # the nearest vertex written last wins
        nearest[p[order]] = q[order]
        distance[p[order]] = d[order]
        a, b = nearest[self.touching[:, 0]], nearest[self.touching[:, 1]]
        pairs = np.unique(np.sort(np.column_stack([a, b])[(a >= 0) & (b >= 0) & (a != b)], axis=1), axis=0)
        adjacent = [set(row[row >= 0].tolist()) for row in lattice.neighbours]
        missed = sum(1 for x, y in pairs.tolist() if y not in adjacent[x] and not adjacent[x] & adjacent[y])
        return float((distance <= self.reach).mean()) - 0.02 * missed


def _regular(bounds, walls: np.ndarray, spacing: float, clearance: float) -> np.ndarray | None:
    """Vertices of a regular lattice centred in the free space when every wall is a border of ``bounds`` (an
    axis-aligned wall outside it along a whole side, like a mat's edges): the free space is then a rectangle, and
    no search for the best fit is needed. None when some wall is not such a border."""
    x0, y0, x1, y1 = bounds
    lo, hi = np.array([x0, y0], float), np.array([x1, y1], float)
    for xa, ya, xb, yb, margin in walls.tolist():
        reach = margin + clearance
        if xa == xb and min(ya, yb) <= y0 and max(ya, yb) >= y1 and (xa <= x0 or xa >= x1):
            lo[0], hi[0] = (max(lo[0], xa + reach), hi[0]) if xa <= x0 else (lo[0], min(hi[0], xa - reach))
        elif ya == yb and min(xa, xb) <= x0 and max(xa, xb) >= x1 and (ya <= y0 or ya >= y1):
            lo[1], hi[1] = (max(lo[1], ya + reach), hi[1]) if ya <= y0 else (lo[1], min(hi[1], ya - reach))
        else:
            return None
    if np.any(hi - lo < 0.0):
        return np.zeros((0, 2))
    # rows along x or along y, whichever holds more vertices
    return max((_regular_rows(lo, hi, spacing), _regular_rows(lo[::-1], hi[::-1], spacing)[:, ::-1]), key=len)


def _regular_rows(lo: np.ndarray, hi: np.ndarray, spacing: float) -> np.ndarray:
    """A regular lattice with rows along x centred in the rectangle [lo, hi]."""
    h = spacing * ROW
    rows = int(math.floor((hi[1] - lo[1]) / h + 1e-9)) + 1
    y_first = lo[1] + 0.5 * ((hi[1] - lo[1]) - (rows - 1) * h)
    cols = int(math.floor((hi[0] - lo[0]) / spacing + 1e-9)) + 1
    x_even = lo[0] + 0.5 * ((hi[0] - lo[0]) - (cols - 1) * spacing)
    if hi[0] - lo[0] - (cols - 1) * spacing >= 0.5 * spacing:
        x_even = lo[0]                 # room for as many vertices on the offset rows too
    pts = []
    for r in range(rows):
        x_first = x_even + (0.5 * spacing if r % 2 else 0.0)
        ks = np.arange(math.ceil((lo[0] - x_first) / spacing - 1e-9),
                       math.floor((hi[0] - x_first) / spacing + 1e-9) + 1)
        pts.append(np.column_stack([x_first + spacing * ks, np.full(len(ks), y_first + r * h)]))
    return np.vstack(pts) if pts else np.zeros((0, 2))


def _rows(bounds, spacing: float, walls: np.ndarray, clearance: float, transposed: bool) -> np.ndarray:
    """Row positions (y, or x when ``transposed``) at least ``spacing * ROW`` apart that hold the most room for
    cubes: each candidate position (every ROW_STEP) is worth the free length along it (every FINE), a place
    counting up to 1.5 times the more room it has beyond ``clearance``; the best set by dynamic programming."""
    x0, y0, x1, y1 = bounds
    if transposed:
        x0, y0, x1, y1 = y0, x0, y1, x1
    h = spacing * ROW
    across = np.arange(y0, y1 + 1e-9, ROW_STEP)
    along = np.arange(x0 + FINE / 2, x1, FINE)
    gx, gy = np.meshgrid(along, across)
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    if transposed:
        pts = pts[:, ::-1]
    room = wall_gap(pts, walls).reshape(gx.shape) - clearance
    value = np.where(room >= 0.0, 1.0 + 0.5 * np.minimum(room, h / 2) / (h / 2), 0.0).sum(axis=1)
    gap = int(math.ceil(h / ROW_STEP - 1e-9))
    best = np.zeros(len(across))          # best total with the last row at this position
    came = np.full(len(across), -1)
    prefix_val = np.zeros(len(across))    # best total with the last row at or before this position
    prefix_arg = np.full(len(across), -1)
    for k in range(len(across)):
        before = k - gap
        if before >= 0 and prefix_arg[before] >= 0:
            best[k] = value[k] + prefix_val[before]
            came[k] = prefix_arg[before]
        else:
            best[k] = value[k]
        if k and prefix_val[k - 1] >= best[k]:
            prefix_val[k], prefix_arg[k] = prefix_val[k - 1], prefix_arg[k - 1]
        else:
            prefix_val[k], prefix_arg[k] = best[k], (k if value[k] > 0 else -1)
    rows = []
    k = prefix_arg[-1] if len(across) else -1
    while k >= 0:
        if value[k] > 0:
            rows.append(across[k])
        k = came[k]
    return np.array(sorted(rows))


def _grid(bounds, rows: np.ndarray, spacing: float, offset: float, transposed: bool) -> np.ndarray:
    """Vertices ``spacing`` apart on each row from ``offset``; a row close to the one before (less than
    ALIGN_GAP row distances) is shifted by half a spacing against it (triangles), a farther one is not (so
    straight edges can join rows across a wider gap)."""
    x0, y0, x1, y1 = bounds
    if transposed:
        x0, y0, x1, y1 = y0, x0, y1, x1
    pts = []
    shifted = False
    for r, y in enumerate(rows):
        if r and rows[r] - rows[r - 1] < ALIGN_GAP * spacing * ROW:
            shifted = not shifted
        start = offset + (spacing / 2.0 if shifted else 0.0)
        cols = np.arange(math.ceil((x0 - start) / spacing), math.floor((x1 - start) / spacing) + 1)
        pts.append(np.column_stack([start + spacing * cols, np.full(len(cols), y)]))
    points = np.vstack(pts) if pts else np.zeros((0, 2))
    return points[:, ::-1].copy() if transposed else points
