"""web_console's parameters without ROS: :data:`PARAMS` and :func:`web_settings` (SettingError naming the
parameter). ``toio-nav web`` (replay) reads the same address rules."""
from __future__ import annotations

from dataclasses import dataclass

from toio_navigator.settings.spec import STRINGS, Param, ParamSet, SettingError

#: the default port; 0 lets the system choose a free one (the console logs the address either way)
DEFAULT_PORT = 8765
LOCALHOST, ALL_INTERFACES = '127.0.0.1', '0.0.0.0'

PARAMS = ParamSet(
    Param('cubes', None, 'cube names (namespaces) to show, e.g. [cube1, cube2]; required', kind=STRINGS),
    Param('port', DEFAULT_PORT, 'TCP port of the page (0 = any free port; the log line names it)', low=0,
          high=65535),
    Param('lab_network', False, 'serve the page on every network interface (anyone on the lab network can send '
          'goals), not only on this machine (127.0.0.1)'),
    Param('rate_hz', 25.0, 'view updates sent to each page per second', low=1.0, high=60.0),
    Param('stale_s', 0.5, 'a cube whose last state is older than this shows as stale, s', low=0.0, low_open=True,
          high=60.0),
    Param('lost_s', 3.0, 'a cube whose last state is older than this shows as lost, s (> stale_s)', low=0.0,
          low_open=True, high=3600.0),
    Param('navigator', 'navigator', 'node name of the navigator whose parameters the page shows and sets'),
    Param('explorer', 'arena_explorer', 'node name of the arena explorer the page commands'),
    Param('address_file', '', 'write the page\'s address into this file once it is served ("" = only log it)'),
)


@dataclass(frozen=True)
class WebSettings:
    cubes: tuple[str, ...]
    port: int = DEFAULT_PORT
    lab_network: bool = False
    rate_hz: float = 25.0
    stale_s: float = 0.5
    lost_s: float = 3.0
    navigator: str = 'navigator'
    explorer: str = 'arena_explorer'
    address_file: str = ''

    @property
    def host(self) -> str:
        return ALL_INTERFACES if self.lab_network else LOCALHOST


def web_settings(values: dict) -> WebSettings:
    """Checked settings (defaults for the missing values); SettingError naming the parameter."""
    v = PARAMS.check_all(values)
    if not v['lost_s'] > v['stale_s']:
        raise SettingError('lost_s', f'must be greater than stale_s ({v["stale_s"]:g}), got {v["lost_s"]:g}')
    for name in ('navigator', 'explorer'):
        if not v[name] or not v[name].replace('_', 'a').isalnum():
            raise SettingError(name, f'must be a node name (letters, digits, _), got {v[name]!r}')
    return WebSettings(**v)
