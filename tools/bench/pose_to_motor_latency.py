"""Position in -> motor command out, through the navigator node, over real DDS between processes.

A probe (this process) publishes one CubeState for each of N cubes (default 10), all with goals, and times how
long after the last state of a round each cube's MotorCommand arrives. The navigator (a child process, the real
node, ``tick_on_fresh_states`` on) steps as soon as every cube has reported. Baseline, measured in the same run
the same way: an echo process that answers every CubeState with a MotorCommand at once (pure DDS + rclpy cost).

Prints the medians, the ratio navigator / echo, and the budget check (median <= 5 ms at 10 cubes). A round whose
state-triggered tick is skipped because the navigator's own timer ticked just before (ticks are never closer than
0.8 periods) yields no command within 200 ms; those are reported as missing, not counted as latency.
The navigator runs with rclpy's EventsExecutor where it exists (TOIO_NAV_EXECUTOR=single compares the
SingleThreadedExecutor).

Across hosts (as root, with `ip`): the same two measurements on a lab network of two hosts (network namespaces
joined through a bridge, test/support/lab_network.py), the probe on host a where the cube drivers would run, the echo or
the navigator on host b, DDS over UDP through the virtual cable; printed beside the single-host figures with the
ratio across / one host. The rounds run in blocks (`--blocks`), the single-host and the cross-host phases taking
turns, so a machine that gets busier during the run weighs on both alike. `--no-lab` skips the cross-host phases;
without root they are skipped with the reason.
Usage: python tools/bench/pose_to_motor_latency.py [--cubes 10] [--rounds 40] [--blocks 4] [--no-lab]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from toio_navigator.msg import CubeState, MotorCommand, NavGoal

# the lab network is test infrastructure (test/support/lab_network.py); the benchmark borrows it
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'test'))
from support.lab_network import LabError, LabNetwork, unavailable_reason  # noqa: E402

BUDGET_MS = 5.0
ROUND_S = 0.25            # > the navigator's minimum tick spacing at rate_hz 4, so every round triggers one tick


def echo(names: list[str]) -> int:
    """The baseline node: every CubeState is answered with a MotorCommand for that cube, immediately."""
    rclpy.init()
    node = Node('latency_echo')
    pubs = {c: node.create_publisher(MotorCommand, f'{c}/motor_cmd', 10) for c in names}
    for c in names:
        node.create_subscription(CubeState, f'{c}/state',
                                 lambda _m, c=c: pubs[c].publish(MotorCommand(left=10, right=10, duration_ms=100)),
                                 qos_profile_sensor_data)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    rclpy.try_shutdown()
    return 0


def measure(names: list[str], rounds: int, with_goals: bool) -> list[float]:
    """Latencies (ms) from the last state of a round to each cube's first command after it."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('latency_probe', context=context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    arrivals: dict[str, float] = {}

    def on_cmd(cube: str) -> None:
        arrivals.setdefault(cube, time.perf_counter())

    state_pubs = {c: node.create_publisher(CubeState, f'{c}/state', qos_profile_sensor_data) for c in names}
    goal_pubs = {c: node.create_publisher(NavGoal, f'{c}/goal', 10) for c in names}
    for c in names:
        node.create_subscription(MotorCommand, f'{c}/motor_cmd', lambda _m, c=c: on_cmd(c), 100)
    # a ring of cubes, every one heading across the mat: all of them get a command every tick
    poses = {c: (250 + 150 * math.cos(2 * math.pi * i / len(names)), 250 + 150 * math.sin(2 * math.pi * i / len(names)))
             for i, c in enumerate(names)}
    deadline = time.monotonic() + 30
    while any(p.get_subscription_count() == 0 for p in state_pubs.values()) or \
            any(node.count_publishers(f'{c}/motor_cmd') == 0 for c in names):
        ex.spin_once(timeout_sec=0.05)
        if time.monotonic() > deadline:
            raise SystemExit('the node under test did not appear within 30 s')
    samples: list[float] = []
    for k in range(rounds + 3):                      # 3 warm-up rounds (goals reach the navigator, first ticks)
        if with_goals and k == 0:
            for c, (x, y) in poses.items():
                goal_pubs[c].publish(NavGoal(cube=c, goal_id=1, x=500 - x, y=500 - y))
        end = time.perf_counter() + ROUND_S
        while time.perf_counter() < end - 0.02:      # let earlier commands drain
            ex.spin_once(timeout_sec=0.005)
        arrivals.clear()
        for c, (x, y) in poses.items():
            msg = CubeState(cube=c, x=x, y=y, theta=0.0, on_mat=True, link_state=CubeState.LINK_CONNECTED)
            msg.header.stamp = node.get_clock().now().to_msg()
            state_pubs[c].publish(msg)
        sent = time.perf_counter()
        wait_until = sent + 0.2
        while len(arrivals) < len(names) and time.perf_counter() < wait_until:
            ex.spin_once(timeout_sec=0.001)
        if k >= 3:
            samples += [(arrivals[c] - sent) * 1000 for c in names if c in arrivals]
    ex.shutdown()
    node.destroy_node()
    rclpy.try_shutdown(context=context)
    return samples


