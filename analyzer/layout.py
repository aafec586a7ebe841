"""The state layout: which buffer slot holds which aggregate, fixed for the life of a checkpoint.

A window aggregation keeps one state row per (group keys, grouping set, slice). Its value is a
buffer of a fixed number of slots; each aggregate of the query lives in one slot, assigned by the
aggregate's identity (function, DISTINCT, resolved inputs, FILTER). So the buffer's schema never
depends on the query, and a redeploy maps onto it without touching stored state:

* a kept aggregate keeps its slot, whatever its position in the SELECT list (reordering is FULL);
* an added aggregate takes a free slot, which holds nothing for the windows already open: it
  starts from zero, as PARTIAL promises;
* a dropped aggregate *retires* its slot. Open windows may still hold its values, so the slot is
  reused only once no window open at the retirement can still be read: when the watermark has
  passed the end of the last such window (``reusable_from_ms``). Session windows grow for as long
  as events arrive, so their retired slots are reused only after the state is cleared.

The width is chosen at the first deploy (``SET 'stategate.state.slots'`` and
``'stategate.state.distinct-slots'``; the defaults leave headroom) and recorded with the
assignment. A change that needs more slots than are free does not fit: :func:`plan` raises
:class:`NoRoom`, which the analyzer reports as ``stategate.layout.no-room`` (INCOMPATIBLE: clear the
state, which also applies a new width) before anything is deployed.

This module is free of Spark: the analyzer, the Airflow gate and the Spark job share it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from analyzer.errors import SQLModelError
from analyzer.model import Aggregate, JobModel, WindowAggregate

#: Layout names as recorded beside the state. v1 stored one state row per aggregate (unpivoted).
LAYOUT_V1 = "stategate-unpivot-v1"
LAYOUT = "stategate-slots-v2"

SLOTS_SETTING = "stategate.state.slots"
DISTINCT_SLOTS_SETTING = "stategate.state.distinct-slots"
#: Plain slots at the first deploy: the aggregates plus this many free ones (and at least
#: :data:`MIN_SLOTS`). A slot is 11 buffer fields; measured (1M bids, TUMBLE 1 min, 3 aggregates,
#: query time, parquet sink) 25.9 s with 4 slots, 31.6 s with 8: past about 8 slots the buffer
#: crosses Spark's 100-field limit for generated code (``spark.sql.codegen.maxFields``).
HEADROOM = 2
MIN_SLOTS = 4


class NoRoom(ValueError):
    """A change needs more free slots than the recorded layout has."""


@dataclass(frozen=True)
class Retired:
    """A slot whose aggregate was dropped; free again once the watermark reaches ``reusable_from_ms``."""

    slot: int
    identity: str
    reusable_from_ms: int | None  # None: only after the state is cleared

    def free_at(self, watermark_ms: int | None) -> bool:
        return self.reusable_from_ms is not None and watermark_ms is not None \
            and watermark_ms >= self.reusable_from_ms


@dataclass(frozen=True)
class Pool:
    """Slots of one kind: plain (count, sums, min/max) or distinct (a set of values)."""

    width: int
    assigned: tuple[tuple[str, int], ...] = ()  # (aggregate identity, slot), in assignment order
    retired: tuple[Retired, ...] = ()

    def slot_of(self, identity: str) -> int:
        return dict(self.assigned)[identity]

    def evolve(self, identities: list[str], watermark_ms: int | None, retire_until_ms: int | None,
               what: str) -> Pool:
        old = dict(self.assigned)
        kept = {i: old[i] for i in identities if i in old}
        retired = [*self.retired, *(Retired(s, i, retire_until_ms) for i, s in self.assigned if i not in kept)]
        busy = set(kept.values()) | {r.slot for r in retired if not r.free_at(watermark_ms)}
        free = [s for s in range(self.width) if s not in busy]
        added = [i for i in identities if i not in kept]
        if len(added) > len(free):
            blocked = sum(1 for r in retired if not r.free_at(watermark_ms))
            raise NoRoom(
                f"{len(added)} {what} aggregate(s) added ({', '.join(added)}) but only {len(free)} of "
                f"{self.width} {what} slots are free ({len(kept)} kept, {blocked} retired and possibly "
                f"still read by open windows)")
        taken = dict(zip(added, free))
        reused = set(taken.values())
        assigned = tuple((i, kept.get(i, taken.get(i))) for i in identities)
        return Pool(self.width, assigned,  # type: ignore[arg-type]
                    tuple(r for r in retired if r.slot not in reused))

    def to_dict(self) -> dict[str, Any]:
        return {"width": self.width, "assigned": dict(self.assigned),
                "retired": [{"slot": r.slot, "identity": r.identity, "reusable_from_ms": r.reusable_from_ms}
                            for r in self.retired]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pool:
        return cls(int(data["width"]), tuple((str(i), int(s)) for i, s in data["assigned"].items()),
                   tuple(Retired(int(r["slot"]), str(r["identity"]), r["reusable_from_ms"])
                         for r in data["retired"]))


@dataclass(frozen=True)
class StageLayout:
    """The buffer of one window aggregation (a cascade has one per window)."""

    plain: Pool
    distinct: Pool

    def pool_of(self, aggregate: Aggregate) -> Pool:
        return self.distinct if aggregate.distinct else self.plain

    def to_dict(self) -> dict[str, Any]:
        return {"plain": self.plain.to_dict(), "distinct": self.distinct.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageLayout:
        return cls(Pool.from_dict(data["plain"]), Pool.from_dict(data["distinct"]))


@dataclass(frozen=True)
class JobLayout:
    """Every pipeline's stage layouts (outermost window first, as ``WindowAggregate.chain``)."""

    pipelines: Mapping[str, tuple[StageLayout, ...]] = field(default_factory=dict)
    name: str = LAYOUT

    @classmethod
    def from_signature(cls, signature: Mapping[str, Any]) -> JobLayout:
        """The layout recorded in a state signature (``analyzer.signature``); an older layout's
        name with no assignment, so that callers can refuse it by name."""
        name = signature.get("layout", LAYOUT_V1)
        if name != LAYOUT:
            return cls({}, name)
        return cls({p: tuple(StageLayout.from_dict(s["slots"]) for s in entry["stages"])
                    for p, entry in signature["pipelines"].items()})


