"""Every node's parameter set, without ROS: random and mutated values give either a correct accepted value or a
SettingError (a ValueError) whose message names the parameter -- never another exception, never a value that
breaks its rule. The rules are checked against an oracle written here from the declared specs, not against
Param.check itself."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.settings import arena_explorer, driver, mat_sim, navigator, virtual_ir
from toio_navigator.settings.navigator import reference_parameters
from toio_navigator.settings.spec import (
    BOOL,
    FLOAT,
    FLOATS,
    INT,
    INTS,
    NAME,
    STR,
    STRINGS,
    TEXTS,
    Param,
    ParamSet,
    SettingError,
    name_problem,
)
from toio_navigator.sim.virtual_cube import FirmwareParams, VirtualCubes
from toio_navigator.sim.world import World

EXAMPLES = settings(max_examples=150, deadline=None, derandomize=True)

# values a user might type or a YAML file might hold, wrong ones included
NASTY = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.sampled_from(['', 'abc', '1e-2', 'true', 'cube1', '.inf', 'sim']),
    st.lists(st.one_of(st.integers(-50, 50), st.floats(-1e3, 1e3), st.text(max_size=4)), max_size=6),
    st.lists(st.sampled_from(['cube1', 'cube2', 'a_b', '9x', 'a b', '']), max_size=4),
)


def plausible(p: Param) -> st.SearchStrategy:
    """Values of the parameter's own kind, near and across its bounds."""
    low = p.low if p.low is not None else -1e6
    high = p.high if p.high is not None else 1e6
    if p.choices:
        return st.sampled_from(p.choices + ('nope',))
    if p.kind == BOOL:
        return st.booleans()
    if p.kind in (INT, INTS):
        item = st.integers(int(math.floor(low)) - 2, int(math.ceil(high)) + 2)
    elif p.kind in (FLOAT, FLOATS):
        item = st.one_of(st.floats(low - 1.0, high + 1.0), st.sampled_from([low, high]))
    elif p.kind == STRINGS:
        return st.lists(st.sampled_from(['cube1', 'cube2', 'cube3', 'x_1']), min_size=0, max_size=4)
    elif p.kind == NAME:
        return st.sampled_from(['cube1', 'c_2', '2cube', 'a-b', ''])
    elif p.kind == TEXTS:
        names = st.sampled_from(['hci0', 'hci1', '*', 'hci0,hci1', 'a b', '', 'hci0,*'])
        return st.one_of(names, st.lists(names, max_size=3))
    else:
        return st.text(max_size=6)
    if p.kind in (INTS, FLOATS):
        sizes = p.lengths or (0, p.length_multiple, 2 * p.length_multiple, 3)
        return st.sampled_from(sizes).flatmap(lambda n: st.lists(item, min_size=n, max_size=n))
    return item


def satisfies(p: Param, value) -> bool:
    """The oracle: ``value`` (as checked) is of the parameter's kind and inside its rule."""
    def in_bounds(x) -> bool:
        return (math.isfinite(x) and (p.low is None or (x > p.low if p.low_open else x >= p.low))
                and (p.high is None or x <= p.high))
    if p.kind == BOOL:
        return isinstance(value, bool)
    if p.kind == INT:
        return type(value) is int and in_bounds(value)
    if p.kind == FLOAT:
        return type(value) is float and in_bounds(value)
    if p.kind in (STR, NAME):
        return isinstance(value, str) and (not p.choices or value in p.choices) and \
            (p.kind == STR or not name_problem(value))
    if p.kind == TEXTS:
        return isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    if not isinstance(value, tuple) or (p.lengths and len(value) not in p.lengths) or len(value) % p.length_multiple:
        return False
    if p.kind == STRINGS:
        return bool(value) and len(set(value)) == len(value) and not any(name_problem(v) for v in value)
    item_type = int if p.kind == INTS else float
    return all(type(v) is item_type and in_bounds(v) for v in value)


def mutations(params: ParamSet, base: dict) -> st.SearchStrategy:
    """``base`` with one to three parameters set to plausible or nasty values: (values, changed names)."""
    names = params.names()

    def mutate(chosen):
        return st.tuples(*[st.one_of(plausible(params[n]), NASTY) for n in chosen]).map(
            lambda vals: ({**base, **dict(zip(chosen, vals))}, set(chosen)))
    return st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True).flatmap(mutate)


