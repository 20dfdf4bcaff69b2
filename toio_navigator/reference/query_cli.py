"""``toio-nav query SCENARIO.json RESULT.json``: one Navigator query in the conformance format.

Implements test/data/conformance/FORMAT.md (``toio-navigator-conformance/1``):
reads the ``scenario`` member, validates it strictly (unknown or missing keys, identical wall endpoints, bad
enum strings, non-numbers are errors that name the offending path), answers with fresh state, and writes the
result object. Exit 0 on success, 2 on a malformed scenario, 1 when a file cannot be read or written.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from toio_navigator.input_files import InputError, UnreadableFile, integer, load_json, number, read_text, show
from toio_navigator.reference.batch import EgoBatch, PairBatch, empty_pairs
from toio_navigator.reference.navigator import Direction, Mode, NaviBatch, navigate
from toio_navigator.reference.params import NavigatorParams

FORMAT = 'toio-navigator-conformance/1'

_ENTITY = {'x': None, 'y': None, 'rad': 0.0, 'spd': 0.0, 'vx': 0.0, 'vy': 0.0, 'w': 0.0, 'spdL': 0.0,
           'spdR': 0.0, 'margin': 0.0}
_OTHER = dict(_ENTITY, avoid_margin=22.0, boids_margin=25.0, relation='BOIDS')
_WALL = {'x1': None, 'y1': None, 'x2': None, 'y2': None, 'margin': 0.0}
_TARGET = {'x': None, 'y': None, 'vx': 0.0, 'vy': 0.0, 'margin': 0.0}
_SCENARIO_KEYS = ('mode', 'direction', 'ego', 'others', 'walls', 'target', 'params')
_NAV_KEYS = ('p_surrogate_target', 'p_speedratio_boidsavoid', 'p_speedratio_boids')
_AVOID_KEYS = ('range', 'nsample', 'margin', 'useSafety', 'p_waypoint_safety_threshold',
               'p_runaway_penalty_away_k', 'p_runaway_penalty_keeprad_k', 'p_runaway_range')
_BOIDS_KEYS = ('fov', 'range', 'margin', 'p_weight_attraction', 'p_weight_separation', 'p_max_separation',
               'p_weight_cohesion', 'p_max_cohesion', 'p_weight_alignment', 'p_max_alignment', 'p_max_all')


#: one query scans nsample directions against every other robot and wall: beyond this many (direction, obstacle)
#: pairs a single query takes minutes and gigabytes, so such a scenario is refused
MAX_SCAN_WORK = 20_000_000
MAX_NSAMPLE = 100_000


class ScenarioError(InputError):
    """A malformed scenario; the message names the offending path."""


def _number(value, path: str) -> float:
    try:
        return number(value, path)
    except InputError as exc:
        raise ScenarioError(str(exc)) from None


def _object(value, path: str) -> dict:
    if not isinstance(value, dict):
        raise ScenarioError(f'{path}: expected an object')
    return value


def _record(value, spec: dict, path: str, enums: dict | None = None) -> dict:
    obj = _object(value, path)
    unknown = sorted(set(obj) - set(spec))
    if unknown:
        raise ScenarioError(f'{path}: unknown key {unknown[0]!r}')
    out = {}
    for key, default in spec.items():
        if key not in obj:
            if default is None:
                raise ScenarioError(f'{path}: missing required key {key!r}')
            out[key] = default
        elif enums and key in enums:
            if not isinstance(obj[key], str) or obj[key] not in enums[key]:
                raise ScenarioError(f'{path}.{key}: must be one of {", ".join(enums[key])}, got {show(obj[key])}')
            out[key] = obj[key]
        else:
            out[key] = _number(obj[key], f'{path}.{key}')
    return out


def _params(value, path: str) -> NavigatorParams:
    obj = _object(value, path)
    unknown = sorted(set(obj) - {'navigator', 'avoid', 'boids'})
    if unknown:
        raise ScenarioError(f'{path}: unknown key {unknown[0]!r}')
    sub = {}
    for name, keys in (('navigator', _NAV_KEYS), ('avoid', _AVOID_KEYS), ('boids', _BOIDS_KEYS)):
        part = _object(obj.get(name, {}), f'{path}.{name}')
        bad = sorted(set(part) - set(keys))
        if bad:
            raise ScenarioError(f'{path}.{name}: unknown key {bad[0]!r}')
        vals = {}
        for k, v in part.items():
            p = f'{path}.{name}.{k}'
            if k == 'useSafety':
                if not isinstance(v, bool):
                    raise ScenarioError(f'{p}: expected true or false')
                vals[k] = v
            elif k == 'nsample':
                if isinstance(v, float) and math.isfinite(v) and v.is_integer():
                    v = int(v)
                try:
                    vals[k] = integer(v, p, hi=MAX_NSAMPLE)
                except InputError as exc:
                    raise ScenarioError(f'{exc} (directions of the scan)') from None
            else:
                vals[k] = _number(v, p)
        sub[name] = vals
    return NavigatorParams().with_overrides(sub['navigator'], sub['avoid'], sub['boids'])


def parse_scenario(doc) -> dict:
    """Validate a conformance document (or a bare scenario object's container) and return plain values."""
    doc = _object(doc, 'document')
    if 'scenario' not in doc:
        raise ScenarioError('document: missing required key \'scenario\'')
    sc = _object(doc['scenario'], 'scenario')
    unknown = sorted(set(sc) - set(_SCENARIO_KEYS))
    if unknown:
        raise ScenarioError(f'scenario: unknown key {unknown[0]!r}')
    for key in _SCENARIO_KEYS:
        if key not in sc:
            raise ScenarioError(f'scenario: missing required key {key!r}')
    modes = [m.value for m in Mode]
    if not isinstance(sc['mode'], str) or sc['mode'] not in modes:
        raise ScenarioError(f'scenario.mode: must be one of {", ".join(modes)}, got {show(sc["mode"])}')
    dirs = [d.value for d in Direction]
    if not isinstance(sc['direction'], str) or sc['direction'] not in dirs:
        raise ScenarioError(f'scenario.direction: must be one of {", ".join(dirs)}, got {show(sc["direction"])}')
    ego = _record(sc['ego'], _ENTITY, 'scenario.ego')
    if not isinstance(sc['others'], list):
        raise ScenarioError('scenario.others: expected a list')
    others = [_record(o, _OTHER, f'scenario.others[{i}]', {'relation': ('BOIDS', 'NONE')})
              for i, o in enumerate(sc['others'])]
    if not isinstance(sc['walls'], list):
        raise ScenarioError('scenario.walls: expected a list')
    walls = []
    for i, w in enumerate(sc['walls']):
        rec = _record(w, _WALL, f'scenario.walls[{i}]')
        if rec['x1'] == rec['x2'] and rec['y1'] == rec['y2']:
            raise ScenarioError(f'scenario.walls[{i}]: the two endpoints are the same point')
        walls.append(rec)
    target = _record(sc['target'], _TARGET, 'scenario.target')
    params = _params(sc['params'], 'scenario.params')
    work = max(2, params.avoid.nsample) * (len(others) + len(walls) + 1)
    if work > MAX_SCAN_WORK:
        raise ScenarioError(f'scenario: {params.avoid.nsample} scan directions x {len(others)} others and '
                            f'{len(walls)} walls is {work} checks, beyond what one query computes in reasonable time '
                            f'(at most {MAX_SCAN_WORK})')
    return {'mode': Mode(sc['mode']), 'direction': Direction(sc['direction']), 'ego': ego, 'others': others,
            'walls': walls, 'target': target, 'params': params}


def answer(sc: dict) -> NaviBatch:
    """Run the query of a parsed scenario (fresh state)."""
    ego, tgt, prm = sc['ego'], sc['target'], sc['params']
    egos = EgoBatch(*(np.array([v], dtype=float) for v in (
        ego['x'], ego['y'], ego['rad'], ego['spd'], ego['w'], prm.avoid.margin, prm.boids.margin,
        tgt['x'], tgt['y'], tgt['vx'], tgt['vy'])))
    os_ = sc['others']
    if os_:
        def col(k):
            return np.array([o[k] for o in os_], dtype=float)
        pairs = PairBatch(np.zeros(len(os_), dtype=np.intp), col('x'), col('y'), col('vx'), col('vy'),
                          col('margin'), col('avoid_margin'), col('boids_margin'),
                          np.array([o['relation'] == 'BOIDS' for o in os_]))
    else:
        pairs = empty_pairs()
    walls = np.array([[w['x1'], w['y1'], w['x2'], w['y2'], w['margin']] for w in sc['walls']],
                     dtype=float).reshape(-1, 5)
    return navigate(egos, pairs, walls, prm, sc['mode'], sc['direction'])


def result_document(sc: dict, res: NaviBatch) -> dict:
    def vec(a):
        return {'x': float(a[0, 0]), 'y': float(a[0, 1])}
    limit = float(res.speed_limit[0])
    if not math.isfinite(limit):   # test/data/conformance/FORMAT.md: never Infinity / NaN
        limit = 1.7976931348623157e308 if limit > 0 else 0.0
    out = {'format': FORMAT, 'result': {
        'mode': sc['mode'].value, 'direction': sc['direction'].value, 'waypoint': vec(res.waypoint),
        'avoidVector': vec(res.avoid_vector), 'boidsVector': vec(res.boids_vector), 'speedLimit': limit,
        'speedRatio': float(res.speed_ratio[0]), 'isCollision': bool(res.collision[0])}}
    debug: dict = {'hlavoidRan': res.avoid is not None}
    if res.avoid is not None:
        av = res.avoid
        debug.update(waypointIndex=int(av.index[0]), scanIsCollision=bool(av.collision[0]),
                     rads=_plain(av.rads[0]), dists=_plain(av.dists[0]), safety=_plain(av.safety[0]))
    out['debug'] = debug
    return out


def _plain(arr) -> list:
    """Debug lists as JSON numbers; a non-finite entry (coincident robot centres) becomes null."""
    return [float(v) if math.isfinite(v) else None for v in arr.tolist()]


def _finite_json(obj):
    """NaN/inf cannot be written as plain JSON; report them instead of writing garbage."""
    text = json.dumps(obj, allow_nan=False)
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('scenario', help='scenario JSON (a "scenario" member; test/data/conformance/FORMAT.md §3)')
    parser.add_argument('result', help='where to write the result JSON (test/data/conformance/FORMAT.md §4)')


def run(args) -> int:
    try:
        text = read_text(args.scenario, 'scenario')
    except UnreadableFile as exc:
        print(f'toio-nav query: {exc}', file=sys.stderr)
        return 1
    except InputError as exc:
        print(f'toio-nav query: {exc}', file=sys.stderr)
        return 2
    try:
        doc = load_json(text, args.scenario)
    except InputError as exc:
        print(f'toio-nav query: {exc}', file=sys.stderr)
        return 2
    try:
        sc = parse_scenario(doc)
    except InputError as exc:
        print(f'toio-nav query: {args.scenario}: malformed scenario: {exc}', file=sys.stderr)
        return 2
    with np.errstate(all='ignore'):
        res = answer(sc)
    try:
        text = _finite_json(result_document(sc, res))
    except ValueError:
        print(f'toio-nav query: {args.scenario}: the query produced a non-finite number '
              '(e.g. two robot centres coincide)', file=sys.stderr)
        return 1
    try:
        with open(args.result, 'w', encoding='utf-8') as fh:
            fh.write(text + '\n')
    except OSError as exc:
        print(f'toio-nav query: cannot write {args.result}: {exc.strerror or exc}', file=sys.stderr)
        return 1
    return 0
