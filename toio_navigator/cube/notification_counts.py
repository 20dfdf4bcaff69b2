"""What arrived from a cube, counted for the driver's diagnostics: notifications, positions among them, and the
ones that could not be decoded; rates over the time since the last report. Plain Python, no ROS."""
from __future__ import annotations

import time


class NotificationCounts:
    def __init__(self) -> None:
        self.notifications = 0
        self.positions = 0
        self.bad = 0
        self._last_report = (time.monotonic(), 0, 0)     # when, positions, notifications

    def diagnostics(self) -> dict[str, str]:
        """Rates since the last call, and the count of undecodable notifications."""
        now = time.monotonic()
        then, positions, notifications = self._last_report
        span = max(now - then, 1e-6)
        self._last_report = (now, self.positions, self.notifications)
        return {'position_rate_hz': f'{(self.positions - positions) / span:.1f}',
                'notification_rate_hz': f'{(self.notifications - notifications) / span:.1f}',
                'bad_notifications': str(self.bad)}
