"""Pictures of a recorded run: the mat, each cube's trajectory, its waypoints and goals, and the contacts; for an
arena explorer bag also the belief grid, the MDF progress and the fastest path. PNG (the end of the run) or GIF
(the run as an animation). Everything is drawn in the mat frame (mat units, y down as printed).

:func:`read_run` collects what a bag holds (any subset of the topics below; pure, rosbags only); :func:`save_png`
and :func:`save_gif` draw it on a plain matplotlib ``Figure`` (no pyplot: no global backend or figure list).

Topics used: ``/<cube>/state`` (trajectories), ``/mat_sim/ground_truth`` (preferred for trajectories and contacts
when present), ``/<cube>/nav_result`` (waypoints, planner collisions), ``/<cube>/goal``, ``/arena/map``,
``/arena/state``, ``/arena/fastest_path``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.animation import FuncAnimation, PillowWriter
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

from toio_navigator.bags.recording import ReplayError, open_reader, stored_parameters
from toio_navigator.input_files import InputError, number, show
from toio_navigator.units import BODY_RADIUS, ros_to_mat_xy

DEFAULT_MAT = (45.0, 45.0, 455.0, 455.0)
_CUBE_TOPIC = re.compile(r'^/(?P<cube>[A-Za-z_][A-Za-z0-9_]*)/(?P<kind>state|nav_result|goal)$')


@dataclass
class Track:
    t: list = field(default_factory=list)              # s since the start of the bag
    xy: list = field(default_factory=list)             # mat units

    def array(self) -> np.ndarray:
        return np.asarray(self.xy, dtype=float).reshape(-1, 2)


@dataclass
class ArenaRun:
    """What an explorer bag says about the arena."""
    grid: np.ndarray | None = None                     # occupancy (-1 unknown, 0 free, 100 obstacle), row 0 = top
    extent: tuple[float, float, float, float] | None = None   # left, right, bottom, top in mat units
    progress_t: list = field(default_factory=list)     # ArenaState stamps (s since start)
    explored: list = field(default_factory=list)       # explored cells after each move
    status: str = ''
    robot: tuple[int, int] | None = None
    path_xy: np.ndarray | None = None                  # fastest path, mat units


@dataclass
class Run:
    bag: Path
    mat_rect: tuple[float, float, float, float]
    cubes: list[str]
    tracks: dict[str, Track]
    waypoints: dict[str, Track]
    goals: dict[str, list[tuple[float, float]]]
    truth: Track | None                                 # ground truth frames (xy: (N, 2) per frame)
    contacts: list[tuple[float, float, float, str]]    # (t, x, y, 'cubeA-cubeB') at each contact start
    planner_collisions: int
    arena: ArenaRun | None
    duration: float


def _natural(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r'(\d+)', name)]


def _mat_rect(rect, bag: Path) -> tuple[float, float, float, float]:
    """The stored mat_rect parameter (x0, y0, x1, y1), or the default mat when the bag holds none."""
    if rect is None:
        return DEFAULT_MAT
    where = f'{bag}: stored navigator parameter mat_rect'
    if not isinstance(rect, list) or len(rect) != 4:
        raise ReplayError(f'{where} must be [x0, y0, x1, y1], got {show(rect)}')
    try:
        x0, y0, x1, y1 = (number(v, where, -1e6, 1e6) for v in rect)
    except InputError as exc:
        raise ReplayError(str(exc)) from None
    if not (x0 < x1 and y0 < y1):
        raise ReplayError(f'{where} must have x0 < x1 and y0 < y1, got {show(rect)}')
    return x0, y0, x1, y1


def read_run(bag: str | Path) -> Run:
    """Everything drawable in ``bag``; ReplayError (a ValueError) naming the problem for an unusable bag."""
    bag = Path(bag)
    reader = open_reader(bag)
    tracks: dict[str, Track] = {}
    waypoints: dict[str, Track] = {}
    goals: dict[str, list] = {}
    truth = Track()
    arena = ArenaRun()
    planner_collisions = 0
    try:
        t0 = reader.start_time
        end = reader.end_time
        wanted = [c for c in reader.connections if _CUBE_TOPIC.match(c.topic) or c.topic in
                  ('/mat_sim/ground_truth', '/arena/map', '/arena/state', '/arena/fastest_path')]
        for conn, ns, raw in (reader.messages(connections=wanted) if wanted else ()):
            t = (ns - t0) / 1e9
            try:
                msg = reader.deserialize(raw, conn.msgtype)
            except Exception as exc:
                raise ReplayError(f'{bag}: cannot decode a {conn.msgtype} on {conn.topic}: {exc}') from None
            m = _CUBE_TOPIC.match(conn.topic)
            if m and conn.msgtype.endswith('/CubeState'):
                if msg.on_mat and math.isfinite(msg.x) and math.isfinite(msg.y):
                    tr = tracks.setdefault(m['cube'], Track())
                    tr.t.append(t)
                    tr.xy.append((msg.x, msg.y))
            elif m and conn.msgtype.endswith('/NavResult'):
                if msg.active and math.isfinite(msg.waypoint_x):
                    tr = waypoints.setdefault(m['cube'], Track())
                    tr.t.append(t)
                    tr.xy.append((msg.waypoint_x, msg.waypoint_y))
                planner_collisions += bool(msg.collision)
            elif m and conn.msgtype.endswith('/NavGoal'):
                if msg.direction != 2:
                    goals.setdefault(m['cube'], []).append((msg.x, msg.y))
            elif conn.topic == '/mat_sim/ground_truth':
                truth.t.append(t)
                truth.xy.append([ros_to_mat_xy(p.position.x, p.position.y) for p in msg.poses])
            elif conn.topic == '/arena/map':
                _read_map(msg, arena)
            elif conn.topic == '/arena/state':
                arena.progress_t.append(t)
                arena.explored.append(int(msg.explored_count))
                arena.status = str(msg.status_text) or str(msg.status)
                arena.robot = (int(msg.robot_x), int(msg.robot_y))
            elif conn.topic == '/arena/fastest_path':
                arena.path_xy = np.array([ros_to_mat_xy(p.pose.position.x, p.pose.position.y) for p in msg.poses],
                                         dtype=float).reshape(-1, 2)
    finally:
        reader.close()
    cubes = sorted(set(tracks) | set(waypoints), key=_natural)
    params = stored_parameters(bag) or {}
    mat = _mat_rect(params.get('mat_rect'), bag)
    truth_track = truth if truth.t and len({len(f) for f in truth.xy}) == 1 else None
    # ground truth lists the cubes in the bringup's `cubes` order: use it when the bag stored the parameters
    listed = params.get('cubes')
    order = (list(listed) if isinstance(listed, list) and all(isinstance(c, str) for c in listed)
             and set(listed) == set(cubes) else cubes)
    has_arena = arena.grid is not None or arena.explored or arena.path_xy is not None
    if not cubes and not has_arena and truth_track is None:
        raise ReplayError(f'{bag}: nothing to draw (no /<cube>/state, /<cube>/nav_result, /mat_sim/ground_truth or '
                          '/arena/* topics)')
    return Run(bag, mat, order, tracks, waypoints, goals, truth_track, _contacts(tracks, truth_track, order),
               planner_collisions, arena if has_arena else None, (end - t0) / 1e9)


def _read_map(msg, arena: ArenaRun) -> None:
    w, h, res = int(msg.info.width), int(msg.info.height), float(msg.info.resolution)
    data = np.asarray(msg.data, dtype=int)
    if w <= 0 or h <= 0 or res <= 0 or data.size != w * h:
        return
    grid = data.reshape(h, w)[::-1]                     # row 0 = the top of the map (largest ROS y)
    x0, y0 = float(msg.info.origin.position.x), float(msg.info.origin.position.y)
    left, bottom = ros_to_mat_xy(x0, y0)
    right, top = ros_to_mat_xy(x0 + w * res, y0 + h * res)
    arena.grid, arena.extent = grid, (float(left), float(right), float(bottom), float(top))


def _contacts(tracks: dict[str, Track], truth: Track | None, cubes: list[str]) -> list:
    """Contact starts: two bodies closer than 2 radii (ground truth if recorded, else the reported states
    sampled on a common 50 ms clock)."""
    if truth is not None:
        times, frames = np.asarray(truth.t), np.asarray(truth.xy, dtype=float)
        names = cubes if frames.shape[1] == len(cubes) else [f'#{i}' for i in range(frames.shape[1])]
    else:
        usable = [c for c in cubes if len(tracks.get(c, Track()).t) > 0]
        if len(usable) < 2:
            return []
        start = max(tracks[c].t[0] for c in usable)
        stop = min(tracks[c].t[-1] for c in usable)
        if stop <= start:
            return []
        times = np.arange(start, stop, 0.05)
        frames = np.stack([_sample(tracks[c], times) for c in usable], axis=1)
        names = usable
    if frames.ndim != 3 or frames.shape[1] < 2:
        return []
    n = frames.shape[1]
    iu = np.triu_indices(n, 1)
    d = np.hypot(*(frames[:, :, None, :] - frames[:, None, :, :]).transpose(3, 0, 1, 2))[:, iu[0], iu[1]]
    touching = d <= 2 * BODY_RADIUS
    starts = touching & ~np.vstack([np.zeros((1, touching.shape[1]), bool), touching[:-1]])
    out = []
    for k, p in zip(*np.nonzero(starts)):
        a, b = iu[0][p], iu[1][p]
        mid = 0.5 * (frames[k, a] + frames[k, b])
        out.append((float(times[k]), float(mid[0]), float(mid[1]), f'{names[a]}-{names[b]}'))
    return out


def _sample(track: Track, times: np.ndarray) -> np.ndarray:
    """The latest reported position at each time."""
    t = np.asarray(track.t)
    idx = np.clip(np.searchsorted(t, times, side='right') - 1, 0, len(t) - 1)
    return track.array()[idx]


# ------------------------------------------------------------------------------------------------ drawing

def _figure(run: Run):
    if run.arena is not None and run.arena.explored:
        fig = Figure(figsize=(11, 6.5), dpi=100)
        ax, ax2 = fig.subplots(1, 2, gridspec_kw={'width_ratios': [3, 1.3]})
    else:
        fig = Figure(figsize=(7, 7), dpi=100)
        ax, ax2 = fig.subplots(), None
    return fig, ax, ax2


def _draw(run: Run, ax, ax2, until: float | None) -> None:
    """One picture of the run up to time ``until`` (None = the end)."""
    ax.clear()
    x0, y0, x1, y1 = run.mat_rect
    a = run.arena
    if a is not None and a.grid is not None:
        shade = np.where(a.grid < 0, 0.75, np.where(a.grid >= 50, 0.1, 1.0))
        ax.imshow(shade, cmap='gray', vmin=0, vmax=1, origin='upper', extent=a.extent, zorder=0)
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, lw=1.5, color='0.3'))
    colours = colormaps['tab10']
    cut = math.inf if until is None else until
    for i, cube in enumerate(run.cubes):
        c = colours(i % 10)
        tr = run.tracks.get(cube)
        if run.truth is not None and len(run.truth.xy[0]) == len(run.cubes):
            t = np.asarray(run.truth.t)
            xy = np.asarray(run.truth.xy, dtype=float)[:, i][t <= cut]
        elif tr is not None:
            xy = tr.array()[np.asarray(tr.t) <= cut]
        else:
            xy = np.zeros((0, 2))
        if len(xy):
            ax.plot(xy[:, 0], xy[:, 1], '-', color=c, lw=1.3, label=cube)
            ax.add_patch(Circle(xy[0], BODY_RADIUS, fill=False, color=c, lw=0.8))
            ax.add_patch(Circle(xy[-1], BODY_RADIUS, color=c, alpha=0.55))
        wp = run.waypoints.get(cube)
        if wp is not None and wp.t:
            sel = wp.array()[np.asarray(wp.t) <= cut]
            if len(sel):
                ax.plot(sel[:, 0], sel[:, 1], '.', color=c, ms=2, alpha=0.35)
                if len(xy):
                    ax.plot([xy[-1, 0], sel[-1, 0]], [xy[-1, 1], sel[-1, 1]], ':', color=c, lw=1)
        for gx, gy in run.goals.get(cube, []):
            ax.plot(gx, gy, 'x', color=c, ms=9, mew=2)
    shown = [k for k in run.contacts if k[0] <= cut]
    for _t, cx, cy, _pair in shown:
        ax.plot(cx, cy, 'o', ms=14, mfc='none', mec='red', mew=2)
    if a is not None and a.path_xy is not None and len(a.path_xy):
        ax.plot(a.path_xy[:, 0], a.path_xy[:, 1], '-', color='magenta', lw=2.5, alpha=0.8, label='fastest path')
    lo_x, hi_x, lo_y, hi_y = x0, x1, y0, y1
    if a is not None and a.extent is not None:
        lo_x, hi_x = min(lo_x, a.extent[0]), max(hi_x, a.extent[1])
        lo_y, hi_y = min(lo_y, a.extent[3]), max(hi_y, a.extent[2])
    ax.set_xlim(lo_x - 15, hi_x + 15)
    ax.set_ylim(hi_y + 15, lo_y - 15)                  # y down, as printed on the mat
    ax.set_aspect('equal')
    ax.set_xlabel('x (mat units)')
    ax.set_ylabel('y (mat units, down)')
    t_text = f't = {until:.1f} s' if until is not None else f'{run.duration:.1f} s'
    ax.set_title(f'{run.bag.name}: {len(run.cubes)} cubes, {t_text}, {len(shown)} contacts'
                 + (f', arena {a.status}' if a is not None and a.status else ''), fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc='upper right', fontsize=7, ncol=2)
    if ax2 is not None and a is not None:
        ax2.clear()
        t = np.asarray(a.progress_t)
        sel = t <= cut
        ax2.step(t[sel], np.asarray(a.explored)[sel], where='post', color='tab:blue')
        ax2.set_xlim(0, max(run.duration, 1e-3))
        ax2.set_ylim(0, 310)
        ax2.set_xlabel('t (s)')
        ax2.set_ylabel('explored cells (MDF part 1)')
        ax2.set_title('exploration progress', fontsize=9)


def save_png(run: Run, path: str | Path) -> None:
    fig, ax, ax2 = _figure(run)
    _draw(run, ax, ax2, None)
    fig.tight_layout()
    fig.savefig(path)


def save_gif(run: Run, path: str | Path, frames: int = 40, fps: float = 8.0) -> None:
    """The run as an animation of ``frames`` pictures evenly spread over its duration."""
    fig, ax, ax2 = _figure(run)
    times = np.linspace(0.0, max(run.duration, 1e-3), max(2, int(frames)))
    anim = FuncAnimation(fig, lambda k: _draw(run, ax, ax2, float(times[k])), frames=len(times))
    anim.save(str(path), writer=PillowWriter(fps=fps))
