"""One cube per driver: a BLE driver claims its cube on this machine before it connects, so two drivers never
share one. Plain Python, no ROS.

BlueZ lets a second program "connect" to a device another program already connected (bleak then skips the
Connect call and shares the link), and two drivers that scan at the same moment both see the same free cube. A
claim is an exclusive ``flock`` on a small file named after the BlueZ the drivers talk to (the system bus
address) and the cube's address. The kernel drops the lock when its holder closes it or dies (even
by SIGKILL), so a claim never outlives its driver. Locks of one user only (the files are in that user's runtime
directory); where there is no ``flock`` (Windows) every claim succeeds.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

try:    # POSIX only; without it claims are not enforced (bleak's Windows backend)
    import fcntl
except ImportError:
    fcntl = None

#: the system bus bleak (and BlueZ) use when DBUS_SYSTEM_BUS_ADDRESS is not set
DEFAULT_SYSTEM_BUS = 'unix:path=/var/run/dbus/system_bus_socket'


def claims_dir() -> Path:
    """Where the claim files are: the user's runtime directory, else a per-user directory under the temp dir."""
    runtime = os.environ.get('XDG_RUNTIME_DIR')
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / 'toio_navigator_ble_claims'
    return Path(tempfile.gettempdir()) / f'toio_navigator-{os.getuid()}' / 'ble_claims'


class CubeClaim:
    """A held claim on one cube; :meth:`release` (or the process's end) gives it up."""

    def __init__(self, address: str, fd: int | None) -> None:
        self.address, self._fd = address, fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)        # closing the file drops the lock


def system_bus() -> str:
    """The address of the system bus this process's bleak talks to."""
    return os.environ.get('DBUS_SYSTEM_BUS_ADDRESS') or DEFAULT_SYSTEM_BUS


def bluez_file(name: str) -> Path:
    """A file of this machine's drivers about the BlueZ they talk to (named after its system bus address)."""
    bluez = hashlib.sha1(system_bus().encode()).hexdigest()[:12]
    return claims_dir() / f'{bluez}-{name}'


def _claim_path(address: str) -> Path:
    return bluez_file(f'cube-{address.upper().replace(":", "")}.lock')


def claim(address: str, holder: str) -> CubeClaim | None:
    """Claim the cube at ``address`` for ``holder`` (e.g. '/cube1/cube_driver'); None if another driver of this
    user on this machine holds it (:func:`holder_of` says who). One claim per cube, whichever adapter reaches it:
    every adapter sees a cube under the same address."""
    return lock_file(_claim_path(address), holder, address)


def lock_file(path: Path, holder: str, what: str = '') -> CubeClaim | None:
    """An exclusive lock on ``path`` for ``holder`` (written into the file), or None if someone holds it."""
    if fcntl is None:
        return CubeClaim(what, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, f'{holder} (pid {os.getpid()})\n'.encode())
    return CubeClaim(what, fd)


def holder_of(address: str) -> str:
    """Who holds the claim on ``address``, as it wrote itself into the claim ('' if unknown)."""
    try:
        return _claim_path(address).read_text().strip()
    except OSError:
        return ''
