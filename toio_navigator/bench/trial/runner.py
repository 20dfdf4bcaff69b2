"""One closed-loop trial: a benchmark scenario driven by the navigator's own controller through simulated cubes.

The navigator side is exactly what the navigator node runs: :class:`SwarmController` with the node's parameter
files (config/navigator.yaml), stepped at ``rate_hz`` by a timer and, like the node with
``tick_on_fresh_states``, as soon as every live cube has reported (never faster than 0.8 periods); each state
carries the time the driver received it as its stamp. The cube side is the simulator: :class:`World` physics
(differential drive, motor lag, contacts) and the virtual cubes' firmware (0x02 durations, the 45 ms write rule,
ID notifications). Between them :mod:`.link` plays the driver and the radio, and the timing profile decides
latency, loss, jitter, noise and how late the navigator's host runs. No ROS, no wall clock: simulated time only.

Scenario coordinates are shifted onto a simulated mat as large as the scenario needs (:func:`place`); the
metrics are computed on the true positions in scenario coordinates with the benchmark's own functions.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

# the node's settings helpers live with the replay, which rebuilds the node's configuration the same way
from toio_navigator.bags.replay import default_parameter_files, read_parameter_files, settings_from_parameters
from toio_navigator.bench.metrics import MetricSetup, compute_metrics
from toio_navigator.bench.scenarios import Scenario
from toio_navigator.bench.trial.compute import Compute
from toio_navigator.bench.trial.diagnosis import diagnose
from toio_navigator.bench.trial.link import (
    ARRIVE,
    EMIT,
    NOTIFY,
    STATE,
    TICK,
    TIMER,
    WRITE,
    EventQueue,
    MotorLink,
    PositionFeed,
)
from toio_navigator.bench.trial.profiles import TimingProfile, streams
from toio_navigator.control.controller import LINK_CONNECTED, SwarmController
from toio_navigator.control.goals import TOWARDS
from toio_navigator.cube import protocol as pr
from toio_navigator.settings.driver import PARAMS as DRIVER_PARAMS
from toio_navigator.sim.mats import Mat
from toio_navigator.sim.virtual_cube import VirtualCubes
from toio_navigator.sim.world import World, WorldParams
from toio_navigator.units import UNITS_PER_S_PER_MOTOR_UNIT

PHYSICS_DT = WorldParams().dt   # s: the simulator's own step (50 Hz, as mat_sim runs it)
MAT_MARGIN = 60.0          # mat units around everything a scenario holds (the border's avoid zone is ~40)
MAT_ORIGIN = 45.0          # a shifted scenario's mat starts where the collection mat does
FRESH_TICK_FRACTION = 0.8  # the node never ticks sooner than this many periods after the last tick
STATE_DEPTH = 5            # states a busy navigator keeps per cube (its subscription's sensor-data QoS: last 5)


@dataclass
class Placement:
    """Where a scenario lies on its simulated mat: sim = scenario + offset."""
    offset: np.ndarray
    mat: Mat

    @property
    def rect(self) -> tuple[float, float, float, float]:
        m = self.mat
        return float(m.x_min), float(m.y_min), float(m.x_max), float(m.y_max)


def place(scenario: Scenario) -> Placement:
    """A mat covering the scenario's starts, goals and obstacles with :data:`MAT_MARGIN` to spare, shifted to
    positive coordinates (Position IDs are unsigned) only if needed."""
    pts = [scenario.starts, scenario.goals, scenario.segments.reshape(-1, 2)]
    if len(scenario.discs):
        c, r = scenario.discs[:, :2], scenario.discs[:, 2:3]
        pts += [c - r, c + r]
    pts = np.vstack(pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    offset = np.maximum(0.0, MAT_ORIGIN + MAT_MARGIN - lo)
    x0, y0 = np.floor(lo + offset - MAT_MARGIN).astype(int)
    x1, y1 = np.ceil(hi + offset + MAT_MARGIN).astype(int)
    return Placement(offset, Mat(f'trial_{scenario.name}', int(x0), int(y0), int(x1), int(y1)))


def navigator_setup(scenario: Scenario, placement: Placement, planner: str, overrides: dict | None = None):
    """(settings, params, handle, tick_on_fresh_states, config) of the navigator node for this scenario: the
    package's parameter files, then the scenario's task (cubes, mat, obstacles as walls, speed, goal tolerance, the
    disc the planners plan with; the border moved with the mat edges), then ``overrides`` (parameter name ->
    value). ``config``: a digest of the files' parameters and the overrides (a run is a function of them: records
    made with other ones say so). ValueError naming a bad override."""
    parameters = read_parameter_files(default_parameter_files())
    config = hashlib.sha256(json.dumps([parameters, overrides or {}], sort_keys=True, default=str).encode()
                            ).hexdigest()[:12]
    cubes = [f'cube{i}' for i in range(scenario.n_agents)]
    (cx0, cy0, cx1, cy1) = parameters.get('mat_rect', (45.0, 45.0, 455.0, 455.0))
    x0, y0, x1, y1 = placement.rect
    shift = np.array([x0 - cx0, x1 - cx1, y0 - cy0, y1 - cy1])      # each mat edge moves by its own amount
    walls = scenario.walls().copy()
    walls[:, [0, 2]] += placement.offset[0]
    walls[:, [1, 3]] += placement.offset[1]
    task = dict(cubes=cubes, planner=planner, mat_rect=[x0, y0, x1, y1], walls=walls.ravel().tolist(),
                max_speed=scenario.max_speed / UNITS_PER_S_PER_MOTOR_UNIT, tolerance=scenario.goal_tolerance)
    border = parameters.get('border') or []
    if len(border) == 5:
        task['border'] = [border[0], *(np.asarray(border[1:], float) + shift).tolist()]
    parameters.update(task)
    settings, params, handle = settings_from_parameters(parameters, cubes, overrides)
    settings.body_radius = scenario.agent_radius
    (hx0, hx1), (hy0, hy1) = handle.border_x, handle.border_y
    handle = replace(handle, border_x=(hx0 + shift[0], hx1 + shift[1]), border_y=(hy0 + shift[2], hy1 + shift[3]))
    settings.check()
    return settings, params, handle, bool(parameters.get('tick_on_fresh_states', True)), config


@dataclass
class TrialResult:
    record: dict                         # the JSON record (see :func:`run_trial`)
    trajectory: np.ndarray               # (K+1, N, 2) true positions, scenario coordinates, every scenario.dt
    step_ms: np.ndarray                  # wall time of every navigator tick
    simulated_s: float = 0.0
    wall_s: float = 0.0
    compute_cpu_s: float = 0.0           # CPU seconds the navigator's ticks took in this process


class ClosedLoop:
    """The simulated cubes, the link and the navigator host of one run."""

    def __init__(self, scenario: Scenario, planner: str, profile: TimingProfile, seed: int,
                 overrides: dict | None = None, compute: str | Compute = 'modelled') -> None:
        """``compute``: how the navigator's compute is charged (a mode of compute.MODES, or a Compute)."""
        profile.check()
        self.compute = compute if isinstance(compute, Compute) else Compute(compute, planner)
        self.scenario, self.profile = scenario, profile
        self.placement = place(scenario)
        settings, params, handle, self.tick_on_fresh, self.config = navigator_setup(scenario, self.placement, planner,
                                                                                    overrides)
        self.period = 1.0 / settings.rate_hz
        self.rng = streams(seed, scenario.seed)
        off = self.placement.offset
        starts, goals = scenario.starts + off, scenario.goals + off
        heading = np.arctan2(goals[:, 1] - starts[:, 1], goals[:, 0] - starts[:, 0])
        world_params = WorldParams(dt=PHYSICS_DT, command_delay=0.0, position_noise=profile.position_noise)
        noise_seed = int(self.rng['position_noise'].integers(2 ** 63))
        self.world = World(np.column_stack([starts, heading]), mat=self.placement.mat, params=world_params,
                           seed=noise_seed)
        self.arrival = 0.0
        self.firmware = VirtualCubes(self.world, arrival_clock=lambda: self.arrival)
        for cube in self.firmware.cubes:
            cube.connect()
        self.feed = PositionFeed(self.firmware, profile.notify_period, profile.notify_jitter, profile.notify_loss,
                                 self.rng['notify_interval'], self.rng['notify_loss'])
        every_step = pr.ConfigWrite(pr.ConfigCommand.ID_NOTIFICATION, (1, pr.ID_ALWAYS)).encode()
        for cube in self.firmware.cubes:     # a reading every physics step; the profile samples them
            cube.write(pr.Characteristic.CONFIGURATION, every_step)
        self.now = 0.0
        self.controller = SwarmController(settings, params, handle, clock=lambda: self.now)
        self.compute.attach(self.controller.planner, clock=lambda: self.now)
        self.events = EventQueue()
        self.link = MotorLink(self.firmware, self.events, _driver_min_interval(), profile.write_latency,
                              profile.write_loss, self.rng['write_latency'], self.rng['write_loss'],
                              self._set_arrival)
        self.cubes = settings.cubes
        for i, cube in enumerate(self.cubes):
            reason = self.controller.set_goal(cube, 1, float(goals[i, 0]), float(goals[i, 1]), TOWARDS, 0.0, 0.0)
            if reason:
                raise ValueError(f'scenario {scenario.name!r}: the navigator refuses {cube}\'s goal: {reason}')
            self.events.push(self.feed.next_interval() * self.rng['notify_interval'].random(), NOTIFY, i)
        self.events.push(self.period, TIMER)
        self.fresh: set[int] = set()
        self.last_tick = -math.inf
        self.tick_due = False           # a tick is decided but has not run yet (a late host)
        self.busy_until = -math.inf     # the navigator computes a tick until then
        self.waiting = [deque() for _ in self.cubes]   # states the busy navigator has not read yet, per cube
        self.states_dropped = 0
        self.stall = self._next_stall(0.0)
        self.step_ms: list[float] = []
        self.ticks = self.stalls = 0

    # ---- the navigator host
    def _set_arrival(self, t: float) -> None:
        self.arrival = t

    def _want_tick(self) -> None:
        """The node decides to tick (timer or fresh states): at once, or as late as the profile's host runs."""
        if self.tick_due or self.now - self.last_tick < FRESH_TICK_FRACTION * self.period:
            return
        late = self.profile.tick_late_periods
        if late <= 0:
            self._tick()
            return
        self.tick_due = True
        self.events.push(self.now + self.rng['tick_late'].uniform(0.0, late * self.period), TICK)

    def _next_stall(self, after: float) -> tuple[float, float]:
        p = self.profile
        if p.stall_s <= 0:
            return math.inf, math.inf
        start = after + self.rng['stall'].uniform(*p.stall_every)
        return start, start + p.stall_s

    def _host_busy_until(self, t: float) -> float:
        """If the navigator process is computing a tick or stalled at ``t``: when it is free again; else ``t``."""
        return self._stalled_until(max(t, self.busy_until))

    def _stalled_until(self, t: float) -> float:
        """If the navigator process is stalled at ``t``: when it runs again; else ``t``."""
        while t >= self.stall[1]:
            self.stall = self._next_stall(self.stall[1])
            self.stalls += 1
        return self.stall[1] if t >= self.stall[0] else t

    def _tick(self) -> None:
        self.tick_due = False
        self.last_tick = self.now
        self.fresh.clear()
        started = time.perf_counter()
        decisions, charge = self.compute.run_tick(self.controller.step, self.now, self.controller.planner,
                                                  len(self.cubes))
        self.step_ms.append((time.perf_counter() - started) * 1e3)
        self.ticks += 1
        if charge > 0.0:               # its commands leave once it is computed; everything else waits meanwhile
            self.busy_until = self.now + charge
            self.events.push(self.busy_until, EMIT, -1, (decisions, self.now))
        else:
            self._emit(decisions, self.now)

    def _emit(self, decisions, stamp: float) -> None:
        """A tick's motor commands go to the driver now, stamped with the tick's start."""
        for i, cmd in enumerate(decisions):
            if cmd.motor is not None:
                self.link.submit(i, cmd.motor[0], cmd.motor[1], cmd.motor[2], self.now, stamp)

    def _on_state(self, i: int, reading) -> None:
        x, y, theta, on_mat, stamp = reading
        self.controller.update_state(self.cubes[i], x, y, theta, on_mat, LINK_CONNECTED, int(round(stamp * 1e9)))
        if not self.tick_on_fresh:
            return
        self.fresh.add(i)
        # the node's test (every live cube has reported since the last tick), stopping at the first live cube
        # still missing: what controller.live() computes, for one cube at a time
        c, timeout = self.controller, self.controller.settings.stale_timeout_s
        for j in range(len(self.cubes)):
            if j not in self.fresh and self.now - c.stamp[j] <= timeout and c.link_ok[j]:
                return
        self._want_tick()

    def _on_timer(self) -> None:
        self._want_tick()
        # the timer keeps its grid: after a stall it fires once, then on the next slot
        self.events.push((math.floor(self.now / self.period + 1e-9) + 1) * self.period, TIMER)

    def _handle(self, when: float, kind: int, cube: int, payload) -> None:
        self.now = when
        if kind == ARRIVE:
            self.link.on_arrive(cube, payload, when)
        elif kind == WRITE:
            self.link.on_write(cube, when)
        elif kind == EMIT:                  # the end of a tick's compute (a stall meanwhile delays it further)
            ready = self._stalled_until(when)
            if ready > when:
                self.events.push(ready, kind, cube, payload)
            else:
                self._emit(*payload)
        elif kind == NOTIFY:
            reading = self.feed.take(cube, self.link.counters)
            self.events.push(when + self.feed.next_interval(), NOTIFY, cube)
            if reading is not None:     # the driver stamps it on reception; the navigator may take it later
                self._receive(cube, (*reading, when))
        else:                           # STATE, TIMER or TICK: the navigator process must be running
            ready = self._host_busy_until(when)
            if ready > when:
                self.events.push(ready, kind, cube, payload)
            elif kind == STATE:
                self._on_state(cube, self.waiting[cube].popleft())
            elif kind == TIMER:
                self._on_timer()
            else:
                self._tick()

    def _receive(self, i: int, reading: tuple) -> None:
        """A state reaches the navigator's subscription: read now, or queued (in order, the last STATE_DEPTH
        per cube: older ones are dropped, as the subscription's queue drops them) until the navigator is free."""
        ready = self._host_busy_until(self.now)
        queue = self.waiting[i]
        if ready == self.now and not queue:
            self._on_state(i, reading)
            return
        if len(queue) == STATE_DEPTH:
            queue.popleft()
            self.states_dropped += 1
        else:
            self.events.push(ready, STATE, i)
        queue.append(reading)

    # ---- the run
    def run(self, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Run until every cube is at its goal at a frame or the time limit; the true positions (K+1, N, 2) in
        scenario coordinates, one frame per scenario.dt (between two physics steps, interpolated)."""
        sc = self.scenario
        off, goals = self.placement.offset, sc.goals
        tol2 = sc.goal_tolerance ** 2
        w = self.world
        before = np.column_stack([w.x, w.y]) - off
        frames = [before]
        step = 0
        while len(frames) <= sc.n_steps and not np.all(np.sum((frames[-1] - goals) ** 2, axis=1) <= tol2):
            step += 1
            while (event := self.events.pop_before(step * PHYSICS_DT - 1e-9)) is not None:
                self._handle(*event)
            w.step(PHYSICS_DT)
            after = np.column_stack([w.x, w.y]) - off
            while len(frames) <= sc.n_steps and len(frames) * sc.dt <= step * PHYSICS_DT + 1e-9:
                share = (len(frames) * sc.dt - (step - 1) * PHYSICS_DT) / PHYSICS_DT
                frames.append(before + share * (after - before))
                if progress is not None:
                    progress(len(frames) - 1, sc.n_steps)
                if np.all(np.sum((frames[-1] - goals) ** 2, axis=1) <= tol2):
                    break
            before = after
        return np.stack(frames)


def _driver_min_interval() -> float:
    """The cube driver's default gap between two motor writes (its coalescing writer), seconds."""
    # the driver's parameter table is plain Python (no rclpy); its default is what a bringup runs with
    return float(DRIVER_PARAMS['min_motor_interval_ms'].default) / 1000.0


def run_trial(scenario: Scenario, planner: str, profile: TimingProfile, seed: int, overrides: dict | None = None,
              progress: Callable[[int, int], None] | None = None, compute: str | Compute = 'modelled') -> TrialResult:
    """Run one (scenario, seed) with the navigator's compute charged as ``compute`` says (compute.MODES). The
    record holds the benchmark's metrics (success, collisions, makespan from the goals, ..., computed on the true
    positions), ``failure`` (None or why), the compute charged, when the first cube was told to move, what the
    link did and the seed; wall-clock and CPU figures are kept out of it so that a seed gives the same record bit
    for bit (unless ``compute`` is 'measured')."""
    started = time.perf_counter()
    loop = ClosedLoop(scenario, planner, profile, seed, overrides, compute)
    traj = loop.run(progress)
    wall = time.perf_counter() - started
    metrics = compute_metrics(traj, MetricSetup.from_scenario(scenario), name=scenario.name)
    for key in [k for k, v in metrics.items() if v is None and k.startswith(('ms_', 'us_', 'b0_', 'cost_'))]:
        del metrics[key]                 # the benchmark's wall-time fields: not part of a deterministic record
    record = dict(name=scenario.name, category=scenario.category, seed=int(seed), planner=planner,
                  profile=profile.name)
    record.update((k, v) for k, v in metrics.items() if k != 'name')
    record['failure'] = diagnose(traj, scenario, metrics, loop.cubes)
    first = loop.link.first_motion
    record['first_motion_s'] = None if first is None else round(float(first), 9)
    record['config'] = loop.config
    record['compute'] = loop.compute.mode
    plans_s = loop.compute.plans_s(loop.controller.planner)
    record['compute_s'] = round(loop.compute.charged_s + plans_s, 9)
    record['simulated_s'] = round(float(loop.world.time), 9)
    record['link'] = loop.link.counters.as_dict()
    planner_ = loop.controller.planner
    record['navigator'] = dict(ticks=loop.ticks, stalls=loop.stalls, states_dropped=loop.states_dropped,
                               sidesteps=int(loop.controller.sidesteps.sum()),
                               longest_tick_s=round(loop.compute.longest_s, 9), plans_s=round(plans_s, 9),
                               plans=int(getattr(planner_, 'plans', 0)))
    host = getattr(planner_, 'host', None)        # the CPU of a planning host's jobs is counted there
    cpu = loop.compute.cpu_s + float(getattr(host, 'compute_cpu_s', 0.0))
    return TrialResult(record, traj, np.asarray(loop.step_ms), float(loop.world.time), wall, cpu)


def out_of_memory_record(scenario: Scenario, planner: str, profile: TimingProfile, seed: int, compute: str,
                         limit_gb: float) -> dict:
    """The record of a run that raised MemoryError under a memory limit: failed, with what is known of it."""
    return dict(name=scenario.name, category=scenario.category, seed=int(seed), planner=planner,
                profile=profile.name, n_agents=scenario.n_agents, success=False, success_time=None,
                success_collision_free=False, fraction_arrived=0.0, collisions=0, obstacle_collisions=0,
                makespan=None, failure=f'out of memory: the run needed more than its {limit_gb:g} GB address space',
                first_motion_s=None, compute=compute, compute_s=None)
