"""Parameters of the reference Navigator (docs/navigator.md §1.1, §2.1, §3.1, §4.1, Appendix B).

Every constant of the reference is a field here with the reference default, so a user can tune it without
touching the algorithm. ``Fixes`` holds the named corrections of reference defects (docs/navigator.md §7); every one is
off by default, so the default behaviour is the reference's, quirks included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from toio_navigator.units import MOTOR_DEAD_ZONE, MOTOR_MAX, UNITS_PER_S_PER_MOTOR_UNIT, WHEEL_TRACK_UNITS

#: HLAvoid's scan width; read-only in the reference (2π − 0.02)
HLAVOID_FOV = 2.0 * math.pi - 0.02
#: "nothing limits the speed" value of a NaviResult that HLAvoid did not compute (C# double.MaxValue)
DOUBLE_MAX = 1.7976931348623157e308


@dataclass(frozen=True)
class Fixes:
    """Named fixes of reference defects (docs/navigator.md §7.1). All off = reference behaviour."""
    #: B1: always insert the target bearing (no 0.02 rad gap, no spurious absolute-east direction)
    sampling_gap: bool = False
    #: B4: wrap the angle inside sin() of the turning-radius rule and skip the target's own ray
    heading_wrap: bool = False
    #: B9: Boids sees a neighbour only when |relative angle| < fov/2 (a symmetric cone ahead)
    boids_fov: bool = False
    #: B3: the overlap stop rule takes the minimum with the turning-radius limit instead of replacing it
    speed_limit_min: bool = False
    #: B2: express HLAvoid's speed limit in motor units (divide the dot/s value by K) before it caps maxSpd
    speed_limit_units: bool = False
    #: B11: get_waypoint_away in BOIDS mode steers to the avoid waypoint instead of standing still
    away_in_boids: bool = False

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def all_on(cls) -> 'Fixes':
        return cls(**{n: True for n in cls.names()})


@dataclass(frozen=True)
class HLAvoidParams:
    """HLAvoid (docs/navigator.md §2.1). ``fov`` is fixed in the reference and kept here for documentation only."""
    range: float = 200.0
    nsample: int = 19
    margin: float = 22.0
    useSafety: bool = True
    p_waypoint_safety_threshold: float = 0.15
    p_runaway_penalty_away_k: float = 5.0
    p_runaway_penalty_keeprad_k: float = 10.0
    p_runaway_range: float = 250.0
    # constants of the algorithm (§2.12)
    min_ego_speed: float = 20.0           # assumed ego speed for time-to-contact
    min_rel_speed_sq: float = 1.0         # |Δv|² below this: no contact predicted
    overlap_dist_scale: float = 100.0     # "distance" scale of an overlapped robot / wall
    wall_overlap_floor: float = 0.1       # floor of that distance for walls (useSafety = false)
    nearest_min: float = 1.0              # minimum nearest-approach length
    turn_penalty_k: float = 0.1
    turn_penalty_floor: float = 0.5
    rear_penalty_k: float = 2.0
    slow_obstacle_dist: float = 50.0      # only closer samples shape the turning-radius limit
    slow_radius_add: float = 20.0
    slow_between_margin: float = 0.1
    min_speed_limit: float = 8.0
    unlimited_radius: float = 1e10
    stop_scale: float = 100.0
    runaway_pred_far: float = 0.5         # s, threat position prediction for the distance score
    runaway_pred_near: float = 0.2        # s, threat prediction for the "away" bonus
    runaway_danger_half: float = math.pi / 4 - 0.15

    @property
    def n(self) -> int:
        """The reference clamps nsample to ≥ 2 in its getter and setter."""
        return max(2, int(self.nsample))

    @property
    def fov(self) -> float:
        return HLAVOID_FOV


@dataclass(frozen=True)
class BoidsParams:
    """Boids (docs/navigator.md §3.1). fov is the reference's deg2rad(120), which wraps: 2.094395102393195."""
    fov: float = 2.094395102393195
    range: float = 150.0
    margin: float = 25.0
    p_weight_attraction: float = 50.0
    p_weight_separation: float = 1.0
    p_max_separation: float = 100.0
    p_weight_cohesion: float = 0.3
    p_max_cohesion: float = 50.0
    p_weight_alignment: float = 0.3
    p_max_alignment: float = 30.0
    p_max_all: float = 100.0


@dataclass(frozen=True)
class NavigatorParams:
    """Navigator gains (docs/navigator.md §1.1, §1.4) plus the HLAvoid / Boids parameters of the ego."""
    p_surrogate_target: float = 1.0
    p_speedratio_boidsavoid: float = 1.0
    p_speedratio_boids: float = 1.0
    boids_ratio_divisor: float = 75.0
    boidsavoid_surrogate_divisor: float = 100.0
    boidsavoid_ratio_divisor: float = 100.0
    avoid: HLAvoidParams = field(default_factory=HLAvoidParams)
    boids: BoidsParams = field(default_factory=BoidsParams)
    fixes: Fixes = field(default_factory=Fixes)

    def with_overrides(self, navigator: dict | None = None, avoid: dict | None = None,
                       boids: dict | None = None) -> 'NavigatorParams':
        """A copy with some fields replaced (names as in the reference / the conformance format)."""
        return replace(self, **(navigator or {}),
                       avoid=replace(self.avoid, **(avoid or {})),
                       boids=replace(self.boids, **(boids or {})))


@dataclass(frozen=True)
class CubeHandleParams:
    """CubeHandle (docs/navigator.md §4.1, Appendix B). Speeds in motor units unless noted."""
    wheel_track: float = WHEEL_TRACK_UNITS       # dot (≈ 19.5225)
    k: float = UNITS_PER_S_PER_MOTOR_UNIT        # dot/s per motor unit (≈ 2.06553)
    dead_zone: int = MOTOR_DEAD_ZONE
    max_spd: int = MOTOR_MAX
    dt: float = 0.05
    lag: float = 0.13
    border_x: tuple[float, float] = (65.0, 435.0)
    border_y: tuple[float, float] = (65.0, 435.0)
    p_mv2tar_reach_pred: float = 0.0
    pred_accel: float = 2000.0     # dot/s²
    pred_step: float = 0.01        # s
    history_len: int = 6
    border_tangent_window: float = 0.4  # rad
    pred_warmup_steps: int = 5     # prediction starts this many steps before now − lag
    pred_stop_steps: int = 5       # stop prediction length (B15: only 50 ms)
    pred_small_speed: float = 2.0  # predicted wheel speeds below this count as 0 (dot/s)
    reached_duration_ms: int = 100
    m2t_max_turn_deg: float = 110.0     # heading error at which move_to_target stops translating (far target)
    m2t_full_speed_deg: float = 10.0    # full speed within this heading error
    m2t_turn_time_factor: float = 1.5
    m2t_blend_speed: float = 50.0       # turning-radius / angular-rate steering blend
    rotate_time_max: int = 2000         # ms; rotate_to_* clip rotateTime to [lag + dt, this]
