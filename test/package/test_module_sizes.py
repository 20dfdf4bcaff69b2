"""Modules and functions stay small enough to read: no module of the package or of tools/ over 600 lines, no
function over 80 (tests excepted). Counted from the source with ast: a function's lines run from its ``def`` to
its last line, docstring and nested functions included."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ('toio_navigator', 'tools')
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: what is over a limit today, each with who shortens it; the test fails for anything else, and for an entry here
#: that is no longer over (delete it then)
KNOWN_LONG: dict[str, str] = {}


def functions(tree: ast.AST, prefix: str = '') -> list[tuple[str, int]]:
    """(qualified name, lines) of every function in ``tree``, methods as Class.name, nested ones as f.g."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + node.name, node.end_lineno - node.lineno + 1))
            out += functions(node, f'{prefix}{node.name}.')
        elif isinstance(node, ast.ClassDef):
            out += functions(node, f'{prefix}{node.name}.')
        else:
            out += functions(node, prefix)
    return out


def oversized(repo: Path = REPO, roots=ROOTS) -> dict[str, int]:
    """{'path' or 'path::function': lines} of every module and function over its limit."""
    found = {}
    for root in roots:
        for path in sorted((repo / root).rglob('*.py')):
            name = path.relative_to(repo).as_posix()
            source = path.read_text()
            lines = len(source.splitlines())
            if lines > MAX_MODULE_LINES:
                found[name] = lines
            for function, length in functions(ast.parse(source, name)):
                if length > MAX_FUNCTION_LINES:
                    found[f'{name}::{function}'] = length
    return found


def test_no_module_or_function_is_over_its_limit():
    found = oversized()
    new = {k: v for k, v in found.items() if k not in KNOWN_LONG}
    assert not new, (f'over {MAX_MODULE_LINES} lines (a module) or {MAX_FUNCTION_LINES} (a function); split by '
                     'concept:\n' + '\n'.join(f'{k}: {v} lines' for k, v in sorted(new.items())))
    gone = sorted(set(KNOWN_LONG) - set(found))
    assert not gone, f'KNOWN_LONG lists what is within the limits now; delete it: {gone}'


def test_the_size_check_counts_methods_and_modules(tmp_path):
    body = ''.join(f'        x{i} = {i}\n' for i in range(MAX_FUNCTION_LINES))
    (tmp_path / 'pkg').mkdir()
    (tmp_path / 'pkg' / 'big.py').write_text('class A:\n    def long(self):\n' + body + '\n' * MAX_MODULE_LINES)
    (tmp_path / 'pkg' / 'small.py').write_text('def short():\n    return 1\n')
    assert oversized(tmp_path, ('pkg',)) == {'pkg/big.py': MAX_MODULE_LINES + MAX_FUNCTION_LINES + 2,
                                             'pkg/big.py::A.long': MAX_FUNCTION_LINES + 1}
