#!/usr/bin/env python3
"""What the web console costs: its process's CPU with N cubes, with no page open and with one page open in headless
Chromium, and the views per second that page receives.

A swarm stand-in publishes what a bringup of N cubes publishes for the console (every cube's CubeState at 50 Hz and
NavResult at 20 Hz, the cubes driving circles; ``toio-nav bringup`` itself would need N driver processes, which
would leave nothing to measure on two cores) in one process; the console runs as ``ros2 run`` starts it, in its
own process. CPU is read from /proc (user + system time of the console's process over the window). Chromium's own
CPU is given apart: it runs on the viewer's machine, not the navigator's.

    python tools/bench/web_console_cpu.py                    # 16 cubes, 20 s per phase
    python tools/bench/web_console_cpu.py --cubes 8 --seconds 10
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'test'))
TICK = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pids) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])       # utime, stime
    return total / TICK


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            todo += [int(c) for c in Path(f'/proc/{p}/task/{p}/children').read_text().split()]
        except OSError:
            pass
    return out


def swarm(n: int, seconds: float) -> int:
    """The publisher process: N cubes' states (50 Hz) and results (20 Hz) until ``seconds`` pass."""
    import rclpy  # noqa: PLC0415 only this mode needs ROS
    from rclpy.node import Node  # noqa: PLC0415 see above
    from rclpy.signals import SignalHandlerOptions  # noqa: PLC0415 see above

    from toio_navigator.msg import CubeState, NavResult  # noqa: PLC0415 see above
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = Node('web_bench_swarm')
    names = [f'cube{i + 1}' for i in range(n)]
    states = [node.create_publisher(CubeState, f'{c}/state', 10) for c in names]
    results = [node.create_publisher(NavResult, f'{c}/nav_result', 10) for c in names]
    t0, k = time.monotonic(), 0
    while time.monotonic() - t0 < seconds and not stopped:
        t = time.monotonic() - t0
        for i, c in enumerate(names):
            a = t * 0.5 + i * 2 * math.pi / n
            msg = CubeState(cube=c, x=250 + 150 * math.cos(a), y=250 + 150 * math.sin(a), theta=a + math.pi / 2,
                            on_mat=True, battery=90, link_state=2)
            msg.header.stamp = node.get_clock().now().to_msg()
            states[i].publish(msg)
            if k % 5 == 0 or k % 5 == 2:
                results[i].publish(NavResult(cube=c, goal_id=1, active=True, waypoint_x=250.0, waypoint_y=250.0,
                                             goal_x=250.0, goal_y=100.0, mode='AVOID', planner='hlavoid'))
        k += 1
        time.sleep(max(0.0, t0 + k * 0.02 - time.monotonic()))
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def measure(pids, seconds: float) -> float:
    c0, w0 = cpu_seconds(pids), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds(pids) - c0) / (time.monotonic() - w0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cubes', type=int, default=16)
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--swarm', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.swarm:
        return swarm(args.cubes, args.seconds)
    env = dict(os.environ, ROS_DOMAIN_ID=os.environ.get('ROS_DOMAIN_ID', '231'),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    tmp = Path(tempfile.mkdtemp(prefix='web_bench_'))
    cubes = ', '.join(f'cube{i + 1}' for i in range(args.cubes))
    total = 4 * args.seconds + 30
    pub = subprocess.Popen([sys.executable, __file__, '--swarm', '--cubes', str(args.cubes), '--seconds', str(total)],
                           env=env)
    console = subprocess.Popen([sys.executable, '-m', 'toio_navigator.nodes.web_console', '--ros-args', '-p',
                                f'cubes:=[{cubes}]', '-p', 'port:=0', '-p', f'address_file:={tmp / "address"}'],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        while not (tmp / 'address').exists():
            time.sleep(0.1)
        time.sleep(3.0)
        idle = measure([console.pid], args.seconds)
        print(f'{args.cubes} cubes, no page open: web console {idle:.1f} % of a core', flush=True)
        from support.browser import MISSING, Browser  # noqa: PLC0415 the browser tests' Chromium
        if MISSING:
            print(f'no page measured: {MISSING}')
            return 0
        browser = Browser()
        try:
            page = browser.page((tmp / 'address').read_text().strip())
            page.wait_for_function(f'window.toioConsole.view && window.toioConsole.view.cubes.filter('
                                   f'c => c.health === "ok").length === {args.cubes}', timeout=60000)
            time.sleep(2.0)
            chromium = [p for p in descendants(os.getpid()) if p not in (os.getpid(), console.pid, pub.pid)]
            views = page.evaluate('window.toioConsole.views')
            c0 = cpu_seconds(chromium)
            shown = measure([console.pid], args.seconds)
            rate = (page.evaluate('window.toioConsole.views') - views) / args.seconds
            browser_cpu = 100.0 * (cpu_seconds(chromium) - c0) / args.seconds
        finally:
            browser.close()
        print(f'{args.cubes} cubes, one page open: web console {shown:.1f} % of a core, {rate:.1f} views/s '
              f'received by the page; headless Chromium and its driver {browser_cpu:.1f} % (the viewer\'s '
              'machine)', flush=True)
    finally:
        console.terminate()
        pub.terminate()
        console.wait(10)
        pub.wait(10)
    return 0


if __name__ == '__main__':
    sys.exit(main())
