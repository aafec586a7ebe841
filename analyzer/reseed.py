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
need can be read back: one TUMBLE, HOP, CUMULATE or SESSION window aggregation (with grouping sets,
FILTER, Top-N) on event time over a file source, whose aggregates keep no list or set (Spark
serializes those in its state; its state reader returns bytes). HOP and CUMULATE windows also carry
the closed slices their slice log retains; SESSION windows their open sessions, each whole. A
cascade keeps one state per window, a join its sides; a Kafka source is not tested here. Those
keep the no-room finding, which says why.
"""

from __future__ import annotations

from stategate.analyzer.aggregates import AGGREGATES
from stategate.analyzer.model import FILESYSTEM, JobModel, Pipeline, TimeKind

def not_reseedable(model: JobModel, pipeline: Pipeline) -> str | None:
    """Why the engine cannot carry ``pipeline``'s state into a new layout; None where it can."""
    if pipeline.join is not None:
        return "a join keeps the state of its sides"
    chain = pipeline.stages()
    if len(chain) != 1:
        return "a cascade keeps a state per window" if chain else "it keeps no window state"
    window = chain[0].window
    if window is None or window.time_kind is TimeKind.PROCTIME:
        return "its windows run on processing time"
    if any(a.distinct or _serialized(a.function) for a in chain[0].aggregates):
        return ("Spark keeps the values of a DISTINCT aggregate, LISTAGG, ARRAY_AGG, JSON_ARRAYAGG or COLLECT "
                "serialized in its state, which its state reader returns as bytes")
    table = model.tables.get(chain[0].source_table)
    if table is None or table.options.get("connector", "").lower() != FILESYSTEM:
        return "only a file source is re-read from where the old version stopped"
    return None


def reseedable(model: JobModel) -> frozenset[str]:
    """The pipelines of ``model`` whose state a restart can carry into a new layout."""
    return frozenset(p.name for p in model.pipelines if not_reseedable(model, p) is None)


def _serialized(function: str) -> bool:
    """Whether the aggregate keeps a field Spark serializes in its state (or is not the engine's)."""
    found = AGGREGATES.get(function)
    return found is None or any(f.serialized for state in found.state.values() for f, _ in state)
