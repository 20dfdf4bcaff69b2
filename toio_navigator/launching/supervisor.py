"""The child processes of a bringup (``toio-nav bringup``, ``toio-nav demo``, the integration tests): started
tied to this process, watched, and stopped in order. Plain Python (subprocess), no ROS.

* Each child gets its own session (a Ctrl-C in the terminal reaches only the supervisor, which stops the children
  in order) and dies with the supervisor, however that dies (:func:`toio_navigator.lifecycle.supervised_env`).
* Its output goes to a log file, or through this process to the terminal, keeping its last lines: a node that
  refuses to start (exit 2) is reported with its own message.
* :meth:`Children.stop` stops the nodes that command cubes (navigator, explorer) and the drivers first, the
  simulator last, so each driver's stop reaches its (simulated) cube.
* :func:`run_processes` is ``toio-nav bringup --processes``: the children until a stop signal, a refusal or the
  end of ``--duration``.
"""
from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from toio_navigator.lifecycle import REFUSED, StopRequest, supervised_env

#: the role stopped last: the simulated cubes must still be there when the drivers send their stops
LAST_ROLE = 'sim'


def ros_args(param_files: list[Path], namespace: str = '', extra: list[str] | None = None) -> list[str]:
    args = ['--ros-args']
    for path in param_files:
        args += ['--params-file', str(path)]
    if namespace:
        args += ['-r', f'__ns:={namespace}']
    return args + list(extra or [])


def child_command(spec, namespace: str, param_files: list[Path], extra: list[str] | None = None) -> list[str]:
    """The command of one child: a node (NodeSpec), or several drivers in one process (a GroupSpec's ``args``)."""
    return [sys.executable, '-m', spec.module, *getattr(spec, 'args', ())] + ros_args(param_files, namespace, extra)


def exit_text(code: int) -> str:
    """'exit 2', 'killed by SIGKILL'."""
    if code < 0:
        try:
            return f'killed by {signal.Signals(-code).name}'
        except ValueError:
            return f'killed by signal {-code}'
    return f'exit {code}'


