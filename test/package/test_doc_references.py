"""Every document the repository cites is in the repository, and every cited section of it exists.

Scans every tracked text file (``git ls-files``; the working tree when git is not available) for:

* citations of documents that a clone of the repository does not have: the spec folder the project was
  written from and its fact sheets, benchmark and arena format files, and paths of the machine it was written on;
* paths of Markdown files (``docs/metrics.md``, ``test/data/conformance/FORMAT.md``, ...) that do not exist,
  relative to the repository root, to the citing file or (a bare name) in docs/;
* numbered sections (``docs/navigator.md §4.4``, ``§2-§7``), appendices (``Appendix A``) and anchors
  (``docs/arena.md#2-mdf-strings``) that the cited page does not have. A bare ``§`` refers to the first page with
  numbered sections that the file cites (a page itself for its own bare ``§``), as docs/README.md describes.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()

#: (pattern, why it is wrong) for citations of documents that are not part of the repository
FORBIDDEN = [
    (re.compile(r'METRICS\.md'), 'the benchmark metrics live in docs/metrics.md'),
    (re.compile(r'fact[ -]?sheets?', re.IGNORECASE), 'cite the page of docs/ that explains it'),
    (re.compile(r'(?<![\w.-])shared/'), 'a path of the spec folder, which is not in the repository'),
    (re.compile(r'\b(?:navigator_reference|toio_ble_protocol|ros_toolchain|bluez_dbus_for_bleak|netns_lab|'
                r'arena_explorer|ARCHITECTURE)\.md'), 'a spec document that is not in the repository'),
    (re.compile(r'(?<![\w.-])seeds?/|\bseed 0\d\d\b'), 'a seed document that is not in the repository'),
    (re.compile(r'(?<![\w.-])/work/'), 'a path of the machine the repository was written on'),
    (re.compile(r'\breference (?:section \d|§)'), 'a section of a reference document; cite the page of docs/'),
]

#: files of another task (the planner results table and its generator) that still cite the old documents when this
#: test was written; they are expected to fail until regenerated, and must then leave this set (strict xfail: an
#: unexpected pass fails too, so the set cannot go stale)
PENDING: set[str] = set()

_URL = re.compile(r'\bhttps?://\S+')
_MD_PATH = re.compile(r'(?<![\w./-])((?:\.{1,2}/)*(?:[\w-]+/)*[\w.-]*\w\.md)(?!\w)(?:#([\w-]+))?')
_SECTION = re.compile(r'§\s?(\d+(?:\.\d+)*)|\bAppendix ([A-Z])\b')
_HEADING = re.compile(r'^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$', re.MULTILINE)
_NUMBERED = re.compile(r'(\d+(?:\.\d+)*)\.?\s')
_APPENDIX = re.compile(r'Appendix ([A-Z])\b')
#: what may stand between a page and its section, or between the sections of one list or range
_SEPARATOR = re.compile(r'[\s,;:()\-–—/]*(?:(?:and|or|to|step \d+)[\s,;:()\-–—/]*)*')

_SKIP_DIRS = {'.git', '.venv', 'build', 'install', 'log', 'out', '__pycache__', '.pytest_cache', '.hypothesis'}


def tracked_files() -> list[Path]:
    """Tracked files of the repository (every file outside build and cache folders if git cannot say)."""
    try:
        out = subprocess.run(['git', 'ls-files', '-z'], cwd=REPO, capture_output=True, check=True, timeout=60)
        names = [n for n in out.stdout.decode('utf-8', 'surrogateescape').split('\0') if n]
        if names:
            return [REPO / n for n in names if (REPO / n).is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    return [p for p in REPO.rglob('*')
            if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(REPO).parts[:-1])
            and not p.name.endswith('.egg-info')]


def read_text(path: Path) -> str | None:
    """The file as text, or None for binary files (bags, images)."""
    data = path.read_bytes()
    if b'\0' in data:
        return None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return text.replace(' ', '-')


class Page:
    """A Markdown page of the repository: its numbered sections, appendices and anchors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sections: set[str] = set()
        self.appendices: set[str] = set()
        self.anchors: set[str] = set()
        for title in _HEADING.findall(path.read_text(encoding='utf-8')):
            self.anchors.add(slug(title))
            numbered = _NUMBERED.match(title + ' ')
            if numbered:
                self.sections.add(numbered.group(1))
            appendix = _APPENDIX.match(title)
            if appendix:
                self.appendices.add(appendix.group(1))

    @property
    def has_sections(self) -> bool:
        return bool(self.sections or self.appendices)


_PAGES: dict[Path, Page] = {}


def page(path: Path) -> Page:
    path = path.resolve()
    if path not in _PAGES:
        _PAGES[path] = Page(path)
    return _PAGES[path]


def resolve(cited: str, source: Path, root: Path) -> Path | None:
    """The existing file a Markdown path names: relative to the repository root, to the citing file, or a page
    of docs/ named without its folder."""
    for base in (root, source.parent, root / 'docs'):
        candidate = (base / cited).resolve()
        if candidate.is_file() and (candidate == root.resolve() or root.resolve() in candidate.parents):
            return candidate
    return None