def judge(params: ParamSet, build, values: dict, changed: set[str]):
    """Run ``build(values)``: a SettingError naming a parameter of the set (a changed one, unless the rule ties it
    to another), or success with every value inside its rule. Returns the result (None when refused)."""
    try:
        result = build(values)
    except SettingError as exc:
        assert str(exc).startswith(f'parameter {exc.name}: ') and exc.name in params, str(exc)
        bad = [n for n in changed if not _accepted(params[n], values[n])]
        if bad:                     # a value breaking its own rule is what gets named
            assert exc.name in bad, f'{exc} while the bad values were {bad}'
        return None
    for n in changed:
        assert _accepted(params[n], values[n]), f'{n}={values[n]!r} was accepted'
    return result


def _accepted(p: Param, value) -> bool:
    try:
        checked = p.check(value)
    except SettingError:
        return False
    assert satisfies(p, checked), f'{p.name}: check({value!r}) gave {checked!r}, outside its rule'
    assert p.check(checked) == checked            # checking twice changes nothing
    return True


# ----------------------------------------------------------------------------------------------- per node

@EXAMPLES
@given(mutations(navigator.PARAMS, {}))
def test_navigator_parameters(case):
    values, changed = case
    config = judge(navigator.PARAMS, navigator.navigator_config, values, changed)
    if config is not None:
        refs = reference_parameters(config.params, config.handle)
        for n in changed:
            want = navigator.PARAMS[n].check(values[n])
            got = (getattr(config.settings, n) if n in navigator.SETTING_PARAMETERS else refs[n] if n in refs
                   else {'markers_every': config.markers_every,
                         'tick_on_fresh_states': config.tick_on_fresh_states,
                         'goal_fail_after_s': config.goals.fail_after_s,
                         'goal_blocked_after_s': config.goals.blocked_after_s,
                         'goal_progress_distance': config.goals.progress_distance,
                         'goal_pose_tolerance': config.goals.pose_tolerance,
                         'frame_id': config.frames.frame_id, 'base_frame': config.frames.base_frame,
                         'map_frame': config.frames.map_frame, 'publish_tf': config.frames.publish_tf}[n])
            assert got == want, n


@EXAMPLES
@given(mutations(driver.PARAMS, {}))
def test_cube_driver_parameters(case):
    values, changed = case
    config = judge(driver.PARAMS, lambda v: driver.DriverConfig.from_values(v, '/cube1'), values, changed)
    if config is not None:
        checked = driver.PARAMS.check_all(values)
        assert config.motor_duration_ms == checked['motor_duration_ms']
        assert config.min_motor_interval_s == checked['min_motor_interval_ms'] / 1000
        assert config.dead_zone <= config.max_motor
        assert config.backoff.max_delay_s >= config.backoff.initial_s


@EXAMPLES
@given(mutations(mat_sim.PARAMS, {'cubes': ['cube1', 'cube2']}))
def test_mat_sim_parameters(case):
    values, changed = case
    config = judge(mat_sim.PARAMS, mat_sim.sim_config, values, changed)
    if config is not None:
        assert config.poses.shape == (len(config.values['cubes']), 3)
        assert config.world.dt == pytest.approx(1.0 / config.values['physics_rate_hz'])


@EXAMPLES
@given(mutations(virtual_ir.PARAMS, {'cubes': ['cube1'], 'arena_layout': 'arena.json'}))
def test_virtual_ir_parameters(case):
    values, changed = case
    judge(virtual_ir.PARAMS, virtual_ir.virtual_ir_values, values, changed)


@EXAMPLES
@given(mutations(arena_explorer.PARAMS, {}))
def test_arena_explorer_parameters(case):
    values, changed = case
    s = judge(arena_explorer.PARAMS, arena_explorer.settings_from_values, values, changed)
    if s is not None:
        assert s.goal_tolerance <= s.mapping.cell_size / 2
        assert s.waypoint is None or (1 <= s.waypoint[0] <= 13 and 1 <= s.waypoint[1] <= 18)


# ----------------------------------------------------------------------------------------------- the rules

@pytest.mark.parametrize('params', [navigator.PARAMS, driver.PARAMS, mat_sim.PARAMS, virtual_ir.PARAMS,
                                    arena_explorer.PARAMS], ids=['navigator', 'driver', 'mat_sim', 'virtual_ir',
                                                                 'arena_explorer'])
