"""A cube driver on its way out: a notification being handled when the driver is destroyed finishes first, and
nothing its transport delivers afterwards reaches ROS (no "publisher's context is invalid", no traceback).

In process, with a transport whose cube notifies from a thread of its own (as some BLE backends do, and as the
bleak loop thread does with respect to the executor), so the two threads really meet.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy')
msg = pytest.importorskip('toio_navigator.msg')

from toio_navigator.cube import protocol as p  # noqa: E402
from toio_navigator.cube.transport import LinkState, Transport  # noqa: E402
from toio_navigator.nodes.cube_driver import CubeDriverNode  # noqa: E402

ID = p.Characteristic.ID_INFORMATION
CONFIG = p.Characteristic.CONFIGURATION
#: a position reading (x 150, y 250, 0 degrees)
POSITION = struct.pack('<BHHHHHH', 1, 150, 250, 0, 150, 250, 0)


class ThreadedCube(Transport):
    """A transport to a cube that answers the version request and otherwise notifies when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.deliver: dict[p.Characteristic, object] = {}
        self.writes: list[tuple[p.Characteristic, bytes]] = []

    async def _open(self) -> None:
        pass

    async def _close(self) -> None:
        pass

    async def _write(self, char, data, response) -> None:
        self.writes.append((char, data))
        if char is CONFIG and data == p.ConfigWrite.request_protocol_version().encode():
            # answered over the air, to a subscriber (the driver asks again if it was not one yet)
            asyncio.get_running_loop().call_soon(self._answer_version)

    def _answer_version(self) -> None:
        deliver = self.deliver.get(CONFIG)
        if deliver is not None:
            deliver(b'\x81\x00' + b'2.4.0')

    async def _read(self, char) -> bytes:
        return {p.Characteristic.BATTERY_INFORMATION: b'\x50', p.Characteristic.BUTTON_INFORMATION: b'\x01\x00',
                p.Characteristic.SENSOR_INFORMATION: b'\x01\x01\x00\x00\x01\x00'}[char]

    async def _subscribe(self, char, deliver) -> None:
        self.deliver[char] = deliver

    async def _unsubscribe(self, char) -> None:
        self.deliver.pop(char, None)


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_destroying_the_driver_waits_for_a_notification_in_progress_and_drops_later_ones(ros, monkeypatch, caplog):
    caplog.set_level(logging.ERROR)         # a failing notification callback is logged by the transport
    cube = ThreadedCube()
    driver = CubeDriverNode(namespace='cube1', context=ros, transport=cube)
    assert wait_for(lambda: driver.connection.reported is LinkState.CONNECTED and driver.firmware == '2.4.0')

    # a position reading that is held up inside its handler, before anything is published
    entered, release = threading.Event(), threading.Event()
    admit = driver.state_topics.pose_gate.admit

    def slow_admit(*args):
        entered.set()
        release.wait(10)
        return admit(*args)
    monkeypatch.setattr(driver.state_topics.pose_gate, 'admit', slow_admit)
    handler = threading.Thread(target=cube.deliver[ID], args=(POSITION,))
    handler.start()
    assert entered.wait(10)
    destroyer = threading.Thread(target=driver.destroy_node)
    destroyer.start()
    destroyer.join(0.5)
    assert destroyer.is_alive(), 'the driver was destroyed while one of its notifications was being handled'
    release.set()
    handler.join(10)
    destroyer.join(10)
    assert not handler.is_alive() and not destroyer.is_alive()
    assert driver.position_notifications == 1


    # the cube still notifies after its driver is gone: dropped quietly
    cube.deliver[ID](POSITION)
    assert driver.position_notifications == 1 and driver.notifications > 0
    stop = p.MotorControlTimed(0, 0, 1).encode()
    assert cube.writes[-1] == (p.Characteristic.MOTOR_CONTROL, stop)    # the cube got its stop on the way out
    assert not [r.getMessage() for r in caplog.records], 'a notification failed on the way out'
