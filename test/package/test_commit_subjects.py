"""Commit subjects stay short (CONTRIBUTING.md, Commits): at most 72 characters, for every commit made from
``SINCE`` on (older history is as it is). Skipped outside a git checkout, e.g. in a source tarball."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import REPO

#: the subject rule is checked for commits made from this instant on (committer date, UTC)
SINCE = '2026-12-01T00:00:00Z'
MAX_SUBJECT = 72


def subjects_since(since: str) -> list[str]:
    """The subjects of the commits reachable from HEAD whose committer date is at or after ``since``."""
    out = subprocess.run(['git', '-C', str(REPO), 'log', f'--since={since}', '--format=%s'],
                         capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def git_checkout() -> bool:
    if shutil.which('git') is None:
        return False
    probe = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--is-inside-work-tree'],
                           capture_output=True, text=True)
    return probe.returncode == 0 and probe.stdout.strip() == 'true'


@pytest.mark.skipif(not git_checkout(), reason='not a git checkout: no history to check')
def test_commit_subjects_are_at_most_72_characters():
    long = [s for s in subjects_since(SINCE) if len(s) > MAX_SUBJECT]
    assert not long, 'shorten these subjects (git commit --amend, or rebase with reword):\n' + '\n'.join(long)


@pytest.mark.skipif(not git_checkout(), reason='not a git checkout: no history to check')
def test_the_check_sees_commits_of_the_current_history():
    assert subjects_since('1970-01-01T00:00:00Z'), 'git log found no commit: the check above would pass blindly'
