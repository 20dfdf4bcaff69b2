"""Where plans are made: planning as jobs on a host whose clock decides when a result is ready.

The planner never searches inside a tick. It hands a :class:`PlanJob` (a generator over its search, yielding each
complete plan as it is found) to a *planning host* and polls it every tick for :class:`PlanUpdate`\\ s:

* :class:`InlineHost`   runs a job to its end inside the poll that follows the submit (no compute is charged:
                        benchmarks on ideal discs, ``--free-compute`` trials);
* :class:`ThreadHost`   runs it in a worker thread beside the ticks (the live navigator); an update is ready as
                        soon as it is made;
* :class:`ModelledHost` runs it step by step inside the polls, but releases update k only once
                        ``clock() >= submitted_at + cost(work_k)`` (or ``+ cpu_s_k`` with ``measured``): the trials,
                        whose records must stay a pure function of the seed.

Every job counts its *work* (:class:`Work`: deterministic units, about a microsecond of this machine's CPU each,
added by the searches as they go), so the same inputs always give the same plans with the same work numbers.
A job stops early once its host says so (cancelled, or a budget spent: time, or resident memory for the thread
host); it then yields the best plan it has, marked ``final`` with ``why`` naming the budget.
"""
from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

IDLE, PLANNING, IMPROVING, BUDGET_OUT = 'idle', 'planning', 'improving', 'budget_out'
FIRST, IMPROVED, DONE, BUDGET_TIME, BUDGET_MEMORY, CANCELLED = (
    'first', 'improved', 'done', 'budget_time', 'budget_memory', 'cancelled')
MEMORY_EVERY = 2000      # work units between two looks at the resident memory (a read of /proc costs ~20 us)


class Work:
    """The deterministic work of one job: the searches add units as they go and ask :meth:`spent` whether to
    stop (the host's verdict: cancelled or a budget out, with the reason in ``why``)."""

    def __init__(self, verdict: Callable[['Work'], str | None] | None = None) -> None:
        self.count = 0
        self.why: str | None = None          # why the job was told to stop (None: it was not)
        self._verdict = verdict
        self._asked = -1

    def add(self, units: int | float) -> None:
        self.count += int(units)

    def spent(self) -> bool:
        """True once the host wants the job to stop; asked often, decided at most once per unit of work."""
        if self.why is None and self._verdict is not None and self.count != self._asked:
            self._asked = self.count
            self.why = self._verdict(self)
        return self.why is not None


@dataclass
class PlanUpdate:
    plan: object            # the planner's own plan object (first complete plan, then better ones)
    work: int               # cumulative deterministic work units of the job when this plan was ready
    cpu_s: float            # measured CPU seconds of the job so far (thread time), for reports
    final: bool             # no better plan will follow (done, budget out, or cancelled)
    why: str                # 'first', 'improved', 'done', 'budget_time', 'budget_memory', 'cancelled'


#: a job's search: given its Work, yields (plan, why, final) for each complete plan it finds, the last one final
Steps = Callable[[Work], Iterator[tuple[object, str, bool]]]


@dataclass
class PlanJob:
    """One search for a set of goals. ``steps`` must be a pure function of what it was made from: the host may run
    it in another thread, and the trials rely on its work counts being the same on every machine."""
    steps: Steps
    tag: object = None       # what the planner made it for (it drops updates of a job it no longer wants)


class PlanningHost(Protocol):
    status: str

    def submit(self, job: PlanJob) -> None: ...

    def poll(self) -> list[PlanUpdate]: ...

    def cancel(self) -> None: ...


def resident_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 where that cannot be read)."""
    try:
        with open('/proc/self/statm', 'rb') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return 0


def _status_after(update: PlanUpdate) -> str:
    if not update.final:
        return IMPROVING
    return BUDGET_OUT if update.why in (BUDGET_TIME, BUDGET_MEMORY) else IDLE


class _Runner:
    """A job's generator with its Work and CPU clock; ``next()`` runs it to its next update (None: ended)."""

    def __init__(self, job: PlanJob, verdict: Callable[[Work], str | None]) -> None:
        self.job = job
        self.work = Work(verdict)
        self.cpu_s = 0.0
        self._it = job.steps(self.work)
        self.ended = False

    def next(self) -> PlanUpdate | None:
        if self.ended:
            return None
        started = time.thread_time()
        try:
            plan, why, final = next(self._it)
        except StopIteration:
            self.ended = True
            return None
        finally:
            self.cpu_s += time.thread_time() - started
        if final:
            self.ended = True
        return PlanUpdate(plan, self.work.count, self.cpu_s, final, why)


class InlineHost:
    """Runs a job to its end in the first poll after the submit: every update at once, none of it charged."""

    def __init__(self) -> None:
        self.status = IDLE
        self._runner: _Runner | None = None
        self.compute_s = 0.0                 # CPU of every job run (reports)

    def submit(self, job: PlanJob) -> None:
        self._runner = _Runner(job, lambda work: None)
        self.status = PLANNING

    def poll(self) -> list[PlanUpdate]:
        out = []
        runner, self._runner = self._runner, None
        while runner is not None and (update := runner.next()) is not None:
            out.append(update)
        if runner is not None:
            self.compute_s += runner.cpu_s
            self.status = _status_after(out[-1]) if out else IDLE
        return out

    def cancel(self) -> None:
        self._runner = None
        self.status = IDLE


