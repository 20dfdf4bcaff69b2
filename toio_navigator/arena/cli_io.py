"""Small helpers shared by the arena subcommands: loading a layout and writing a result, with clear errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from toio_navigator.arena.layout import ArenaLayout, LayoutError, load_layout


class CliError(Exception):
    """A problem to report on stderr with a non-zero exit code."""


def fail(command: str, message: str, code: int = 2) -> int:
    print(f'toio-nav {command}: error: {message}', file=sys.stderr)
    return code


def read_layout(path: str, require_free_goal: bool = True) -> ArenaLayout:
    try:
        return load_layout(path, require_free_goal)
    except LayoutError as exc:
        raise CliError(f'{path}: {exc}') from None


def write_json(path: str, data: dict) -> None:
    try:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=1) + '\n', encoding='utf-8')
    except OSError as exc:
        raise CliError(f'cannot write {path}: {exc.strerror or exc}') from None
