"""The README stays a page a newcomer reads to the end, and its example of the core runs as printed."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / 'README.md').read_text(encoding='utf-8')


def test_the_readme_is_at_most_250_lines():
    assert README.count('\n') <= 250


def test_the_python_example_runs_without_ros():
    blocks = re.findall(r'```python\n(.*?)```', README, flags=re.S)
    assert blocks, 'the README has no python example'
    for code in blocks:
        assert 'rclpy' not in code
        proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip()


def test_the_picture_is_in_the_repository():
    for image in re.findall(r'!\[[^\]]*\]\(([^)]+)\)', README):
        assert (REPO / image).is_file(), image


#: lab-section commands no test can type, each with why (everything else must be a command a test runs)
NOT_TYPED_BY_TESTS = {
    'source /opt/ros/jazzy/setup.bash': 'a ROS install (the tests use the venv of make install)',
    'python3 -m venv --system-site-packages ~/toio-venv': 'the lab venv beside a ROS install',
    'source ~/toio-venv/bin/activate': 'the lab venv beside a ROS install',
    'mkdir -p ~/ws/src': 'shell navigation (the test makes its workspace in a temporary folder)',
    'cd ~/ws/src': 'shell navigation',
    'cd ~/ws': 'shell navigation',
    'git clone <this repo> toio_navigator': 'the test links the checkout into src/',
    'pip install -r toio_navigator/tools/ros/requirements-lab.txt': 'needs the network; make install pins the same',
}


def lab_commands() -> list[str]:
    """The commands of the README's lab block, one per `&&` part, comments removed."""
    section = README.split('## On a lab machine', 1)[1]
    block = re.search(r'```bash\n(.*?)```', section, flags=re.S).group(1)
    lines = [re.sub(r'\s+#.*$', '', line).strip() for line in block.splitlines()]
    return [part.strip() for line in lines if line for part in line.split('&&')]


def strings_in_tests() -> set[str]:
    """Every string constant of the system tests and their rigs that code uses (adjacent literals are one
    constant; docstrings and comments do not count)."""
    found = set()
    for path in [*(REPO / 'test/system').glob('*.py'), *(REPO / 'test/support').glob('*.py')]:
        tree = ast.parse(path.read_text(encoding='utf-8'))
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found.add(node.value)
    return found


def test_every_lab_command_of_the_readme_is_typed_by_a_test():
    commands = lab_commands()
    assert len(commands) >= 10 and any(c.startswith('ros2 launch') for c in commands), commands
    typed = strings_in_tests()
    untested = [c for c in commands if c not in NOT_TYPED_BY_TESTS and not any(c in s for s in typed)]
    assert not untested, f'README lab commands that no test in test/system runs: {untested}'
    stale = [c for c in NOT_TYPED_BY_TESTS if c not in commands]
    assert not stale, f'NOT_TYPED_BY_TESTS names commands the README no longer has: {stale}'
