"""``python -m stategate.spark_jobs run --sql JOB.sql --checkpoint DIR``; also the spark-submit application.

    spark-submit <site-packages>/stategate/spark_jobs/__main__.py run --sql job.sql --checkpoint /state/job/checkpoint
    python -m stategate.spark_jobs stop --checkpoint /state/job/checkpoint [--timeout 300]

``run`` runs the job to the end of its input (``--trigger available-now``) or until a stop is asked
(``processing-time=<interval>``: always on); with ``--detach`` (client deploy mode) it starts the
job detached from spark-submit and returns once it runs (:mod:`spark_jobs.detach`). ``stop`` asks
the job running on a checkpoint to stop after the micro-batch it is in, and waits
(:mod:`spark_jobs.lifecycle`).

Exit status: 0 when the job ran to its end or was stopped (``stop``: when the job is down, or was
not running); 2 on invalid SQL; 3 when the checkpoint guard refused to start; 4 when ``stop``
timed out with the job still running; 1 when a query failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path

from stategate.analyzer import Verdict
from stategate.analyzer.errors import SQLModelError
from stategate.spark_jobs.cutover import BOUNDED, REPLAY_POLICIES, TakeOverRefused
from stategate.spark_jobs.guard import CheckpointRefused
from stategate.spark_jobs.lifecycle import HEARTBEAT_S, JobFailed
from stategate.spark_jobs.triggers import AVAILABLE_NOW, interval_s

EXIT_INVALID, EXIT_REFUSED, EXIT_STILL_RUNNING = 2, 3, 4


def _trigger(text: str) -> str:
    """``--trigger`` checked before Spark starts: one it would refuse is a usage error."""
    try:
        interval_s(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stategate.spark_jobs")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a job script on Spark Structured Streaming")
    run.add_argument("--sql", required=True, help="the job script (CREATE TABLE ..., INSERT INTO ...)")
    run.add_argument("--checkpoint", required=True, help="the job's checkpoint directory")
    run.add_argument("--trigger", default=AVAILABLE_NOW, type=_trigger,
                     help="available-now (process what is there, then stop) or processing-time=<interval> "
                          "(always on; an interval as Spark writes it: '30 seconds', '1 minute 30 seconds')")
    run.add_argument("--fresh", action="store_true", help="start without state; the checkpoint must be empty")
    run.add_argument("--accept", choices=("FULL", "PARTIAL", "UNKNOWN"), default="PARTIAL",
                     help="worst verdict to restart on (default PARTIAL); UNKNOWN once a human decided "
                          "the state is reusable. INCOMPATIBLE always refuses")
    run.add_argument("--take-over", metavar="ARCHIVED_CHECKPOINT",
                     help="with --fresh: take over from the archived checkpoint of the version this one replaces "
                          "(re-read only what open windows need, emit only windows it did not); empty: none "
                          "(a DAG passes --take-over= when nothing was archived)")
    run.add_argument("--replay", choices=REPLAY_POLICIES, default=BOUNDED,
                     help="with --take-over: what to read again (default bounded: what open windows need)")
    run.add_argument("--master", help="Spark master when run without spark-submit (default local[2])")
    run.add_argument("--heartbeat", type=float, default=HEARTBEAT_S, metavar="SECONDS",
                     help=f"how often the job says it runs and looks for a stop request (default {HEARTBEAT_S:.0f})")
    run.add_argument("--detach", action="store_true",
                     help="under spark-submit in client deploy mode: start the job detached, return once it runs")
    run.add_argument("--startup-timeout", type=float, default=600, metavar="SECONDS",
                     help="with --detach: how long to wait for the job to run (default 600)")
    stop = commands.add_parser("stop", help="stop the job running on a checkpoint, after the micro-batch it is in")
    stop.add_argument("--checkpoint", required=True, help="the job's checkpoint directory (any URI Spark reads)")
    stop.add_argument("--timeout", type=float, default=300, metavar="SECONDS",
                      help="how long to wait for the job to stop (default 300)")
    return parser


def read_sql(spark, location: str) -> str:
    """The job script: a local path, or any URI the session's Hadoop filesystems can read (the
    Airflow gate stages it beside the job's state, which may be on an object store)."""
    if "://" not in location or location.startswith("file://"):
        return Path(location.removeprefix("file://")).read_text(encoding="utf-8")
    from py4j.protocol import Py4JJavaError

    from stategate.spark_jobs.storage import HadoopStorage

    try:
        return HadoopStorage(spark).read_text(location)
    except Py4JJavaError as error:
        raise OSError(str(error.java_exception)) from None


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its every gateway call, at INFO
    if args.command == "stop":
        return _stop(args)
    args.take_over = args.take_over or None
    if args.take_over and not args.fresh:
        parser.error("--take-over starts a new checkpoint: add --fresh")
    if args.detach:
        from stategate.spark_jobs.detach import launch

        if "PYSPARK_GATEWAY_PORT" not in os.environ:
            parser.error("--detach starts the job as spark-submit was asked to: run it under spark-submit")
        return launch([a for a in (argv if argv is not None else sys.argv[1:]) if a != "--detach"],
                      args.startup_timeout)
    from stategate.spark_jobs.session import get_session

    spark = get_session(f"stategate:{Path(args.sql).stem}", master=args.master)
    try:
        return _run(spark, args)
    finally:
        spark.stop()


