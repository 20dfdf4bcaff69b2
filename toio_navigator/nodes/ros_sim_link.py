"""The simulated BLE link over ROS topics: a cube_driver's transport whose cube lives in the mat_sim process.

:class:`RosSimLink` implements the :class:`toio_navigator.cube.transport.Transport` primitives on two topics of
``toio_navigator/BleFrame`` in the driver's namespace:

* ``ble/tx`` (driver -> mat_sim): exactly the bytes the BLE transport would write, or a read request;
* ``ble/rx`` (mat_sim -> driver): exactly the notification bytes, or the answer to a read.

So the driver above it runs the same code as on a real cube (same writes, reconnects, settings replay); only the
air is DDS. "Connected" means the mat_sim process hosts this cube: the tx topic has a matched subscriber and the
rx topic a matched publisher whose DDS liveliness lease holds. When either disappears (mat_sim stopped, or died:
its lease runs out and stays lost, ``LINK_LEASE_S`` + ``LINK_GRACE_S``), or mat_sim says the cube dropped the link
(it took this driver for gone), the link is lost and the base class reconnects with backoff, exactly as after a
BLE disconnect. A lease regained within the grace (mat_sim starved for a moment) keeps the link; one that ran out
for longer while mat_sim lives (starved for seconds) is a lost link, and reconnecting asks it a read, whose
answer proves it alive.

Threads: the transport's coroutines run on the driver's asyncio loop; the rx subscription fires on the ROS
executor thread. Notifications are delivered straight from the executor thread (one hop less on the pose ->
motor-command path); read answers are handed to the loop with ``call_soon_threadsafe``.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Callable

from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node

from toio_navigator.cube.protocol import Characteristic
from toio_navigator.cube.transport import Transport, TransportError
from toio_navigator.msg import BleFrame
from toio_navigator.nodes.qos import BLE_QOS, Lease

#: how long a disconnect keeps the link's writer alive for the frames written before it (see _close)
FLUSH_TIMEOUT_S = 0.5
#: a peer whose lease ran out is asked this (a read every cube answers) this often while the link connects; the
#: answer's seq is one no read of ours uses, so it is not taken for one
PROBED = Characteristic.BATTERY_INFORMATION
PROBE_PERIOD_S = 0.25
PROBE_SEQ = 0


class RosSimLink(Transport):
    """A :class:`Transport` to a virtual cube hosted by mat_sim, over ``<ns>/ble/tx`` and ``<ns>/ble/rx``."""

    def __init__(self, node: Node, *, topic_prefix: str = 'ble', watch_period_s: float = 0.1,
                 first_frame_wait_s: float = 0.5, callback_group=None, **transport_kwargs) -> None:
        super().__init__(**transport_kwargs)
        if watch_period_s <= 0:
            raise ValueError(f'watch_period_s must be > 0, got {watch_period_s}')
        self._node = node
        self._watch_period_s = watch_period_s
        self._first_frame_wait_s = first_frame_wait_s
        self._heard = False                     # any frame from mat_sim arrived (the rx path works both ways)
        self._dropped = False                   # mat_sim said the cube dropped this link (BleFrame.DISCONNECTED)
        self._tx = node.create_publisher(BleFrame, f'{topic_prefix}/tx', BLE_QOS)
        self._peer_lease = Lease()              # mat_sim's DDS liveliness: lost when it died or hangs
        self._rx = node.create_subscription(BleFrame, f'{topic_prefix}/rx', self._on_rx, BLE_QOS,
                                            callback_group=callback_group,
                                            event_callbacks=SubscriptionEventCallbacks(liveliness=self._on_liveliness,
                                                                                       use_default_callbacks=False))
        self._deliver: dict[str, Callable[[bytes], None]] = {}
        self._open_flag = False
        self._reads: dict[int, asyncio.Future] = {}
        self._seq = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch_task: asyncio.Task | None = None
        self._lock = threading.Lock()
        self.frames_received = 0

    def _peer_matched(self) -> bool:
        """mat_sim's endpoints are in the DDS graph: it subscribes to our tx and publishes our rx."""
        return self._tx.get_subscription_count() > 0 and self._rx.get_publisher_count() > 0

    def peer_present(self) -> bool:
        """mat_sim hosts this cube: its endpoints are matched and its liveliness lease holds (a killed mat_sim
        stays in the DDS graph for its ~20 s discovery lease, its lease is lost within 1.5 s)."""
        return self._peer_matched() and not self._peer_lease.lost()

    def _on_liveliness(self, info) -> None:
        """mat_sim's rx writer became alive or lost its lease."""
        self._peer_lease.on_event(info)

    # ------------------------------------------------------------------ Transport primitives
    async def _open(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._dropped = False
        next_probe = self._loop.time()
        while not self.peer_present():          # bounded by the caller's connect timeout
            if self._peer_matched() and self._loop.time() >= next_probe:
                # matched, but its lease stayed lost (a host can starve a process for seconds) and no "alive again"
                # may ever come while the rx writer has nothing to send: ask it something, as a central does when it
                # connects; any answer proves it alive (_on_rx). A dead mat_sim answers nothing.
                self._tx.publish(BleFrame(uuid=PROBED.value, op=BleFrame.READ, seq=PROBE_SEQ))
                next_probe = self._loop.time() + PROBE_PERIOD_S
            await asyncio.sleep(0.005)
        # matching is seen from our side first; the first frame from mat_sim proves its writer matched our reader
        # too, so the first answers (protocol version) are not lost. A silent cube is accepted after a short wait.
        deadline = self._loop.time() + self._first_frame_wait_s
        while not self._heard and self._loop.time() < deadline:
            await asyncio.sleep(0.005)
        self._open_flag = True
        self._watch_task = self._loop.create_task(self._watch())

    async def _close(self) -> None:
        if self._open_flag and self.peer_present():
            # a disconnect on purpose: the last frames (the driver's stop) left at once, but Fast DDS acknowledges
            # them only on its next heartbeat (measured: 2.7-3.0 s), so this wait normally runs out; it keeps the
            # writer alive while the readers take the frames, so none learns it is gone first and drops them.
            # Not when mat_sim is gone (nobody would take them)
            self._tx.wait_for_all_acked(Duration(seconds=FLUSH_TIMEOUT_S))
        self._open_flag = False
        task, self._watch_task = self._watch_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._fail_reads('link closed')

    async def _write(self, char: Characteristic, data: bytes, response: bool) -> None:
        if not self._open_flag:
            raise TransportError('simulated link is down')
        self._tx.publish(BleFrame(uuid=char.value, op=BleFrame.WRITE, with_response=response, data=data,
                                  stamp=self._node.get_clock().now().to_msg()))

    async def _read(self, char: Characteristic) -> bytes:
        if not self._open_flag:
            raise TransportError('simulated link is down')
        loop = asyncio.get_running_loop()
        with self._lock:
            self._seq = self._seq % 0xFFFFFFFF + 1      # 1 .. 2**32 - 1: PROBE_SEQ is never a read's
            seq = self._seq
            future = loop.create_future()
            self._reads[seq] = future
        try:
            self._tx.publish(BleFrame(uuid=char.value, op=BleFrame.READ, seq=seq))
            return await future
        finally:
            with self._lock:
                self._reads.pop(seq, None)

    async def _subscribe(self, char: Characteristic, deliver: Callable[[bytes], None]) -> None:
        self._deliver[char.value] = deliver

    async def _unsubscribe(self, char: Characteristic) -> None:
        self._deliver.pop(char.value, None)

    # ------------------------------------------------------------------ internals
    def _on_rx(self, frame: BleFrame) -> None:
        """Executor thread: a notification or a read answer from the virtual cube."""
        self._heard = True
        self._peer_lease.heard()                # a frame: mat_sim is alive
        if not self._open_flag:
            return                              # like a BLE stack: nothing arrives on a closed link
        self.frames_received += 1
        if frame.op == BleFrame.DISCONNECTED:
            self._dropped = True                # the watch below takes the link down and the base class reconnects
        elif frame.op == BleFrame.NOTIFY:
            deliver = self._deliver.get(frame.uuid)
            if deliver is not None:
                deliver(bytes(frame.data))
        elif frame.op == BleFrame.READ_RESPONSE:
            with self._lock:
                future = self._reads.get(frame.seq)
            if future is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(_resolve, future, bytes(frame.data))

    async def _watch(self) -> None:
        """Notice mat_sim going away (the simulated equivalent of a BLE supervision timeout)."""
        try:
            while self._open_flag:
                await asyncio.sleep(self._watch_period_s)
                try:
                    present = self.peer_present() and not self._dropped
                except RuntimeError:    # InvalidHandle / RCLError: our node or its context is gone (shutdown)
                    return
                if self._open_flag and not present:
                    self._open_flag = False
                    self._fail_reads('the cube dropped the link' if self._dropped else 'mat_sim went away')
                    self._link_lost()
                    return
        except asyncio.CancelledError:
            pass

    def _fail_reads(self, reason: str) -> None:
        with self._lock:
            pending = list(self._reads.values())
        for future in pending:
            if not future.done():
                future.get_loop().call_soon_threadsafe(_fail, future, TransportError(reason))

    def destroy(self) -> None:
        """Release the ROS entities (after disconnect())."""
        self._node.destroy_publisher(self._tx)
        self._node.destroy_subscription(self._rx)


def _resolve(future: asyncio.Future, data: bytes) -> None:
    if not future.done():
        future.set_result(data)


def _fail(future: asyncio.Future, exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)

