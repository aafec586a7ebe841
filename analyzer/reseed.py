"""Re-seeding: which pipelines' state a restart can carry into a new state layout.

Spark checks a restarted aggregation's state schema against the checkpoint's and refuses any
other: a change whose aggregates do not fit the deployed layout (:mod:`analyzer.layout`) could only
clear its state. Spark reads any checkpoint's state as a table, though. So such a change can start
a new checkpoint for the pipeline whose first micro-batch merges the old one's open (key, window)
groups, as of its last committed batch, into the new layout (kept aggregates go on from their
state, added ones start from zero, as PARTIAL promises), and whose source goes on from where the
old one stopped, its sink emitting only windows the old one did not. The engine does it at start
(:mod:`spark_jobs.reseed`); this module says where it can, so the analyzer, the gate and the job
decide alike, and the layout planner gives those pipelines a fresh layout instead of refusing.

It can where the new version reads where the old one stopped and every group its windows still
need can be read back: a TUMBLE, HOP, CUMULATE or SESSION window aggregation, or a cascade of them
(each window's state carried into its own stage), or a window join of such (each branch's, its
sources each going on from where it stopped), or an aggregation of the whole windows of any of
these (Nexmark's q5: it keeps no state, the windows it reads carry theirs), with grouping sets,
FILTER, Top-N, DISTINCT and every aggregate the engine runs (Spark serializes the lists and sets
of DISTINCT, LISTAGG, ARRAY_AGG, JSON_ARRAYAGG and COLLECT in its state, and the engine reads
them back) but a kept APPROX_COUNT_DISTINCT (a sketch cannot be read back as values; one added
starts from zero, so nothing of it is carried), on event time over file sources. HOP and
CUMULATE windows also carry the closed slices their slice log retains; SESSION windows their open
sessions, each whole. An interval join keeps the stream's rows beside its windows, and a Kafka
source is not tested here. Those keep the no-room finding, which says why.
"""

from __future__ import annotations

from typing import AbstractSet

from stategate.analyzer.aggregates import AGGREGATES
from stategate.analyzer.model import FILESYSTEM, IntervalJoin, JobModel, Pipeline, TimeKind


def not_reseedable(model: JobModel, pipeline: Pipeline, carried: AbstractSet[str] | None = None) -> str | None:
    """Why the engine cannot carry ``pipeline``'s state into a new layout; None where it can.
    ``carried``: the identities of the aggregates the re-seed carries (those the deployed state
    has), where known; else every aggregate of the pipeline is (as at any later re-seed)."""
    if isinstance(pipeline.join, IntervalJoin):
        return "an interval join keeps the stream's rows beside its windows"
    if pipeline.joins and pipeline.join is None:
        return "a join the engine does not run keeps state of its own"
    stages = pipeline.stages()
    if not stages:
        return "it keeps no window state"
    for stage in stages:
        if stage.window is None:
            if not stage.per_window:
                return "an aggregation without a window keeps state that never expires"
            continue  # an aggregation of whole windows keeps none: the windows it reads do
        if stage.window.time_kind is TimeKind.PROCTIME:
            return "its windows run on processing time"
        table = model.tables.get(stage.source_table)
        if table is None or table.options.get("connector", "").lower() != FILESYSTEM:
            return "only a file source is re-read from where the old version stopped"
        for aggregate in stage.aggregates:
            function = AGGREGATES.get(aggregate.function)
            if function is not None and not function.carried and (carried is None or aggregate.identity in carried):
                return f"{aggregate.written} keeps a sketch of its values, which no aggregation merges with new rows"
    return None


def reseedable(model: JobModel) -> frozenset[str]:
    """The pipelines of ``model`` whose state a restart can carry into a new layout."""
    return frozenset(p.name for p in model.pipelines if not_reseedable(model, p) is None)
