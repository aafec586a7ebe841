"""The state signature: what a job's state is made of, written beside the state for humans and tools.

It holds the slot assignment of every window aggregation (:mod:`analyzer.layout`), so the record
beside a checkpoint and the deployment record both say where each aggregate's state lives."""

from __future__ import annotations

from stategate.analyzer.layout import LAYOUT, JobLayout
from stategate.analyzer.model import JobModel


def state_signature(model: JobModel, layout: JobLayout) -> dict:
    """What the state of each pipeline is made of, and which slot holds each aggregate."""
    pipelines = {}
    for pipeline in model.pipelines:
        stages = []
        for aggregate, slots in zip(pipeline.stages(), layout.pipelines.get(pipeline.name, ())):
            stages.append({
                "window": aggregate.window.describe() if aggregate.window else None,
                "group_keys": [k.value.key for k in aggregate.group_keys],
                "grouping_sets": None if aggregate.grouping_sets is None
                else [[k.key for k in s] for s in aggregate.grouping_sets],
                "aggregates": [a.identity for a in aggregate.aggregates],
                "slots": slots.to_dict(),
            })
        pipelines[pipeline.name] = {
            "stages": stages,
            "top_n": None if pipeline.topn is None else {
                "partition_by": [k.key for k in pipeline.topn.partition_keys],
                "order_by": [k.describe() for k in pipeline.topn.order_keys],
                "n": pipeline.topn.limit,
                "first": pipeline.topn.first,
            },
        }
    return {"layout": LAYOUT, "pipelines": pipelines}
