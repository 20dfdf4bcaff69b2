"""The node / topic / service / parameter table of docs/interfaces.md is what the running nodes really offer.

The simulated bringup (mat_sim, two cube drivers, the navigator) runs in child processes; the live graph is read
with rclpy's graph API (what `ros2 node info` shows) and each node's parameters with its list_parameters service
(what `ros2 param list` shows). Both directions are checked: every documented row exists, every live item has a row.

The table is the one after the marker line ``<!-- graph-table -->`` in docs/interfaces.md, with the columns
``| node | interface | name | type |``; ``<cube>`` stands for every cube, a ``*`` in a name matches anything
(e.g. ``avoid.*`` for the HLAvoid parameters). `python test/system/test_interface_table.py` prints the table of the live
graph in that format.
"""
from __future__ import annotations

import fnmatch
import re
import sys
import time
from pathlib import Path

import pytest

from toio_navigator.launching import profiles
from toio_navigator.launching.supervisor import Children

REPO = Path(__file__).resolve().parents[2]
MARKER = '<!-- graph-table -->'
TABLE = REPO / 'docs' / 'interfaces.md'
CUBES = ['cube1', 'cube2']
NODES = [('mat_sim', '/'), ('cube_driver', '/cube1'), ('cube_driver', '/cube2'), ('navigator', '/')]
#: every node has these; the table does not list them
HIDDEN_TOPICS = {'/rosout', '/parameter_events'}
HIDDEN_SERVICE_SUFFIXES = ('/describe_parameters', '/get_parameter_types', '/get_parameters', '/list_parameters',
                           '/set_parameters', '/set_parameters_atomically', '/get_type_description')
HIDDEN_PARAMETERS = {'use_sim_time', 'start_type_description_service'}


def table_rows(text: str) -> set[tuple[str, str, str, str]] | None:
    """(node, interface, name, type) rows of the marked table, or None if the text has no marked table."""
    if MARKER not in text:
        return None
    rows = set()
    started = False
    for line in text.split(MARKER, 1)[1].splitlines():
        line = line.strip()
        if not line.startswith('|'):
            if started:
                break
            continue
        cells = [c.strip().strip('`') for c in line.strip('|').split('|')]
        if len(cells) != 4 or cells[0] in ('node', '') or set(cells[0]) <= set('-: '):
            started = True
            continue
        started = True
        rows.add(tuple(cells))
    return rows


def generalise(node_ns: str, name: str) -> tuple[str, str]:
    """('/cube1', '/cube1/state') -> ('/<cube>/cube_driver' style node prefix, '<cube>/state')."""
    for cube in CUBES:
        name = re.sub(rf'^/{cube}/', '<cube>/', name)
    return node_ns, name.lstrip('/')


def live_rows(node, executor, children_ok) -> set[tuple[str, str, str, str]]:
    from rcl_interfaces.srv import ListParameters  # noqa: PLC0415 optional: see start_graph

    rows = set()
    for name, ns in NODES:
        label = '/<cube>/cube_driver' if ns != '/' else name
        for kind, getter in (('publishes', node.get_publisher_names_and_types_by_node),
                             ('subscribes', node.get_subscriber_names_and_types_by_node),
                             ('service', node.get_service_names_and_types_by_node)):
            for topic, types in getter(name, ns):
                if topic in HIDDEN_TOPICS or (kind == 'service' and topic.endswith(HIDDEN_SERVICE_SUFFIXES)):
                    continue
                rows.add((label, kind, generalise(ns, topic)[1], types[0]))
        full = f'{ns.rstrip("/")}/{name}'
        client = node.create_client(ListParameters, f'{full}/list_parameters')
        assert client.wait_for_service(timeout_sec=20.0), f'{full} offers no list_parameters'
        future = client.call_async(ListParameters.Request())
        deadline = time.monotonic() + 20
        while not future.done():
            assert time.monotonic() < deadline and children_ok(), f'no parameter list from {full}'
            executor.spin_once(timeout_sec=0.05)
        for p in future.result().result.names:
            if p not in HIDDEN_PARAMETERS:
                rows.add((label, 'parameter', p, ''))
    return rows


def matches(row, other) -> bool:
    return row[0] == other[0] and row[1] == other[1] and fnmatch.fnmatchcase(other[2], row[2]) and \
        (row[1] == 'parameter' or row[3] == other[3])


