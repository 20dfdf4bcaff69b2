"""One way to say what a node parameter is: name, type, default, description, rule, and whether it may change while
the node runs.

Every node's parameters are a :class:`ParamSet` of :class:`Param` in this package. The nodes declare them from
there (:mod:`toio_navigator.nodes.parameters` turns each into a ParameterDescriptor: description, range,
choices, read-only) and check start-up values and run-time changes with the same :meth:`Param.check`; rules that
tie several parameters together live in each node's settings function, which also runs at start-up and on every
run-time change. No ROS import here, so the rules are tested (and used by ``toio-nav replay``) without ROS.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Mapping

BOOL, INT, FLOAT, STR, NAME = 'bool', 'int', 'float', 'str', 'name'
STRINGS, FLOATS, INTS = 'strings', 'floats', 'ints'
#: a string, or a list of strings (checked as the tuple of its strings: 'a' -> ('a',))
TEXTS = 'texts'
_KIND_TEXT = {BOOL: 'true or false', INT: 'an integer', FLOAT: 'a finite number', STR: 'a string',
              TEXTS: 'a string or a list of strings',
              NAME: 'a cube name (letters, digits, _; not starting with a digit)',
              STRINGS: 'a non-empty list of unique cube names', FLOATS: 'a list of finite numbers',
              INTS: 'a list of integers'}


class SettingError(ValueError):
    """A parameter value breaks its rule; the message names the parameter: ``parameter <name>: <what is wrong>``."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f'parameter {name}: {problem}')
        self.name = name


def shown(value) -> str:
    """A value as an error message shows it (ROS reads an empty list override as "not set")."""
    if value is None:
        return 'no value (an empty list reads as none)'
    if isinstance(value, (bytes, bytearray)) or type(value).__name__ == 'array':
        value = list(value)
    return repr(value)


def name_problem(name: str) -> str:
    """Why ``name`` cannot be a cube name (a ROS namespace and part of topic names); '' if it can."""
    if not name:
        return 'a cube name must not be empty'
    if not name.replace('_', 'a').isalnum() or not name.isascii() or name[0].isdigit():
        return f'{name!r} is not a valid cube name (letters, digits, _; not starting with a digit)'
    return ''


def _kind_of(default) -> str:
    if isinstance(default, bool):
        return BOOL
    if isinstance(default, int):
        return INT
    if isinstance(default, float):
        return FLOAT
    if isinstance(default, str):
        return STR
    raise TypeError(f'cannot tell the kind of parameter from default {default!r}: give kind=')