def test_every_parameter_is_described_and_its_default_keeps_its_rule(params):
    for param in params:
        assert len(param.description) > 10, param.name
        assert param.default is None or satisfies(param, param.check(param.default)), param.name


@pytest.mark.parametrize('name, value, message', [
    ('markers_every', math.inf, 'parameter markers_every: must be an integer >= 1, got inf'),
    ('markers_every', 'abc', "parameter markers_every: must be an integer >= 1, got 'abc'"),
    ('tick_on_fresh_states', 'abc', "parameter tick_on_fresh_states: must be true or false, got 'abc'"),
    ('cubes', [], 'parameter cubes: must be a non-empty list of unique cube names, got []'),
    ('cubes', None, 'parameter cubes: must be a non-empty list of unique cube names, got no value'),
    ('mode', 'NOPE', "parameter mode: must be one of: AVOID, BOIDS, BOIDS_AVOID, got 'NOPE'"),
    ('rate_hz', 1e-300, 'parameter rate_hz: must be a finite number 0.1..1000, got 1e-300'),
    ('walls', [1.0, 2.0], 'parameter walls: must be a list of finite numbers in groups of 5, got [1.0, 2.0]'),
])
def test_navigator_messages_name_the_parameter_and_the_rule(name, value, message):
    with pytest.raises(SettingError) as err:
        navigator.navigator_config({name: value})
    assert str(err.value).startswith(message)


def test_run_time_changes_use_the_start_up_rules_and_refuse_read_only_ones():
    values = driver.PARAMS.check_all({})
    assert driver.PARAMS.merge(values, {'motor_duration_ms': 500.0})['motor_duration_ms'] == 500
    with pytest.raises(SettingError, match='parameter motor_duration_ms: must be an integer 10..2550'):
        driver.PARAMS.merge(values, {'motor_duration_ms': 99999})
    with pytest.raises(SettingError, match='parameter transport: is read-only'):
        driver.PARAMS.merge(values, {'transport': 'ble'})
    with pytest.raises(SettingError, match='parameter dead_zone: must be <= max_motor'):
        driver.DriverConfig.from_values(driver.PARAMS.merge(values, {'max_motor': 5}), '/cube1')


# ----------------------------------------------------------------------------------------------- firmware

def configured(version: str, writes_for: str) -> tuple[int, set[str]]:
    """(writes a virtual cube of ``version`` dropped, features the driver left out) when the driver configures it
    as it would a cube of ``writes_for`` (all notifications on)."""
    cube = VirtualCubes(World([[200.0, 200.0, 0.0]]), FirmwareParams(version=version))[0]
    cube.connect()
    have, left_out = p.parse_version(writes_for), set()

    def supports(feature: firmware.Feature) -> bool:
        if not feature.available(have):
            left_out.add(feature.name)
        return feature.available(have)
    config = driver.DriverConfig.from_values({'imu': 'quaternion', 'magnet': 'force'}, '/cube1')
    for data in config.configuration_writes(have, supports):
        cube.write(p.Characteristic.CONFIGURATION, data)
    return cube.dropped_writes, left_out


@pytest.mark.parametrize('version', firmware.VERSIONS)
def test_driver_and_simulator_read_one_firmware_table(version):
    """A virtual cube of each version accepts every configuration write the driver makes for that version, and
    drops exactly the writes the driver would make for the newest cube that this version lacks."""
    dropped, left_out = configured(version, version)
    assert dropped == 0
    have = p.parse_version(version)
    asked = [firmware.DOUBLE_TAP, firmware.ID_NOTIFICATION_SETTINGS, firmware.WHEEL_SPEED, firmware.POSTURE_QUATERNION,
             firmware.MAGNET_FORCE] + ([] if firmware.POSTURE_QUATERNION.available(have) else [firmware.POSTURE_EULER])
    assert left_out == {f.name for f in asked if not f.available(have)}
    newest = firmware.VERSIONS[-1]
    dropped, _ = configured(version, newest)
    # the newest cube's writes: 0x17 double tap, 0x18 + 0x19 ID settings, 0x1C wheel speed, 0x1D posture, 0x1B magnet
    needs = [firmware.DOUBLE_TAP, firmware.ID_NOTIFICATION_SETTINGS, firmware.ID_NOTIFICATION_SETTINGS,
             firmware.WHEEL_SPEED, firmware.POSTURE_QUATERNION, firmware.MAGNET_FORCE]
    assert dropped == sum(not f.available(have) for f in needs)