def plan(model: JobModel, deployed: JobLayout | None = None,
         watermarks: Mapping[str, int | None] | None = None) -> JobLayout:
    """The layout ``model`` runs with: fresh widths where nothing is deployed, else the deployed
    assignment evolved to the new aggregates. ``watermarks`` (per pipeline, from the checkpoint)
    decides which retired slots are free; unknown means none. Raises :class:`NoRoom`."""
    pipelines: dict[str, tuple[StageLayout, ...]] = {}
    for pipeline in model.pipelines:
        if pipeline.aggregate is None:
            continue
        chain = pipeline.aggregate.chain()
        old = deployed.pipelines.get(pipeline.name) if deployed else None
        if old is None or len(old) != len(chain):
            pipelines[pipeline.name] = tuple(_fresh(model, stage) for stage in chain)
            continue
        watermark = (watermarks or {}).get(pipeline.name)
        stages = []
        for stage, layout in zip(chain, old):
            until = _retire_until(model, stage, watermark)
            try:
                stages.append(StageLayout(
                    layout.plain.evolve([a.identity for a in stage.aggregates if not a.distinct],
                                        watermark, until, "plain"),
                    layout.distinct.evolve([a.identity for a in stage.aggregates if a.distinct],
                                           watermark, until, "distinct")))
            except NoRoom as error:
                raise NoRoom(f"pipeline {pipeline.name}: {error}") from None
        pipelines[pipeline.name] = tuple(stages)
    return JobLayout(pipelines)


def _fresh(model: JobModel, stage: WindowAggregate) -> StageLayout:
    plain = [a.identity for a in stage.aggregates if not a.distinct]
    distinct = [a.identity for a in stage.aggregates if a.distinct]
    width = _setting(model, SLOTS_SETTING, max(MIN_SLOTS, len(plain) + HEADROOM))
    distinct_width = _setting(model, DISTINCT_SLOTS_SETTING, len(distinct) + HEADROOM if distinct else 0)
    return StageLayout(Pool(width).evolve(plain, None, None, "plain"),
                       Pool(distinct_width).evolve(distinct, None, None, "distinct"))


def _setting(model: JobModel, key: str, default: int) -> int:
    text = model.settings.get(key)
    if text is None:
        return default
    if not text.isdigit() or int(text) > 256:
        raise SQLModelError(f"SET '{key}' must be a whole number from 0 to 256, not {text!r}",
                            source=model.source, clause="SET")
    return int(text)


def _retire_until(model: JobModel, stage: WindowAggregate, watermark_ms: int | None) -> int | None:
    """The watermark after which no window open now can hold a value: every such window started
    before the largest event time seen (watermark + delay), so it ends within one window size."""
    window = stage.window
    table = model.tables.get(stage.source_table)
    span = window.shape.span_ms if window else None
    if watermark_ms is None or span is None or table is None:
        return None
    return watermark_ms + (table.watermark_delay_ms or 0) + span


def watermark_of_offset_log(text: str) -> int | None:
    """The event-time watermark of a batch, from one file of a Spark checkpoint's ``offsets/`` log
    (``v1``, then the batch metadata as JSON, then one line per source)."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    try:
        return int(json.loads(lines[1]).get("batchWatermarkMs"))
    except (ValueError, TypeError, AttributeError):
        return None
