"""`coordinated`: a plan for the whole swarm at once, carried out so that no timing can make it dead-lock
(docs/planners.md).

One concept per module of ``planners/coordinated``:

* ``lattice``, ``graph``: the mat as a lattice whose vertices lie a pair distance from every edge they are not
  on, each cube's start and goal as vertices of its own;
* ``pibt``, ``lacam``, ``prioritized``: the searches (LaCAM over PIBT for a first complete plan; priority-based
  search for a few cubes; large-neighbourhood search to improve a plan);
* ``search``, ``host``: those searches as anytime jobs on a planning host beside the ticks (a first plan fast,
  improvements adopted as splices where they leave what the cubes do untouched);
* ``dependencies``, ``straighten``: the plan as an action dependency graph on straightened paths;
* ``execution``: progress, limits and the keys that order the cubes (the invariant);
* ``driving``, ``safety``: real cubes driven within their limits, and the layer that keeps them apart without
  ever adding a wait the plan does not have.

The planner never searches inside a tick: it submits jobs to :attr:`CoordinatedPlanner.host` (default: a
:class:`host.ThreadHost` for a live navigator, ``plan_in_background``; an :class:`host.InlineHost` otherwise).
A trial that charges the planner's compute sets a :class:`host.ModelledHost` there before the first tick. Until
the first plan is adopted the cubes stand; ``status`` says what the planner is doing.
"""
from __future__ import annotations

import math

import numpy as np

from toio_navigator.planners.common import pairs_within
from toio_navigator.planners.coordinated import safety, search
from toio_navigator.planners.coordinated.driving import Driver
from toio_navigator.planners.coordinated.execution import TINY, Execution, point_at
from toio_navigator.planners.coordinated.host import (
    BUDGET_OUT,
    IDLE,
    IMPROVING,
    PLANNING,
    InlineHost,
    PlanJob,
    ThreadHost,
)
from toio_navigator.planners.coordinated.lattice import Lattice
from toio_navigator.planners.coordinated.params import CoordinatedParams, Internal
from toio_navigator.planners.interface import PlannerOutput, SwarmState

K = Internal
UNSEEN = -1e3            # positions below this are the controller's "never seen" placeholder
MEMORY_BYTES = 1 << 30   # a live navigator's planning stops at this resident memory (the best plan is kept)
FRUITLESS = 4            # improvements in a row that found nothing better before the planner stops improving


