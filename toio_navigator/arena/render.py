"""Pictures of an arena: the explored map, the fastest path and the image cards (PNG via matplotlib, or text).

Drawn on a plain matplotlib ``Figure`` (no pyplot): no global backend or figure list, nothing to close.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from toio_navigator.arena.geometry import DX, DY, GOAL_CENTRE, START_CENTRE, Pose


def ascii_map(explored: np.ndarray, obstacle: np.ndarray, poses: list[Pose] = (), robot: Pose | None = None) -> str:
    """Top row first: ``#`` obstacle, ``.`` free, ``?`` unexplored, ``*`` path centre, ``^>v<`` the robot."""
    rows, cols = explored.shape
    chars = np.where(~explored, '?', np.where(obstacle, '#', '.')).astype('<U1')
    for p in poses:
        chars[p.y, p.x] = '*'
    if robot is not None:
        chars[robot.y, robot.x] = '^>v<'[robot.heading]
    return '\n'.join(''.join(chars[y]) for y in range(rows - 1, -1, -1))


def save_png(path: str | Path, explored: np.ndarray, obstacle: np.ndarray, poses: list[Pose] = (),
             truth: np.ndarray | None = None, waypoint: tuple[int, int] | None = None, images=(),
             title: str = '', start: tuple[int, int] = START_CENTRE, goal: tuple[int, int] = GOAL_CENTRE) -> None:
    """Cells: white free, black obstacle, grey unexplored, red outline = a true obstacle the map lacks.
    The path is drawn through the robot centres; image records are marked on their obstacle face."""
    rows, cols = explored.shape
    shade = np.where(~explored, 0.6, np.where(obstacle, 0.0, 1.0))
    fig = Figure(figsize=(cols * 0.32 + 1, rows * 0.32 + 1))
    ax = fig.subplots()
    ax.imshow(shade, cmap='gray', vmin=0, vmax=1, origin='lower', extent=(-0.5, cols - 0.5, -0.5, rows - 0.5))
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.tick_params(labelsize=6)
    ax.set_xticks(np.arange(-0.5, cols), minor=True)
    ax.set_yticks(np.arange(-0.5, rows), minor=True)
    ax.grid(which='minor', color='0.8', linewidth=0.4)
    if truth is not None:
        for y, x in zip(*np.nonzero(truth & ~(obstacle & explored))):
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor='red', linewidth=1))
    for (zx, zy), colour in ((start, 'tab:green'), (goal, 'tab:blue')):  # the 3x3 start and goal zones
        ax.add_patch(Rectangle((zx - 1.5, zy - 1.5), 3, 3, fill=False, edgecolor=colour, linewidth=1.5))
    if len(poses):
        ax.plot([p.x for p in poses], [p.y for p in poses], '-', color='tab:orange', linewidth=2)
        end = poses[-1]
        ax.arrow(end.x, end.y, 0.6 * DX[end.heading], 0.6 * DY[end.heading], head_width=0.3,
                 color='tab:orange')
    if waypoint is not None:
        ax.plot(*waypoint, marker='*', color='tab:purple', markersize=12)
    for rec in images:
        fx, fy = DX[rec.face], DY[rec.face]
        ax.plot(rec.x + 0.4 * fx, rec.y + 0.4 * fy, marker='s', color='gold', markersize=6)
        ax.annotate(str(rec.id), (rec.x, rec.y), color='gold', ha='center', va='center', fontsize=7)
    ax.set_title(title, fontsize=8)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
