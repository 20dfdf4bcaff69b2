"""`coordinated`: a plan for the whole swarm at once, carried out so that no timing can break it (docs/planners.md).

Layers, each in ``planners/coordinated``:
* graph (``lattice``, ``graph``): the mat as a lattice of rows whose vertices lie at least the pair distance
  from every vertex and edge they do not belong to, fitted to the walls (every lane of a passage in its middle);
  each cube's start and goal are vertices of its own;
* plan (``lacam``, ``prioritized``): where every cube is after every step until all stand on their goals, found
  by a complete search over configurations (LaCAM, with PIBT proposing the next one; a real cube that turns stands
  a step first, as it stops to turn on the spot); where that plan is long for few cubes, priority-based search may
  find a shorter one (a pair takes the long way round a corridor); the most promising plan is shortened by
  planning each cube again around the others (``prioritized.shorten``), then groups of cubes together
  (``prioritized.improve``), for real cubes counting a move into a vertex another cube leaves in that step as
  more than a step (``follow_cost``: it sets off only once it has seen the other go); for real cubes a plan
  with far more steps than the longest route is made again with other seeds, the one with fewer steps kept
  (``long_plan``, ``remakes``), and that one improved by more groups (``loop_lns_rounds``);
* order (``schedule``): the plan kept only as who goes where first: each cube follows its own path and waits,
  at every place its way conflicts with another's, until the cube that comes first in the plan has passed;
  paths run straight across vertices of the plan wherever that keeps every such order (``straighten``);
* execution (``execution``, here): every tick each cube's progress is measured and its limit computed from the
  others' progress; a real cube gets the speed that lets it stop within its limit when its command takes
  effect after the state's age + a typical link latency (``gate_latency``), the commands sent just before it
  running until then (``gate_lost``), and runs its own duration + the motor's lag (the pair distance's margin
  takes a slower link or a lost write), and a waypoint along its path that cuts corners by at most
  ``corner_cut``; where its way turns back it backs out instead of turning round (``backward``); the safety
  layer under it reckons with the link's worst latency.

A cube that strays from its path, a change of goals or of the cubes that can move, or a long stop without
progress, stops everyone and plans again from where they are, once they are at rest. A cube of the plan out for a
moment (its states stopped coming) is held in the plan instead (``_held``).
``state.latency`` > 0 (the navigator's controller) means real cubes; 0 means the benchmark's ideal discs.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import pairs_within
from toio_navigator.planners.coordinated import lacam, prioritized, schedule
from toio_navigator.planners.coordinated.execution import Execution, point_at
from toio_navigator.planners.coordinated.graph import CoordinationGraph
from toio_navigator.planners.coordinated.lattice import ROW, Lattice, wall_gap
from toio_navigator.planners.interface import PlannerOutput, SwarmState

UNSEEN = -1e3        # positions below this are the controller's "never seen" placeholder
WALL_CHECKS = np.linspace(0.0, 1.0, 6)   # fractions of a cube's way ahead checked against the walls
REMAKE_SEEDS = 100_000   # seeds of a plan made again start this far from the first one's (which is kept as it was)
WAY_SEGMENTS = (4, 6)     # straight pieces of a cube's way in the safety layer: before its new command takes effect,
                          # and under it


@dataclass
class CoordinatedParams:
    # ideal discs (state.latency == 0) follow their paths exactly:
    margin: float = 2.0           # u two cubes' ways keep beyond r_i + r_j
    wall_margin: float = 1.0      # u kept from walls beyond the radius
    # real cubes (state.latency > 0) are measured with noise, steer late and cut corners:
    loop_margin: float = 13.0     # u: twice the tracking error (5) and the measurement noise (3)
    loop_wall_margin: float = 7.0
    link_latency: float = 0.16    # s from the navigator's command to the cube, at worst
    gate_latency: float = 0.10    # s the law that stops a cube before its gate's limit assumes instead: a typical
                                  # latency (0.16 there made cubes crawl up to every limit; the pair distance's
                                  # margin takes the rest); the safety layer keeps link_latency
    gate_lost: bool = False       # that law takes the cube to run, until the new command takes effect, the fastest
                                  # command sent within a link latency + a tick (one of them is running or comes
                                  # next), not also those a lost write leaves running for their duration (rare:
                                  # the pair distance's margin takes it); with them cubes stopped and went at every
                                  # limit. The safety layer keeps them all
    motor_lag: float = 0.05       # s the wheels run on after a stop
    onward_time: float = 0.3      # s a real cube whose commands still under way all drive it at v or more (and
                                  # that is seen to move) is counted on to go on at v, at most to its limit: the
                                  # gates of cubes waiting for it measure its way from there, so they set off as it
                                  # is about to pass, not a measurement and a link latency after it has passed. Less
                                  # than a waiting cube needs to reach that way (the pair distance at full speed,
                                  # 0.28 s, + its command's latency): with 0.45 s cubes raced into each other
                                  # (docs/trial.md); 0: from where it was measured
    stop_margin: float = 1.0      # u a real cube keeps before its limit (the pair distance has the margins)
    lookahead: float = 60.0       # u: waypoint distance along the path (CubeHandle runs full speed beyond ~40)
    corner_cut: float = 4.0       # u a waypoint round a corner lets a cube cut it by ...
    corner_cut_wide: float = 12.0  # u ... when no other cube is near that corner now or soon
    corner_speed_wide: float = 120.0   # u/s times (1 + cos(turn)) / 2 through such a corner
    corner_speed: float = 60.0    # u/s times the cosine of a turn: through a corner no faster (a real cube
                                  # steers late and would leave its path outwards); none through 90 degrees
    min_speed: float = 22.0       # u/s: a slower command does not move the wheels (dead zone): 0 or this
    handle_reach: float = 8.0     # u: CubeHandle's move-to-target stops this close to its waypoint
    creep_stop: float = 3.0       # u before its limit a creeping cube is stopped (it coasts about that far)
    align_full: float = math.radians(20.0)   # heading error to the waypoint with full speed ...
    align_stop: float = math.radians(65.0)   # ... and beyond which a real cube only turns: a 60-degree corner of
                                             # a way across the lattice's rows is driven on slowly while turning
                                             # (40 and 15: it stood until within 40; the crowds 0.3 s slower)
    turn_ahead: float = math.radians(90.0)   # at most this much turn is foreseen before a command takes effect
    turn_baseline: float = 0.06   # s between the two headings a turn rate is measured from (1 degree steps)
    steer_gap: float = 6.0        # u beyond CubeHandle's reach a waypoint is kept at least
    release: float = 6.0          # u: a real cube this close to where another waits for it counts as there
    stray: float = 5.0            # u a real cube may stray from its path before it holds others back
    startup: float = 0.3          # s the first plan waits for cubes not seen yet
    track_slack: float = 4.0      # u progress may run ahead of what a real cube was measured to move (noise)
    deviation: float = 20.0       # u: a real cube this far off its path makes everyone plan again
    rest_time: float = 0.5        # s without motion commands before the cubes count as standing still
    apart: float = 4.0            # u beyond touching the safety layer keeps real cubes from closing in
    steer_time: float = 0.25      # s in which CubeHandle's steering (rotate_time) cuts a cube's heading error by e
    stall_time: float = 4.0       # s without progress of any cube before planning again
    budget: int = 3000            # successor configurations the search may try
    try_budget: int = 600         # real cubes: ... each of the candidate searches; a search for plans that stand to
                                  # turn completes within a few hundred or often not within 3000 (4 s of CPU for 39
                                  # cubes), so one search with the whole budget follows only when none completed
    pbs_agents: int = 20          # priority-based search is also tried for at most this many cubes ...
    pbs_budget: int = 300         # ... with this many branches (with 100 the ideal 16-cube swap took 4.75 s, not 3.95)
    tries_small: int = 8          # searches (seeds, with and without keep-right) for at most pbs_agents cubes ...
    tries_large: int = 4          # ... for at most twice as many (one beyond)
    keep_right: float = 0.15      # the keep-right preference of every other search (cubes meeting head-on pass)
    turn_step: float | None = 0.6  # real cubes: a plan's move turning from the way a cube came (cosine below this:
                                   # every lattice turn) follows a step of standing still, as a real cube stands to
                                   # turn on the spot; the plans then turn less (None: turn while moving)
    backward: bool = True         # real cubes drive backwards where their way turns back by more than 90 degrees
                                  # (a turn costs the smaller of its angle and its supplement; the plan still
                                  # makes them stand a step before going back: they stop there anyway) ...
    backward_switch: float = math.radians(20.0)   # ... switching between forwards and backwards only once the
                                                  # waypoint lies this much beyond 90 degrees from the way it drives
    estimate_speed: float = 100.0  # the model that picks a plan for real cubes: u/s along a segment, ...
    estimate_turn: float = 0.8     # ... s per half turn, ...
    estimate_wait: float = 0.5     # ... s to stop and set off again after a wait
    pbs_limit: int = 300          # steps of one cube's path in that search
    goal_reached: float = 1.0     # u: a cube this close to the end of its path counts as arrived ...
    settle: float = 10.0          # ... and stands there, unless it is further than this from that end (it ran past
                                  # it, or beside it): then it creeps back onto it (the trials' goal tolerance is
                                  # 10 u; in a 64-cube swap one stood 10.2 u off its goal for good, arrived by its
                                  # progress along the path and never reported reached)
    straight: bool = True         # paths straightened where the plan's order allows (fewer corners and turns)
    shorten: int = 1              # candidate plans (the best) whose cubes are each planned again around the others
                                  # (2: the same successes in closed loop, twice the planning time) ...
    shorten_moves: int = 5000     # ... the searches for one plan trying at most this many moves per cube in all (a
                                  # search tries some thousand on the 64-cube swap's lattice: 60000 in all shortened
                                  # 15 of its 64 cubes) ...
    lns_rounds: int = 300         # then groups of cubes planned again around the others, this many times ...
    lns_size: int = 4             # ... this many cubes each (3-8 measured alike: 20 % crowds under ble at a mean
                                  # of 18.3-18.9 s over seeds 0-4; 200 groups of 3: 19.7 s) ...
    lns_budget: int = 20000       # ... each search trying at most this many moves ...
    lns_moves: int = 5000         # ... and all of them at most this many per cube: the cubes stand while a plan is
                                  # made (the groups took 3-8 s of CPU at 32-64 cubes here; unbounded, 40 s at 32
                                  # cubes and minutes at 64, and the 20 % crowds under ble arrived no sooner)
    loop_lns_rounds: int = 900    # real cubes: the plan kept (below) is improved by this many groups more ...
    loop_lns_moves: int = 5000    # ... trying at most this many moves per cube in all, and kept if it then has fewer
                                  # steps (then the lower estimate; the estimate alone kept a 24-step plan that came
                                  # late against a 19-step one in time). The cubes stand while a plan is made: its
                                  # CPU (seed 0, ble, beside a table or a test run) 2.2 s for the 8-cube swap, 12 s
                                  # for 16 cubes, 60 s for 32, 90 s for a crowd, 67 s for 64 (1.6, 9, 51, 69, 44 s
                                  # without these groups). 15000 took 2.4, 14, 68, 98, 110 s and did worse in the
                                  # whole table (108 and 105 runs of 110 under ble and loaded, not 109 and 106)
    follow_cost: float = 1.0      # real cubes: steps a move into a vertex another cube leaves in that step costs
                                  # in shortening and improving a plan (a hand-off: the cube waits to see the other
                                  # go, then for its own command); 0.5 took about 40 % of such moves out of crowd
                                  # plans (the trials: 106 and 104 runs of 110 instead of 105 and 102), 1.0 more
                                  # (the 15 crowd runs under ble and loaded: 13 and 10 in time, not 11 and 9; the
                                  # trials: 108 and 105); planning CPU: the 16-cube swap 8 s, not 5, the others
                                  # about the same (docs/trial.md)
    long_plan: float = 2.2        # real cubes: a plan with more steps than this many times the longest shortest
                                  # route (in lattice edges) is made again with other seeds (the 20 % crowds'
                                  # plans, made from nearly the same positions, took 15 to 34 steps, and those
                                  # over 26 steps 19.8-29.5 s) ...
    remakes: int = 3              # ... at most this many times, until one is not long; the plan with the fewest
                                  # steps is kept (then the lower estimate). Each costs a plan's CPU again (15-25 s
                                  # for a 20 % crowd here); once with 2.5 the crowds under loaded took 19.0 s, not 18.3


class CoordinatedPlanner:
    """The LocalPlanner interface over graph + plan + schedule + execution (module docstring)."""
    name = 'coordinated'
    resolves_deadlocks = True     # the controller's side-step breaker must leave its cubes alone
    # plans are made by a worker thread while the ticks go on holding the cubes (a live navigator, whose node must
    # keep reading states meanwhile); False: within the tick (trials, benchmarks, replay: the same plan at the same
    # tick every time)
    plan_in_background = False

    def __init__(self, params: CoordinatedParams | None = None, **overrides) -> None:
        self.params = params or CoordinatedParams(**overrides)
        self.reset(0)

    def reset(self, n: int, seed: int = 0) -> None:
        self.n = n
        self.seed = seed
        self.clock = 0.0
        self.last_motion = -math.inf
        self.replan = True            # plan at the next chance
        self.planned_at = 0.0
        self.key = None               # what the current plan was made for
        self._sizes = np.zeros(n)     # the cubes' radii then
        self.agents = np.zeros(0, np.int64)
        self.graph: CoordinationGraph | None = None
        self.plan: lacam.Plan | None = None
        self.execution: Execution | None = None
        self._lattice: tuple[bytes, Lattice] | None = None
        self.plans = 0
        self.reasons: list[tuple[float, str]] = []   # (time, why) of every plan made again
        self.best_progress = 0.0
        self.since_progress = 0.0
        self.last: dict = {}
        self._sent: list[tuple[float, np.ndarray]] = []   # (clock, speed limits) of the recent ticks
        self._moved: list[tuple[float, np.ndarray]] = []  # (clock, progress along the plan's paths) of those ticks
        self._turn: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # heading, measured at, turn rate
        self._backward = np.zeros(n, bool)    # which cubes were last told to drive backwards
        self._blockers: set[int] = set()      # cubes for which the safety layer stopped another one last tick
        # a plan being made in the background: (key, its future, the event that stops it early)
        self._job: tuple[bytes, Future, threading.Event] | None = None

    # ------------------------------------------------------------------------------------------------ one tick
    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
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
                             collision=self._overlapping(pos, radius, seen))
        if not active.any() or (self.execution is None and not seen.all() and self.clock < p.startup):
            return hold
        closed = state.latency > 0.0
        held = self._held(active, seen)
        # (a held cube's radius grows while it is out: the controller's room for where it may have got to)
        key = self._key(state, active | held, np.where(held, self._sizes, radius))
        if key != self.key:
            self._again('goals or cubes changed')
        if self.replan:
            held[:] = False
            self._sizes = radius
            key = self._key(state, active, radius)      # a new plan is for the cubes active now
            if closed and self.clock - self.last_motion < p.rest_time:
                return hold                   # everyone stops; plan when they stand still
            if not self.plan_in_background:
                self._adopt(self._plan_for(state, active, closed, self.plans), key, closed)
            elif not self._plan_in_background(state, active, key, closed):
                return hold                   # they stand while it is made
        ex = self.execution
        idx = self.agents
        vmax = np.asarray(state.max_speed, float)[idx]
        if closed:
            age = np.zeros(n) if state.age is None else np.asarray(state.age, float)
            react = age[idx] + p.link_latency + state.command_s + p.motor_lag
            before = (age[idx] + p.link_latency + p.motor_lag, state.command_s + p.motor_lag)
            gate_before = (age[idx] + p.gate_latency + p.motor_lag, before[1])
        else:
            react = np.full(len(idx), dt)
        ex.track(pos[idx], slack=p.track_slack if closed else 1e-6)
        if closed and (ex.deviation > p.deviation).any():
            self._again(f'cube{int(idx[np.argmax(ex.deviation)])} {ex.deviation.max():.0f} u off its path')
            return hold
        horizon = vmax * react + p.lookahead
        if closed:
            # commands still on their way or running: those sent within a latency + a duration (state.sent: the
            # speed of the command sent last tick; state.vel is 0 once its duration is over, which on a host
            # ticking late comes before the next tick, while that command may still be on its way)
            window = p.link_latency + state.command_s
            last = state.sent if state.sent is not None else np.hypot(*np.asarray(state.vel, float).T)
            self._sent.append((self.clock - dt, np.asarray(last, float)))
            self._sent = [(t, v) for t, v in self._sent if self.clock - t < window + 1e-9]
        limit = ex.limits(pos[idx], horizon, self._onward(ex, idx, window) if closed else None)
        self._watch_progress(ex, dt)
        out = hold
        if closed:
            # (none after a stall longer than that window: whatever was sent before it has run out)
            running = np.max([v for _t, v in self._sent], axis=0) if self._sent else np.zeros(n)
            heading = np.asarray(state.heading, float)[idx]
            # where a turning cube will be heading when the next command takes effect (it turns on meanwhile)
            rate = self._turn_rate(idx, heading, self.clock - age[idx])
            later = heading + np.clip(rate * before[0], -p.turn_ahead, p.turn_ahead)
            recent = [v for t, v in self._sent if self.clock - t < p.link_latency + dt + 1e-9]
            sending = np.max(recent, axis=0) if recent else np.zeros(n)
            speed, waypoint, back = self._drive(ex, pos[idx], heading, later, limit, vmax, react,
                                                (running if p.gate_lost else sending)[idx], gate_before,
                                                self._backward[idx])
            # the commands under way drive each cube the way it was last told to (forwards or backwards)
            everyone = np.asarray(state.heading, float) + np.where(self._backward, math.pi, 0.0)
            in_flight = running[:, None] * np.column_stack([np.cos(everyone), np.sin(everyone)])
            flip = np.where(back, math.pi, 0.0)      # from here on: the way each cube drives, not its heading
            heading, later = heading + flip, later + flip
            speed = self._keep_apart(pos, idx, waypoint, speed, (np.asarray(state.vel, float), in_flight), radius,
                                     heading, later, running[idx], before)
            for towards in (heading, later):
                speed = self._keep_off_walls(pos[idx], towards, speed, radius[idx], react)
            speed[held[idx]] = 0.0
            out.speed_limit[idx] = speed
            out.waypoint[idx] = waypoint
            self._backward[idx] = back
            out.backward = self._backward.copy()
            if (speed > 0).any():
                self.last_motion = self.clock
        else:
            step_len = np.clip(limit - ex.progress, 0.0, vmax * dt)
            for k, i in enumerate(idx):
                arcs = ex.schedule.arcs[k]
                # a disc follows its path exactly: each step ends at the next vertex at the latest
                corner = arcs[min(int(arcs.searchsorted(ex.progress[k] + 1e-9, side='right')), len(arcs) - 1)]
                target = point_at(ex.schedule.paths[k], arcs, min(ex.progress[k] + step_len[k], corner))
                out.velocity[i] = (target - pos[i]) / dt
                out.waypoint[i] = point_at(ex.schedule.paths[k], ex.schedule.arcs[k], float(limit[k]))
            out.velocity[held] = 0.0
            out.speed_limit[idx] = np.hypot(*out.velocity[idx].T)
        self.last = dict(execution=ex, progress=ex.progress.copy(), limit=limit, agents=idx,
                         why=list(getattr(self, 'why', [])))
        return out

    def _onward(self, ex: Execution, idx: np.ndarray, window: float) -> np.ndarray:
        """How far beyond its progress each cube of ``ex`` is counted on to get: ``onward_time`` at the slowest
        command still under way (all of them drive it on), not beyond the limit it was given last tick, and
        only while it was measured to move along its path at least half as far as those commands drove it (a
        cube that does not move, stuck or out of reach, is not counted on)."""
        p = self.params
        if self.last.get('execution') is not ex:
            self._moved = []                  # a new plan: nobody is under way along it yet
        self._moved = [(t, s) for t, s in self._moved if self.clock - t < window + 1e-9]
        self._moved.append((self.clock, ex.progress.copy()))
        if len(self._moved) < 2 or not self._sent:
            return np.zeros(len(idx))
        slowest = np.min([v for _t, v in self._sent], axis=0)[idx]
        since, then = self._moved[0]
        moving = ex.progress - then >= 0.5 * slowest * (self.clock - since)
        return np.clip(np.where(moving, np.minimum(slowest * p.onward_time, self.last['limit'] - ex.progress), 0.0),
                       0.0, None)

    def waits(self) -> dict[int, list[int]]:
        """Which cubes each cube is waiting for now (diagnostics: who holds whom)."""
        ex = self.execution
        if ex is None:
            return {}
        out = {}
        sch = ex.schedule
        for k in range(sch.n):
            m = int(sch.arcs[k].searchsorted(ex.progress[k], side='right'))
            if m < len(sch.arcs[k]):
                held = sorted({int(self.agents[j]) for j, reach, _d, leave in sch.gates[k][m]
                               if ex.waiting(j, reach, leave)})
                if held:
                    out[int(self.agents[k])] = held
        return out

    # ------------------------------------------------------------------------------------------------ planning
    def _again(self, why: str) -> None:
        """Plan again (as soon as the cubes stand still), and say why in ``reasons``."""
        if not self.replan:
            self.reasons.append((round(self.clock, 3), why))
        self.replan = True

    def _held(self, active: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """(N,) the cubes of the plan being carried out that are not active now but were seen: out for a moment
        (the controller stops a cube whose states stopped coming, and it counts as an obstacle). They stay in the
        plan, held where they are: its order holds whatever the delays, while planning everyone again each time
        one cube's link hiccuped kept a busy host's swarm from ever arriving (a live 8-cube swap beside a loaded
        test run: a cube stale for 0.1-0.4 s every few seconds, each time everyone stopped for a new plan, twice).
        A cube out too long holds the others up until nobody progresses, and everyone plans again without it
        (``stall_time``). A changed goal still changes the plan's key."""
        out = np.zeros(len(active), bool)
        if self.execution is not None and not self.replan:     # (its agents are of this swarm: reset on a new N)
            out[self.agents] = ~active[self.agents] & seen[self.agents]
        return out

    def _key(self, state: SwarmState, active: np.ndarray, radius: np.ndarray) -> bytes:
        """What a plan is made for: which cubes, their goals and radii, the walls."""
        goals = np.round(np.asarray(state.goal, float)[active] * 2.0) / 2.0
        return active.tobytes() + goals.tobytes() + np.asarray(state.walls, float).tobytes() + radius[active].tobytes()

    def _plan_in_background(self, state: SwarmState, active: np.ndarray, key: bytes, closed: bool) -> bool:
        """True once a plan for ``key`` is adopted; until then a worker thread makes it. A plan for many cubes
        takes seconds: made within the tick, it kept a live navigator from reading states for that long, the
        cubes went stale, which changed what to plan for, and the navigator planned again, for ever (the live
        demo with `coordinated`: no cube reached its goal). A plan for other goals or cubes than now is stopped
        where it is and dropped, and one for now made: goals given one cube after another would otherwise each
        wait for the whole plan of the ones before (seconds each, for 16 cubes and more). Once the searches
        have a plan, its improvements stop after ``state.plan_time`` s (if > 0): the cubes stand meanwhile (a
        32-cube swap's plan took a minute of CPU, four fifths of it improving)."""
        job = self._job
        if job is not None and job[0] != key:
            job[2].set()
        if job is not None and job[1].done():
            self._job = None
            made = job[1].result()            # raises what the search raised, as if in this tick
            if job[0] == key and made is not None:    # (None: stopped, its goals came back meanwhile)
                self._adopt(made, key, closed)
                return True
        if self._job is None:
            future: Future = Future()
            number = self.plans
            stop = threading.Event()
            deadline = time.monotonic() + state.plan_time if state.plan_time > 0 else math.inf

            def enough() -> bool:
                return stop.is_set() or time.monotonic() > deadline

            def work() -> None:
                try:
                    future.set_result(self._plan_for(state, active, closed, number, stop.is_set, enough))
                except BaseException as exc:  # handed to the tick that collects the plan
                    future.set_exception(exc)

            self._job = (key, future, stop)
            # a daemon: a node stopping in the middle of a plan does not wait for it
            threading.Thread(target=work, name='coordinated plan', daemon=True).start()
        return False

    def _plan_for(self, state: SwarmState, active: np.ndarray, closed: bool, number: int,
                  stop: Callable[[], bool] = lacam.never, enough: Callable[[], bool] | None = None):
        """(graph, plan, cubes, schedule) for the ``active`` cubes of ``state``; ``number``: how many plans were
        made before (the searches' seed). For real cubes, a plan with more than ``long_plan`` times as many steps
        as the longest shortest route is made again with other seeds, up to ``remakes`` times, and the one with
        the fewest steps kept (then the lower estimate); that one is improved by ``loop_lns_rounds`` groups more,
        and kept improved by the same rule (the estimate alone once kept a 24-step plan that came late). None
        once ``stop`` says True (every search asks it as it goes: a plan nobody waits for any more); once
        ``enough`` (default: ``stop``) says True, what is not needed for a plan (priority-based search,
        shortening, groups, remakes) stops and the best plan so far is taken."""
        enough = enough or stop
        p = self.params
        pos = np.asarray(state.pos, float)
        radius = np.asarray(state.radius, float)
        idx = np.nonzero(active)[0]
        r = float(radius[idx].max())
        distance = 2.0 * r + (p.loop_margin if closed else p.margin)
        spacing = distance / ROW
        clearance = r + (p.loop_wall_margin if closed else p.wall_margin)
        goals = np.asarray(state.goal, float)[idx]
        lattice = self._lattice_for(state, np.vstack([pos[idx], goals]), spacing, clearance)
        others = np.nonzero(~active & np.all(pos > UNSEEN, axis=1))[0]
        graph = CoordinationGraph(lattice, pos[idx], goals, distance, pos[others],
                                  distance + radius[others] - r)
        model = (p.estimate_speed, p.estimate_turn, p.estimate_wait) if closed else (
            float(np.max(np.asarray(state.max_speed, float)[idx])), 0.0, 0.0)
        best = self._best_plan(graph, closed, self.seed + number, model, stop, enough)
        if closed:
            route = max(graph.route(k, graph.V + graph.N + k) for k in range(graph.N)) / lattice.spacing
            for again in range(1, p.remakes + 1):
                if len(best[3].configs) - 1 <= p.long_plan * route or (enough is not None and enough()):
                    break
                other = self._best_plan(graph, closed, self.seed + number + REMAKE_SEEDS * again, model, stop,
                                        enough)
                best = min(best, other, key=_fewest_steps)
            if p.loop_lns_rounds:
                rng = np.random.default_rng([self.seed + number, 1])   # not any search's seed
                more = self._improve(graph, best[3], rng, p.loop_lns_rounds, p.loop_lns_moves, closed, enough)
                best = min(best, self._option(graph, more, closed, model), key=_fewest_steps)
        if stop():
            return None
        _incomplete, _estimate, sch, plan = best
        return graph, plan, idx, sch

    def _best_plan(self, graph: CoordinationGraph, closed: bool, seed: int, model: tuple[float, float, float],
                   stop: Callable[[], bool] = lacam.never, enough: Callable[[], bool] = lacam.never):
        """(incomplete, estimate, schedule, plan) of the most promising plan searched with ``seed``; ``model``:
        the estimate's speed, time per half turn and time per wait; ``stop`` and ``enough`` as in
        :meth:`_plan_for`."""
        p = self.params
        start = [graph.V + graph.N + k for k in range(graph.N)]
        # a few plans, and the one a real swarm carries out fastest (fewest waits and turns on its critical path)
        tries = p.tries_small if graph.N <= p.pbs_agents else p.tries_large if graph.N <= 2 * p.pbs_agents else 1
        plans = []
        turn_limit, follow = self._search_costs(closed)
        for k in range(tries):
            rng = np.random.default_rng(seed + 1000 * (k // 2))
            plans.append(lacam.search(graph, start, rng, p.try_budget if closed else p.budget,
                                      keep_right=p.keep_right * (k % 2), turn_limit=turn_limit, stop=stop))
        if closed and not any(plan.complete for plan in plans):
            rng = np.random.default_rng(seed)
            plans.append(lacam.search(graph, start, rng, p.budget, turn_limit=turn_limit, stop=stop))
        if graph.N <= p.pbs_agents:
            other = prioritized.priority_search(graph, start, p.pbs_limit, p.pbs_budget, enough)
            if other is not None:
                plans.append(other)

        def option(candidate: lacam.Plan) -> tuple:
            return self._option(graph, candidate, closed, model)

        options = sorted((option(lacam.without_detours(graph, candidate)) for candidate in plans),
                         key=lambda o: o[:2])
        # the most promising plan(s), shortened one cube at a time (a cube not reaching its target keeps its path)
        rng = np.random.default_rng(seed)
        # (each stage a candidate of its own: the estimate does not always fall with the sum of arrival steps)
        for o in options[:p.shorten]:
            shorter = lacam.without_detours(graph, prioritized.shorten(graph, o[3], p.pbs_limit, turn_limit,
                                                                         p.shorten_moves * graph.N, follow, enough))
            options.append(option(shorter))
            if p.lns_rounds:
                options.append(option(self._improve(graph, shorter, rng, p.lns_rounds, p.lns_moves, closed,
                                                    enough)))
        return min(options, key=lambda o: o[:2])

    def _option(self, graph: CoordinationGraph, plan: lacam.Plan, closed: bool, model: tuple) -> tuple:
        """(incomplete, estimate, schedule, plan) of ``plan``: what :meth:`_best_plan` chooses by."""
        sch = schedule.build(graph, plan, self.params.straight)
        return not plan.complete, schedule.duration(sch, *model, closed and self.params.backward), sch, plan

    def _improve(self, graph: CoordinationGraph, plan: lacam.Plan, rng: np.random.Generator, rounds: int,
                 moves: int, closed: bool, stop: Callable[[], bool] = lacam.never) -> lacam.Plan:
        """``plan`` with groups of cubes planned again around the others ``rounds`` times (``prioritized.improve``),
        trying at most ``moves`` moves per cube in all."""
        p = self.params
        turn_limit, follow = self._search_costs(closed)
        return lacam.without_detours(graph, prioritized.improve(
            graph, plan, rng, rounds, p.lns_size, p.pbs_limit, turn_limit, p.lns_budget, moves * graph.N, follow,
            stop))

    def _search_costs(self, closed: bool) -> tuple[float | None, float]:
        """(turn_limit, follow cost) of the searches: real cubes stand to turn and count a hand-off as more
        than a step; ideal discs neither."""
        p = self.params
        return (p.turn_step, p.follow_cost) if closed else (None, 0.0)

    def _adopt(self, made: tuple, key: bytes, closed: bool) -> None:
        """Carry out a plan of :meth:`_plan_for` from now on."""
        p = self.params
        graph, plan, idx, sch = made
        self.graph, self.plan, self.agents, self.key = graph, plan, idx, key
        self.execution = Execution(sch, p.release if closed else 1e-9,
                                   p.stray if closed else 0.0)
        self.replan = False
        self.planned_at = self.clock
        self.plans += 1
        self.best_progress, self.since_progress = 0.0, 0.0

    def _lattice_for(self, state: SwarmState, points: np.ndarray, spacing: float, clearance: float) -> Lattice:
        """The lattice over the usable area (the bounds, or the cubes and goals with room around), rebuilt only
        when the walls, the area or the spacing change."""
        if state.bounds is not None:
            area = tuple(float(v) for v in state.bounds)
        else:
            lo = np.floor((points.min(axis=0) - 3.0 * spacing) / spacing) * spacing
            hi = np.ceil((points.max(axis=0) + 3.0 * spacing) / spacing) * spacing
            area = (*lo, *hi)
        walls = np.asarray(state.walls, float).reshape(-1, 5)
        key = walls.tobytes() + np.array([*area, spacing, clearance]).tobytes()
        if self._lattice is None or self._lattice[0] != key:
            self._lattice = (key, Lattice.build(area, spacing, walls, clearance))
        return self._lattice[1]

    def _watch_progress(self, ex: Execution, dt: float) -> None:
        """Plan again after ``stall_time`` without progress of any cube while some are not at their ends, or
        when every cube is at the end of a plan that does not reach every goal."""
        p = self.params
        total = float(ex.progress.sum())
        left = ex.ends - ex.progress > p.goal_reached
        if total > self.best_progress + 1.0 or not left.any():
            self.best_progress, self.since_progress = max(total, self.best_progress), 0.0
        else:
            self.since_progress += dt
        if self.since_progress >= p.stall_time:
            self._again(f'no progress for {self.since_progress:.1f} s')
        elif not left.any() and not self.plan.complete and self.clock - self.planned_at >= p.stall_time:
            self._again('the end of a plan that could not reach every goal')

    # ------------------------------------------------------------------------------------------------ driving
    def _drive(self, ex: Execution, pos: np.ndarray, heading: np.ndarray, later: np.ndarray, limit: np.ndarray,
               vmax: np.ndarray, react: np.ndarray, running: np.ndarray, before: tuple[np.ndarray, float],
               was_back: np.ndarray):
        """Speed (u/s), waypoint and whether it drives backwards (``was_back``: last tick) of each real cube. The
        speed alone decides where it stops: whatever the latency, within its limit (until a new command takes
        effect, ``before[0]`` s, the cube goes on at ``running``, the command it is taken to run (``gate_lost``);
        then the new one runs ``before[1]`` s); slower for corners; below the wheels' dead zone it creeps until it
        is ``creep_stop`` from its limit. The waypoint only steers: ``lookahead`` along the path, round a corner no
        further than cuts it by ``corner_cut`` (a sharp corner: onto it), and never within CubeHandle's reach
        (where it would stop by itself). A cube drives backwards when its waypoint lies behind it (by
        ``backward_switch`` beyond 90 degrees to switch); with ``backward`` it stops at every corner sharper than
        90 degrees, from where it goes on the other way round."""
        lead, run = before
        p = self.params
        sch = ex.schedule
        n = sch.n
        speed = np.zeros(n)
        waypoint = pos.copy()
        back = np.asarray(was_back, bool).copy()
        self.why = ['end'] * n            # diagnostics: what holds each cube's speed this tick
        far = p.handle_reach + p.steer_gap
        # where every cube is and may be soon (its measured position and its path up to its limit), to see which
        # corners have room around them
        soon = []
        for k in range(n):
            upto = np.arange(ex.progress[k], max(limit[k], ex.progress[k]) + 10.0, 10.0)
            path, arcs = sch.paths[k], sch.arcs[k]
            pts = np.empty((len(upto) + 1, 2))
            pts[0] = pos[k]
            pts[1:, 0] = np.interp(upto, arcs, path[:, 0])
            pts[1:, 1] = np.interp(upto, arcs, path[:, 1])
            soon.append(pts)
        owner = np.repeat(np.arange(n), [len(pts) for pts in soon])
        soon = np.concatenate(soon)
        wide = 2.0 * self.graph.D
        walls = self.graph.lattice.walls
        wall_room = 0.5 * self.graph.D + p.corner_cut_wide     # a corner this far from walls may be cut wide
        for k in range(n):
            path, arcs = sch.paths[k], sch.arcs[k]
            s, lim = float(ex.progress[k]), float(limit[k])
            arrived = s >= float(arcs[-1]) - p.goal_reached
            if arrived and float(np.hypot(*(path[-1] - pos[k]))) <= p.settle:
                # arrived: it stands, its waypoint on its goal (pushed out of CubeHandle's reach, as a waypoint
                # to steer by is, it kept the navigator from ever reporting the goal reached)
                waypoint[k] = path[-1]
                continue
            # the end of its path is the cube's own goal: it may drive onto it (the margin is for others' ways)
            at_end = lim >= float(arcs[-1]) - 1e-6
            free = lim - s - (0.0 if at_end else p.stop_margin)
            v = min(max(float(min((free - running[k] * lead[k]) / run, free / (lead[k] + run))), 0.0), float(vmax[k]))
            self.why[k] = 'free' if v >= vmax[k] - 1e-6 else 'limit'
            foot = None
            if arrived:
                foot, self.why[k] = path[-1], 'settle'
            elif v <= 0.0 and int(self.agents[k]) in self._blockers:
                # held where it keeps a cube back: the safety layer stopped another cube for it last tick. That
                # cube, free in the plan, may be one this cube waits for in the plan (a dead-lock the plan cannot
                # see). A cube that overran its limit (a late host) backs along its path until it is clear of the
                # ways it waits for (no further than it may be off its path before everyone plans again); one
                # further off its path than it may stray creeps back onto it. The plan keeps those points clear
                # of the others
                if ex.overran[k]:
                    behind = point_at(path, arcs, ex.clear_behind(k, pos, p.deviation - p.stray))
                    if float(np.hypot(*(behind - pos[k]))) > p.goal_reached + p.creep_stop:
                        foot, self.why[k] = behind, 'back-off'     # (nearer: there already, it coasts that far)
                if foot is None and ex.deviation[k] > p.stray:
                    foot, self.why[k] = point_at(path, arcs, s), 'onto-path'
            if foot is not None:
                waypoint[k], back[k] = self._onto_path(pos[k], foot, heading[k], back[k])
                way = waypoint[k] - pos[k]
                aligned = _angle_off(math.atan2(way[1], way[0]), heading[k] + (math.pi if back[k] else 0.0))
                speed[k] = p.min_speed if aligned <= p.align_stop else 0.0
                continue
            reach = s + p.lookahead
            for m in range(int(arcs.searchsorted(s, side='right')), len(arcs) - 1):
                corner = float(arcs[m])
                if corner - s > v * react[k] + p.lookahead:
                    break
                into, out = path[m] - path[m - 1], path[m + 1] - path[m]
                cos_t = float(into @ out) / max(float(np.hypot(*into) * np.hypot(*out)), 1e-12)
                if cos_t > 0.999:
                    continue
                # a corner nobody is near, now or along their next stretch, and far enough from walls, may be cut
                # wide and taken fast
                others = soon[owner != k]
                alone = (others.size == 0 or float(np.hypot(*(others - path[m]).T).min()) > wide) and (
                    len(walls) == 0 or float(wall_gap(path[m][None], walls)[0]) > wall_room) and (
                    cos_t >= 0.0 or not p.backward)      # (a cube that can back out of a sharp turn stops there)
                if alone:       # round the corner, however sharp, on an arc
                    cut, pass_speed = p.corner_cut_wide, p.corner_speed_wide * (1.0 + cos_t) / 2.0
                else:           # along the path, stopping at a corner sharper than 90 degrees
                    cut, pass_speed = p.corner_cut, p.corner_speed * max(cos_t, 0.0)
                if corner < lim:
                    # through the corner at most the corner's speed: brake for it as for a limit
                    room = max(corner - s, 0.0)
                    cap = pass_speed + max(0.0, min((room - running[k] * lead[k]) / run,
                                                                    room / (lead[k] + run)))
                    if cap < v:
                        v, self.why[k] = cap, 'corner'
                if corner < reach:
                    # past the corner no further than the limit: a cube steered round a corner into a stretch it
                    # is not granted yet would stand where the cube that goes there first must pass
                    beyond = _beyond_corner(float(np.hypot(*(path[m] - pos[k]))), cos_t, cut, alone)
                    reach = min(reach, corner + min(beyond, max(lim - corner, 0.0)))
                break
            target = point_at(path, arcs, reach)
            gap = float(np.hypot(*(target - pos[k])))
            if gap < far:
                # too close to steer by: further out in the same direction (beyond a sharp corner or the end)
                if gap > 1e-6:
                    target = pos[k] + (target - pos[k]) * (far / gap)
                elif len(path) > 1:
                    m = min(max(1, int(arcs.searchsorted(reach - 1e-6, side='right'))), len(arcs) - 1)
                    way = path[m] - path[m - 1]
                    target = pos[k] + way / max(float(np.hypot(*way)), 1e-9) * far
            waypoint[k] = target
            # a cube turns in place before it drives off its path: full speed within align_full of the way to
            # its waypoint, none beyond align_stop
            way = target - pos[k]
            bearing = math.atan2(way[1], way[0])
            if p.backward:
                back[k] = self._drives_back(bearing, heading[k], back[k])
            flip = math.pi if back[k] else 0.0
            factor, later_factor = (min(max((p.align_stop - _angle_off(bearing, h)) / (p.align_stop - p.align_full),
                                            0.0), 1.0) for h in (heading[k] + flip, later[k] + flip))
            # a cube still turning from its last command overshoots: as it will be heading, no more than a creep
            factor = min(factor, max(later_factor, p.min_speed / max(v, 1e-9)))
            if factor < 1.0:
                v *= factor
                self.why[k] = 'turning'
            if v <= 0.0:
                continue
            if v < p.min_speed:
                # slower does not turn the wheels: creep, when that still stops within the limit whatever is
                # under way, or once nothing faster is under way
                creep = (lim - s > (p.goal_reached if at_end else p.creep_stop) and running[k] <= p.min_speed + 1.0) \
                    or free >= running[k] * lead[k] + p.min_speed * run
                v = p.min_speed if creep else 0.0
                self.why[k] += '-creep' if v else '-stop'
            speed[k] = v
        return speed, waypoint, back

    def _onto_path(self, pos: np.ndarray, foot: np.ndarray, heading: float, was_back: bool):
        """(waypoint, backwards) that take a cube at ``pos`` straight back to ``foot``, the point of its path it
        has come to: the waypoint lies beyond CubeHandle's reach the same way (the cube stops that far short of it,
        on its path), and the cube drives backwards when that is the nearer way round."""
        p = self.params
        way = foot - pos
        gap = max(float(np.hypot(*way)), 1e-9)
        target = foot + way / gap * max(p.handle_reach, 0.0)
        return target, p.backward and self._drives_back(math.atan2(way[1], way[0]), heading, was_back)

    def _drives_back(self, bearing: float, heading: float, was_back: bool) -> bool:
        """Does a cube heading ``heading`` drive backwards to a waypoint at ``bearing``: it lies behind it by
        ``backward_switch`` beyond 90 degrees (once driving backwards: until it lies that much ahead of 90)?"""
        switch = self.params.backward_switch
        return _angle_off(bearing, heading) > 0.5 * math.pi + (-switch if was_back else switch)

    def _turn_rate(self, idx: np.ndarray, heading: np.ndarray, measured: np.ndarray) -> np.ndarray:
        """How fast each cube turns (rad/s): its measured heading against the one at least ``turn_baseline``
        earlier (headings come in whole degrees); 0 when its states stopped coming."""
        if self._turn is None or len(self._turn[0]) != self.n:
            self._turn = (np.zeros(self.n), np.full(self.n, -math.inf), np.zeros(self.n))
        h0, t0, rate = self._turn
        gap = measured - t0[idx]
        fresh = gap >= self.params.turn_baseline
        turned = (heading - h0[idx] + math.pi) % (2.0 * math.pi) - math.pi
        rate[idx] = np.where(fresh, np.where(gap < 0.5, turned / np.maximum(gap, 1e-6), 0.0), rate[idx])
        h0[idx] = np.where(fresh, heading, h0[idx])
        t0[idx] = np.where(fresh, measured, t0[idx])
        return rate[idx]

    def _keep_apart(self, pos: np.ndarray, idx: np.ndarray, waypoint: np.ndarray, speed: np.ndarray,
                    vel: tuple[np.ndarray, np.ndarray], radius: np.ndarray, heading: np.ndarray, later: np.ndarray,
                    running: np.ndarray, before: tuple[np.ndarray, float]) -> np.ndarray:
        """The safety layer under the plan: a real cube that would come closer than touching + ``apart`` to
        another one, and closer than it is now, before it can stop slows to what stops it in time. Its way until
        it stops (:func:`_ways`): ``running`` (the fastest command still under way) until a new command takes
        effect, turning on as it turns now (``heading`` to ``later``, the way it drives), then the new speed for
        the command's duration while CubeHandle steers it towards its waypoint. (A straight line towards the
        waypoint let a cube that still turned drive into a cube it would have passed along that line; straight
        lines along its heading as well held cubes back from others they would pass 46 u away: docs/trial.md.)
        The other cube (``vel``: every cube's velocity as last commanded, and as the fastest command still under
        way goes) stands, goes on as commanded, or as fast as what is still under way: a cube just told to stop
        still runs on a while. A cube may go on to where its way enters the other one's disc of touching +
        ``apart`` where it stands, and no nearer than that to it at all where it moves: half of the room to that
        disc where it comes towards this one (whose own check takes the other half: while each keeps to its half
        they stay that far apart, whichever way they turn). Every pair is looked at that either cube could close
        within their reach. Cubes passing side by side, or moving apart (however close they are), are not slowed;
        only closing in is."""
        p = self.params
        lead, run = before
        self._blockers = set()
        horizon = lead + run
        # pairs that may meet before the cube stops: its reach and the other one's (that one comes towards it)
        fastest = max(float(np.hypot(*np.asarray(v, float).T).max(initial=0.0)) for v in vel)
        reach = float(max(speed.max(initial=0.0), running.max(initial=0.0)) + fastest) * float(horizon.max(initial=0.0))
        q, o, d = pairs_within(pos, 2.0 * float(radius.max()) + p.apart + reach + 1.0)
        where = np.full(len(pos), -1)
        where[idx] = np.arange(len(idx))
        mine = where[q] >= 0
        q, o, d = q[mine], o[mine], d[mine]
        if q.size == 0:
            return speed
        k = where[q]
        toward = waypoint - pos[idx]
        bearing = np.arctan2(toward[:, 1], toward[:, 0])
        ways = (heading, later, bearing, lead)
        others = np.stack([np.zeros((len(q), 2)), vel[0][o], vel[1][o]], axis=1)               # (P, 3, 2)
        moves = np.hypot(others[..., 0], others[..., 1]) > 1e-9                                 # (P, 3)
        rel = pos[o] - pos[q]
        need = radius[q] + radius[o] + p.apart
        # every pair at once at the speeds given (each cube's way once, shared by its pairs); a cube with a pair
        # that closes in is slowed pair after pair, each pair looked at again at the speed the pairs before left it
        disp, time, travelled = (w[k] for w in _ways(*ways, running, speed, run, p.steer_time))
        closest = _closest_approach(rel, disp, time, others)                                    # (P, 3)
        closes = (closest < need[:, None]) & (closest < d[:, None] - 1e-6)                     # (P, 3)
        entry = _entry(rel, disp, travelled, need)                                              # (P,)
        slowed = np.zeros(len(idx), bool)
        slowed[k[closes.any(axis=1)]] = True
        out = speed.copy()
        for e in np.nonzero(slowed[k])[0]:
            i = k[e]
            if out[i] <= 0.0:
                continue
            if out[i] < speed[i]:          # slowed by an earlier pair: is this one still closing in?
                one = slice(e, e + 1)
                way_e = _ways(*(w[i:i + 1] for w in ways), running[i:i + 1], out[i:i + 1], run, p.steer_time)
                closest[e] = _closest_approach(rel[one], *way_e[:2], others[one])[0]
                closes[e] = (closest[e] < need[e]) & (closest[e] < d[e] - 1e-6)
                entry[e] = _entry(rel[one], way_e[0], way_e[2], need[one])[0]
            closing = closes[e]
            if closing.any():
                # standing: up to where its way enters that disc; moving: the disc's distance from here, half of
                # it when the other one comes towards it (both close in: each takes half, as the other's own
                # check does; the whole of it let two cubes passing head-on 46 u apart each run into the same
                # room while they swerved towards each other, and they touched coasting to a stop)
                towards = closing & moves[e] & (others[e] @ rel[e] < 0.0)
                room = max(0.0, min(float(entry[e]) if closing[0] else math.inf,
                                    float(d[e] - need[e]) * (0.5 if towards.any() else 1.0)
                                    if (closing & moves[e]).any() else math.inf))
                cap = max(0.0, min((room - running[i] * lead[i]) / run, room / (lead[i] + run)))
                # slower than the wheels' dead zone is no slower: CubeHandle shifts such a command out of it, and
                # the cube creeps at min_speed (a cube near its goal crept into a neighbour that way)
                out[i] = min(out[i], cap if cap >= p.min_speed else 0.0)
                if out[i] <= 0.0:
                    self._blockers.add(int(o[e]))
        return out

    def _keep_off_walls(self, pos: np.ndarray, heading: np.ndarray, speed: np.ndarray, radius: np.ndarray,
                        react: np.ndarray) -> np.ndarray:
        """The same for walls and disc obstacles: a real cube whose way ahead (its heading, for its reaction time
        at its speed) comes closer to a wall than touching + ``apart`` / 2, closer than it is now, slows to stop
        before that."""
        walls = self.graph.lattice.walls if self.graph is not None else np.zeros((0, 5))
        moving = np.nonzero(speed > 0.0)[0]
        if len(walls) == 0 or moving.size == 0:
            return speed
        t = WALL_CHECKS
        way = np.column_stack([np.cos(heading[moving]), np.sin(heading[moving])])
        reach = (speed[moving] * react[moving])[:, None, None] * t[None, :, None]
        ahead = pos[moving][:, None, :] + way[:, None, :] * reach              # (M, 6, 2)
        gap = wall_gap(ahead.reshape(-1, 2), walls).reshape(len(moving), -1) - radius[moving][:, None]
        need = 0.5 * self.params.apart
        closing = (gap[:, 1:].min(axis=1) < need) & (gap[:, 1:].min(axis=1) < gap[:, 0])
        out = speed.copy()
        out[moving[closing]] = np.minimum(out[moving[closing]],
                                          np.maximum(gap[closing, 0] - need, 0.0) / react[moving[closing]])
        return out

    @staticmethod
    def _overlapping(pos: np.ndarray, radius: np.ndarray, seen: np.ndarray) -> np.ndarray:
        out = np.zeros(len(pos), bool)
        rows = np.nonzero(seen)[0]
        if len(rows) > 1:
            q, o, d = pairs_within(pos[rows], 2.0 * float(radius[rows].max()))
            hit = d < radius[rows][q] + radius[rows][o]
            out[rows[q[hit]]] = True
        return out


def _fewest_steps(option: tuple) -> tuple:
    """How a plan kept for real cubes is chosen among options of :meth:`CoordinatedPlanner._option`: complete
    first, then fewer steps, then the lower estimate."""
    return option[0], len(option[3].configs), option[1]


def _angle_off(a: float, b: float) -> float:
    """|a - b| wrapped to [0, pi] (radians; scalars: per cube in a loop, where numpy's overhead would dominate)."""
    return abs((a - b + math.pi) % (2.0 * math.pi) - math.pi)


def _ways(heading: np.ndarray, later: np.ndarray, bearing: np.ndarray, lead: np.ndarray, running: np.ndarray,
          speed: np.ndarray, run: float, steer: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where K cubes go until they stop, as the safety layer reckons: ((K, S, 2) displacement, (K, S) time,
    (K, S) distance travelled) at S moments from now. Until its new command takes effect (``lead`` s) a cube runs
    on at ``running``, its heading going on from ``heading`` to ``later`` as it turns now; then for ``run`` s at
    ``speed`` while CubeHandle steers it towards its waypoint (at ``bearing``): the heading error falls by e
    every ``steer`` s. (Headings: the way it drives.)"""
    first, then = WAY_SEGMENTS
    time = np.concatenate([lead[:, None] * np.linspace(0.0, 1.0, first + 1)[None],
                           lead[:, None] + run * np.linspace(0.0, 1.0, then + 1)[None, 1:]], axis=1)
    mid = 0.5 * (time[:, 1:] + time[:, :-1])
    early = np.arange(first + then) < first
    turned = (later - heading + math.pi) % (2.0 * math.pi) - math.pi
    off = (later - bearing + math.pi) % (2.0 * math.pi) - math.pi
    theta = np.where(early, heading[:, None] + turned[:, None] * mid / np.maximum(lead, 1e-9)[:, None],
                     bearing[:, None] + off[:, None] * np.exp(-np.maximum(mid - lead[:, None], 0.0) / steer))
    step = np.where(early, running[:, None], speed[:, None]) * np.diff(time, axis=1)
    disp = np.zeros((len(heading), first + then + 1, 2))
    disp[:, 1:, 0] = np.cumsum(step * np.cos(theta), axis=1)
    disp[:, 1:, 1] = np.cumsum(step * np.sin(theta), axis=1)
    travelled = np.concatenate([np.zeros((len(heading), 1)), np.cumsum(step, axis=1)], axis=1)
    return disp, time, travelled


def _closest_approach(rel: np.ndarray, disp: np.ndarray, time: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(P, V) the nearest a cube comes to another one, over every pair at once: ``rel`` (P, 2) the other one from
    it; the cube moves by ``disp`` (P, S, 2) at ``time`` (P, S) (:func:`_ways`, straight between them) while the
    other one goes on at each of ``others`` (P, V, 2)."""
    gap = rel[:, None, None, :] + others[:, :, None, :] * time[:, None, :, None] - disp[:, None, :, :]  # (P,V,S,2)
    a, ab = gap[..., :-1, :], np.diff(gap, axis=-2)
    ab2 = (ab * ab).sum(axis=-1)
    t = np.clip(-(a * ab).sum(axis=-1) / np.maximum(ab2, 1e-12), 0.0, 1.0)
    miss = a + ab * t[..., None]
    return np.hypot(miss[..., 0], miss[..., 1]).min(axis=-1)


def _entry(rel: np.ndarray, disp: np.ndarray, travelled: np.ndarray, need: np.ndarray) -> np.ndarray:
    """(P,) how far a cube travels along its way (``disp``, ``travelled`` of :func:`_ways`) before it enters the
    disc of radius ``need`` round a standing cube at ``rel`` from it (inf: never; 0: it is inside already)."""
    a = disp[:, :-1] - rel[:, None]                      # (P, S - 1, 2) the cube seen from the other one
    ab = np.diff(disp, axis=1)
    qa = (ab * ab).sum(axis=-1)
    qb = 2.0 * (a * ab).sum(axis=-1)
    qc = (a * a).sum(axis=-1) - need[:, None] ** 2
    disc = qb * qb - 4.0 * qa * qc
    u = (-qb - np.sqrt(np.maximum(disc, 0.0))) / np.maximum(2.0 * qa, 1e-12)
    hit = (qc > 0.0) & (disc >= 0.0) & (qa > 1e-12) & (u >= 0.0) & (u <= 1.0)
    at = np.where(hit, travelled[:, :-1] + u * np.diff(travelled, axis=1), np.inf).min(axis=1)
    return np.where(qc[:, 0] <= 0.0, 0.0, at)


def _beyond_corner(a: float, cos_t: float, cut: float, back: bool = False) -> float:
    """How far past a corner a waypoint may lie so that the straight line to it from a cube ``a`` before the
    corner passes within ``cut`` of the corner (turn with cosine ``cos_t``): the chord misses the corner by
    a b sin(t) / |chord|; the largest b keeping that within cut. A cube turning back (more than 90 degrees) goes
    to the corner first, unless ``back``."""
    if cos_t < 0.0 and not back:
        return 0.0
    sin_t = math.sqrt(max(0.0, 1.0 - cos_t * cos_t))
    den = a * a * sin_t * sin_t - cut * cut
    if den <= 0.0 or sin_t < 1e-9:
        return math.inf
    return max(0.0, a * cut * (cut * cos_t + sin_t * math.sqrt(max(a * a - cut * cut, 0.0))) / den)
