"""A recorded bag played into the web console's view: :func:`load` reads every message the console shows (rosbags, no
ROS) and turns it into view events with the live console's own :class:`~toio_navigator.web.feed.Feed`;
:class:`Player` moves a playhead over them (play, pause, speed, seek) and gives the page the view at the playhead.

Times are seconds since the bag's start, taken from when the recorder received each message (the live console
stamps on arrival too). Seeking back starts from the nearest key frame, a copy of the view kept every
:data:`KEY_FRAME_S` seconds of the bag, so a slider drag stays quick on long bags.
"""
from __future__ import annotations

import bisect
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from toio_navigator.bags.recording import open_reader, stored_parameters
from toio_navigator.bags.replay import ReplayError
from toio_navigator.web.feed import CUBE_TOPICS, SHARED_TOPICS, Feed
from toio_navigator.web.view import ViewState

KEY_FRAME_S = 1.0
_CUBE = re.compile(r'^/(?P<cube>[A-Za-z_][A-Za-z0-9_]*)/(?P<kind>[a-z_]+)$')


def _natural(name: str):
    return [int(p) if p.isdigit() else p for p in re.split(r'(\d+)', name)]


@dataclass
class Timeline:
    """Everything a bag says to the console: view events by time (s since the bag's start)."""
    source: str
    cubes: list[str]
    duration: float
    times: list[float] = field(default_factory=list)
    events: list[list] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)      # the navigator's parameters stored in the bag

    @property
    def messages(self) -> int:
        return len(self.times)


def _wanted(topic: str, msgtype: str) -> bool:
    name = topic.lstrip('/')
    if name in SHARED_TOPICS:
        return msgtype == SHARED_TOPICS[name]
    m = _CUBE.match(topic)
    return bool(m) and CUBE_TOPICS.get(m['kind']) == msgtype


def load(bag: str | Path) -> Timeline:
    """The console's events of ``bag`` (a rosbag2 directory or an .mcap file); ReplayError naming the problem."""
    bag = Path(bag)
    reader = open_reader(bag)
    feed = Feed()
    rows = []
    try:
        start = reader.start_time
        duration = max(0.0, (reader.end_time - start) / 1e9)
        conns = [c for c in reader.connections if _wanted(c.topic, c.msgtype)]
        for conn, bag_ns, raw in (reader.messages(connections=conns) if conns else ()):
            try:
                msg = reader.deserialize(raw, conn.msgtype)
                rows.append(((bag_ns - start) / 1e9, conn.topic, feed.events(conn.topic, msg)))
            except Exception as exc:   # rosbags raises several unrelated types for undecodable input
                raise ReplayError(f'{bag}: cannot read a {conn.msgtype} on {conn.topic}: {exc}') from None
    finally:
        reader.close()
    if not rows:
        raise ReplayError(f'{bag}: nothing the console shows (no /<cube>/state, /<cube>/nav_result, '
                          '/mat_sim/contacts or /arena/* topics)')
    parameters = stored_parameters(bag) or {}
    seen = sorted({m['cube'] for _t, topic, _e in rows if (m := _CUBE.match(topic)) and m['cube'] != 'arena'},
                  key=_natural)
    listed = parameters.get('cubes')
    cubes = [str(c) for c in listed] if isinstance(listed, list) and set(seen) <= set(map(str, listed)) else seen
    rows.sort(key=lambda r: r[0])
    return Timeline(str(bag), cubes, duration, [r[0] for r in rows], [r[2] for r in rows], parameters)


class Player:
    """A playhead over ``timeline``; ``stale_s`` / ``lost_s`` as the live console's. Not thread-safe: the server
    calls it from its one thread."""

    def __init__(self, timeline: Timeline, stale_s: float = 0.5, lost_s: float = 3.0, speed: float = 1.0) -> None:
        self.timeline = timeline
        self.stale_s, self.lost_s = stale_s, lost_s
        self.speed, self.playing = float(speed), False
        self.t = 0.0
        self._keys: list[tuple[float, int, ViewState]] = []
        self._build_key_frames()
        self._rewind(0.0)

    def _fresh(self) -> ViewState:
        view = ViewState(self.timeline.cubes, self.stale_s, self.lost_s)
        if self.timeline.parameters:
            view.feed(0.0, [('navigator_parameters', (self.timeline.parameters,))])
        return view

    def _build_key_frames(self) -> None:
        view, tl = self._fresh(), self.timeline
        next_key, i = 0.0, 0
        while next_key <= tl.duration + KEY_FRAME_S:
            while i < len(tl.times) and tl.times[i] <= next_key:
                view.feed(tl.times[i], tl.events[i])
                i += 1
            self._keys.append((next_key, i, copy.deepcopy(view)))
            next_key += KEY_FRAME_S

    def _rewind(self, t: float) -> None:
        k = max(0, bisect.bisect_right([key[0] for key in self._keys], t) - 1)
        key_t, self._next, frame = self._keys[k]
        self.view = copy.deepcopy(frame)
        self.t = key_t
        self._forward(t)

    def _forward(self, t: float) -> None:
        tl = self.timeline
        while self._next < len(tl.times) and tl.times[self._next] <= t:
            self.view.feed(tl.times[self._next], tl.events[self._next])
            self._next += 1
        self.t = t

    def seek(self, t: float) -> None:
        t = min(max(0.0, float(t)), self.timeline.duration)
        if t >= self.t:
            self._forward(t)
        else:
            self._rewind(t)

    def advance(self, wall_s: float) -> None:
        """Move the playhead by ``wall_s`` seconds of wall time (when playing); it stops at the end."""
        if not self.playing:
            return
        self.seek(self.t + wall_s * self.speed)
        if self.t >= self.timeline.duration:
            self.playing = False

    def play(self) -> None:
        if self.t >= self.timeline.duration:
            self._rewind(0.0)
        self.playing = True

    def snapshot(self) -> dict:
        out = self.view.snapshot(self.t)
        out['playing'], out['speed'] = self.playing, self.speed
        return out