class CoordinatedPlanner:
    """The LocalPlanner interface over search + dependency graph + execution (module docstring)."""
    name = 'coordinated'
    resolves_deadlocks = True     # the controller's side-step breaker must leave its cubes alone
    plan_in_background = False    # a live navigator's controller sets this: plans are made in a worker thread

    def __init__(self, params: CoordinatedParams | None = None, **overrides) -> None:
        self.params = params or CoordinatedParams(**overrides)
        self.params.check()
        self.host = None              # the planning host (None: chosen at the first plan, see the module docstring)
        self.reset(0)

    def reset(self, n: int, seed: int = 0) -> None:
        self.n, self.seed = n, seed
        self.clock = 0.0
        self.last_motion = -math.inf
        self.replan = True            # plan at the next chance
        self.planned_at = 0.0
        self.key = None               # what the current plan was made for
        self._sizes = np.zeros(n)     # the cubes' radii then
        self.agents = np.zeros(0, np.int64)
        self.current: search.Planned | None = None
        self.execution: Execution | None = None
        self._lattice: tuple[bytes, Lattice] | None = None
        self.plans = 0                # first plans adopted
        self.switches = 0             # improvements adopted
        self.reasons: list[tuple[float, str]] = []   # (time, why) of every plan made again
        self.best_progress, self.since_progress = 0.0, 0.0
        self.last: dict = {}
        self._sent: list[tuple[float, np.ndarray]] = []   # (clock, speed limits) of the recent ticks
        self._moved: list[tuple[float, np.ndarray]] = []  # (clock, progress along the paths) of those ticks
        self.driver = Driver(self.params, n)
        self.make_way: set[int] = set()          # rows of the plan the safety layer found in a first cube's way
        self._job: dict | None = None            # the job on the host: kind, tag, submitted (clock), problem, ...
        self.planning_s = 0.0                    # work (s) spent planning for the current goals
        self.improving = False
        self._fruitless = 0
        self._lead_s = 2.0 * K.step_s            # how long an improvement took last (where the next one commits)
        self._budget_out = False

    @property
    def status(self) -> str:
        """'planning' (no plan yet), 'improving' (a plan under way, a better one being searched), 'budget_out'
        (the time for planning these goals is spent: the best plan found is kept) or 'idle'."""
        if self.execution is None or self.replan:
            return PLANNING if self._job is not None else IDLE
        if self._budget_out:
            return BUDGET_OUT
        return IMPROVING if self._job is not None else IDLE

    def _host(self):
        if self.host is None:
            self.host = ThreadHost(memory_bytes=MEMORY_BYTES) if self.plan_in_background else InlineHost()
        return self.host

    # ------------------------------------------------------------------------------------------------ one tick
    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        n = state.n
        if n != self.n:
            self.reset(n, self.seed)
        if state.elapsed is not None:
            dt = state.elapsed        # its clock and timers run on the time that passed, not on ticks
        self.clock += dt
        pos = np.asarray(state.pos, float)
        radius = np.broadcast_to(np.asarray(state.radius, float), (n,)).copy()
        seen = np.all(pos > UNSEEN, axis=1)
        active = np.asarray(state.active, bool) & seen
        hold = PlannerOutput(velocity=np.zeros((n, 2)), waypoint=pos.copy(), speed_limit=np.zeros(n),
                             collision=_overlapping(pos, radius, seen))
        if not active.any() or (self.execution is None and not seen.all() and self.clock < K.startup):
            return hold
        closed = state.latency > 0.0
        held = self._held(active, seen)
        # (a held cube's radius grows while it is out: the controller's room for where it may have got to)
        key = self._key(state, active | held, np.where(held, self._sizes, radius))
        if key != self.key:
            self._again('goals or cubes changed')
        if self.replan:
            held[:] = False
            key = self._key(state, active, radius)      # a new plan is for the cubes active now
            if closed and self.clock - self.last_motion < K.rest_time:
                return hold                   # everyone stops; plan when they stand still
            if not self._first_plan(state, active, radius, key, closed):
                return hold                   # they stand while it is made
        else:
            self._improve(state, closed)
        ex = self.execution
        ex.track(pos[self.agents], slack=K.track_slack if closed else 1e-6)
        if closed and (ex.deviation > K.deviation).any():
            self._again(f'cube{int(self.agents[np.argmax(ex.deviation)])} {ex.deviation.max():.0f} u off its path')
            return hold
        out = self._closed_tick(state, dt, pos, radius, held, hold) if closed else \
            self._ideal_tick(state, dt, pos, held, hold)
        return out

    def _closed_tick(self, state: SwarmState, dt: float, pos, radius, held, out: PlannerOutput) -> PlannerOutput:
        """The tick of real cubes: limits from the dependency graph, speeds that stop within them whatever is under
        way, waypoints to steer by, and the safety layer under them."""
        p, ex, idx, n = self.params, self.execution, self.agents, state.n
        vmax = np.asarray(state.max_speed, float)[idx]
        age = np.zeros(n) if state.age is None else np.asarray(state.age, float)
        react = age[idx] + p.link_latency + state.command_s + K.motor_lag
        before = (age[idx] + p.link_latency + K.motor_lag, state.command_s + K.motor_lag)
        gate_before = (age[idx] + K.gate_latency + K.motor_lag, before[1])
        # commands still on their way or running: those sent within a latency + a duration
        window = p.link_latency + state.command_s
        last = state.sent if state.sent is not None else np.hypot(*np.asarray(state.vel, float).T)
        self._sent.append((self.clock - dt, np.asarray(last, float)))
        self._sent = [(t, v) for t, v in self._sent if self.clock - t < window + 1e-9]
        limit = ex.limits(pos[idx], vmax * react + p.lookahead, self._onward(ex, window))
        self._watch_progress(ex, dt)
        running = np.max([v for _t, v in self._sent], axis=0) if self._sent else np.zeros(n)
        heading = np.asarray(state.heading, float)[idx]
        # where a turning cube will be heading when the next command takes effect (it turns on meanwhile)
        rate = self.driver.turn_rate(idx, heading, self.clock - age[idx], n)
        later = heading + np.clip(rate * before[0], -K.turn_ahead, K.turn_ahead)
        recent = [v for t, v in self._sent if self.clock - t < p.link_latency + dt + 1e-9]
        sending = np.max(recent, axis=0) if recent else np.zeros(n)
        graph = self.current.graph
        speed, waypoint, back = self.driver.drive(ex, graph.lattice.walls, graph.D, pos[idx], heading, later, limit,
                                                  vmax, react, sending[idx], gate_before, self.make_way)
        # the commands under way drive each cube the way it was last told to (forwards or backwards)
        backward = np.zeros(n, bool)
        backward[idx] = self.driver.backward
        everyone = np.asarray(state.heading, float) + np.where(backward, math.pi, 0.0)
        in_flight = running[:, None] * np.column_stack([np.cos(everyone), np.sin(everyone)])
        flip = np.where(back, math.pi, 0.0)      # from here on: the way each cube drives, not its heading
        key = np.full(n, math.inf)
        key[idx] = ex.key()
        driven = speed
        speed, make_way = safety.keep_apart(pos, idx, waypoint, speed, (np.asarray(state.vel, float), in_flight),
                                            radius, (heading + flip, later + flip), running[idx], before, key,
                                            p.apart)
        where = {int(r): k for k, r in enumerate(idx.tolist())}
        self.make_way = {where[r] for r in make_way if r in where}
        for towards in (heading + flip, later + flip):
            speed = safety.keep_off_walls(graph.lattice.walls, pos[idx], towards, speed, radius[idx], react, p.apart)
        speed[held[idx]] = 0.0
        out.speed_limit[idx] = speed
        out.waypoint[idx] = waypoint
        out.backward = backward
        if (speed > 0).any():
            self.last_motion = self.clock
        self.last = dict(execution=ex, progress=ex.progress.copy(), limit=limit, agents=idx,
                         why=list(self.driver.why), key=key, safety=np.nonzero(speed < driven)[0])
        return out

    def _ideal_tick(self, state: SwarmState, dt: float, pos, held, out: PlannerOutput) -> PlannerOutput:
        """The tick of ideal discs: each follows its path exactly, as far as its limit, each step ending at the next
        vertex at the latest."""
        ex, idx = self.execution, self.agents
        vmax = np.asarray(state.max_speed, float)[idx]
        limit = ex.limits(pos[idx], vmax * dt + self.params.lookahead)
        self._watch_progress(ex, dt)
        step_len = np.clip(limit - ex.progress, 0.0, vmax * dt)
        dep = ex.deps
        for k, i in enumerate(idx):
            arcs = dep.arcs[k]
            corner = arcs[min(int(arcs.searchsorted(ex.progress[k] + 1e-9, side='right')), len(arcs) - 1)]
            target = point_at(dep.paths[k], arcs, min(ex.progress[k] + step_len[k], corner))
            out.velocity[i] = (target - pos[i]) / dt
            out.waypoint[i] = point_at(dep.paths[k], arcs, float(limit[k]))
        out.velocity[held] = 0.0
        out.speed_limit[idx] = np.hypot(*out.velocity[idx].T)
        self.last = dict(execution=ex, progress=ex.progress.copy(), limit=limit, agents=idx)
        return out

    def _onward(self, ex: Execution, window: float) -> np.ndarray:
        """How far beyond its progress each cube is counted on to get: ``onward_time`` at the slowest command still
        under way (all of them drive it on), not beyond the limit it was given last tick, and only while it was
        measured to move along its path at least half as far as those commands drove it."""
        idx = self.agents
        if self.last.get('execution') is not ex:
            self._moved = []                  # a new plan: nobody is under way along it yet
        self._moved = [(t, s) for t, s in self._moved if self.clock - t < window + 1e-9]
        self._moved.append((self.clock, ex.progress.copy()))
        if len(self._moved) < 2 or not self._sent:
            return np.zeros(len(idx))
        slowest = np.min([v for _t, v in self._sent], axis=0)[idx]
        since, then = self._moved[0]
        moving = ex.progress - then >= 0.5 * slowest * (self.clock - since)
        return np.clip(np.where(moving, np.minimum(slowest * K.onward_time, self.last['limit'] - ex.progress), 0.0),
                       0.0, None)

    def waits(self) -> dict[int, list[int]]:
        """Which cubes each cube is held for now by the plan (diagnostics: who holds whom; rows of the swarm)."""
        if self.execution is None:
            return {}
        return {int(self.agents[k]): [int(self.agents[j]) for j in js] for k, js in self.execution.waits().items()}

    # ------------------------------------------------------------------------------------------------ planning
    def _again(self, why: str) -> None:
        """Plan again (as soon as the cubes stand still), and say why in ``reasons``."""
        if not self.replan:
            self.reasons.append((round(self.clock, 3), why))
        self.replan = True

    def _held(self, active: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """(N,) the cubes of the plan being carried out that are not active now but were seen: out for a moment
        (the controller stops a cube whose states stopped coming). They stay in the plan, held where they are: its
        order holds whatever the delays. A cube out too long holds the others up until nobody progresses, and
        everyone plans again without it (``stall_time``)."""
        out = np.zeros(len(active), bool)
        if self.execution is not None and not self.replan:
            out[self.agents] = ~active[self.agents] & seen[self.agents]
        return out

    def _key(self, state: SwarmState, active: np.ndarray, radius: np.ndarray) -> bytes:
        """What a plan is made for: which cubes, their goals and radii, the walls."""
        goals = np.round(np.asarray(state.goal, float)[active] * 2.0) / 2.0
        return active.tobytes() + goals.tobytes() + np.asarray(state.walls, float).tobytes() + radius[active].tobytes()

    def _problem(self, state: SwarmState, active: np.ndarray, radius: np.ndarray, closed: bool) -> search.Problem:
        """A snapshot of what a first plan is for: the active cubes from where they are now."""
        p = self.params
        pos = np.asarray(state.pos, float)
        idx = np.nonzero(active)[0]
        r = float(radius[idx].max())
        distance = 2.0 * r + (p.loop_margin if closed else p.margin)
        others = np.nonzero(~active & np.all(pos > UNSEEN, axis=1))[0]
        goals = np.asarray(state.goal, float)[idx]
        if state.bounds is not None:
            area = tuple(float(v) for v in state.bounds)
        else:
            points = np.vstack([pos[idx], goals])
            room = 3.0 * distance / 0.8660254037844386
            area = (*np.floor((points.min(axis=0) - room) / room) * room,
                    *np.ceil((points.max(axis=0) + room) / room) * room)
        walls = np.asarray(state.walls, float).reshape(-1, 5).copy()
        return search.Problem(starts=pos[idx].copy(), goals=goals.copy(), radius=r, obstacles=pos[others].copy(),
                              obstacle_reach=distance + radius[others] - r, walls=walls,
                              area=tuple(float(v) for v in area), closed=closed,
                              speed=float(np.max(np.asarray(state.max_speed, float)[idx])), seed=self.seed + self.plans)

    def _lattice_key(self, problem: search.Problem) -> bytes:
        _d, spacing, clearance = search.spacing_of(problem, self.params)
        return problem.walls.tobytes() + np.array([*problem.area, spacing, clearance]).tobytes()

    def _first_plan(self, state: SwarmState, active: np.ndarray, radius: np.ndarray, key: bytes, closed: bool) -> bool:
        """True once a first plan for ``key`` is adopted; until then a job on the host makes it (submitted at the
        first call, dropped and made again for other goals)."""
        host = self._host()
        job = self._job
        if job is None or job['kind'] != 'first' or job['tag'] != key:
            problem = self._problem(state, active, radius, closed)
            cached = self._lattice[1] if self._lattice is not None and self._lattice[0] == self._lattice_key(
                problem) else None
            host.submit(PlanJob(search.first_plan(problem, self.params, cached), tag=key))
            self._job = job = dict(kind='first', tag=key, submitted=self.clock, problem=problem,
                                   idx=np.nonzero(active)[0], radius=radius.copy())
            self.planning_s = 0.0
        for update in host.poll():
            if update.final:
                self._job = None
                self.planning_s += update.work * 1e-6
            if update.plan is not None:
                self._adopt_first(update.plan, job, key, closed)
                return True
            if update.final:
                self.plans += 1               # nothing found: made again with another seed at the next tick
        return False

    def _adopt_first(self, made: search.Planned, job: dict, key: bytes, closed: bool) -> None:
        """Carry out a first plan from now on."""
        self._lattice = (self._lattice_key(job['problem']), made.lattice)
        self.problem = job['problem']
        self.current, self.agents, self.key = made, job['idx'], key
        self._sizes = job['radius']
        self.execution = Execution(made.deps, K.release if closed else 1e-9, K.stray if closed else 0.0)
        self.driver = Driver(self.params, len(self.agents))
        self.replan = False
        self.planned_at = self.clock
        self.plans += 1
        self.best_progress, self.since_progress = 0.0, 0.0
        self.improving, self._fruitless, self._budget_out = True, 0, False
        self.make_way = set()

    def _improve(self, state: SwarmState, closed: bool) -> None:
        """Collect improvements of the plan under way (adopted where they are consistent with what every cube has
        done: :meth:`_consistent`), and start the next one while there is time."""
        host = self._host()
        job = self._job
        if job is not None and job['kind'] == 'improve':
            for update in host.poll():
                # (a job's later plans go on from the same plan as its first: they replace each other)
                if update.plan is not None and self.current in (job['base'], job.get('made')) and \
                        self._consistent(update.plan):
                    self._adopt_splice(update.plan)
                    job['gained'], job['made'] = True, update.plan
                if update.final:
                    self._job = None
                    self.planning_s += update.work * 1e-6
                    self._lead_s = max(self.clock - job['submitted'], K.step_s)
                    self._fruitless = 0 if job.get('gained') else self._fruitless + 1
        budget = state.plan_time if state.plan_time > 0 else self.params.improve_time_s
        if self._job is not None or not self.improving:
            return
        if self.planning_s >= budget:
            self.improving, self._budget_out = False, True
            return
        commit = self._commit_step()
        if self._fruitless >= FRUITLESS or commit >= len(self.current.plan.configs) - 1:
            self.improving = False
            return
        job_work = min(budget - self.planning_s, K.improve_job_s) * 1e6
        host.submit(PlanJob(search.improvement(self.current, commit, self.problem, self.params,
                                               self.seed + 7919 * (self.plans + self.switches), job_work),
                            tag=self.key))
        self._job = dict(kind='improve', tag=self.key, submitted=self.clock, base=self.current)

    def _commit_step(self) -> int:
        """The plan step an improvement starts from: beyond the action every cube is in now by as many steps as
        the last improvement took."""
        dep, ex = self.current.deps, self.execution
        now = 0.0
        for i in range(dep.n):
            arcs = dep.arcs[i]
            k = min(int(arcs.searchsorted(ex.progress[i] + ex.release + TINY, side='left')), len(arcs) - 1)
            now = max(now, float(dep.times[i][k][0]))
        return int(now) + int(math.ceil(self._lead_s / K.step_s)) + 1

    def _consistent(self, made: search.Planned) -> bool:
        """May a splice be carried out from now on: no cube has gone past the part of its path it shares with the
        plan under way (the caller makes sure it goes on from that plan)?"""
        return bool(np.all(self.execution.progress <= made.shared + TINY))

    def _adopt_splice(self, made: search.Planned) -> None:
        old = self.execution
        ex = Execution(made.deps, old.release, old.stray)
        ex.progress, ex.last_pos, ex.deviation = old.progress.copy(), old.last_pos, old.deviation.copy()
        self.execution, self.current = ex, made
        self.last['execution'] = ex           # its progress goes on: the commands under way still count
        self.switches += 1

    def _watch_progress(self, ex: Execution, dt: float) -> None:
        """Plan again after ``stall_time`` without progress of any cube while some are not at their ends, or
        when every cube is at the end of a plan that does not reach every goal."""
        p = self.params
        total = float(ex.progress.sum())
        left = ex.ends - ex.progress > K.goal_reached
        if total > self.best_progress + 1.0 or not left.any():
            self.best_progress, self.since_progress = max(total, self.best_progress), 0.0
        else:
            self.since_progress += dt
        if self.since_progress >= p.stall_time:
            self._again(f'no progress for {self.since_progress:.1f} s')
        elif not left.any() and not self.current.plan.complete and self.clock - self.planned_at >= p.stall_time:
            self._again('the end of a plan that could not reach every goal')


def _overlapping(pos: np.ndarray, radius: np.ndarray, seen: np.ndarray) -> np.ndarray:
    out = np.zeros(len(pos), bool)
    rows = np.nonzero(seen)[0]
    if len(rows) > 1:
        q, o, d = pairs_within(pos[rows], 2.0 * float(radius[rows].max()))
        hit = d < radius[rows][q] + radius[rows][o]
        out[rows[q[hit]]] = True
    return out

