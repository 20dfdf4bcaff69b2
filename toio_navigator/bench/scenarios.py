"""Reader of the benchmark scenarios file (docs/metrics.md §9, version 1).

One scenario becomes a :class:`Scenario` with explicit arrays: starts, goals, disc and segment obstacles and the
metric constants (per-scenario keys override the file's ``defaults``). Every problem in the file raises
:class:`ScenarioError` with the scenario name and the offending key, never a bare KeyError or a numpy traceback:
unknown keys (a misspelt constant would silently keep its default), numbers that are not finite or outside
:data:`LIMITS`, and runs too big to finish in reasonable time or memory (:data:`MAX_AGENTS`, :data:`MAX_STEPS`,
:data:`MAX_AGENT_STEPS`) are refused.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toio_navigator.input_files import InputError, integer, known_keys, load_yaml, number, read_text, show

#: the defaults of docs/metrics.md, used when the file has no ``defaults`` entry for a constant
METRIC_DEFAULTS: dict[str, float] = {
    'agent_radius': 16.5,
    'max_speed': 165.0,
    'dt': 0.05,
    'goal_tolerance': 10.0,
    'contact_tolerance': 0.5,
}
GENERATORS = ('circle_swap', 'explicit')
#: (low, high) of each number, low excluded: mat units, seconds. Coordinates beyond COORDINATE_LIMIT (136 m) are no
#: swarm on a mat, and their squares lose the precision the clearances need.
COORDINATE_LIMIT = 1e5
LIMITS: dict[str, tuple[float, float]] = {
    'agent_radius': (0.0, 1e4), 'max_speed': (0.0, 1e4), 'dt': (0.0, 1.0), 'goal_tolerance': (0.0, 1e5),
    'contact_tolerance': (0.0, 1e4), 'time_limit': (0.0, 86_400.0), 'radius': (0.0, COORDINATE_LIMIT),
}
MAX_AGENTS = 4096              # pairwise work per step grows with the square
MAX_STEPS = 1_000_000          # steps of one run (time_limit / dt)
MAX_AGENT_STEPS = 20_000_000   # the recorded trajectory: 16 bytes per agent and step (320 MB at this bound)
MAX_OBSTACLES = 10_000
FILE_KEYS = ('version', 'units', 'defaults', 'notes', 'scenarios')
DEFAULT_KEYS = (*METRIC_DEFAULTS, 'mat_center')
SCENARIO_KEYS = ('name', 'category', 'description', 'generator', 'n_agents', 'time_limit', 'params', 'starts',
                 'goals', 'groups', 'obstacles', *METRIC_DEFAULTS)
CIRCLE_KEYS = ('n', 'center', 'radius', 'phase')
OBSTACLE_KEYS = {'disc': ('type', 'center', 'radius'), 'segment': ('type', 'a', 'b')}


class ScenarioError(InputError):
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
    path = Path(path)
    try:
        doc = load_yaml(read_text(path, 'scenarios file'), str(path))
    except InputError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenarios(doc, source=str(path))


def parse_scenarios(doc: Any, source: str = '<scenarios>') -> list[Scenario]:
    try:
        return _parse_scenarios(doc, source)
    except ScenarioError:
        raise
    except InputError as exc:      # the shared checks raise the base class
        raise ScenarioError(str(exc)) from None


def _parse_scenarios(doc: Any, source: str) -> list[Scenario]:
    if not isinstance(doc, dict):
        raise ScenarioError(f'{source}: top level must be a mapping with a "scenarios" list')
    known_keys(doc, FILE_KEYS, source)
    version = doc.get('version', 1)
    if version != 1 or isinstance(version, bool):
        raise ScenarioError(f'{source}: unsupported version {show(version)} (this reader knows version 1)')
    defaults = dict(METRIC_DEFAULTS)
    file_defaults = doc.get('defaults', {})
    if not isinstance(file_defaults, dict):
        raise ScenarioError(f'{source}: "defaults" must be a mapping')
    known_keys(file_defaults, DEFAULT_KEYS, f'{source}: defaults')
    for key in METRIC_DEFAULTS:
        if key in file_defaults:
            defaults[key] = _constant(file_defaults[key], key, f'{source}: defaults.{key}')
    if 'mat_center' in file_defaults:
        _point(file_defaults['mat_center'], f'{source}: defaults.mat_center')
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
    known_keys(entry, SCENARIO_KEYS, where)
    for key in ('category', 'description'):
        if not isinstance(entry.get(key, ''), str):
            raise ScenarioError(f'{where}: {key} must be a string, got {show(entry[key])}')
    consts = {key: _constant(entry[key], key, f'{where}: {key}') if key in entry else value
              for key, value in defaults.items()}
    if consts['contact_tolerance'] >= 2.0 * consts['agent_radius']:
        raise ScenarioError(f'{where}: contact_tolerance {consts["contact_tolerance"]} must be smaller than the '
                            f'agent diameter {2.0 * consts["agent_radius"]}')
    generator = entry.get('generator', 'explicit')
    if generator not in GENERATORS:
        raise ScenarioError(f'{where}: unknown generator {generator!r} (expected one of {", ".join(GENERATORS)})')
    if 'time_limit' not in entry:
        raise ScenarioError(f'{where}: missing "time_limit"')
    time_limit = _constant(entry['time_limit'], 'time_limit', f'{where}: time_limit')
    steps = time_limit / consts['dt']
    if steps > MAX_STEPS:
        raise ScenarioError(f'{where}: time_limit {time_limit:g} s at dt {consts["dt"]:g} s is {steps:.3g} steps; '
                            f'a run is at most {MAX_STEPS} steps')
    starts, goals = _agents(entry, generator, steps, where)
    n = len(starts)
    if entry.get('params') is not None and not isinstance(entry['params'], dict):
        raise ScenarioError(f'{where}: params must be a mapping, got {show(entry["params"])}')
    if not isinstance(entry.get('groups', []), list):
        raise ScenarioError(f'{where}: groups must be a list of labels, got {show(entry["groups"])}')
    discs, segments = _obstacles(entry.get('obstacles'), where)
    return Scenario(name=name, category=str(entry.get('category', 'uncategorised')), n_agents=n,
                    time_limit=time_limit, starts=starts, goals=goals, discs=discs, segments=segments,
                    description=str(entry.get('description', '')), **consts)


def _agents(entry: dict, generator: str, steps: float, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The starts and goals of a scenario entry: listed, or made by its generator; at least one agent, at most
    MAX_AGENTS, and no more agent-steps than a run keeps."""
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
    if n > MAX_AGENTS:
        raise ScenarioError(f'{where}: {n} agents; a scenario has at most {MAX_AGENTS}')
    if n * steps > MAX_AGENT_STEPS:
        raise ScenarioError(f'{where}: {n} agents x {steps:.0f} steps is beyond the {MAX_AGENT_STEPS} agent-steps '
                            'a run keeps in memory (shorten time_limit or raise dt)')
    if 'n_agents' in entry and integer(entry['n_agents'], f'{where}: n_agents') != n:
        raise ScenarioError(f'{where}: n_agents is {entry["n_agents"]!r} but the scenario defines {n} agents')
    return starts, goals