def _number(value, integer: bool):
    """``value`` as an int / a finite float, or None if it is not one (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    if integer:
        return int(value) if float(value).is_integer() else None
    return float(value)


@dataclass(frozen=True)
class Param:
    """One parameter. ``kind`` defaults to the type of ``default`` (a list kind must be given); ``default`` None
    means the parameter has no default and must be set. ``low``/``high`` bound numbers and every item of a
    number list (``low_open``: strictly above ``low``); ``choices`` lists the allowed values of a string;
    ``lengths`` the allowed lengths of a list ((): any), ``length_multiple`` a length it must be a multiple of.
    ``runtime``: the node applies a change while it runs; otherwise the parameter is read-only. A NAME is a
    string that must be a cube name; STRINGS a non-empty list of unique cube names."""
    name: str
    default: object
    description: str
    kind: str = ''
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple = ()
    lengths: tuple[int, ...] = ()
    length_multiple: int = 1
    runtime: bool = False

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, 'kind', _kind_of(self.default))
        if self.kind not in _KIND_TEXT:
            raise ValueError(f'{self.name}: unknown kind {self.kind!r}')
        if self.default is not None:
            self.check(self.default)      # a default that breaks its own rule is a bug here, not a user error

    # ------------------------------------------------------------------------------------------- rule
    @property
    def is_list(self) -> bool:
        return self.kind in (STRINGS, FLOATS, INTS)

    @property
    def numeric(self) -> bool:
        return self.kind in (INT, FLOAT, FLOATS, INTS)

    def bounds_text(self) -> str:
        """'10..2550', '> 0', '>= 0', '' (no bound)."""
        def text(bound: float) -> str:
            return str(int(bound)) if self.kind in (INT, INTS) else f'{bound:g}'
        low, high = self.low, self.high
        if low is not None and high is not None and not self.low_open:
            return f'{text(low)}..{text(high)}'
        parts = []
        if low is not None:
            parts.append(f'{">" if self.low_open else ">="} {text(low)}')
        if high is not None:
            parts.append(f'<= {text(high)}')
        return ' and '.join(parts)

    @property
    def rule(self) -> str:
        """The rule in words, e.g. 'an integer 10..2550', 'one of: sim, ble', 'a list of 4 finite numbers'."""
        if self.choices:
            return 'one of: ' + ', '.join(str(c) for c in self.choices)
        text = _KIND_TEXT[self.kind]
        if self.is_list:
            if self.lengths:
                text = text.replace('a list of', 'a list of ' + ' or '.join(str(n) for n in self.lengths))
            elif self.length_multiple > 1:
                text += f' in groups of {self.length_multiple}'
            bounds = self.bounds_text()
            return text + (f', each {bounds}' if bounds else '')
        bounds = self.bounds_text()
        return text + (f' {bounds}' if bounds else '')

    def _fail(self, value, why: str = ''):
        raise SettingError(self.name, f'{why or "must be " + self.rule}, got {shown(value)}')

    # ------------------------------------------------------------------------------------------- check
    def check(self, value):
        """The value as the node uses it (bool, int, float, str, or a tuple for a list kind), or SettingError
        naming the parameter and its rule. Integral floats pass as integers and integers as floats (YAML and
        ``ros2 param set`` write 20 and 20.0 alike); nothing else is converted."""
        kind = self.kind
        if kind == BOOL:
            if not isinstance(value, bool):
                self._fail(value)
            return value
        if kind in (STR, NAME):
            if not isinstance(value, str):
                self._fail(value)
            if kind == NAME and name_problem(value):
                self._fail(value, name_problem(value))
            if self.choices and value not in self.choices:
                self._fail(value)
            return value
        if kind == TEXTS:
            items = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else None
            if items is None or not all(isinstance(v, str) for v in items):
                self._fail(value)
            return items
        if kind in (INT, FLOAT):
            number = _number(value, kind == INT)
            if number is None or not self._in_bounds(number):
                self._fail(value)
            return number
        return self._check_list(value)

    def _check_list(self, value) -> tuple:
        if isinstance(value, str) or (isinstance(value, (bytes, bytearray)) and value):
            self._fail(value)
        try:
            items = tuple(value) if value is not None else ()
        except TypeError:
            self._fail(value)
        if self.kind == STRINGS:
            if not items or not all(isinstance(v, str) for v in items):
                self._fail(value)
            for name in items:
                problem = name_problem(name)
                if problem:
                    self._fail(value, problem)
            if len(set(items)) != len(items):
                self._fail(value, 'names must be unique')
        else:
            numbers = tuple(_number(v, self.kind == INTS) for v in items)
            if any(n is None or not self._in_bounds(n) for n in numbers):
                self._fail(value)
            items = numbers
        if (self.lengths and len(items) not in self.lengths) or len(items) % self.length_multiple:
            self._fail(value)
        return items

    def _in_bounds(self, number: float) -> bool:
        if self.low is not None and (number <= self.low if self.low_open else number < self.low):
            return False
        return self.high is None or number <= self.high

    def ros_default(self):
        """The default as rclpy declares it (lists as lists; floats stay floats)."""
        return list(self.default) if isinstance(self.default, tuple) else self.default


class ParamSet:
    """A node's parameters by name, in declaration order."""

    def __init__(self, *params: Param) -> None:
        self._params: dict[str, Param] = {}
        for p in params:
            if p.name in self._params:
                raise ValueError(f'parameter {p.name} declared twice')
            self._params[p.name] = p

    def __iter__(self) -> Iterator[Param]:
        return iter(self._params.values())

    def __contains__(self, name: object) -> bool:
        return name in self._params

    def __getitem__(self, name: str) -> Param:
        return self._params[name]

    def get(self, name: str) -> Param | None:
        return self._params.get(name)

    def names(self) -> list[str]:
        return list(self._params)

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self}

    def runtime(self) -> list[str]:
        return [p.name for p in self if p.runtime]

    def check_all(self, values: Mapping[str, object]) -> dict[str, object]:
        """Every parameter's checked value (its default where ``values`` has none); SettingError for the first
        bad one or for a name that is not a parameter of this set."""
        unknown = sorted(set(values) - set(self._params))
        if unknown:
            raise SettingError(unknown[0], 'is not a parameter of this node (known: ' +
                               ', '.join(self._params) + ')')
        return {p.name: p.check(values.get(p.name, p.default)) for p in self}

    def merge(self, current: Mapping[str, object], changes: Mapping[str, object]) -> dict[str, object]:
        """``current`` with ``changes`` checked and applied; SettingError naming a change that is refused
        (a read-only parameter or a bad value). The node's settings function then checks the whole."""
        merged = dict(current)
        for name, value in changes.items():
            p = self._params.get(name)
            if p is None:
                raise SettingError(name, 'is not a parameter of this node')
            if not p.runtime:
                raise SettingError(name, 'is read-only (fixed at start-up: restart the node to change it)')
            merged[name] = p.check(value)
        return merged