def _run(spark, args: argparse.Namespace) -> int:
    from stategate.spark_jobs.job import run

    try:
        sql = read_sql(spark, args.sql)
    except OSError as error:
        print(f"stategate: cannot read {args.sql}: {error}", file=sys.stderr)
        return EXIT_INVALID
    try:
        result = run(spark, sql, args.checkpoint, source=args.sql, trigger=args.trigger, fresh=args.fresh,
                     accept=Verdict(args.accept), take_over=args.take_over, replay=args.replay,
                     heartbeat_s=args.heartbeat)
    except SQLModelError as error:
        print(f"stategate: {error}", file=sys.stderr)
        return EXIT_INVALID
    except (CheckpointRefused, TakeOverRefused) as error:
        print(f"stategate: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except JobFailed as error:
        print(f"stategate: {error}", file=sys.stderr)
        return 1
    verdict = result.report.verdict.value if result.report else "FRESH"
    for cutover in result.cutovers.values():
        print(f"stategate: take-over {cutover.describe()}")
    for done in result.repartitioned:
        print(f"stategate: {done.describe()}")
    ended = f", {result.application.detail}" if result.application is not None else ""
    print(f"stategate: {args.sql} ran ({verdict}){ended}; checkpoint {args.checkpoint}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    """Ask the job on ``--checkpoint`` to stop; wait for it. A local checkpoint needs no Spark
    session; any other is reached through Hadoop, as the job reaches it."""
    from stategate.spark_jobs.checkpoint import WritableCheckpoint
    from stategate.spark_jobs.lifecycle import stop
    from stategate.spark_jobs.storage import HadoopStorage, LocalFiles, is_local

    if is_local(args.checkpoint):
        stopped = stop(WritableCheckpoint(LocalFiles(), args.checkpoint), args.timeout, _asker())
    else:
        from stategate.spark_jobs.session import get_session

        spark = get_session("stategate:stop", master="local[1]")
        try:
            stopped = stop(WritableCheckpoint(HadoopStorage(spark), args.checkpoint), args.timeout, _asker())
        finally:
            spark.stop()
    print(f"stategate: {stopped.message}", file=sys.stdout if stopped.down else sys.stderr, flush=True)
    return 0 if stopped.down else EXIT_STILL_RUNNING


def _asker() -> str:
    return f"stategate stop ({socket.gethostname()}, pid {os.getpid()})"


if __name__ == "__main__":
    sys.exit(main())
