"""The package's three descriptions (package.xml, setup.py, CMakeLists.txt) and the toio-nav command agree."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import toio_navigator
from conftest import REPO
from toio_navigator.cli import COMMANDS


def _cmake() -> str:
    return (REPO / 'CMakeLists.txt').read_text()


def _setup_py() -> str:
    return (REPO / 'setup.py').read_text()


def test_names_and_versions_agree():
    xml = ET.parse(REPO / 'package.xml').getroot()
    assert xml.get('format') == '3'
    assert xml.findtext('name') == 'toio_navigator'
    assert re.search(r'project\(toio_navigator\)', _cmake())
    version = xml.findtext('version')
    assert re.search(rf"version='{re.escape(version)}'", _setup_py())
    assert toio_navigator.__version__ == version
    assert xml.find('export/build_type').text == 'ament_cmake'
    # rule from the toolchain notes: the pip distribution must not be named like the ROS package
    assert "name='toio-nav'" in _setup_py()


def test_every_node_executable_has_a_shim_and_nothing_else_does():
    nodes = re.search(r'set\(TOIO_NODES ([^)]*)\)', _cmake()).group(1).split()
    shims = {p.name for p in (REPO / 'scripts').iterdir()} - {'toio-nav'}
    assert set(nodes) == shims
    for node in nodes:
        text = (REPO / 'scripts' / node).read_text()
        assert f'from toio_navigator.nodes.{node} import main' in text
        assert (REPO / 'scripts' / node).stat().st_mode & 0o111


def test_every_message_is_declared_and_documented():
    msgs = sorted((REPO / 'msg').glob('*.msg'))
    assert {m.stem for m in msgs} >= {'CubeState', 'MotorCommand', 'NavGoal', 'NavResult', 'IrRanges',
                                      'ArenaState'}
    for m in msgs:
        for line in m.read_text().splitlines():
            field = line.split('#')[0].strip()
            if field:   # every field and constant carries a comment (units, meaning)
                assert '#' in line, f'{m.name}: undocumented field {field!r}'
    xml = (REPO / 'package.xml').read_text()
    assert '<member_of_group>rosidl_interface_packages</member_of_group>' in xml


def test_toio_nav_help_lists_every_subcommand():
    exe = shutil.which('toio-nav')
    cmd = [exe] if exe else [sys.executable, '-m', 'toio_navigator.cli']
    out = subprocess.run(cmd + ['--help'], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for name in COMMANDS:
        assert name in out.stdout
    bad = subprocess.run(cmd + ['no-such-command'], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and 'invalid choice' in bad.stderr


def test_core_packages_do_not_import_ros():
    """A pure core: nothing outside nodes/ and bags/ imports rclpy or generated messages."""
    offenders = []
    for path in (REPO / 'toio_navigator').rglob('*.py'):
        rel = path.relative_to(REPO / 'toio_navigator')
        if rel.parts[0] in ('nodes', 'bags') or rel.name in ('demo_cli.py',):
            continue
        text = path.read_text()
        if re.search(r'^\s*(import rclpy|from rclpy|from toio_navigator\.msg|import .*_msgs)', text, re.M):
            offenders.append(str(rel))
    assert offenders == []
