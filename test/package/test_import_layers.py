"""Imports flow one way: down the layers, and never in a circle.

The package is a stack of layers (:data:`LAYERS`, lowest first): a module imports only modules of its own layer or
of lower ones, and no module imports, directly or through others, a module that imports it. The graph is read from
the source with ast (every import counts: top-level, inside functions, and under TYPE_CHECKING), so a wrong
import is found without importing anything."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / 'toio_navigator'

#: the layers, lowest first: (name, the top-level modules and folders of toio_navigator in it); '' is the package's
#: own __init__
LAYERS = (
    ('foundation', ('', 'units', 'input_files', 'lifecycle')),
    ('cube', ('cube',)),
    ('reference', ('reference',)),
    ('planners', ('planners',)),
    ('control', ('control',)),
    ('arena', ('arena',)),
    ('sim', ('sim',)),
    ('settings', ('settings',)),
    ('launching', ('launching',)),
    ('bags', ('bags',)),
    ('bench', ('bench',)),
    ('web', ('web',)),
    ('nodes', ('nodes',)),
    ('commands', ('cli', 'demo_cli', 'ble_check_cli')),
)
#: imports that run upward today, each with who removes it; the test fails for any other, and for an entry here
#: that is no longer needed (delete it then)
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package modules it imports (``from a import b`` counts as a.b when b is a module)."""
    modules = {module_name(p, package): p for p in package.rglob('*.py')}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == '__init__.py'
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ''
                if node.level:
                    anchor = name.split('.') if is_package else name.split('.')[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = '.'.join(anchor + ([base] if base else []))
                for a in node.names:
                    targets.add(f'{base}.{a.name}' if f'{base}.{a.name}' in modules else base)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules (Tarjan), each as a closed path."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(_closed_path(graph, sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _closed_path(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A path start -> ... -> start inside ``group`` (breadth first, so it is a shortest one)."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return group


def layer_of(module: str, layers=LAYERS) -> int | None:
    """Index in ``layers`` of a module's layer (by its first name below toio_navigator); None if in none."""
    top = module.split('.')[1] if '.' in module else ''
    return next((k for k, (_, members) in enumerate(layers) if top in members), None)


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[tuple[str, str]]:
    """(importer, imported) for every import of a module of a higher layer, sorted."""
    return sorted((m, t) for m, targets in graph.items() for t in targets
                  if layer_of(t, layers) is not None and layer_of(m, layers) is not None
                  and layer_of(t, layers) > layer_of(m, layers))


def test_every_module_belongs_to_a_layer():
    loose = sorted(m for m in import_graph() if layer_of(m) is None)
    assert not loose, f'modules in no layer (add their folder to LAYERS, at its place in the stack): {loose}'


def test_imports_run_down_the_layers():
    upward = upward_imports(import_graph())
    names = [name for name, _ in LAYERS]
    new = [f'{m} ({names[layer_of(m)]}) imports {t} ({names[layer_of(t)]})' for m, t in upward
           if (m, t) not in KNOWN_UPWARD]
    assert not new, 'imports that run upward:\n' + '\n'.join(new)
    gone = sorted(set(KNOWN_UPWARD) - set(upward))
    assert not gone, f'KNOWN_UPWARD lists imports that are gone; delete them: {gone}'


def test_the_layer_check_finds_an_upward_import(tmp_path):
    pkg = tmp_path / 'toio_navigator'
    for folder in ('low', 'high'):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / '__init__.py').write_text('')
    (pkg / '__init__.py').write_text('')
    (pkg / 'low' / 'a.py').write_text('def f():\n    from toio_navigator.high.b import g\n')
    (pkg / 'high' / 'b.py').write_text('from toio_navigator.low.a import f\n')
    layers = (('foundation', ('',)), ('low', ('low',)), ('high', ('high',)))
    assert upward_imports(import_graph(pkg), layers) == [('toio_navigator.low.a', 'toio_navigator.high.b')]


def test_the_package_has_no_import_circle():
    found = cycles(import_graph())
    assert not found, 'import circles:\n' + '\n'.join(' -> '.join(c) for c in found)


def test_the_checker_finds_a_circle_and_resolves_relative_imports(tmp_path):
    pkg = tmp_path / 'toio_navigator'
    (pkg / 'sub').mkdir(parents=True)
    (pkg / '__init__.py').write_text('')
    (pkg / 'sub' / '__init__.py').write_text('')
    (pkg / 'sub' / 'a.py').write_text('from . import b\n')
    (pkg / 'sub' / 'b.py').write_text('def f():\n    from toio_navigator.sub.c import x\n')
    (pkg / 'sub' / 'c.py').write_text('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
                                      '    from .a import A\n')
    (pkg / 'd.py').write_text('import toio_navigator.sub.a\n')
    graph = import_graph(pkg)
    assert graph['toio_navigator.d'] == {'toio_navigator.sub.a'}
    assert cycles(graph) == [['toio_navigator.sub.a', 'toio_navigator.sub.b', 'toio_navigator.sub.c',
                              'toio_navigator.sub.a']]


def test_the_cube_and_the_simulator_import_neither_settings_nor_nodes():
    """cube/ (the link, the codec, the transports) and sim/ (the simulator, the virtual BlueZ) are the core: the
    settings and the nodes pass values down to them, never the other way round (directly or through others)."""
    graph = import_graph()

    def reached(module: str) -> set[str]:
        seen, todo = set(), [module]
        while todo:
            for target in graph[todo.pop()] - seen:
                seen.add(target)
                todo.append(target)
        return seen
    upward = {m: sorted(t for t in reached(m) if t.startswith(('toio_navigator.settings', 'toio_navigator.nodes')))
              for m in graph if m.startswith(('toio_navigator.cube', 'toio_navigator.sim'))}
    assert not {m: t for m, t in upward.items() if t}, upward
