"""A running job's life beside its checkpoint: it says it runs, answers a stop request, says how it ended.

The driver announces itself in ``_stategate/running.json`` (:class:`~spark_jobs.checkpoint.Application`)
and renews it every heartbeat, so whoever reads the checkpoint's storage knows what runs on it,
wherever its driver is (a YARN or Kubernetes cluster, a standalone cluster's client, a laptop). A
stop is asked the same way, by a file beside the state (:func:`stop`, ``python -m
stategate.spark_jobs stop``), not by a signal to a process the asker may not reach. The driver,
which looks for a request between heartbeats (:class:`Supervisor`):

1. lets the micro-batch it is in finish and commit, and then the batch of no input that evicts
   with the watermark that batch committed, which Spark plans at the query's next trigger: the
   windows its input closed are written by this run (a restart would have to plan that batch
   itself, under whatever version starts next). Any other batch that starts after the request
   writes nothing and fails at once (:meth:`Supervisor.batch_starting`): Spark has planned it in
   its offset log but not committed it, so the next start of the checkpoint runs it again,
   exactly once;
2. stops its queries, says ``stopped``, and its process exits 0.

A driver that dies without a word leaves its last heartbeat behind: after
:data:`~spark_jobs.checkpoint.SILENT_AFTER` missed heartbeats it counts as gone, and a stop asked of
it says it is not running. A kill at any moment stays safe: the checkpoint and the file sinks are
exactly-once (``benchmarks/crash_soak.py``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

from stategate.spark_jobs.checkpoint import Application, AppState, WritableCheckpoint, utc_now
from stategate.spark_jobs.late_rows import LateRows
from stategate.spark_jobs.triggers import interval_s

if TYPE_CHECKING:  # the driver has PySpark; a stop asked from Airflow or a shell needs none
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("stategate.lifecycle")

#: How often a driver says it still runs, and looks for a stop request, by default (seconds).
HEARTBEAT_S = 10.0
#: How often the driver looks at its queries (seconds) between heartbeats; it notices the end of
#: the first still running at once.
_POLL_S = 0.5
#: How long a stop waits, past the query's trigger interval, for the batch of no input that
#: evicts with its last watermark (seconds).
_EVICTION_MARGIN_S = 10.0
#: What a driver prints once it runs (a detached launch waits for it), and where its environment
#: says its output goes (it says so in its announcement).
RUNNING_LINE = "stategate: running application "
LOG_ENV = "STATEGATE_DRIVER_LOG"


class StopRequested(RuntimeError):
    """Raised by a micro-batch that starts after a stop was asked: it writes nothing, and the next
    start of the checkpoint runs it again."""


class JobFailed(RuntimeError):
    """A query of the job ended with an error; the others were stopped."""


@dataclass
class Supervisor:
    """Keeps a job's queries while they run: its heartbeat beside the checkpoint, a graceful stop
    when one is asked, and a warning for each micro-batch that dropped late rows
    (:mod:`spark_jobs.late_rows`).

    :param checkpoint: the job's checkpoint
    :param sql: the job's SQL (which version runs is its digest)
    :param trigger: its Spark trigger
    :param heartbeat_s: how often it says it still runs and looks for a stop request
    """

    checkpoint: WritableCheckpoint
    sql: str
    trigger: str
    heartbeat_s: float = HEARTBEAT_S
    _stopping: threading.Event = field(default_factory=threading.Event, repr=False)
    _refused: threading.Event = field(default_factory=threading.Event, repr=False)
    _queries: dict[str, StreamingQuery] = field(default_factory=dict, repr=False)  # by pipeline

    def batch_starting(self, pipeline: str, batch_id: int) -> None:
        """Called by each micro-batch's writer before it writes anything: after a stop request, it
        refuses to start (:class:`StopRequested`), but for a batch that reads no input, which
        Spark plans only to evict with the watermark the batch before committed."""
        if self._stopping.is_set() and not self._reads_nothing(pipeline, batch_id):
            self._refused.set()
            raise StopRequested("a stop was asked: this micro-batch runs again on the next start")

    def _reads_nothing(self, pipeline: str, batch_id: int) -> bool:
        query = self.checkpoint.query(pipeline)
        now, before = query.batch(batch_id), query.batch(batch_id - 1)
        return now is not None and before is not None and now.sources == before.sources

    def supervise(self, spark: SparkSession, queries: Sequence[StreamingQuery], pipelines: Sequence[str]) -> Application:
        """Run until every query has ended (an ``available-now`` job at the end of its input) or a
        stop request has stopped them; the application as it ended. Raises :class:`JobFailed`
        when a query ends with an error."""
        self.checkpoint.withdraw_stop()  # a request left for the run before this one
        self._queries = dict(zip(pipelines, queries))
        late = LateRows(self._queries)
        now = utc_now().isoformat()
        app = Application(
            id=spark.sparkContext.applicationId, master=spark.sparkContext.master or "", host=socket.gethostname(),
            pid=os.getpid(), trigger=self.trigger, sql_digest=sql_digest(self.sql), started_at=now,
            heartbeat_at=now, heartbeat_s=self.heartbeat_s,
            committed_at_start={p: (c[-1] if (c := self.checkpoint.query(p).committed()) else None) for p in pipelines},
            log=os.environ.get(LOG_ENV, ""))
        self.checkpoint.announce(app)
        print(f"{RUNNING_LINE}{app.id} on {self.checkpoint.uri}", flush=True)
        beat = time.monotonic()
        try:
            while True:
                # One look at each query: asked twice, a query failing in between would count
                # neither as failed nor as active, and the job would end as if its input had.
                # (Spark sets a query's error before it marks the query ended.)
                active = [q for q in queries if q.isActive]
                late.tell()  # after the look: a query ended has recorded every micro-batch's progress
                failed = [q for q in queries if q not in active and q.exception() is not None]
                if failed and not self._refused.is_set():
                    error = failed[0].exception()
                    raise JobFailed(f"query {failed[0].name or failed[0].id} ended with an error: {error}")
                if not active:
                    break
                if not self._stopping.is_set() and self.checkpoint.stop_requested() is not None:
                    app = self._announce(app, AppState.STOPPING)
                    self._stop(active)
                    continue
                if time.monotonic() - beat >= self.heartbeat_s:
                    app, beat = self._announce(app, app.state), time.monotonic()
                _await_end(active[0], min(_POLL_S, self.heartbeat_s))
        except BaseException as error:
            for query in queries:
                if query.isActive:
                    query.stop()
            self._announce(app, AppState.FAILED, str(error).splitlines()[0][:500])
            raise
        how = "stopped on request, after the micro-batch it was in" if self._stopping.is_set() else \
            "ran to the end of its input"
        self.checkpoint.withdraw_stop()
        return self._announce(app, AppState.STOPPED, how)

    def _stop(self, active: Sequence[StreamingQuery]) -> None:
        """Let each query finish the micro-batch it is in, and the batch of no input that evicts
        with the watermark it committed, then stop it. That batch comes with the query's next
        trigger: a query without one by then (a stateless query has nothing to evict) is stopped
        and leaves it to the next start (:meth:`WritableCheckpoint.plan_eviction`). Any other batch
        that starts meanwhile refuses to (:meth:`batch_starting`), and its query ends there."""
        log.info("a stop was asked: finishing the micro-batch in progress, then stopping")
        self._stopping.set()
        pipelines = {id(query): pipeline for pipeline, query in self._queries.items()}
        evict_until = time.monotonic() + (interval_s(self.trigger) or 0.0) + _EVICTION_MARGIN_S
        judged: dict[tuple[str, int | None], bool] = {}
        pending = list(active)
        while pending:  # each query is stopped at its first moment between micro-batches with nothing due
            for query in [q for q in pending if not q.isActive or not q.status["isTriggerActive"]]:
                if query.isActive and time.monotonic() < evict_until and self._evicts(pipelines[id(query)], query, judged):
                    continue
                query.stop()
                pending.remove(query)
            time.sleep(0.1)

    def _evicts(self, pipeline: str, query: StreamingQuery, judged: dict[tuple[str, int | None], bool]) -> bool:
        """Whether ``pipeline``'s query has a batch that evicts still due, which its next trigger
        plans. Only a batch's end changes that, so it is read from the checkpoint once per batch
        (``judged``, by pipeline and the query's last batch)."""
        progress = query.lastProgress
        key = (pipeline, progress.batchId if progress is not None else None)
        if key not in judged:
            log = self.checkpoint.query(pipeline)
            judged[key] = log.holds_state() and log.due_eviction() is not None
        return judged[key]

    def _announce(self, app: Application, state: AppState, detail: str = "") -> Application:
        app = replace(app, state=state, heartbeat_at=utc_now().isoformat(), detail=detail or app.detail,
                      state_rows={**app.state_rows, **_state_rows(self._queries)})
        self.checkpoint.announce(app)
        return app


def _await_end(query: StreamingQuery, seconds: float) -> None:
    """Wait up to ``seconds``, returning as soon as ``query`` ends: an ``available-now`` job's
    process ends with its input, not up to a poll later. How it ended is read by the caller."""
    from pyspark.errors import StreamingQueryException

    try:
        query.awaitTermination(seconds)  # type: ignore[arg-type]  # hinted int; it takes any seconds (ms = int(s * 1000))
    except StreamingQueryException:
        pass  # the query's error, which the supervisor reads from the query itself


def _state_rows(queries: dict[str, StreamingQuery]) -> dict[str, tuple[int, int]]:
    """Each pipeline's rows in Spark's state store and the micro-batch that left them, from its
    query's last progress (Spark's own count, no work of its own)."""
    found = {}
    for pipeline, query in queries.items():
        progress = query.lastProgress
        if progress is not None and progress.stateOperators:
            found[pipeline] = (sum(o.numRowsTotal for o in progress.stateOperators), progress.batchId)
    return found


def sql_digest(sql: str) -> str:
    """Which version of a job: the SHA-256 of its SQL."""
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Stopped:
    """How a stop ended: whether the job is down, and what to say."""

    down: bool
    message: str


def stop(checkpoint: WritableCheckpoint, timeout_s: float, by: str, poll_s: float = 1.0) -> Stopped:
    """Ask the job running on ``checkpoint`` to stop, and wait until it is down or ``timeout_s``
    passed. A job that is not running is down already (and a request left behind is withdrawn)."""
    app = checkpoint.application()
    if app is None or not app.alive():
        checkpoint.withdraw_stop()
        said = "no application has run on it" if app is None else \
            f"application {app.id} last said {app.state.value} at {app.heartbeat_at}"
        return Stopped(True, f"not running on {checkpoint.uri}: {said}")
    checkpoint.request_stop(by)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = checkpoint.application()
        if now is None or not now.alive():
            how = f"{now.state.value}: {now.detail}" if now is not None else "gone"
            return Stopped(True, f"application {app.id} on {checkpoint.uri} is down ({how})")
        time.sleep(poll_s)
    now = checkpoint.application() or app
    return Stopped(False, f"application {now.id} on {now.host} (pid {now.pid}) is still {now.state.value} after "
                          f"{timeout_s:.0f} s, last heartbeat {now.heartbeat_at}: the request stands, and it stops "
                          "after the micro-batch it is in. Killing it is safe (the checkpoint and the file sinks "
                          "are exactly-once); a restart runs that micro-batch again")