class Children:
    """Child processes of a --processes bringup, by node name ('mat_sim', '/cube2/cube_driver')."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.roles: dict[str, str] = {}
        self.reported: set[int] = set()
        self.log_dir: Path | None = None
        self._tails: dict[str, collections.deque] = {}
        self._forwarders: dict[str, threading.Thread] = {}

    def start(self, nodes, param_files, extra=None, env=None, log_dir: Path | None = None) -> None:
        """Start every (spec, namespace) of ``nodes``; with ``log_dir`` each child's output goes to
        <log_dir>/<ns>_<node>.log, otherwise through this process's stdout and stderr."""
        self.log_dir = log_dir
        env = supervised_env(env)
        if log_dir is None and sys.stderr.isatty():
            env.setdefault('RCUTILS_COLORIZED_OUTPUT', '1')    # ROS colours its logs only on a terminal
        for spec, ns in nodes:
            name = f'{ns}/{spec.executable}' if ns else spec.executable
            out = None
            if log_dir is not None:
                Path(log_dir).mkdir(parents=True, exist_ok=True)
                out = open(self._log_path(name), 'w')
            try:
                proc = subprocess.Popen(child_command(spec, ns, param_files, extra), env=env, stdout=out,
                                        stderr=subprocess.STDOUT if out else subprocess.PIPE, start_new_session=True)
            finally:
                if out is not None:
                    out.close()            # the child holds its own copy of the descriptor
            self.procs.append((name, proc))
            self.roles[name] = spec.role
            if out is None:
                self._forward(name, proc)

    def _log_path(self, name: str) -> Path:
        return Path(self.log_dir) / (name.strip('/').replace('/', '_') + '.log')

    def _forward(self, name: str, proc: subprocess.Popen) -> None:
        """Copy the child's stderr to ours line by line, keeping the last lines for :meth:`last_words`."""
        tail = self._tails[name] = collections.deque(maxlen=20)

        def pump() -> None:
            with proc.stderr:
                for line in iter(proc.stderr.readline, b''):
                    tail.append(line.decode(errors='replace').rstrip())
                    try:
                        sys.stderr.buffer.write(line)
                        sys.stderr.flush()
                    except (OSError, ValueError):    # our stderr is gone: keep draining the child's
                        pass
        thread = self._forwarders[name] = threading.Thread(target=pump, name=f'stderr {name}', daemon=True)
        thread.start()

    def last_words(self, name: str) -> str:
        """The last line a (dead) child wrote: the reason of a node that refused to start."""
        thread = self._forwarders.get(name)
        if thread is not None:
            thread.join(timeout=2.0)       # it ends at the child's end of file
            lines = list(self._tails.get(name, ()))
        else:
            try:
                lines = self._log_path(name).read_text(errors='replace').splitlines()
            except (OSError, TypeError):
                lines = []
        lines = [ln for ln in lines if ln.strip()]
        return lines[-1].strip() if lines else '(it wrote nothing)'

    def process(self, name: str) -> subprocess.Popen:
        """The child running node ``name`` (e.g. '/cube2/cube_driver')."""
        for n, proc in self.procs:
            if n == name:
                return proc
        raise KeyError(name)

    def newly_dead(self) -> list[tuple[str, int]]:
        """(name, return code) of children that died since the last call (each reported once)."""
        dead = []
        for name, proc in self.procs:
            if proc.poll() is not None and proc.pid not in self.reported:
                self.reported.add(proc.pid)
                dead.append((name, proc.returncode))
        return dead

    def check(self) -> list[str]:
        """'<name> (exit N)' of children that died since the last check (reported once)."""
        return [f'{name} ({exit_text(code)})' for name, code in self.newly_dead()]

    def refused(self, dead: list[tuple[str, int]]) -> list[str]:
        """'<name>: <its message>' of the ``dead`` that refused to start (exit 2: bad parameters)."""
        return [f'{name} refused to start: {self.last_words(name)}' for name, code in dead if code == REFUSED]

    def all_dead(self) -> bool:
        return all(proc.poll() is not None for _name, proc in self.procs)

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM to every node but the simulator, wait for them, then the simulator (each group gets
        ``timeout`` seconds before it is killed). A node handles SIGTERM as SIGINT (an orderly stop); one still
        starting up, before its handlers are in place, ends quietly instead of with a KeyboardInterrupt
        traceback in the middle of an import."""
        first = [(n, p) for n, p in self.procs if self.roles.get(n) != LAST_ROLE]
        last = [(n, p) for n, p in self.procs if self.roles.get(n) == LAST_ROLE]
        for group in (first, last):
            for _name, proc in group:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for name, proc in group:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    print(f'bringup: {name} did not stop within {timeout:g} s after SIGTERM: killed', file=sys.stderr)
                    proc.kill()
                    proc.wait(timeout=5)
        for thread in self._forwarders.values():
            thread.join(timeout=1.0)


def run_processes(nodes, param_files, extra=None, duration: float | None = None) -> int:
    """One child per node until a stop signal or ``duration``; 2 if a node refuses to start (the others are
    stopped), 1 if every node stopped by itself."""
    stop = StopRequest().install()
    children = Children()
    try:
        children.start(nodes, param_files, extra)
        deadline = None if duration is None else time.monotonic() + duration
        while not stop and (deadline is None or time.monotonic() < deadline):
            dead = children.newly_dead()
            refused = children.refused(dead)
            if refused:
                children.stop()
                for line in refused:
                    print(f'bringup: {line}', file=sys.stderr)
                print('bringup: stopped the other nodes', file=sys.stderr)
                return REFUSED
            for name, code in dead:
                print(f'bringup: {name} stopped ({exit_text(code)}); the others keep running', file=sys.stderr)
            if children.all_dead():
                print('bringup: every node has stopped', file=sys.stderr)
                return 1
            stop.wait(0.2)
    finally:
        children.stop()
        stop.restore()
    if stop.signal is not None:
        print(f'bringup: {stop.name}: every node stopped', file=sys.stderr)
    return 0
