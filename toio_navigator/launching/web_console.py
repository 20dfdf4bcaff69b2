"""The web console in a demo: the parameter file that gives it its port and address file, and the port it can take.
Plain Python, no ROS."""
from __future__ import annotations

import socket
from pathlib import Path


def port_to_use(wanted: int, host: str = '127.0.0.1') -> int:
    """``wanted`` if nothing listens on it now, else 0 (the console then takes any free port and names it)."""
    if wanted == 0:
        return 0
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as the console binds it
        try:
            probe.bind((host, wanted))
        except OSError:
            return 0
    return wanted


def console_params(path: Path, port: int, address_file: Path) -> Path:
    """A parameter file (written to ``path``) for the web console: its port, and the file it names its page in."""
    path.write_text(f'web_console:\n  ros__parameters:\n    port: {int(port)}\n'
                    f'    address_file: {str(Path(address_file).resolve())!r}\n')
    return path