def _circle_swap(params: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(params, dict):
        raise ScenarioError(f'{where}: circle_swap needs a "params" mapping (n, center, radius, phase)')
    known_keys(params, CIRCLE_KEYS, f'{where}: params')
    n = params.get('n')
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ScenarioError(f'{where}: params.n must be a positive integer, got {show(n)}')
    if n > MAX_AGENTS:
        raise ScenarioError(f'{where}: params.n is {n}; a scenario has at most {MAX_AGENTS} agents')
    center = _point(params.get('center', [250.0, 250.0]), f'{where}: params.center')
    radius = _constant(params.get('radius'), 'radius', f'{where}: params.radius')
    phase = _number(params.get('phase', 0.0), f'{where}: params.phase')
    if np.abs(center).max() + radius > COORDINATE_LIMIT:
        raise ScenarioError(f'{where}: params.center and radius put agents beyond +-{COORDINATE_LIMIT:g} mat units')
    angles = phase + 2.0 * math.pi * np.arange(n) / n
    ring = radius * np.column_stack([np.cos(angles), np.sin(angles)])
    return center + ring, center - ring


def _obstacles(items: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    if items is None:
        return np.zeros((0, 3)), np.zeros((0, 4))
    if not isinstance(items, list):
        raise ScenarioError(f'{where}: "obstacles" must be a list')
    if len(items) > MAX_OBSTACLES:
        raise ScenarioError(f'{where}: {len(items)} obstacles; at most {MAX_OBSTACLES}')
    discs, segments = [], []
    for k, item in enumerate(items):
        what = f'{where}: obstacles[{k}]'
        if not isinstance(item, dict):
            raise ScenarioError(f'{what} must be a mapping')
        kind = item.get('type')
        if not isinstance(kind, str) or kind not in OBSTACLE_KEYS:
            raise ScenarioError(f'{what}: unknown type {kind!r} (expected disc or segment)')
        known_keys(item, OBSTACLE_KEYS[kind], what)
        if kind == 'disc':
            c = _point(item.get('center'), f'{what}.center')
            discs.append([c[0], c[1], _constant(item.get('radius'), 'radius', f'{what}.radius')])
        else:
            a, b = _point(item.get('a'), f'{what}.a'), _point(item.get('b'), f'{what}.b')
            segments.append([a[0], a[1], b[0], b[1]])
    return np.array(discs, float).reshape(-1, 3), np.array(segments, float).reshape(-1, 4)


def _number(value: Any, what: str, lo: float | None = None, hi: float | None = None, lo_open: bool = True) -> float:
    try:
        return number(value, what, lo, hi, lo_open=lo_open)
    except InputError as exc:
        raise ScenarioError(str(exc)) from None


def _constant(value: Any, key: str, what: str) -> float:
    """A positive constant within its LIMITS."""
    lo, hi = LIMITS[key]
    return _number(value, what, lo, hi)


def _point(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ScenarioError(f'{what} must be a pair [x, y], got {show(value)}')
    return np.array([_number(v, what, -COORDINATE_LIMIT, COORDINATE_LIMIT, lo_open=False) for v in value])


def _points(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, list):
        raise ScenarioError(f'{what} must be a list of [x, y] pairs')
    if len(value) > MAX_AGENTS:
        raise ScenarioError(f'{what}: {len(value)} points; a scenario has at most {MAX_AGENTS} agents')
    return np.array([_point(p, f'{what}[{k}]') for k, p in enumerate(value)], float).reshape(-1, 2)
