"""The arena demo's calls of the explorer's Trigger services over real DDS: an answer that never comes (a busy
machine loses a service's reply when its reply path is not matched yet) is asked for again, not waited for until
the demo gives up."""
from __future__ import annotations

import time

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.task import Future  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from toio_navigator.nodes.arena_demo import ArenaDemoError, call_trigger  # noqa: E402
from toio_navigator.nodes.lean_node import LeanNode  # noqa: E402
from toio_navigator.nodes.service_call import ANSWER_WAIT_S  # noqa: E402


class _Server:
    """A Trigger service that takes every request and answers ``answers[k]`` to the k-th one: None = never (the
    answer lost), else (success, message)."""

    def __init__(self, node: LeanNode, answers: list) -> None:
        self.answers, self.asked = answers, 0
        self.never = Future()           # awaited by an answer that never comes
        # reentrant: the answer that never comes must not hold back the next request
        node.create_service(Trigger, 'start_exploration', self._on_call, callback_group=ReentrantCallbackGroup())

    async def _on_call(self, _request, response):
        k, self.asked = self.asked, self.asked + 1
        answer = self.answers[min(k, len(self.answers) - 1)]
        if answer is None:
            await self.never
        response.success, response.message = answer
        return response


@pytest.fixture
def rig(ros):
    executor = SingleThreadedExecutor(context=ros)
    server_node, client_node = LeanNode('explorer', context=ros), LeanNode('demo', context=ros)
    for node in (server_node, client_node):
        executor.add_node(node)

    def spin_until(condition, what: str) -> None:
        deadline = time.monotonic() + 30.0
        while not condition():
            assert time.monotonic() < deadline, f'the test waited too long for {what}'
            executor.spin_once(timeout_sec=0.02)

    yield server_node, client_node.create_client(Trigger, 'start_exploration'), spin_until
    executor.shutdown()
    server_node.destroy_node()
    client_node.destroy_node()


def test_a_refusal_that_never_arrives_is_asked_again_and_the_next_answer_counts(rig):
    server_node, client, spin_until = rig
    server = _Server(server_node, [None, (False, 'waiting for cube1/state'), (True, 'exploration started')])
    assert call_trigger(client, 'start_exploration', spin_until, limit=20.0) == 'exploration started'
    assert server.asked == 3


def test_a_state_that_says_it_started_is_the_answer_when_the_reply_is_lost(rig):
    server_node, client, spin_until = rig
    server = _Server(server_node, [None])
    begun = time.monotonic()
    message = call_trigger(client, 'start_exploration', spin_until, limit=20.0,
                           started=lambda: server.asked >= 1 and time.monotonic() - begun > 1.0)
    assert message == 'start_exploration: started, as its state says'
    assert server.asked == 1


def test_a_service_that_never_answers_is_an_error_naming_it_once_the_limit_is_spent(rig):
    server_node, client, spin_until = rig
    server = _Server(server_node, [None])
    with pytest.raises(ArenaDemoError, match=r'no answer from start_exploration within 7 s \(logs: x\)'):
        call_trigger(client, 'start_exploration', spin_until, limit=7.0, logs=' (logs: x)')
    assert server.asked == 3 == 1 + int(7.0 // ANSWER_WAIT_S)
