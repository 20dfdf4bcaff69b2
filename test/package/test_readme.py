"""The README stays a page a newcomer reads to the end, and its example of the core runs as printed."""
from __future__ import annotations

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