class ModelledHost:
    """Releases a job's updates at modelled times: update k once ``clock() >= submitted_at + cost(work_k)``
    (``measured``: ``+ cpu_s_k``, the CPU it really took). The job runs inside the polls, one update ahead at
    most, so what it does is the same whatever the machine; ``budget_s`` counts modelled seconds, so a budget
    running out is as deterministic as the rest. ``compute_s``: modelled seconds of every job run so far (up to
    where it was cancelled)."""

    def __init__(self, clock: Callable[[], float], cost: Callable[[int], float], budget_s: float = math.inf,
                 measured: bool = False) -> None:
        self.clock, self.cost, self.budget_s, self.measured = clock, cost, budget_s, measured
        self.status = IDLE
        self.compute_s = 0.0
        self.compute_cpu_s = 0.0
        self.busy_s = 0.0                    # CPU spent running jobs inside polls (not the tick's own work)
        self._runner: _Runner | None = None
        self._pending: PlanUpdate | None = None
        self._submitted = 0.0

    def _charge(self, update: PlanUpdate) -> float:
        return update.cpu_s if self.measured else self.cost(update.work)

    def _verdict(self, work: Work) -> str | None:
        return BUDGET_TIME if not self.measured and self.cost(work.count) > self.budget_s else None

    def submit(self, job: PlanJob) -> None:
        self.cancel()
        self._runner = _Runner(job, self._verdict)
        self._submitted = self.clock()
        self.status = PLANNING

    def poll(self) -> list[PlanUpdate]:
        started = time.thread_time()
        try:
            return self._poll()
        finally:
            self.busy_s += time.thread_time() - started

    def _poll(self) -> list[PlanUpdate]:
        out = []
        while self._runner is not None:
            if self._pending is None:
                self._pending = self._runner.next()
                if self._pending is None:          # ended without a final update
                    self._close(None)
                    break
            if self.clock() < self._submitted + self._charge(self._pending):
                break
            update, self._pending = self._pending, None
            out.append(update)
            self.status = _status_after(update)
            if update.final:
                self._close(update)
        return out

    def _close(self, last: PlanUpdate | None) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            charged = self._charge(last) if last is not None else (
                runner.cpu_s if self.measured else self.cost(runner.work.count))
            self.compute_s += charged
            self.compute_cpu_s += runner.cpu_s
        if last is None:
            self.status = IDLE

    def cancel(self) -> None:
        """Drop the job; what it did until now counts as charged up to the present moment."""
        runner, self._runner, self._pending = self._runner, None, None
        if runner is not None:
            spent = runner.cpu_s if self.measured else self.cost(runner.work.count)
            self.compute_s += min(spent, max(self.clock() - self._submitted, 0.0))
            self.compute_cpu_s += runner.cpu_s
        self.status = IDLE


class ThreadHost:
    """Runs jobs in a worker thread beside the ticks; an update is ready as soon as it is made. Budgets: the job's
    CPU seconds (``budget_s``) and this process's resident memory (``memory_bytes``); either spent makes the job
    yield the best plan it has, final."""

    def __init__(self, budget_s: float = math.inf, memory_bytes: float = math.inf) -> None:
        self.budget_s, self.memory_bytes = budget_s, memory_bytes
        self.status = IDLE
        self.compute_s = 0.0
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def submit(self, job: PlanJob) -> None:
        self.cancel()
        stop = threading.Event()
        self._stop = stop
        self.status = PLANNING
        # a daemon: a node stopping in the middle of a plan does not wait for it
        self._thread = threading.Thread(target=self._run, args=(job, stop), name='coordinated plan', daemon=True)
        self._thread.start()

    def _run(self, job: PlanJob, stop: threading.Event) -> None:
        started = time.thread_time()
        looked = [-MEMORY_EVERY]

        def verdict(work: Work) -> str | None:
            if stop.is_set():
                return CANCELLED
            if time.thread_time() - started > self.budget_s:
                return BUDGET_TIME
            if math.isfinite(self.memory_bytes) and work.count - looked[0] >= MEMORY_EVERY:
                looked[0] = work.count
                if resident_bytes() > self.memory_bytes:
                    return BUDGET_MEMORY
            return None

        runner = _Runner(job, verdict)
        try:
            while (update := runner.next()) is not None:
                if stop.is_set():
                    break
                self._queue.put((stop, update))
        except BaseException as exc:       # handed to the tick that polls, as if raised there
            self._queue.put((stop, exc))
        finally:
            with self._lock:
                self.compute_s += runner.cpu_s

    def poll(self) -> list[PlanUpdate]:
        out = []
        while True:
            try:
                stop, item = self._queue.get_nowait()
            except queue.Empty:
                break
            if stop is not self._stop:
                continue                     # from a job cancelled meanwhile
            if isinstance(item, BaseException):
                self.status = IDLE
                raise item
            out.append(item)
            self.status = _status_after(item)
        return out

    def cancel(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._stop = None
        self.status = IDLE
