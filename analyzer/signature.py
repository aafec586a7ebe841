"""The state signature: what a job's state is made of, written beside the state for humans and tools."""

from __future__ import annotations

from analyzer.model import JobModel


def state_signature(model: JobModel) -> dict:
    """What the state of each pipeline is made of, for the record and for humans reading it."""
    pipelines = {}
    for pipeline in model.pipelines:
        stages = []
        for aggregate in pipeline.aggregate.chain() if pipeline.aggregate else ():
            stages.append({
                "window": aggregate.window.describe() if aggregate.window else None,
                "group_keys": [k.value.key for k in aggregate.group_keys],
                "grouping_sets": None if aggregate.grouping_sets is None
                else [[k.key for k in s] for s in aggregate.grouping_sets],
                "aggregates": [a.identity for a in aggregate.aggregates],
            })
        pipelines[pipeline.name] = {
            "stages": stages,
            "top_n": None if pipeline.topn is None else {
                "partition_by": [k.key for k in pipeline.topn.partition_keys],
                "order_by": [f"{k.key} {d}" for k, d in pipeline.topn.order_keys],
                "n": pipeline.topn.limit,
            },
        }
    return {"layout": "stategate-unpivot-v1", "pipelines": pipelines}