def start_graph(env: dict, tmp_path: Path):
    """The bringup with two cubes, and a probe node that has seen every node:
    (children, node, context, executor)."""
    # optional: ROS is needed by this test only, the table parser's test runs without it
    import rclpy  # noqa: PLC0415 optional, see above
    from rclpy.executors import SingleThreadedExecutor  # noqa: PLC0415 optional, see above
    from rclpy.node import Node  # noqa: PLC0415 optional, see above

    cfg = tmp_path / 'two.yaml'
    cfg.write_text('/**:\n  ros__parameters:\n    cubes: [cube1, cube2]\n'
                   '/**/cube_driver:\n  ros__parameters:\n    transport: sim\n'
                   'mat_sim:\n  ros__parameters:\n    initial_poses: [100.0, 100.0, 0.0, 300.0, 300.0, 0.0]\n')
    files = [profiles.config_dir() / 'navigator.yaml', cfg]
    children = Children()
    children.start(profiles.plan('sim', CUBES), files, env=env, log_dir=tmp_path / 'logs')
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('readme_table_probe', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + 40
    want = {(n, ns) for n, ns in NODES}
    while not want <= set(node.get_node_names_and_namespaces()) or \
            not node.get_publisher_names_and_types_by_node('navigator', '/'):
        assert time.monotonic() < deadline, f'nodes not all up; logs in {tmp_path / "logs"}'
        assert not children.check(), f'a node died: logs in {tmp_path / "logs"}'
        executor.spin_once(timeout_sec=0.1)
    # let every node finish creating its interfaces (drivers add some once connected)
    settle = time.monotonic() + 3.0
    while time.monotonic() < settle:
        executor.spin_once(timeout_sec=0.1)
    return children, node, context, executor


def format_table(rows) -> str:
    order = {'publishes': 0, 'subscribes': 1, 'service': 2, 'parameter': 3}
    lines = [MARKER, '| node | interface | name | type |', '|---|---|---|---|']
    for r in sorted(rows, key=lambda r: (r[0], order[r[1]], r[2])):
        lines.append(f'| {r[0]} | {r[1]} | `{r[2]}` | {r[3]} |')
    return '\n'.join(lines)


def test_the_documented_table_matches_the_live_graph(child_env, ros_domain, monkeypatch, tmp_path):
    rclpy = pytest.importorskip('rclpy')
    pytest.importorskip('toio_navigator.msg')
    documented = table_rows(TABLE.read_text())
    assert documented, f'{TABLE} has no {MARKER} table (the table to paste: python {Path(__file__).relative_to(REPO)})'
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain))
    children, node, context, executor = start_graph(child_env, tmp_path)
    try:
        live = live_rows(node, executor, lambda: not children.check())
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        children.stop()
    missing_in_graph = sorted(r for r in documented if not any(matches(r, x) for x in live))
    undocumented = sorted(x for x in live if not any(matches(r, x) for r in documented))
    assert not missing_in_graph, f'{TABLE.name} rows the running nodes do not have: {missing_in_graph}'
    assert not undocumented, f'live interfaces missing from the table of {TABLE.name}: {undocumented}'


def test_table_parser_reads_rows_and_globs():
    text = f'intro\n{MARKER}\n| node | interface | name | type |\n|---|---|---|---|\n' \
           '| navigator | subscribes | `<cube>/state` | toio_navigator/msg/CubeState |\n' \
           '| navigator | parameter | `avoid.*` |  |\n\nafter\n| x | y | z | w |\n'
    rows = table_rows(text)
    assert rows == {('navigator', 'subscribes', '<cube>/state', 'toio_navigator/msg/CubeState'),
                    ('navigator', 'parameter', 'avoid.*', '')}
    assert matches(('navigator', 'parameter', 'avoid.*', ''), ('navigator', 'parameter', 'avoid.margin', ''))
    assert not matches(('navigator', 'parameter', 'avoid.*', ''), ('navigator', 'parameter', 'boids.fov', ''))
    assert table_rows('no table here') is None


if __name__ == '__main__':
    # print the table of the live graph, to paste into docs/interfaces.md
    import os
    import tempfile

    import rclpy

    sys.path.insert(0, str(REPO / 'test'))
    from conftest import next_domain_id, ros_env

    domain = next_domain_id()
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    with tempfile.TemporaryDirectory() as tmp:
        children, node, context, executor = start_graph(ros_env(domain), Path(tmp))
        try:
            rows = live_rows(node, executor, lambda: not children.check())
        finally:
            node.destroy_node()
            rclpy.try_shutdown(context=context)
            children.stop()
    print(format_table(rows))
