"""ORCA, optimal reciprocal collision avoidance (van den Berg, Guy, Lin, Manocha 2011), vectorised over the swarm.

Our own implementation from the paper's definition (docs/local_planners.md §3.4):
* every neighbour B gives agent A the half-plane ORCA_{A|B} = {v : (v - (v_A + alpha u)) . n >= 0}, where u is the
  smallest change of the relative velocity that leaves the truncated velocity obstacle VO^tau_{A|B} and n the
  outward normal there (alpha = 1/2: each agent takes half of the correction);
* static discs give the same construction with velocity 0, full responsibility and horizon tau_obst; wall
  segments give the flat half-plane "do not reach the wall line within tau_obst" at their nearest point;
* the new velocity minimises |v - v_pref| over all half-planes and the disc |v| <= v_max: a 2-D linear program
  solved incrementally (each violated constraint moves the optimum onto its line, a 1-D problem against the
  earlier constraints). If it is infeasible, a 3-D program minimises the largest violation of the agent
  half-planes while the obstacle half-planes stay hard.
All agents are solved at once: constraint k is processed for every agent in one numpy operation.

``OrcaParams()`` is plain ORCA with the reference parameters (docs/local_planners.md §4.5), like RVO2: it deadlocks in
perfectly symmetric swaps. ``KEEP_RIGHT`` (planner ``orca_kr``, our best planner) adds deterministic symmetry
breaking and deadlock handling on top of the same solver, every part a switchable parameter:
* keep right: in a head-on encounter (preferred directions more than 90 deg apart, relative preferred velocity
  aimed at the other disc) where plain ORCA would only brake (cut-off disc nearest), the half-plane of the leg on
  the agent's right (clockwise on the mat, y down) is used instead; exact ties also go to that leg. Both agents
  of a pair keep right, so they pass instead of freezing;
* unstick: a cube away from its goal that stays slower than half its preferred speed turns its preferred
  velocity to the right, more the longer it is blocked, up to backing off (memory per cube); the delay before
  turning is spread per cube from the seed, so a jammed ring of identical cubes does not turn in lockstep;
* step aside: a cube parked on its goal moves sideways, away from the line of a blocked mover heading at it;
* safety stop: a cube whose step would bring it closer than touching to a neighbour or a wall, and closer than
  it is now, stands still for that step, so a relaxed (infeasible) program can never deepen a contact;
* a shorter horizon (0.5 s) and a 1 u radius margin, which keep dense crowds moving.
A seeded perturbation of ``perturbation`` u/s on the preferred velocity (RVO2 style) is common to both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toio_navigator.planners.common import goal_velocity, k_nearest, nearest_on_walls, waypoint_output
from toio_navigator.planners.interface import PlannerOutput, SwarmState

_EPS = 1e-9


@dataclass
class OrcaParams:
    time_horizon: float = 2.0          # s, tau for agents (docs/local_planners.md §4.5)
    time_horizon_obst: float = 1.0     # s, tau_obst for static obstacles
    neighbor_dist: float = 400.0       # u, neighbour search radius (centre distance)
    max_neighbors: int = 10            # K nearest agents considered
    max_obstacles: int = 6             # nearest obstacles considered
    responsibility: float = 0.5        # share of the avoidance each agent takes (reciprocity)
    radius_margin: float = 0.0         # u added to every radius (sensing/discretisation margin)
    arrival_steps: float = 1.0         # pref speed min(v_max, distance / (arrival_steps dt))
    perturbation: float = 0.01         # u/s, seeded random perturbation of the preferred velocity
    keep_right: bool = False           # head-on pairs commit to passing each other on the right
    keep_right_width: float = 1.0      # "aimed at": relative preferred velocity passes within this many R
    head_on_cos: float = 0.0           # head-on: cos of the angle between preferred directions below -this
    unstick: bool = False              # a mover blocked for a while turns its v_pref to the right, growing
    unstick_delay: float = 0.5         # s blocked before turning
    unstick_rate: float = 1.5          # rad/s of turn while blocked
    unstick_max: float = 2.6           # rad, largest turn (beyond 90 deg: backing off is allowed)
    unstick_wall_range: float = 30.0   # u, facing a wall segment this close: turn towards its nearer end
    unstick_jitter: float = 1.0        # per-cube seeded spread of the delay: delay * (1 + jitter * U[0, 1))
    blocked_fraction: float = 0.5      # a mover is blocked when slower than this fraction of its v_pref
    park_radius: float = 20.0          # u, a cube this close to its goal counts as parked
    yield_to_movers: bool = False      # a parked cube steps out of the way of a blocked mover
    yield_gap: float = 40.0            # u, movers closer than this (body gap) heading at a parked cube
    yield_width: float = 1.5           # "heading at": the mover's v_pref passes within this many R
    yield_speed: float = 0.5           # fraction of v_max of the sideways step
    safety_stop: bool = False          # stop cubes whose step would bring a pair closer than touching + gap
    safety_gap: float = 0.1            # u
    waypoint_horizon: float = 0.25     # s, waypoint = pos + v * horizon for CubeHandle-style followers


#: our best planner: the same ORCA solver with symmetry breaking and deadlock handling switched on
KEEP_RIGHT = dict(time_horizon=0.5, radius_margin=1.0, keep_right=True, unstick=True, yield_to_movers=True,
                  safety_stop=True)


class OrcaPlanner:
    """Plain ORCA with the reference parameters unless ``params`` / keyword overrides say otherwise."""
    name = 'orca'

    def __init__(self, params: OrcaParams | None = None, **overrides) -> None:
        self.params = params or OrcaParams(**overrides)
        self._rng = np.random.default_rng(0)
        self._blocked_time = np.zeros(0)
        self._delay_scale = np.ones(0)

    def reset(self, n: int, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)
        self._blocked_time = np.zeros(n)
        self._delay_scale = 1.0 + self.params.unstick_jitter * self._rng.random(n)

    def step(self, state: SwarmState, dt: float) -> PlannerOutput:
        p = self.params
        n = state.n
        pos = state.pos
        radius = state.radius + p.radius_margin
        vmax = state.max_speed
        v_pref = goal_velocity(pos, state.goal, vmax, dt, p.arrival_steps * dt)
        nbr, _dist = k_nearest(pos, p.max_neighbors, p.neighbor_dist, start_cutoff=4.0 * float(radius.max()))
        if p.unstick:
            v_pref = self._unstick(state, v_pref, dt)
        if p.yield_to_movers:
            v_pref = self._step_aside(state, v_pref, radius, nbr)
        if p.perturbation > 0.0:
            angle = self._rng.uniform(0.0, 2.0 * np.pi, n)
            v_pref = v_pref + p.perturbation * self._rng.uniform(0.0, 1.0, n)[:, None] * np.column_stack(
                [np.cos(angle), np.sin(angle)])
        normal, point, valid, hard, touching = self._constraints(state, radius, nbr, dt, v_pref)
        velocity = solve_velocity(normal, point, valid, hard, vmax, v_pref)
        velocity[~state.active] = 0.0
        if p.safety_stop:
            velocity = self._safety_stop(state, velocity, nbr, dt)
        return waypoint_output(state, velocity, touching, p.waypoint_horizon)

    def _unstick(self, state: SwarmState, v_pref, dt) -> np.ndarray:
        """Deadlock breaker with memory: while a cube away from its goal moves slower than blocked_fraction of
        its preferred speed, its blocked time grows; past unstick_delay its v_pref turns right (clockwise on the
        mat) at unstick_rate, up to unstick_max. Two cubes stuck face to face both turn right and pass."""
        p = self.params
        if len(self._blocked_time) != state.n:
            self._blocked_time = np.zeros(state.n)
        if len(self._delay_scale) != state.n:
            self._delay_scale = 1.0 + p.unstick_jitter * np.random.default_rng(0).random(state.n)
        to_goal = np.hypot(*(state.goal - state.pos).T)
        pref_speed = np.hypot(v_pref[:, 0], v_pref[:, 1])
        blocked = (to_goal > p.park_radius) & (
            np.hypot(state.vel[:, 0], state.vel[:, 1]) < p.blocked_fraction * pref_speed)
        self._blocked_time = np.where(blocked, self._blocked_time + dt, 0.0)
        delay = p.unstick_delay * self._delay_scale
        angle = np.clip(p.unstick_rate * (self._blocked_time - delay), 0.0, p.unstick_max)
        if len(state.walls) and p.unstick_wall_range > 0.0:
            angle = angle * self._turn_side_at_walls(state, v_pref)
        c, s = np.cos(angle), np.sin(angle)
        return np.column_stack([c * v_pref[:, 0] - s * v_pref[:, 1], s * v_pref[:, 0] + c * v_pref[:, 1]])

    def _turn_side_at_walls(self, state: SwarmState, v_pref) -> np.ndarray:
        """+1 (turn right) unless the cube faces a wall segment within unstick_wall_range: then the side that
        slides along the wall towards its nearer end (-1 = turn left), the short way around it."""
        p = self.params
        walls = state.walls
        segment = np.hypot(walls[:, 2] - walls[:, 0], walls[:, 3] - walls[:, 1]) > _EPS
        side = np.ones(state.n)
        if not segment.any():
            return side
        walls = walls[segment]
        on_wall, gap = nearest_on_walls(state.pos, walls)
        gap = gap - state.radius[:, None]
        w = np.argmin(gap, axis=1)
        rows = np.arange(state.n)
        away = state.pos - on_wall[rows, w]
        facing = np.einsum('nd,nd->n', away, v_pref) < 0.0
        a, b = walls[w, 0:2], walls[w, 2:4]
        along = b - a
        t = np.einsum('nd,nd->n', on_wall[rows, w] - a, along) / np.maximum(np.einsum('nd,nd->n', along, along),
                                                                           _EPS)
        to_end = np.where((t < 0.5)[:, None], -along, along)            # towards the nearer end point
        right = np.stack([-v_pref[:, 1], v_pref[:, 0]], axis=-1)
        near = (gap[rows, w] < p.unstick_wall_range) & facing
        return np.where(near & (np.einsum('nd,nd->n', to_end, right) < 0.0), -1.0, side)

    def _step_aside(self, state: SwarmState, v_pref, radius, nbr) -> np.ndarray:
        """A cube parked on its goal whose neighbour is a blocked mover heading at it prefers to step sideways,
        away from the line of the mover's preferred velocity (to the mover's right on an exact tie), instead of
        holding its spot: movers do not wait forever behind a parked cube or a gap between two."""
        p = self.params
        pos, vel = state.pos, state.vel
        valid = nbr >= 0
        j = np.where(valid, nbr, 0)
        to_goal = np.hypot(*(state.goal - pos).T)
        pref_speed = np.hypot(v_pref[:, 0], v_pref[:, 1])
        blocked = (to_goal > 2.0 * p.park_radius) & (
            np.hypot(vel[:, 0], vel[:, 1]) < p.blocked_fraction * pref_speed)
        parked = to_goal < p.park_radius
        rel_pos = pos[:, None, :] - pos[j]                                  # from the mover to the parked cube
        combined = radius[:, None] + radius[j]
        gap = np.hypot(rel_pos[..., 0], rel_pos[..., 1]) - combined
        mover_pref = v_pref[j]
        yields = (valid & parked[:, None] & blocked[j] & (gap < p.yield_gap)
                  & self._in_way(mover_pref, rel_pos, combined, p.yield_width))
        if not yields.any():
            return v_pref
        heading = mover_pref / np.maximum(np.hypot(mover_pref[..., 0], mover_pref[..., 1]), _EPS)[..., None]
        right = np.stack([-heading[..., 1], heading[..., 0]], axis=-1)      # mover's right (mat, y down)
        side = np.einsum('nkd,nkd->nk', rel_pos, right)
        away = right * np.where(side < 0.0, -1.0, 1.0)[..., None]
        push = np.where(yields[..., None], away, 0.0).sum(axis=1)
        length = np.hypot(push[:, 0], push[:, 1])
        aside = yields.any(axis=1) & (length > _EPS)
        out = v_pref.copy()
        out[aside] = push[aside] / length[aside, None] * (p.yield_speed * state.max_speed[aside, None])
        return out

    def _safety_stop(self, state: SwarmState, velocity, nbr, dt) -> np.ndarray:
        """Last line of defence when the linear program had to relax constraints (dense crowds, coarse steps):
        a cube whose step would bring it closer than touching (true radii + safety_gap) to a neighbour or a wall,
        and closer than it is now, stands still this step. Repeated until no such pair is left; a stopped pair
        cannot get closer, so no contact can deepen."""
        p = self.params
        pos, radius = state.pos, state.radius
        valid = nbr >= 0
        j = np.where(valid, nbr, np.arange(state.n)[:, None])
        limit = radius[:, None] + radius[j] + p.safety_gap
        now = np.hypot(*(pos[j] - pos[:, None, :]).transpose(2, 0, 1))
        velocity = velocity.copy()
        if len(state.walls):
            _on, gap_now = nearest_on_walls(pos, state.walls)
            _on, gap_next = nearest_on_walls(pos + velocity * dt, state.walls)
            into_wall = ((gap_next < radius[:, None] + p.safety_gap) & (gap_next < gap_now)).any(axis=1)
            velocity[into_wall] = 0.0
        for _ in range(state.n):
            nxt = pos + velocity * dt
            after = np.hypot(*(nxt[j] - nxt[:, None, :]).transpose(2, 0, 1))
            bad = valid & (after < limit) & (after < now - 1e-9)
            culprits = bad.any(axis=1) & (np.abs(velocity).sum(axis=1) > 0.0)
            if not culprits.any():
                break
            velocity[culprits] = 0.0
        return velocity

    def _in_way(self, rel_pref, rel_pos, combined, width=None):
        """Does the relative preferred velocity head for the other disc (within ``width`` R, default
        keep_right_width)?"""
        width = self.params.keep_right_width if width is None else width
        ahead = np.einsum('nkd,nkd->nk', rel_pref, rel_pos)
        miss = np.abs(rel_pref[..., 0] * rel_pos[..., 1] - rel_pref[..., 1] * rel_pos[..., 0])
        speed = np.hypot(rel_pref[..., 0], rel_pref[..., 1])
        return (ahead > 0.0) & (miss < width * combined * speed)

    def _constraints(self, state: SwarmState, radius, nbr, dt, v_pref):
        """Half-planes (normal, point) per agent: obstacles first (hard), then neighbours."""
        p = self.params
        pos, vel = state.pos, state.vel
        valid_nbr = nbr >= 0
        j = np.where(valid_nbr, nbr, 0)
        rel_pos = pos[j] - pos[:, None, :]
        rel_vel = vel[:, None, :] - vel[j]
        combined = radius[:, None] + radius[j]
        in_way = None
        if p.keep_right:
            # only head-on encounters: preferred directions more than acos(-head_on_cos) apart and the relative
            # preferred velocity aimed at the other disc (a parked cube has no preferred direction: never commits)
            pa, pb = v_pref[:, None, :], v_pref[j]
            opposed = np.einsum('nkd,nkd->nk', pa, pb) < -p.head_on_cos * (
                np.hypot(pa[..., 0], pa[..., 1]) * np.hypot(pb[..., 0], pb[..., 1]))
            in_way = opposed & self._in_way(pa - pb, rel_pos, combined)
        u, nrm = _vo_correction(rel_pos, rel_vel, combined, p.time_horizon, dt, in_way)
        # a cube that does not move (inactive) takes no share: the mover takes all of it
        share = np.where(state.active[j], p.responsibility, 1.0)
        agent_point = vel[:, None, :] + share[..., None] * u
        touching = (valid_nbr & (np.hypot(rel_pos[..., 0], rel_pos[..., 1]) < combined - 2 * p.radius_margin)).any(1)
        normals, points, valids = [nrm], [agent_point], [valid_nbr]
        hards = [np.zeros_like(valid_nbr)]
        if len(state.walls):
            on_wall, gap = nearest_on_walls(pos, state.walls)
            gap = gap - radius[:, None]                                            # surface gap to the body
            reach = p.time_horizon_obst * state.max_speed[:, None] + radius[:, None]
            order = np.argsort(gap, axis=1)[:, :p.max_obstacles]
            gap = np.take_along_axis(gap, order, axis=1)
            on_wall = np.take_along_axis(on_wall, order[..., None], axis=1)
            is_disc = np.hypot(*(state.walls[order, 2:4] - state.walls[order, 0:2]).transpose(2, 0, 1)) < _EPS
            wall_valid = gap < reach
            # discs: the velocity obstacle of a static disc (zero velocity, full responsibility)
            disc_rel = state.walls[order, 0:2] - pos[:, None, :]
            disc_u, disc_n = _vo_correction(disc_rel, np.broadcast_to(vel[:, None, :], disc_rel.shape),
                                            radius[:, None] + state.walls[order, 4], p.time_horizon_obst, dt)
            # segments: stay on this side of the wall's tangent line for tau_obst (or get out within one step)
            away = pos[:, None, :] - on_wall
            away_n = away / np.maximum(np.hypot(away[..., 0], away[..., 1]), _EPS)[..., None]
            speed_in = np.where(gap >= 0.0, gap / p.time_horizon_obst, gap / dt)
            seg_point = -away_n * speed_in[..., None]
            normals.insert(0, np.where(is_disc[..., None], disc_n, away_n))
            points.insert(0, np.where(is_disc[..., None], vel[:, None, :] + disc_u, seg_point))
            valids.insert(0, wall_valid)
            hards.insert(0, np.ones_like(wall_valid))
            touching |= (wall_valid & (gap < -p.radius_margin)).any(1)
        normal = np.concatenate(normals, axis=1)
        point = np.concatenate(points, axis=1)
        valid = np.concatenate(valids, axis=1)
        hard = np.concatenate(hards, axis=1)
        # drop columns nobody uses so the LP loops stay short
        used = valid.any(axis=0)
        return normal[:, used], point[:, used], valid[:, used], hard[:, used], touching


def _vo_correction(rel_pos, rel_vel, combined, horizon, dt, keep_right=None):
    """For relative position x = p_B - p_A, relative velocity w0 = v_A - v_B and combined radius R: the vector u
    from w0 to the nearest point of the boundary of VO^tau and the outward normal n there (arrays (..., 2)).

    Where ``keep_right`` is set (B is in A's way) and the pair does not overlap, the boundary used is the leg on
    A's right (clockwise on the mat) even if the cut-off disc is nearer: A commits to passing B on its right."""
    x, w0, big_r = rel_pos, rel_vel, combined
    dist2 = np.einsum('...d,...d->...', x, x)
    r2 = big_r * big_r
    overlapping = dist2 <= r2
    # overlap: leave the disc of radius R/dt around x/dt within one step
    tau = np.where(overlapping, dt, horizon)[..., None]
    w = w0 - x / tau                                   # from the cut-off centre to w0
    w_len = np.hypot(w[..., 0], w[..., 1])
    w_unit = w / np.maximum(w_len, _EPS)[..., None]
    # the cut-off disc is nearest when w points back towards the apex side of the centre, within the cone angle
    dot = np.einsum('...d,...d->...', w, x)
    on_cap = overlapping | ((dot < 0.0) & (dot * dot > r2 * w_len * w_len))
    u_cap = ((big_r / tau[..., 0]) - w_len)[..., None] * w_unit
    n_cap = w_unit
    # otherwise a leg: the tangent from the origin on the side of w (ties go to the clockwise-in-math leg)
    leg = np.sqrt(np.maximum(dist2 - r2, 0.0))
    cross = x[..., 0] * w[..., 1] - x[..., 1] * w[..., 0]
    # ties (exactly head-on) and agents committed to keep right take the +theta leg: clockwise on the mat (y down)
    side = np.where(cross < 0.0, -1.0, 1.0)
    if keep_right is not None:
        forced = keep_right & on_cap & ~overlapping     # only where plain ORCA would just brake (cut-off disc)
        side = np.where(forced, 1.0, side)
        on_cap = on_cap & ~forced
    dx = (x[..., 0] * leg - side * x[..., 1] * big_r) / np.maximum(dist2, _EPS)
    dy = (side * x[..., 0] * big_r + x[..., 1] * leg) / np.maximum(dist2, _EPS)
    direction = np.stack([dx, dy], axis=-1)
    along = np.einsum('...d,...d->...', w0, direction)
    u_leg = along[..., None] * direction - w0
    n_leg = np.stack([-side * dy, side * dx], axis=-1)  # perpendicular to the leg, away from the cone
    u = np.where(on_cap[..., None], u_cap, u_leg)
    normal = np.where(on_cap[..., None], n_cap, n_leg)
    return u, normal


def solve_velocity(normal, point, valid, hard, vmax, v_pref) -> np.ndarray:
    """argmin |v - v_pref| s.t. (v - point_k) . normal_k >= 0 for valid k and |v| <= vmax, for every row; rows
    whose program is infeasible get the velocity minimising the largest violation of the non-hard half-planes."""
    if hard.any():
        # the fallback keeps the hard half-planes in front of the soft ones: put them first
        order = np.argsort(~hard, axis=1, kind='stable')
        normal = np.take_along_axis(normal, order[..., None], axis=1)
        point = np.take_along_axis(point, order[..., None], axis=1)
        valid = np.take_along_axis(valid, order, axis=1)
        hard = np.take_along_axis(hard, order, axis=1)
    velocity, fail = _lp2(normal, point, valid, vmax, v_pref, direction=False)
    bad = np.nonzero(fail < valid.shape[1])[0]
    if bad.size:
        velocity[bad] = _lp3(normal[bad], point[bad], valid[bad], hard[bad], vmax[bad], velocity[bad], fail[bad])
    return velocity


def _lp2(normal, point, valid, vmax, target, direction: bool):
    """Incremental 2-D program over all rows at once. ``direction``: maximise v . target (target unit) instead of
    minimising |v - target|. Returns (v, index of the first infeasible constraint or M)."""
    rows_n, m = valid.shape
    if direction:
        v = target * vmax[:, None]
    else:
        speed = np.hypot(target[:, 0], target[:, 1])
        v = target * np.minimum(1.0, vmax / np.maximum(speed, _EPS))[:, None]
    fail = np.full(rows_n, m)
    for k in range(m):
        slack = np.einsum('nd,nd->n', v - point[:, k], normal[:, k])
        rows = np.nonzero(valid[:, k] & (fail == m) & (slack < -_EPS))[0]
        if rows.size == 0:
            continue
        nk, qk = normal[rows, k], point[rows, k]
        dk = np.stack([-nk[:, 1], nk[:, 0]], axis=-1)   # the constraint's line: qk + t dk
        qd = np.einsum('nd,nd->n', qk, dk)
        disc = qd * qd - np.einsum('nd,nd->n', qk, qk) + vmax[rows] ** 2
        feasible = disc >= 0.0
        root = np.sqrt(np.maximum(disc, 0.0))
        lo, hi = -qd - root, -qd + root
        if k > 0:
            nj, qj, vj = normal[rows, :k], point[rows, :k], valid[rows, :k]
            den = np.einsum('nd,njd->nj', dk, nj)
            num = np.einsum('njd,njd->nj', qj - qk[:, None, :], nj)    # constraint j on the line: t den >= num
            parallel = np.abs(den) < _EPS
            feasible &= ~(vj & parallel & (num > _EPS)).any(axis=1)
            bound = num / np.where(parallel, 1.0, den)
            lo = np.maximum(lo, np.where(vj & ~parallel & (den > 0.0), bound, -np.inf).max(axis=1))
            hi = np.minimum(hi, np.where(vj & ~parallel & (den < 0.0), bound, np.inf).min(axis=1))
        feasible &= lo <= hi
        if direction:
            t = np.where(np.einsum('nd,nd->n', target[rows], dk) > 0.0, hi, lo)
        else:
            t = np.clip(np.einsum('nd,nd->n', target[rows] - qk, dk), lo, hi)
        ok = rows[feasible]
        v[ok] = qk[feasible] + t[feasible, None] * dk[feasible]
        fail[rows[~feasible]] = k
    return v, fail


def _lp3(normal, point, valid, hard, vmax, v, fail):
    """Least-violation fallback: for each soft constraint k (in order) that is violated more than the current
    worst, find the velocity that violates k least while no earlier soft constraint is violated more than k and
    the hard ones hold (a 2-D program on the lines of equal violation, maximising along normal_k)."""
    rows_n, m = valid.shape
    worst = np.zeros(rows_n)
    v = v.copy()
    for k in range(m):
        violation = -np.einsum('nd,nd->n', v - point[:, k], normal[:, k])
        rows = np.nonzero((fail <= k) & valid[:, k] & ~hard[:, k] & (violation > worst + _EPS))[0]
        if rows.size == 0:
            continue
        nk, qk = normal[rows, k], point[rows, k]
        if k == 0:
            cand, sub_fail = _lp2(np.zeros((rows.size, 0, 2)), np.zeros((rows.size, 0, 2)),
                                  np.zeros((rows.size, 0), bool), vmax[rows], nk, direction=True)
        else:
            nj, qj, vj, hj = normal[rows, :k], point[rows, :k], valid[rows, :k], hard[rows, :k]
            # soft j: violation_j(v) <= violation_k(v)  <=>  v . (nj - nk) >= qj . nj - qk . nk
            diff = nj - nk[:, None, :]
            length = np.hypot(diff[..., 0], diff[..., 1])
            level = np.einsum('njd,njd->nj', qj, nj) - np.einsum('nd,nd->n', qk, nk)[:, None]
            unit = diff / np.maximum(length, _EPS)[..., None]
            soft_point = unit * (level / np.maximum(length, _EPS))[..., None]
            proj_n = np.where(hj[..., None], nj, unit)
            proj_q = np.where(hj[..., None], qj, soft_point)
            proj_valid = vj & (hj | (length > _EPS))   # same direction as k: never more violated, skip
            cand, sub_fail = _lp2(proj_n, proj_q, proj_valid, vmax[rows], nk, direction=True)
        ok = sub_fail == k
        v[rows[ok]] = cand[ok]
        worst[rows] = -np.einsum('nd,nd->n', v[rows] - qk, nk)
    return v


#: orca_kr for cubes that track the velocity on their differential drive: the tracking error is absorbed by a
#: larger radius margin and safety gap (the radius inflation of NH-ORCA, Alonso-Mora et al. 2010)
KEEP_RIGHT_DIFF_DRIVE = dict(KEEP_RIGHT, radius_margin=3.0, safety_gap=3.0)


class OrcaKeepRightPlanner(OrcaPlanner):
    """ORCA with keep-right symmetry breaking, unsticking, stepping aside and the safety stop (KEEP_RIGHT)."""
    name = 'orca_kr'

    def __init__(self, params: OrcaParams | None = None, **overrides) -> None:
        super().__init__(params or OrcaParams(**{**KEEP_RIGHT, **overrides}))


class OrcaKeepRightDiffDrivePlanner(OrcaPlanner):
    """orca_kr with the wider margins of KEEP_RIGHT_DIFF_DRIVE, for the differential-drive model."""
    name = 'orca_kr_diff'

    def __init__(self, params: OrcaParams | None = None, **overrides) -> None:
        super().__init__(params or OrcaParams(**{**KEEP_RIGHT_DIFF_DRIVE, **overrides}))
