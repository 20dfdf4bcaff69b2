"""The cube_driver's move_to_pose: the firmware's own target control (motor 0x03, answered by 0x83) behind a
topic. Topics relative to /<cube>:

  in   move_to_pose (toio_navigator/MoveToPose); service move_to_pose/cancel (std_srvs/Trigger)
  out  move_to_pose/result (toio_navigator/MoveToPoseResult): REACHED, ... as the cube answers, REJECTED (the
       goal is malformed, there is no link, or the firmware is older than 2.1.0), CANCELLED, or NO_ANSWER when
       the cube said nothing ``move_result_margin_s`` after the goal's timeout

The goals' bytes and bookkeeping are in :mod:`toio_navigator.cube.target_moves`; this module translates.
"""
from __future__ import annotations

from typing import Callable

from rclpy.node import Node
from std_srvs.srv import Trigger

from toio_navigator.cube import firmware
from toio_navigator.cube import protocol as p
from toio_navigator.cube.target_moves import RESULT_TEXT, TargetGoal, TargetMoves, target_bytes
from toio_navigator.msg import MoveToPose, MoveToPoseResult
from toio_navigator.nodes.driver_features import DriverHost

#: how often goals without an answer are looked for
CHECK_PERIOD_S = 0.2


class DriverMoves:
    """move_to_pose on ROS node ``node`` for the driver ``host``; ``rejected()`` counts a refused goal."""

    def __init__(self, node: Node, host: DriverHost, rejected: Callable[[], None]) -> None:
        self.node, self.host, self._rejected = node, host, rejected
        self.moves = TargetMoves()
        self._pub_result = node.create_publisher(MoveToPoseResult, 'move_to_pose/result', 10)
        node.create_subscription(MoveToPose, 'move_to_pose', self._on_goal, 10)
        node.create_service(Trigger, 'move_to_pose/cancel', self._on_cancel)
        node.create_timer(CHECK_PERIOD_S, self._check_overdue)

    def handlers(self) -> dict[type, Callable]:
        return {p.TargetMoveResult: self._on_target_result}

    def _result(self, goal_id: int, control_id: int, result: int, text: str) -> None:
        r = MoveToPoseResult(cube=self.host.cube, goal_id=goal_id, control_id=control_id, result=result, text=text)
        r.header.stamp = self.node.get_clock().now().to_msg()
        r.header.frame_id = self.host.config.frame_id
        self._pub_result.publish(r)

    def _on_goal(self, goal: MoveToPose) -> None:
        host = self.host
        if not host.supports(firmware.MOTOR_TARGET):
            why = host.unsupported[firmware.MOTOR_TARGET.name]
            return self._result(goal.goal_id, 0, MoveToPoseResult.REJECTED, why)
        if host.transport is None or not host.transport.is_connected:
            return self._result(goal.goal_id, 0, MoveToPoseResult.REJECTED, 'no link to the cube')
        target = TargetGoal(goal.x, goal.y, goal.theta, goal.angle_mode, goal.movement_type, goal.max_speed,
                            goal.speed_profile, goal.timeout_s)
        with host.lock:
            control_id = self.moves.next_control_id()
        try:
            data = target_bytes(target, control_id, host.config.move_default_speed)
        except (ValueError, p.ProtocolError) as exc:
            self._rejected()
            return self._result(goal.goal_id, 0, MoveToPoseResult.REJECTED, str(exc))
        with host.lock:
            self.moves.started(control_id, goal.goal_id, goal.timeout_s, host.config.move_result_margin_s)
        host.motor.submit(data)

    def _on_target_result(self, note: p.TargetMoveResult) -> None:
        """Under the host's lock (a notification handler)."""
        goal_id = self.moves.answered(note.control_id)
        if goal_id is not None:
            text = RESULT_TEXT.get(note.result, f'result code {note.result}')
            self._result(goal_id, note.control_id, note.result, text)

    def _check_overdue(self) -> None:
        with self.host.lock:
            overdue = self.moves.overdue()
        for control_id, goal_id in overdue:
            self._result(goal_id, control_id, MoveToPoseResult.NO_ANSWER, 'no result from the cube (link lost?)')

    def _on_cancel(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self.host.lock:
            running = self.moves.cancel_all()
        if not running:
            response.success, response.message = False, 'no move_to_pose running'
            return response
        self.host.send_wheels(0, 0, 10)          # any motor write ends the firmware's move
        for control_id, goal_id in running:
            self._result(goal_id, control_id, MoveToPoseResult.CANCELLED, 'cancelled')
        response.success, response.message = True, f'cancelled {len(running)} move(s)'
        return response
