"""How long a motor command may run, and the motor writes that carry it; plain Python, no ROS.

Every motor write is a 0x02 command with a duration, so a cube whose driver, navigator or link dies stops by
itself. A stamped command (its sender's decision time) runs until stamp + duration at the latest: one delayed on
its way (a busy host, a network that held it back) runs only for what is left of it, one that arrives after its
end not at all, so a cube never drives on a stale decision for longer than the sender meant.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Callable

from toio_navigator.cube import protocol as p
from toio_navigator.cube.coalesced_writer import CoalescedWriter, characteristic_writer
from toio_navigator.cube.transport import Transport

#: the longest duration a 0x02 command can carry (255 steps of 10 ms)
MAX_DURATION_MS = 2550
#: the shortest (one step); 0 would mean "until the next command", which a driver never sends
MIN_DURATION_MS = 10
#: a stamp further ahead than this is a clock out of sync, not a command from the near future
FUTURE_TOLERANCE_S = 1.0
#: the last motor write of a driver that stops: both wheels 0 for the shortest duration
STOP_NOW = p.MotorControlTimed(0, 0, 1).encode()


@dataclass(frozen=True)
class CommandTiming:
    """How long one motor command runs, decided when it arrives."""
    duration_ms: int                  # MIN_DURATION_MS..MAX_DURATION_MS
    asked_ms: int                     # the duration asked for (or the default); more than the maximum is clipped
    age_s: float | None = None        # how long ago its stamp was (None: not stamped, or stamps not used)
    expires_in_s: float | None = None  # runs until this long from arrival (None: the whole duration from the write)

    @property
    def clipped(self) -> bool:
        return self.asked_ms > MAX_DURATION_MS

    @property
    def late(self) -> bool:
        """It arrived after its end (or stamped by a clock far ahead): worth a warning."""
        return self.age_s is not None and (self.age_s * 1000.0 >= self.duration_ms or self.age_s < -FUTURE_TOLERANCE_S)

    @property
    def dropped(self) -> bool:
        """Arrived after its end: nothing is sent (a stamp from the future still runs, from its arrival)."""
        return self.late and self.age_s >= 0


def command_timing(duration_ms: int, default_ms: int, age_s: float | None = None) -> CommandTiming:
    """The timing of a command asking for ``duration_ms`` (0: ``default_ms``), stamped ``age_s`` seconds ago
    (None: not stamped, or stamps are not to be used)."""
    asked = duration_ms or default_ms
    duration = max(min(asked, MAX_DURATION_MS), MIN_DURATION_MS)
    if age_s is None:
        return CommandTiming(duration, asked)
    timing = CommandTiming(duration, asked, age_s)
    if timing.late and not timing.dropped:
        age_s = 0.0             # the sender's clock is ahead: run from arrival
    return CommandTiming(duration, asked, timing.age_s, duration / 1000.0 - max(age_s, 0.0))


class MotorCommander:
    """The motor characteristic's writes: timed wheel commands, coalesced to the cube's minimum write interval
    (the newest wins), raw motor writes (the firmware's target moves) through the same pacing, and the stop on the
    way out. ``submit``-style calls may come from any thread; writing happens on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: Callable[[], Transport | None],
                 min_interval_s: float) -> None:
        self.writer = CoalescedWriter(loop, characteristic_writer(transport, p.Characteristic.MOTOR_CONTROL),
                                      min_interval_s)
        self.sign = (1, 1)          # of the last wheel command: wheel-speed notifications are unsigned
        self.commands_expired = 0   # stamped commands that arrived after their end

    def send_wheels(self, left: int, right: int, duration_ms: int, expires_at: float | None = None) -> None:
        """Queue a 0x02 write (speeds already clipped; duration 10..2550 ms). With ``expires_at`` (a
        time.monotonic() instant) the duration is what is left until then when the write goes out (the write may
        wait for the cube's minimum write interval), and nothing is written once it has passed."""
        self.sign = (-1 if left < 0 else 1, -1 if right < 0 else 1)
        if expires_at is None:
            self.writer.submit(p.MotorControlTimed(left, right, duration_ms // 10).encode())
            return

        def remaining_command() -> bytes | None:
            left_10ms = min(duration_ms, int((expires_at - time.monotonic()) * 1000.0)) // 10
            return p.MotorControlTimed(left, right, left_10ms).encode() if left_10ms >= 1 else None
        self.writer.submit(remaining_command)

    def command(self, left: int, right: int, timing: CommandTiming) -> None:
        """Send a command whose timing was decided on arrival (a dropped one only counts)."""
        if timing.dropped:
            self.commands_expired += 1
            return
        if timing.late:
            self.commands_expired += 1
        expires_at = None if timing.expires_in_s is None else time.monotonic() + timing.expires_in_s
        self.send_wheels(left, right, timing.duration_ms, expires_at)

    def submit(self, data: bytes) -> None:
        """Any other motor write (a target move), paced like the wheel commands."""
        self.writer.submit(data)

    async def finish(self) -> bool:
        """On the loop: the stop as the last write, paced; True if it was written."""
        return await self.writer.finish(STOP_NOW)

    def diagnostics(self) -> dict[str, str]:
        w = self.writer
        return {'motor_writes': str(w.writes), 'motor_coalesced': str(w.coalesced), 'motor_delayed': str(w.delayed),
                'motor_failed': str(w.failed), 'motor_expired': str(self.commands_expired + w.expired)}
