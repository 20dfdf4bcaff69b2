"""Reader of the benchmark scenarios file (docs/metrics.md §9, version 1).

One scenario becomes a :class:`Scenario` with explicit arrays: starts, goals, disc and segment obstacles and the
constants of the metrics (per-scenario keys override the file's ``defaults``). Every problem in the file raises
:class:`ScenarioError` with the scenario name and the offending key, never a bare KeyError or a numpy traceback.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: the defaults of docs/metrics.md, used when the file has no ``defaults`` entry for a constant
METRIC_DEFAULTS: dict[str, float] = {
    'agent_radius': 16.5,
    'max_speed': 165.0,
    'dt': 0.05,
    'goal_tolerance': 10.0,
    'contact_tolerance': 0.5,
}
GENERATORS = ('circle_swap', 'explicit')


class ScenarioError(ValueError):
    """The scenarios file is missing, unreadable or does not follow the format."""


@dataclass
class Scenario:
    name: str
    category: str
    n_agents: int
    time_limit: float
    starts: np.ndarray                      # (N, 2)
    goals: np.ndarray                       # (N, 2)
    agent_radius: float = 16.5
    max_speed: float = 165.0
    dt: float = 0.05
    goal_tolerance: float = 10.0
    contact_tolerance: float = 0.5
    discs: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))     # (D, 3) cx, cy, R
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))  # (S, 4) ax, ay, bx, by
    description: str = ''

    @property
    def seed(self) -> int:
        """The fixed per-scenario seed for sampling planners (docs/metrics.md §1.6): CRC-32 of the name."""
        return zlib.crc32(self.name.encode('utf-8'))

    @property
    def n_steps(self) -> int:
        """Index of the last step k with k*dt <= time_limit."""
        return int(math.floor(self.time_limit / self.dt + 1e-9))

    def walls(self) -> np.ndarray:
        """Obstacles as SwarmState walls (x1, y1, x2, y2, margin): a disc is a zero-length segment with margin R."""
        discs = np.column_stack([self.discs[:, :2], self.discs[:, :2], self.discs[:, 2]])
        segs = np.column_stack([self.segments, np.zeros(len(self.segments))])
        return np.vstack([segs.reshape(-1, 5), discs.reshape(-1, 5)])


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read every scenario of a scenarios file; raises ScenarioError naming the problem."""
    import yaml
    path = Path(path)
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as exc:
        raise ScenarioError(f'{path}: cannot read scenarios file: {exc.strerror or exc}') from None
    except UnicodeDecodeError:
        raise ScenarioError(f'{path}: not a UTF-8 text file') from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f'{path}: invalid YAML: {exc}') from None
    return parse_scenarios(doc, source=str(path))


def parse_scenarios(doc: Any, source: str = '<scenarios>') -> list[Scenario]:
    if not isinstance(doc, dict):
        raise ScenarioError(f'{source}: top level must be a mapping with a "scenarios" list')
    version = doc.get('version', 1)
    if version != 1:
        raise ScenarioError(f'{source}: unsupported version {version!r} (this reader knows version 1)')
    defaults = dict(METRIC_DEFAULTS)
    file_defaults = doc.get('defaults') or {}
    if not isinstance(file_defaults, dict):
        raise ScenarioError(f'{source}: "defaults" must be a mapping')
    for key in METRIC_DEFAULTS:
        if key in file_defaults:
            defaults[key] = _positive(file_defaults[key], f'{source}: defaults.{key}')
    entries = doc.get('scenarios')
    if not isinstance(entries, list) or not entries:
        raise ScenarioError(f'{source}: "scenarios" must be a non-empty list')
    scenarios = [_parse_one(entry, index, defaults, source) for index, entry in enumerate(entries)]
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ScenarioError(f'{source}: duplicate scenario names: {", ".join(duplicates)}')
    return scenarios


