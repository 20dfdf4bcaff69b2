"""A service call that survives a lost answer, for the demos' calls of the package's services.

A DDS service answers over a reply path of its own. On a busy machine the server can take a request before it
has matched the caller's reply reader, and then drops the answer (rmw logs "failed to send response ...: client
will not receive response"); a caller waiting for that answer waits for ever. Every call here is therefore made
again when no answer came within ANSWER_WAIT_S, until its limit. The services called this way do the same thing
when asked twice (set a goal again, or refuse a start while busy).
"""
from __future__ import annotations

import time
from typing import Any, Callable

#: s a call waits for its answer before it is made again
ANSWER_WAIT_S = 3.0


class NoAnswer(RuntimeError):
    """The service answered none of the calls made within the limit."""


def call_until_answered(client, request, spin_until: Callable[[Callable[[], bool], str], None], what: str,
                        limit: float, done: Callable[[], bool] = lambda: False) -> Any:
    """The answer to ``request`` (the same request sent again every ANSWER_WAIT_S without an answer), or None
    once ``done()`` says the call's effect is seen without one (e.g. a state that says it started).
    ``spin_until(condition, what)`` spins the caller's executor until ``condition()``, raising on the caller's
    own stop or deadline. NoAnswer after ``limit`` s."""
    end = time.monotonic() + limit
    while True:
        future = client.call_async(request)
        ask_again = min(time.monotonic() + ANSWER_WAIT_S, end)
        spin_until(lambda: future.done() or done() or time.monotonic() > ask_again, f'the answer of {what}')
        if future.done():
            return future.result()
        client.remove_pending_request(future)
        if done():
            return None
        if time.monotonic() > end:
            raise NoAnswer(f'no answer from {what} within {limit:.0f} s')
