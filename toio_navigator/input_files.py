"""Reading the project's input files (layouts, conformance scenarios, bench scenarios, bag metadata, parameter
files) and checking output paths, with errors that name the file, the field and the rule.

What every format shares lives here: the file is read as UTF-8 within a size limit, JSON and YAML are decoded
without tracebacks for deep nesting or numbers a float cannot hold, YAML reads ``1e-2`` as a number (PyYAML
follows YAML 1.1, which wants a dot: ``1.0e-2``), and the value checks every reader uses (finite numbers within a
range, integers, known keys). Each reader keeps its own rules on top (footprints, wall endpoints, pairs).
Plain Python, no ROS.
"""
from __future__ import annotations

import difflib
import json
import math
import os
import re
import sys
from pathlib import Path

import yaml

#: input files are small hand-written documents; a bigger one is a mistake (or a bag given as a layout)
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: the deepest nesting any of our formats needs is 5 (scenario.params.avoid.x); 32 leaves room and stays far
#: below Python's recursion limit, so deep input is refused with a message instead of a RecursionError
MAX_DEPTH = 32
#: JSON integers longer than this cannot be a finite float (the largest float has 309 digits)
_MAX_INT_DIGITS = 308


class InputError(ValueError):
    """An input file or value that cannot be used; the message names the file, the field and the rule."""


class UnreadableFile(InputError):
    """The file cannot be read at all (missing, a directory, no permission, too big)."""


class TooLarge(float):
    """A number in a file that no float can hold (``1e400``, a 400-digit integer): an infinite float that
    remembers how it was written, so the checks can say "too large" instead of "not finite"."""

    text: str

    def __new__(cls, text: str) -> 'TooLarge':
        value = super().__new__(cls, '-inf' if text.lstrip().startswith('-') else 'inf')
        value.text = text
        return value

    def __repr__(self) -> str:
        return self.text


# ------------------------------------------------------------------------------------------------ reading files

def read_text(path: str | Path, what: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of ``path`` (``what`` names the kind of file in messages)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise UnreadableFile(f'cannot read {what} {path}: it is a directory, not a file')
        size = path.stat().st_size
        if size > max_bytes:
            raise UnreadableFile(f'cannot read {what} {path}: it is {size} bytes, a {what} is at most {max_bytes}')
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableFile(f'cannot read {what} {path}: {exc.strerror or exc}') from None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise InputError(f'{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})') \
            from None


def _depth(value) -> int:
    """Nesting depth of decoded JSON/YAML (containers only), without recursion; shared containers (YAML
    aliases) are walked once."""
    deepest, seen, stack = 0, set(), [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _check_depth(value, source: str) -> None:
    depth = _depth(value)
    if depth > MAX_DEPTH:
        raise InputError(f'{source}: nested {depth} levels deep; at most {MAX_DEPTH} levels are allowed')


def _json_float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else TooLarge(text)


def _json_int(text: str):
    digits = len(text.lstrip('-'))
    return int(text) if digits <= _MAX_INT_DIGITS else TooLarge(text)


def load_json(text: str, source: str):
    """Decode JSON text; InputError (naming ``source``, the line and column) for anything that is not JSON or is
    nested deeper than MAX_DEPTH. Numbers too large for a float come back as :class:`TooLarge`."""
    try:
        value = json.loads(text, parse_float=_json_float, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise InputError(f'{source} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})') \
            from None
    except RecursionError:
        raise InputError(f'{source}: nested too deeply to read; at most {MAX_DEPTH} levels are allowed') from None
    _check_depth(value, source)
    return value


class _SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a number with an exponent and no dot (``1e-2``, ``5E3``) is a float as in
    YAML 1.2 and JSON, instead of the string YAML 1.1 makes of it."""


_SafeLoader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'))


def load_yaml(text: str, source: str):
    """Decode YAML text (safe types only); InputError naming ``source`` and the line for anything unreadable or
    nested deeper than MAX_DEPTH. ``1e-2`` is a float (see :class:`_SafeLoader`)."""
    try:
        value = yaml.load(text, Loader=_SafeLoader)     # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f' (line {mark.line + 1}, column {mark.column + 1})' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise InputError(f'{source}: invalid YAML: {problem}{where}') from None
    except RecursionError:
        raise InputError(f'{source}: nested too deeply to read; at most {MAX_DEPTH} levels are allowed') from None
    _check_depth(value, source)
    return value


# ------------------------------------------------------------------------------------------------ value checks

def show(value, limit: int = 40) -> str:
    """A short printable form of a value from a file, for messages."""
    text = repr(value) if isinstance(value, (TooLarge, str)) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def number(value, where: str, lo: float | None = None, hi: float | None = None, *,
           lo_open: bool = False) -> float:
    """A finite number (not a bool) within [lo, hi] (``lo_open``: > lo); InputError "<where> must be ..."."""
    if isinstance(value, TooLarge) or isinstance(value, int) and not isinstance(value, bool) \
            and abs(value) > sys.float_info.max:
        raise InputError(f'{where} is {show(value)}: too large for a 64-bit float')
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f'{where} must be a finite number, got {show(value)}')
    value = float(value)
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise InputError(f'{where} must be {">" if lo_open else ">="} {lo:g}, got {value:g}')
    if hi is not None and value > hi:
        raise InputError(f'{where} must be <= {hi:g}, got {value:g}')
    return value


def integer(value, where: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not a bool; 3.0 is not accepted) within [lo, hi]; InputError "<where> must be ..."."""
    if isinstance(value, bool) or not isinstance(value, int) or isinstance(value, TooLarge):
        raise InputError(f'{where} must be an integer, got {show(value)}')
    if lo is not None and value < lo or hi is not None and value > hi:
        bounds = f'{lo}..{hi}' if lo is not None and hi is not None else (f'>= {lo}' if lo is not None
                                                                          else f'<= {hi}')
        raise InputError(f'{where} must be an integer {bounds}, got {show(value)}')
    return value


def known_keys(mapping: dict, allowed, where: str) -> None:
    """Refuse a key that is not in ``allowed``, suggesting the closest known one (a misspelling must never be
    silently ignored)."""
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
            hint = f' (did you mean {close[0]!r}?)' if close else ''
            raise InputError(f'{where}: unknown key {key!r}{hint}; known keys: {", ".join(sorted(allowed))}')


# ------------------------------------------------------------------------------------------------ output paths

def check_output_file(path: str | Path, what: str = 'output') -> Path:
    """``path`` can be created or replaced as a file: not a directory, its folder exists (or can be made) and is
    writable. InputError naming the path otherwise. (The write itself can still fail: callers catch OSError.)"""
    path = Path(path)
    if path.is_dir():
        raise InputError(f'{what} {path} is a directory; name a file in it')
    parent = path.parent
    existing = parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f'{what} {path}: {existing} is not a directory')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f'{what} {path}: no permission to write in {existing}')
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f'{what} {path}: no permission to replace it')
    return path