def _parse_one(entry: Any, index: int, defaults: dict[str, float], source: str) -> Scenario:
    if not isinstance(entry, dict):
        raise ScenarioError(f'{source}: scenario #{index} must be a mapping')
    name = entry.get('name')
    if not isinstance(name, str) or not name:
        raise ScenarioError(f'{source}: scenario #{index} has no "name"')
    where = f'{source}: scenario {name!r}'
    consts = {key: _positive(entry[key], f'{where}: {key}') if key in entry else value
              for key, value in defaults.items()}
    if consts['contact_tolerance'] >= 2.0 * consts['agent_radius']:
        raise ScenarioError(f'{where}: contact_tolerance {consts["contact_tolerance"]} must be smaller than the '
                            f'agent diameter {2.0 * consts["agent_radius"]}')
    generator = entry.get('generator', 'explicit')
    if generator not in GENERATORS:
        raise ScenarioError(f'{where}: unknown generator {generator!r} (expected one of {", ".join(GENERATORS)})')
    if 'time_limit' not in entry:
        raise ScenarioError(f'{where}: missing "time_limit"')
    time_limit = _positive(entry['time_limit'], f'{where}: time_limit')
    if generator == 'circle_swap':
        starts, goals = _circle_swap(entry.get('params'), where)
    else:
        starts = _points(entry.get('starts'), f'{where}: starts')
        goals = _points(entry.get('goals'), f'{where}: goals')
        if len(starts) != len(goals):
            raise ScenarioError(f'{where}: {len(starts)} starts but {len(goals)} goals')
    n = len(starts)
    if n == 0:
        raise ScenarioError(f'{where}: no agents')
    if 'n_agents' in entry and entry['n_agents'] != n:
        raise ScenarioError(f'{where}: n_agents is {entry["n_agents"]!r} but the scenario defines {n} agents')
    discs, segments = _obstacles(entry.get('obstacles'), where)
    return Scenario(name=name, category=str(entry.get('category', 'uncategorised')), n_agents=n,
                    time_limit=time_limit, starts=starts, goals=goals, discs=discs, segments=segments,
                    description=str(entry.get('description', '')), **consts)


def _circle_swap(params: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(params, dict):
        raise ScenarioError(f'{where}: circle_swap needs a "params" mapping (n, center, radius, phase)')
    n = params.get('n')
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ScenarioError(f'{where}: params.n must be a positive integer, got {n!r}')
    center = _point(params.get('center', [250.0, 250.0]), f'{where}: params.center')
    radius = _positive(params.get('radius'), f'{where}: params.radius')
    phase = _number(params.get('phase', 0.0), f'{where}: params.phase')
    angles = phase + 2.0 * math.pi * np.arange(n) / n
    ring = radius * np.column_stack([np.cos(angles), np.sin(angles)])
    return center + ring, center - ring


def _obstacles(items: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    if items is None:
        return np.zeros((0, 3)), np.zeros((0, 4))
    if not isinstance(items, list):
        raise ScenarioError(f'{where}: "obstacles" must be a list')
    discs, segments = [], []
    for k, item in enumerate(items):
        what = f'{where}: obstacles[{k}]'
        if not isinstance(item, dict):
            raise ScenarioError(f'{what} must be a mapping')
        kind = item.get('type')
        if kind == 'disc':
            c = _point(item.get('center'), f'{what}.center')
            discs.append([c[0], c[1], _positive(item.get('radius'), f'{what}.radius')])
        elif kind == 'segment':
            a, b = _point(item.get('a'), f'{what}.a'), _point(item.get('b'), f'{what}.b')
            segments.append([a[0], a[1], b[0], b[1]])
        else:
            raise ScenarioError(f'{what}: unknown type {kind!r} (expected disc or segment)')
    return np.array(discs, float).reshape(-1, 3), np.array(segments, float).reshape(-1, 4)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScenarioError(f'{what} must be a finite number, got {value!r}')
    return float(value)


def _positive(value: Any, what: str) -> float:
    number = _number(value, what)
    if number <= 0.0:
        raise ScenarioError(f'{what} must be > 0, got {value!r}')
    return number


def _point(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ScenarioError(f'{what} must be a pair [x, y], got {value!r}')
    return np.array([_number(v, what) for v in value])


def _points(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, list):
        raise ScenarioError(f'{what} must be a list of [x, y] pairs')
    return np.array([_point(p, f'{what}[{k}]') for k, p in enumerate(value)], float).reshape(-1, 2)
