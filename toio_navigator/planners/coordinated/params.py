"""The settings of `coordinated`: the few a user may set (:class:`CoordinatedParams`, grouped, each described),
and the constants the layers are built on (:class:`Internal`, each with why it is what it is).

Distances in mat units (u), times in seconds. "Ideal discs" are the benchmark's (``state.latency == 0``: they
follow their paths exactly); "real cubes" are the navigator's (measured with noise, steered late).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass
class CoordinatedParams:
    # -- how far apart: the pair distance D = 2 r + margin the plan keeps between any two cubes' ways
    margin: float = 2.0            # u beyond touching, ideal discs
    wall_margin: float = 1.0       # u a cube keeps from walls beyond its radius, ideal discs
    loop_margin: float = 13.0      # u beyond touching, real cubes: twice the tracking error (5) + the noise (3)
    loop_wall_margin: float = 7.0  # u from walls beyond the radius, real cubes
    apart: float = 4.0             # u beyond touching the safety layer keeps real cubes from closing in
    # -- planning
    search_budget: int = 3000      # configurations the first plan's search (LaCAM) may try
    first_time_s: float = 0.12     # s of work a first plan for 16 cubes may spend improving itself once complete
    improve_rounds: int = 300      # groups of cubes planned again around the others in one improvement ...
    group_size: int = 4            # ... of this many cubes each
    improve_time_s: float = 10.0   # s of planning per set of goals; then the best plan is kept (status: budget_out)
    straight: bool = True          # paths run straight across vertices of the plan wherever every order holds
    # -- driving real cubes
    backward: bool = True          # a cube whose way turns back by more than 90 degrees backs out of the corner
    link_latency: float = 0.16     # s from the navigator's command to the cube, at worst (the safety layer's)
    lookahead: float = 60.0        # u along its path a cube steers towards (CubeHandle runs full speed beyond ~40)
    stall_time: float = 4.0        # s without progress of any cube before everyone stops and plans again

    def check(self) -> None:
        """ValueError naming the first bad field."""
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ('bool', bool):
                if not isinstance(v, bool):
                    raise ValueError(f'coordinated: {f.name} must be true or false, got {v!r}')
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f'coordinated: {f.name} must be a finite number >= 0, got {v!r}')
        if self.group_size < 1 or self.search_budget < 1:
            raise ValueError('coordinated: group_size and search_budget must be at least 1')


class Internal:
    """Constants of the layers (not settings: each follows from the cube, the link or the searches)."""
    # -- the searches
    first_tries = 8               # LaCAM seeds (with and without keep-right) the first plan may try ...
    try_budget = 600              # ... real cubes: each with this many configurations (plans that stand to turn
                                  # complete within a few hundred or often not within thousands)
    keep_right = 0.15             # PIBT's keep-right preference of every other try: cubes meeting head-on pass
    pbs_agents = 8                # priority-based search is tried too for at most this many cubes (a corridor) ...
    pbs_budget = 300              # ... with this many branches
    pbs_limit = 300               # steps of one cube's path in a space-time search
    shorten_moves = 5000          # moves per cube the one-at-a-time stage of a first plan may try in all
    group_batch = 30              # groups planned again between two looks at whether the plan got better
    group_budget = 20000          # moves one group's searches may try
    turn_step = 0.6               # real cubes: a move turning more (cosine below) follows a step of standing
    follow_cost = 1.0             # real cubes: steps a move into a vertex another cube leaves costs (a hand-off)
    estimate_speed = 100.0        # the estimate for real cubes: u/s along a segment, ...
    estimate_turn = 0.8           # ... s per half turn, ...
    estimate_wait = 0.5           # ... s to stop and set off again after a wait
    better_s = 0.05               # s an improvement must gain by the estimate to be worth a switch
    step_s = 0.6                  # s a real swarm takes per plan step, about (where an improvement commits)
    improve_job_s = 1.0           # s of work one improvement may take: it commits that far ahead of the cubes
    # -- carrying out a plan
    release = 6.0                 # u: a real cube this close to the end of a move counts as there (it stops short)
    stray = 5.0                   # u a real cube's measured position may be off its path before it holds others
    track_slack = 4.0             # u progress may run ahead of what a cube was measured to move (noise)
    deviation = 20.0              # u: a real cube this far off its path makes everyone plan again
    startup = 0.3                 # s the first plan waits for cubes not seen yet
    rest_time = 0.5               # s without motion commands before the cubes count as standing still
    goal_reached = 1.0            # u: a cube this close to the end of its path counts as arrived ...
    settle = 10.0                 # ... and stands there unless further than this from it (the goal tolerance)
    # -- driving real cubes
    gate_latency = 0.10           # s of latency the law that stops a cube at its limit assumes: a typical one
    motor_lag = 0.05              # s the wheels run on after a stop
    onward_time = 0.3             # s a moving cube is counted on ahead: less than a waiting one needs to reach it
    stop_margin = 1.0             # u a real cube keeps before its limit
    corner_cut = 4.0              # u a waypoint round a corner lets a cube cut it by ...
    corner_cut_wide = 12.0        # u ... when no other cube is near that corner now or soon
    corner_speed_wide = 120.0     # u/s times (1 + cos(turn)) / 2 through such a corner
    corner_speed = 60.0           # u/s times the cosine of a turn: a real cube steers late, leaving its path outwards
    min_speed = 22.0              # u/s: a slower command does not move the wheels (the dead zone)
    handle_reach = 8.0            # u: CubeHandle's move-to-target stops this close to its waypoint
    creep_stop = 3.0              # u before its limit a creeping cube is stopped (it coasts about that far)
    align_full = math.radians(20.0)    # heading error to the waypoint with full speed ...
    align_stop = math.radians(65.0)    # ... beyond which a real cube only turns (a lattice corner: it drives on slowly)
    turn_ahead = math.radians(90.0)    # at most this much turn is foreseen before a command takes effect
    turn_baseline = 0.06          # s between two headings a turn rate is measured from (headings in whole degrees)
    steer_gap = 6.0               # u beyond CubeHandle's reach a waypoint is kept at least
    steer_time = 0.25             # s in which CubeHandle's steering cuts a cube's heading error by e
    backward_switch = math.radians(20.0)   # a cube switches direction only once its waypoint lies this far past 90
