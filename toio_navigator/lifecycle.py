"""How our processes stop: a signal only asks for an orderly stop, and a child never outlives its supervisor.

Plain Python (no ROS), used by every node's ``main()``, ``toio-nav bringup``, ``toio-nav demo`` and ``toio-nav
record``.

* :class:`StopRequest`: SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped SSH session) set a flag that
  the main loop polls. Nothing is raised inside a callback, and the ROS context stays valid until the loop has
  stopped the timers, told the cubes to stop and destroyed the node: rclpy's own handlers shut the context down
  at once, while callbacks still run (``publisher's context is invalid`` on the way out).
* :func:`supervised_env` / :func:`die_with_parent`: a supervisor puts its pid into the environment of each
  child; the child asks the kernel for SIGTERM when that parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``; a
  watcher thread elsewhere), so a SIGKILLed bringup leaves no node driving the cubes. The signal is the same
  SIGTERM as an ordinary stop, so the child still stops its cube before it exits.
* :data:`STOP_REPORT_S`: a process still alive that long into its teardown writes every thread's stack to its
  log and exits by itself (``faulthandler``), so a teardown that hangs says where and leaves nothing behind.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
import time
import weakref

#: exit status of a node that refused to start (bad parameters, ROS cannot start): a supervisor stops the rest
REFUSED = 2
#: the signals that ask a process of ours to stop
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: environment variable: the pid of the supervisor whose death must stop this process
PARENT_ENV = 'TOIO_NAV_SUPERVISOR_PID'
_PR_SET_PDEATHSIG = 1           # <linux/prctl.h>
#: s a teardown may take (well under one normally) before the process reports its stacks and exits (status 1): a
#: teardown hung inside Fast DDS 2.14.5 (README, "Stopping") otherwise waited for its supervisor's kill, and a node
#: whose bringup had been killed outright (SIGKILL) hung on for good
STOP_REPORT_S = 4.0


class StopRequest:
    """The first stop signal is remembered (``signal``, ``at``); the process stops at its own pace.

    ``bool(stop)`` is True once a stop was asked for (by a signal or by :meth:`set`). Repeated signals change
    nothing: a process that is finalising a bag or stopping its cubes must not be cut short by an impatient
    second Ctrl-C (its supervisor kills it if it takes too long).

    The handler takes no lock: Python runs it in the main thread between two bytecodes, possibly while that thread
    holds a lock inside ``threading.Event.wait``, and ``Event.set`` would then wait for that lock forever (a busy
    machine makes that window likely: bringups hung on Ctrl-C). It sets a flag and writes one byte into a pipe
    that :meth:`wait` watches."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.at = 0.0
        self._asked = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        weakref.finalize(self, _close_all, self._wake_read, self._wake_write)
        self._previous: dict = {}

    def _handle(self, signum, _frame) -> None:
        if self.signal is None:
            self.signal = signum
        self.set()

    def set(self) -> None:
        """Ask for a stop without a signal (e.g. a --duration that ran out); any thread, or a signal handler."""
        if not self._asked:
            self.at = time.monotonic()
            self._asked = True
        try:
            os.write(self._wake_write, b'!')
        except OSError:                 # the pipe is full: a byte is already waiting to wake :meth:`wait`
            pass

    def __bool__(self) -> bool:
        return self._asked

    def wait(self, timeout: float | None) -> bool:
        """Sleep until a stop is asked for or ``timeout`` seconds pass (None: no limit); True if a stop was
        asked for."""
        if not self._asked:
            poller = select.poll()
            poller.register(self._wake_read, select.POLLIN)
            poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999)))
        return self._asked

    @property
    def name(self) -> str:
        """'SIGTERM', ... ('' when no signal asked for the stop)."""
        return signal.Signals(self.signal).name if self.signal is not None else ''

    def install(self) -> 'StopRequest':
        """Take over the stop signals (main thread only); returns self."""
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self, exiting: bool = False) -> None:
        """Give the stop signals back; ``exiting`` (a process on its way out after a stop by a signal): keep
        them caught and do nothing instead. Under `ros2 launch` a Ctrl-C reaches a node twice (the terminal's
        and the launch's), and the second one must not turn a clean exit into a KeyboardInterrupt traceback."""
        quiet = exiting and self.signal is not None
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.SIG_IGN if quiet else handler)
        self._previous.clear()


def _close_all(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def supervised_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a child that must die with this process (see die_with_parent).

    The kernel ties the parent-death signal to the *thread* that started the child: start children from the
    main thread (bringup and demo do)."""
    out = dict(os.environ if env is None else env)
    out[PARENT_ENV] = str(os.getpid())
    return out


def die_with_parent() -> None:
    """If a supervisor started this process (:data:`PARENT_ENV`), get SIGTERM when it dies.

    Checked again right after asking, in case the supervisor died before: then SIGTERM comes at once. The
    variable is removed, so a process this one starts is not tied to our supervisor by mistake. A process
    between the supervisor and this one (``ros2 launch --launch-prefix 'xterm -e'``, gdb) is the parent the kernel
    watches: this process dies with it, and it dies with the supervisor or outlives it, as it does."""
    wanted = os.environ.pop(PARENT_ENV, '')
    if not wanted.isdigit():
        return
    parent = int(wanted)
    if not _ask_kernel():
        threading.Thread(target=_watch_parent, args=(os.getppid(),), name='parent_watch', daemon=True).start()
    if not _descends_from(parent):      # the supervisor is already gone (we were reparented)
        os.kill(os.getpid(), signal.SIGTERM)


def _descends_from(pid: int) -> bool:
    """``pid`` is this process's parent, or (Linux) an ancestor below init (a reparented process's is init)."""
    ancestor = os.getppid()
    if ancestor == pid:
        return True
    for _ in range(64):                 # a chain of prefixes is short; a loop in /proc is impossible but bounded
        if ancestor <= 1:
            return False
        if ancestor == pid:
            return True
        try:
            with open(f'/proc/{ancestor}/stat') as f:
                ancestor = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _ask_kernel() -> bool:
    """prctl(PR_SET_PDEATHSIG, SIGTERM); False where there is no such call (not Linux)."""
    if not sys.platform.startswith('linux'):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int, period_s: float = 0.2) -> None:
    while os.getppid() == parent:
        time.sleep(period_s)
    os.kill(os.getpid(), signal.SIGTERM)
