"""A private D-Bus system bus: ``dbus-daemon`` with a generated configuration, listening in a directory of ours.

bleak talks to BlueZ on the *system* bus; it finds that bus through ``DBUS_SYSTEM_BUS_ADDRESS``. Pointing that
variable at a bus of our own lets real bleak (and the real driver) run against the virtual BlueZ without touching
the machine's system bus, without root and without Bluetooth hardware.
"""
from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

#: where Debian/Ubuntu install the reference D-Bus daemon
DBUS_DAEMON = '/usr/bin/dbus-daemon'
SOCKET_NAME = 'system_bus_socket'

# A system-type bus (so clients that ask for the system bus accept it) that lets every local user own any name
# and talk to anyone: it only serves the processes of one test or one demo.
_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
"""


class BusError(RuntimeError):
    """The private bus could not be started."""


def find_dbus_daemon() -> str | None:
    """The dbus-daemon executable, or None where it is not installed."""
    if os.access(DBUS_DAEMON, os.X_OK):
        return DBUS_DAEMON
    return shutil.which('dbus-daemon')


class PrivateBus:
    """A ``dbus-daemon`` of our own. ``start()`` returns its address (for ``DBUS_SYSTEM_BUS_ADDRESS``).

    ``directory`` holds the configuration and the socket; by default a fresh temporary directory, removed by
    ``stop()``. Giving a directory keeps the address the same across restarts of the bus.
    """

    def __init__(self, directory: str | Path | None = None, daemon: str | None = None) -> None:
        self._own_directory = directory is None
        self.directory = Path(directory) if directory is not None else None
        self.daemon = daemon or find_dbus_daemon()
        self.process: subprocess.Popen | None = None
        self.address = ''

    @property
    def socket_path(self) -> Path:
        if self.directory is None:
            raise BusError('the bus has no directory yet: call start()')
        return self.directory / SOCKET_NAME

    def start(self, timeout_s: float = 10.0) -> str:
        if self.daemon is None:
            raise BusError(f'dbus-daemon is not installed (looked for {DBUS_DAEMON} and on PATH)')
        if self.process is not None and self.process.poll() is None:
            return self.address
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix='toio-bluez-'))
        self.directory.mkdir(parents=True, exist_ok=True)
        socket = self.socket_path
        if socket.exists():
            socket.unlink()         # left by a bus that was killed: the new daemon listens on the same path
        config = self.directory / 'bus.conf'
        config.write_text(_CONFIG.format(socket=socket))
        # stderr is dropped: a daemon not started by systemd warns "Failed to set fd limit", which is harmless
        self.process = subprocess.Popen(
            [self.daemon, f'--config-file={config}', '--nofork', '--nopidfile', '--print-address=1'],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.address = self._read_address(timeout_s)
        return self.address

    def _read_address(self, timeout_s: float) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = b''
        while not line.endswith(b'\n'):
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(remaining, 0.0))
            if not ready:
                self.stop()
                raise BusError(f'dbus-daemon printed no address within {timeout_s} s')
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                code = self.process.wait(timeout=5)
                self.stop()
                raise BusError(f'dbus-daemon exited with code {code} before printing its address')
            line += chunk
        # the daemon appends a ",guid=..." to the address; clients accept the plain path form
        return line.decode().strip().split(',guid=')[0]

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=5)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None
        if self._own_directory and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with DBUS_SYSTEM_BUS_ADDRESS pointing here."""
        env = dict(os.environ if base is None else base)
        env['DBUS_SYSTEM_BUS_ADDRESS'] = self.address
        return env

    def __enter__(self) -> 'PrivateBus':
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()