def citation_problems(text: str, source: Path, root: Path = REPO) -> list[str]:
    """Every bad citation in ``text`` (the content of ``source``), as 'line N: what is wrong'."""
    problems: list[str] = []

    def where(offset: int) -> str:
        return f'line {text.count(chr(10), 0, offset) + 1}'

    scrubbed = _URL.sub(lambda m: ' ' * len(m.group(0)), text)     # keep offsets, drop web links
    for pattern, why in FORBIDDEN:
        for m in pattern.finditer(scrubbed):
            problems.append(f'{where(m.start())}: cites {m.group(0)!r}, {why}')

    own = page(source) if source.suffix == '.md' and source.is_file() else None
    primary = own if own is not None and own.has_sections else None
    events = sorted([(m.start(), 'doc', m) for m in _MD_PATH.finditer(scrubbed)] +
                    [(m.start(), 'sec', m) for m in _SECTION.finditer(scrubbed)], key=lambda e: e[0])
    chain_page, chain_end = None, -1
    for _start, kind, m in events:
        if kind == 'doc':
            target = resolve(m.group(1), source, root)
            if target is None:
                problems.append(f'{where(m.start())}: cites {m.group(1)!r}, which is not in the repository')
                chain_page = None
                continue
            cited = page(target) if target.suffix == '.md' else None
            if cited is not None and m.group(2) and m.group(2) not in cited.anchors:
                problems.append(f'{where(m.start())}: {m.group(1)} has no heading with the anchor #{m.group(2)}')
            chain_page, chain_end = cited, m.end()
            if primary is None and cited is not None and cited.has_sections:
                primary = cited
            continue
        chained = chain_page is not None and _SEPARATOR.fullmatch(scrubbed[chain_end:m.start()]) is not None
        target_page = chain_page if chained else primary
        number, appendix = m.group(1), m.group(2)
        label = f'§{number}' if number else f'Appendix {appendix}'
        if target_page is None:
            problems.append(f'{where(m.start())}: {label} without a cited page that has numbered sections')
            continue
        if not target_page.has_sections:
            problems.append(f'{where(m.start())}: {label} of {target_page.path.name}, which has no numbered sections')
        elif (number and number not in target_page.sections) or (appendix and appendix not in target_page.appendices):
            problems.append(f'{where(m.start())}: {target_page.path.relative_to(root.resolve())} has no {label}')
        chain_page, chain_end = target_page, m.end()
    return problems


def _checked_files() -> list:
    pending = pytest.mark.xfail(strict=True, reason='regenerated by the planner-table task, which replaces its '
                                                   'citations of the old benchmark documents')
    return [pytest.param(p, marks=pending) if str(p.relative_to(REPO)) in PENDING else p
            for p in sorted(tracked_files()) if p.resolve() != THIS]


@pytest.mark.parametrize('path', _checked_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_citation_points_inside_the_repository(path):
    text = read_text(path)
    if text is None:
        return      # binary: bags, images
    problems = citation_problems(text, path)
    assert not problems, f'{path.relative_to(REPO)}:\n  ' + '\n  '.join(problems)


def test_the_docs_index_lists_every_page():
    index = (REPO / 'docs' / 'README.md').read_text(encoding='utf-8')
    for doc in sorted((REPO / 'docs').glob('*.md')):
        if doc.name != 'README.md':
            assert f']({doc.name})' in index, f'docs/README.md does not list {doc.name}'


# ------------------------------------------------------------------------------------------------ the checker itself

def _fake_repo(tmp_path: Path) -> Path:
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'guide.md').write_text('# Guide\n\n## 1. Start\n\n### 1.2 Details\n\n## Appendix A: data\n',
                                                encoding='utf-8')
    (tmp_path / 'pkg').mkdir()
    return tmp_path


@pytest.mark.parametrize('text, complaint', [
    ('see METRICS.md §3', 'docs/metrics.md'),
    ('per the protocol fact sheet', 'docs/'),
    ('(shared/arena/FORMAT.md)', 'spec folder'),
    ('reference arena_explorer.md §2', 'spec document'),
    ('seed 001 says so', 'seed document'),
    ('the arena_explorer reference section 3', 'a section of a reference document'),
    ('see docs/missing.md', "'docs/missing.md', which is not in the repository"),
    ('docs/guide.md §1.3', 'has no §1.3'),
    ('docs/guide.md §1.2-§4', 'has no §4'),
    ('docs/guide.md Appendix B', 'has no Appendix B'),
    ('docs/guide.md#no-such-heading', 'no heading with the anchor'),
    ('a bare §1.2 and nothing else', 'without a cited page'),
])
def test_the_checker_names_each_kind_of_bad_citation(tmp_path, text, complaint):
    root = _fake_repo(tmp_path)
    problems = citation_problems(text, root / 'pkg' / 'module.py', root)
    assert any(complaint in p for p in problems), problems


def test_the_checker_accepts_good_citations(tmp_path):
    root = _fake_repo(tmp_path)
    text = ('docs/guide.md §1.2 step 5; later a bare §1 and §1.2–§1, docs/guide.md Appendix A, '
            'docs/guide.md#12-details and https://example.org/shared/x/METRICS.md.html')
    assert citation_problems(text.replace('METRICS', 'OTHER'), root / 'pkg' / 'module.py', root) == []