def probe_command(names: list[str], rounds: int, with_goals: bool) -> list[str]:
    """This script as the probe (``--measure``): a process of its own, like the node under test."""
    return [sys.executable, __file__, '--measure', '--cubes', str(len(names)), '--rounds', str(rounds)] + \
        ['--goals'] * with_goals


def run_probe(cmd: list[str], env: dict | None, rounds: int) -> list[float]:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120 + rounds * ROUND_S * 2)
    if out.returncode != 0:
        raise SystemExit(f'the probe failed: {out.stderr.strip()[-500:]}')
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_phase(cmd: list[str], names: list[str], rounds: int, with_goals: bool) -> list[float]:
    """The node under test and the probe, both on this machine."""
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        return run_probe(probe_command(names, rounds, with_goals), None, rounds)
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=5)


def run_lab_phase(lab: LabNetwork, cmd: list[str], names: list[str], rounds: int, with_goals: bool) -> list[float]:
    """The node under test on host b, the probe on host a."""
    env = lab.env(int(os.environ['ROS_DOMAIN_ID']))
    lab.start('b', cmd, env)
    try:
        return run_probe(lab.command('a', probe_command(names, rounds, with_goals)), env, rounds)
    finally:
        lab.stop_processes()            # SIGINT, then SIGKILL whatever is left; waits for the child


def report(label: str, ms: list[float], expected: int) -> float:
    med = statistics.median(ms) if ms else math.nan
    p90 = statistics.quantiles(ms, n=10)[-1] if len(ms) >= 10 else math.nan
    print(f'{label:<10} median {med:6.2f} ms   p90 {p90:6.2f} ms   ({len(ms)}/{expected} commands)')
    return med


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cubes', type=int, default=10)
    parser.add_argument('--rounds', type=int, default=40)
    parser.add_argument('--blocks', type=int, default=4, help='rounds are run in this many blocks, one host and '
                                                                'across hosts taking turns (default 4)')
    parser.add_argument('--no-lab', dest='lab', action='store_false', help='skip the figures across two hosts')
    parser.add_argument('--echo', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--measure', action='store_true', help=argparse.SUPPRESS)   # the probe, inside host a
    parser.add_argument('--goals', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cubes < 1 or args.rounds < 1 or args.blocks < 1:
        print('--cubes, --rounds and --blocks must be >= 1', file=sys.stderr)
        return 2
    names = [f'cube{i + 1}' for i in range(args.cubes)]
    if args.echo:
        return echo(names)
    if args.measure:
        print(json.dumps(measure(names, args.rounds, args.goals)))
        return 0
    os.environ.setdefault('ROS_DOMAIN_ID', str(200 + os.getpid() % 30))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    echo_cmd = [sys.executable, __file__, '--echo', '--cubes', str(args.cubes)]
    nav_cmd = [sys.executable, '-m', 'toio_navigator.nodes.navigator', '--ros-args',
               '-p', f'cubes:=[{",".join(names)}]', '-p', 'rate_hz:=4.0', '-p', 'stale_timeout_s:=1.0',
               '-p', 'tick_on_fresh_states:=true', '-p', 'markers_every:=1000']
    why_not = unavailable_reason() if args.lab else 'skipped (--no-lab)'
    lab = None
    if why_not is None:
        try:
            lab = LabNetwork(('a', 'b')).create()
        except LabError as exc:
            why_not = str(exc)
    # the phases take turns (one host, then across hosts, in blocks), so a machine getting busier halfway through
    # the run weighs on both figures alike
    blocks = min(args.blocks, args.rounds)
    per_block = [args.rounds // blocks + (k < args.rounds % blocks) for k in range(blocks)]
    ms: dict[tuple[str, str], list[float]] = {}
    try:
        for rounds in per_block:
            for label, cmd, goals in (('echo', echo_cmd, False), ('navigator', nav_cmd, True)):
                ms.setdefault((label, 'one'), []).extend(run_phase(cmd, names, rounds, goals))
                if lab is not None:
                    ms.setdefault((label, 'lab'), []).extend(run_lab_phase(lab, cmd, names, rounds, goals))
    finally:
        if lab is not None:
            lab.destroy()
    expected = args.cubes * args.rounds
    print(f'pose -> motor command over DDS, {args.cubes} cubes, {args.rounds} rounds in {blocks} blocks '
          f'(ROS_DOMAIN_ID {os.environ["ROS_DOMAIN_ID"]})')
    base = report('echo', ms['echo', 'one'], expected)
    nav = report('navigator', ms['navigator', 'one'], expected)
    print(f'ratio navigator / echo: {nav / base:.2f}')
    print(f'budget: median <= {BUDGET_MS:.0f} ms at 10 cubes: {"PASS" if nav <= BUDGET_MS else "FAIL"}')
    if lab is None:
        print(f'across two hosts: not measured ({why_not})')
        return 0
    print('across two hosts (probe on host a, node on host b, UDP through a virtual cable):')
    lab_base = report('echo', ms['echo', 'lab'], expected)
    lab_nav = report('navigator', ms['navigator', 'lab'], expected)
    print(f'ratio across hosts / one host: echo {lab_base / base:.2f}, navigator {lab_nav / nav:.2f}')
    return 0

if __name__ == '__main__':
    sys.exit(main())
