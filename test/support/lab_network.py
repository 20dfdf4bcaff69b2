"""A lab network of its own: hosts (Linux network namespaces) joined through a bridge in a switch namespace.

    lab = LabNetwork(('a', 'b', 'c'))       # names are unique per run: toiolab-<pid>-<random>-<host>
    lab.create()                            # or `with LabNetwork(...) as lab:`
    proc = lab.start('a', [sys.executable, '-m', ...], env=lab.env(domain_id=42))
    lab.set_link('b', up=False)             # B's cable unplugged at the switch
    lab.kill_host('b')                      # every process inside host B, SIGKILL
    lab.destroy()                           # every process, then every namespace (always, even after errors)

Each host gets a veth pair: ``eth0`` inside the host, with an address of a private /24, and a port of bridge
``br0`` inside the switch namespace. Nothing is created in the machine's own network namespace; ``lo`` is up in
every namespace. Processes run inside a host through ``ip netns exec`` and die with the process that started
them (parent-death signal), so a killed test run leaves no orphan; a lab whose creator died without cleaning up
(SIGKILL) is removed by the next :meth:`LabNetwork.create` on this machine.

DDS inside the lab (:meth:`LabNetwork.env`): Fast DDS would carry data between processes of one machine through
shared memory, bypassing the virtual cables (every namespace shares /dev/shm), so lab processes get UDPv4 as their
only transport (FASTDDS_BUILTIN_TRANSPORTS). A test that takes a link down proves the data really crossed it.

Plain Python (no pytest): the tests and tools/bench/pose_to_motor_latency.py share it.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PREFIX = 'toiolab-'
SWITCH = 'switch'
BRIDGE = 'br0'
HOST_IF = 'eth0'
SUBNET = '10.213.7'          # private /24; it exists only inside the lab's namespaces


class LabError(RuntimeError):
    """A lab network operation failed (the message names the command and its error)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(['ip', *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise LabError(f'`ip {" ".join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}')
    return proc


def unavailable_reason() -> str | None:
    """Why a lab cannot be built on this machine (not root, no `ip`, namespaces refused), or None if it can."""
    if os.geteuid() != 0:
        return 'network namespaces need root'
    if shutil.which('ip') is None or shutil.which('setpriv') is None:
        return 'needs `ip` (iproute2) and `setpriv` (util-linux)'
    probe = f'{PREFIX}{os.getpid()}-check'
    made = _ip('netns', 'add', probe, check=False)
    if made.returncode != 0:
        return f'cannot create a network namespace: {made.stderr.strip()}'
    _ip('netns', 'del', probe, check=False)
    return None


def namespaces() -> list[str]:
    """Every network namespace name on this machine (`ip netns list`)."""
    out = _ip('netns', 'list').stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def pids_in(namespace: str) -> list[int]:
    """Processes whose network namespace is ``namespace``."""
    out = _ip('netns', 'pids', namespace, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(name: str) -> int | None:
    """The pid of the process that made namespace ``name`` (toiolab-<pid>-...), None if not one of ours."""
    if not name.startswith(PREFIX):
        return None
    pid = name[len(PREFIX):].split('-', 1)[0]
    return int(pid) if pid.isdigit() else None


def _kill_all(namespace: str, sig: int) -> None:
    for pid in pids_in(namespace):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def remove_orphans() -> list[str]:
    """Delete labs whose creating process is gone (a run killed with SIGKILL); the names removed."""
    removed = []
    for name in namespaces():
        owner = _owner(name)
        if owner is None or _alive(owner):
            continue
        _kill_all(name, signal.SIGKILL)
        if _ip('netns', 'del', name, check=False).returncode == 0:
            removed.append(name)
    return removed


class LabNetwork:
    """Hosts joined through one bridge; see the module docstring."""

    def __init__(self, hosts=('a', 'b', 'c'), subnet: str = SUBNET) -> None:
        if not hosts or len(set(hosts)) != len(hosts) or not all(h.isalnum() and len(h) <= 8 for h in hosts):
            raise ValueError(f'hosts must be unique short alphanumeric names, got {hosts!r}')
        self.hosts = tuple(hosts)
        self.tag = f'{PREFIX}{os.getpid()}-{secrets.token_hex(3)}'
        self.subnet = subnet
        self.created: list[str] = []                 # namespaces made so far, switch first
        self.processes: list[tuple[str, subprocess.Popen]] = []

    # ------------------------------------------------------------------------------------------ names
    def ns(self, host: str) -> str:
        """The network namespace of ``host`` (or of the switch)."""
        if host != SWITCH and host not in self.hosts:
            raise KeyError(f'no host {host!r} in this lab (hosts: {", ".join(self.hosts)})')
        return f'{self.tag}-{host}'

    def address(self, host: str) -> str:
        """The IPv4 address of ``host`` on the lab network."""
        return f'{self.subnet}.{11 + self.hosts.index(host)}'

    def port(self, host: str) -> str:
        """The bridge port (inside the switch namespace) that ``host``'s cable plugs into."""
        self.ns(host)
        return f'port-{host}'

    # ------------------------------------------------------------------------------------------ life cycle
    def create(self) -> 'LabNetwork':
        remove_orphans()
        try:
            sw = self.ns(SWITCH)
            self._add_namespace(sw)
            _ip('-n', sw, 'link', 'add', BRIDGE, 'type', 'bridge')
            _ip('-n', sw, 'link', 'set', BRIDGE, 'up')
            for host in self.hosts:
                ns = self.ns(host)
                self._add_namespace(ns)
                _ip('-n', ns, 'link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', self.port(host), 'netns', sw)
                _ip('-n', sw, 'link', 'set', self.port(host), 'master', BRIDGE, 'up')
                _ip('-n', ns, 'addr', 'add', f'{self.address(host)}/24', 'dev', HOST_IF)
                _ip('-n', ns, 'link', 'set', HOST_IF, 'up')
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_namespace(self, ns: str) -> None:
        _ip('netns', 'add', ns)
        self.created.append(ns)
        _ip('-n', ns, 'link', 'set', 'lo', 'up')

    def stop_processes(self, grace_s: float = 5.0) -> None:
        """Stop every process inside the lab's namespaces: SIGINT to the ones :meth:`start` started (they stop
        their own children, as on Ctrl-C), then SIGKILL to whatever is left after ``grace_s``."""
        for _host, proc in self.processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace_s
        while any(pids_in(ns) for ns in self.created) and time.monotonic() < deadline:
            time.sleep(0.05)
        for ns in self.created:
            _kill_all(ns, signal.SIGKILL)
        for _host, proc in self.processes:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:     # it left the lab's namespaces (it cannot): say so, go on
                print(f'lab: process {proc.pid} did not stop', file=sys.stderr)
        self.processes.clear()

    def reset(self) -> None:
        """Back to a fresh lab: no process running, every cable plugged in."""
        self.stop_processes()
        for host in self.hosts:
            self.set_link(host, up=True)

    def destroy(self, grace_s: float = 5.0) -> None:
        """Stop every process in the lab, then delete its namespaces (with them the veths and the bridge)."""
        try:
            self.stop_processes(grace_s)
        finally:
            for ns in reversed(self.created):
                _ip('netns', 'del', ns, check=False)
            self.created.clear()

    def __enter__(self) -> 'LabNetwork':
        return self.create()

    def __exit__(self, *exc) -> None:
        self.destroy()

    # ------------------------------------------------------------------------------------------ processes
    def env(self, domain_id: int, discovery: str | None = 'SUBNET', base: dict | None = None) -> dict[str, str]:
        """The environment of a lab process: ROS_DOMAIN_ID, the discovery range (None = the variable unset, ROS's
        default) and UDPv4 as Fast DDS's only transport (no shared memory between the lab's hosts)."""
        env = dict(os.environ if base is None else base)
        env['ROS_DOMAIN_ID'] = str(domain_id)
        for name in ('ROS_LOCALHOST_ONLY', 'ROS_STATIC_PEERS', 'ROS_AUTOMATIC_DISCOVERY_RANGE',
                     'FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE', 'ROS_DISCOVERY_SERVER'):
            env.pop(name, None)
        if discovery is not None:
            env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = discovery
        env['FASTDDS_BUILTIN_TRANSPORTS'] = 'UDPv4'
        env['PYTHONUNBUFFERED'] = '1'
        env.setdefault('AMENT_PREFIX_PATH', sys.prefix)
        return env

    def command(self, host: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``host``; it gets SIGKILL if the process that starts it dies."""
        return ['setpriv', '--pdeathsig', 'KILL', '--', 'ip', 'netns', 'exec', self.ns(host), *argv]

    def start(self, host: str, argv: list[str], env: dict[str, str], log: Path | None = None,
              pipe: bool = False) -> subprocess.Popen:
        """Start ``argv`` inside ``host``. Output goes to ``log`` (or is discarded); with ``pipe``, stdin and stdout
        are pipes (text, line-buffered) for a request/answer probe and stderr goes to ``log``."""
        out = open(log, 'w') if log is not None else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(self.command(host, argv), env=env, text=True, bufsize=1,
                                    stdin=subprocess.PIPE if pipe else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE if pipe else out,
                                    stderr=out if log is not None else subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            if log is not None:
                out.close()          # the child holds its own descriptor
        self.processes.append((host, proc))
        return proc

    def kill_host(self, host: str, sig: int = signal.SIGKILL) -> float:
        """Send ``sig`` to every process inside ``host`` (a crashed machine: SIGKILL); returns the wall-clock time
        (``time.time()``) just before the first signal went out."""
        pids = pids_in(self.ns(host))
        sent = time.time()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        for h, proc in self.processes:
            if h == host and sig == signal.SIGKILL:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        return sent

    # ------------------------------------------------------------------------------------------ faults
    def set_link(self, host: str, up: bool) -> None:
        """Plug (``up``) or unplug ``host``'s cable at the switch. The host keeps its address and its own loopback
        traffic, as a laptop whose Wi-Fi drops does."""
        _ip('-n', self.ns(SWITCH), 'link', 'set', self.port(host), 'up' if up else 'down')
