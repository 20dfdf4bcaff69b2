"""What a page may ask the console to do, checked before anything is sent: :func:`parse` turns one WebSocket text
message (JSON) into a :class:`Command`, or raises :class:`CommandError` with the reason the page shows.

Only the form is checked here (a known cube, numbers that are numbers). Whether a goal, a planner or a waypoint is
acceptable is for the node that receives it to say, as for any other client: the navigator refuses an off-mat goal
with its reason, the explorer a waypoint on an obstacle, and the page shows that answer.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

#: the navigator parameters a page may set
SETTABLE = ('planner', 'mode')
EXPLORER_ACTIONS = ('start_exploration', 'start_fastest_path', 'terminate')
LIVE_OPS = ('goal', 'stop', 'stop_all', 'set_parameter', 'explorer', 'waypoint')
REPLAY_OPS = ('seek', 'play', 'pause', 'speed')
MAX_MESSAGE = 4096


class CommandError(ValueError):
    """A message that is not a command the console can carry out (the text says why; ``id``: the page's id of it,
    when it had a valid one)."""

    def __init__(self, text: str, ident: int | None = None) -> None:
        super().__init__(text)
        self.id = ident


@dataclass(frozen=True)
class Command:
    op: str
    id: int | None = None          # the page's id, echoed in the reply
    cube: str = ''
    x: float = 0.0
    y: float = 0.0
    name: str = ''
    value: object = None


def _number(data: dict, key: str) -> float:
    v = data.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CommandError(f'{key} must be a finite number, got {json.dumps(v)}')
    return float(v)


def _integer(data: dict, key: str) -> int:
    v = data.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise CommandError(f'{key} must be an integer, got {json.dumps(v)}')
    return v


def _cube(data: dict, cubes) -> str:
    cube = data.get('cube')
    if not isinstance(cube, str) or cube not in cubes:
        raise CommandError(f'unknown cube {json.dumps(cube)} (cubes: {", ".join(cubes)})')
    return cube


def parse(text: str, cubes, ops=LIVE_OPS) -> Command:
    """One message -> a Command for one of ``ops``; CommandError naming what is wrong."""
    if len(text) > MAX_MESSAGE:
        raise CommandError(f'message too long ({len(text)} characters, at most {MAX_MESSAGE})')
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CommandError(f'not JSON: {exc}') from None
    if not isinstance(data, dict):
        raise CommandError('a command must be a JSON object with an "op"')
    ident = data.get('id')
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, int)):
        raise CommandError(f'id must be an integer, got {json.dumps(ident)}')
    try:
        return _command(data, ident, cubes, ops)
    except CommandError as exc:
        raise CommandError(str(exc), ident) from None


def _command(data: dict, ident: int | None, cubes, ops) -> Command:
    op = data.get('op')
    if op not in ops:
        raise CommandError(f'unknown op {json.dumps(op)} (ops here: {", ".join(ops)})')
    if op == 'goal':
        return Command(op, ident, _cube(data, cubes), _number(data, 'x'), _number(data, 'y'))
    if op == 'stop':
        return Command(op, ident, _cube(data, cubes))
    if op == 'set_parameter':
        name, value = data.get('name'), data.get('value')
        if name not in SETTABLE:
            raise CommandError(f'the page may set only {", ".join(SETTABLE)}, not {json.dumps(name)}')
        if not isinstance(value, str):
            raise CommandError(f'{name} must be a string, got {json.dumps(value)}')
        return Command(op, ident, name=name, value=value)
    if op == 'explorer':
        action = data.get('action')
        if action not in EXPLORER_ACTIONS:
            raise CommandError(f'unknown explorer action {json.dumps(action)} ({", ".join(EXPLORER_ACTIONS)})')
        return Command(op, ident, name=action)
    if op == 'waypoint':
        return Command(op, ident, x=_integer(data, 'x'), y=_integer(data, 'y'))
    if op in ('seek', 'speed'):
        return Command(op, ident, value=_number(data, 't' if op == 'seek' else 'value'))
    return Command(op, ident)
