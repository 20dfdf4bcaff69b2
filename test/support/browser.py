"""A real browser for the web console's tests: the distribution's headless Chromium driven by Playwright (never a
browser Playwright downloads), with a fresh profile and the flags this closed network needs. Without Chromium or
Playwright the tests are skipped with :data:`MISSING`, which says how to install them.

Also the page's geometry: where a mat point is on the screen (:func:`page_point`) and where the page draws each
cube (:func:`drawn_cubes`), read from the drawn SVG elements, not from the page's data.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

CHROMIUM = os.environ.get('TOIO_NAV_CHROMIUM', '/usr/bin/chromium')
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync']
#: screenshots of the browser tests
SHOTS = Path(__file__).resolve().parents[2] / 'out' / 'web'


def _missing() -> str:
    try:
        import playwright.sync_api  # noqa: F401, PLC0415 optional: only the browser tests need it
    except ImportError:
        return ('Python playwright is not installed: `make install` installs the pinned version '
                '(tools/ros/requirements-ros-jazzy.txt)')
    if not os.access(CHROMIUM, os.X_OK):
        return (f'no Chromium at {CHROMIUM}: install the distribution\'s package (as root: `apt-get install chromium`; '
                '.ci/run does this on CI), or set TOIO_NAV_CHROMIUM to a Chromium binary')
    return ''


MISSING = _missing()


class Browser:
    """One headless Chromium with a fresh profile (closed with :meth:`close`); :meth:`page` opens a tab."""

    def __init__(self, width: int = 1400, height: int = 900) -> None:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 optional, see _missing
        self._profile = tempfile.mkdtemp(prefix='toio_nav_chromium_')
        self._pw = sync_playwright().start()
        try:
            self.context = self._pw.chromium.launch_persistent_context(
                self._profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport={'width': width, 'height': height})
        except BaseException:
            self._pw.stop()
            raise
        self.errors: list[str] = []

    def page(self, url: str):
        page = self.context.new_page()
        page.on('pageerror', lambda exc: self.errors.append(str(exc)))
        page.goto(url)
        return page

    def close(self) -> None:
        self.context.close()
        self._pw.stop()
        shutil.rmtree(self._profile, ignore_errors=True)


def shot(page, name: str) -> Path:
    """A screenshot under out/web/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f'{name}.png'
    page.screenshot(path=str(path))
    return path


def _mat_box(page) -> tuple[float, float, float, float, list[float]]:
    return page.eval_on_selector('#mat', 'e => { const b = e.getBoundingClientRect(); '
                                 'return [b.left, b.top, b.width, b.height, e.dataset.rect.split(",").map(Number)]; }')


def page_point(page, x: float, y: float) -> tuple[float, float]:
    """The screen point (CSS pixels) where the page draws mat point (x, y)."""
    left, top, width, height, (x0, y0, x1, y1) = _mat_box(page)
    return left + (x - x0) / (x1 - x0) * width, top + (y - y0) / (y1 - y0) * height


def drawn_cubes(page) -> dict[str, tuple[float, float]]:
    """{cube: (x, y) in mat units} of every cube the page draws: the centre of each drawn body on the screen,
    mapped back through the drawn mat rectangle."""
    left, top, width, height, (x0, y0, x1, y1) = _mat_box(page)
    boxes = page.eval_on_selector_all(
        'g.cube', 'gs => gs.filter(g => g.style.display !== "none").map(g => { const b = '
        'g.querySelector(".body").getBoundingClientRect(); return [g.dataset.cube, b.left + b.width / 2, '
        'b.top + b.height / 2]; })')
    return {name: (x0 + (px - left) / width * (x1 - x0), y0 + (py - top) / height * (y1 - y0))
            for name, px, py in boxes}


def wait_for(page, script: str, timeout_s: float, what: str):
    """Wait until ``script`` (a JS expression) is truthy on the page; its value. A timeout names ``what``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: PLC0415 optional, see _missing
    try:
        return page.wait_for_function(script, timeout=timeout_s * 1000).json_value()
    except PlaywrightTimeout:
        raise AssertionError(f'the page did not show {what} within {timeout_s:g} s') from None
