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

A slot has a :class:`Shape`: the aggregate it was made for (``SUM:m2``, a sum of exact numbers kept
at scale 2; ``COUNT``; ``MAX:t``, the latest time; see :func:`shape_of`), and only the fields that
aggregate keeps (:mod:`analyzer.aggregates`). The slots of the first deploy are shaped for its
aggregates; the headroom slots are *generic*, with the fields of every shape of their pool, so that
any aggregate added later fits one. Every field costs every state row and every input row, so
shaping the slots matters (docs: benchmarks). A retired shaped slot takes only an aggregate of its
own shape; a retired generic slot takes any.

Slots come in three pools (:class:`~analyzer.aggregates.Pool`), by what their fields hold: *plain*
(counts, sums, numeric and time MIN/MAX), *text* (MIN/MAX over text) and *distinct* (a set of
values). An aggregate's pool follows from its SQL and the declared column types
(:mod:`analyzer.value_types`).

The widths are chosen at the first deploy (``SET 'stategate.state.slots'``,
``'stategate.state.text-slots'`` and ``'stategate.state.distinct-slots'``; the defaults leave
headroom) and recorded with the assignment. A change that needs more slots than are free does not fit: :func:`plan` raises
:class:`NoRoom`, which the analyzer reports as ``stategate.layout.no-room`` (INCOMPATIBLE: clear the
state, which also applies a new width) before anything is deployed.

This module is free of Spark: the analyzer, the Airflow gate and the Spark job share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import AbstractSet, Any, Mapping

from sqlglot import exp

from stategate.analyzer.aggregates import (AGGREGATES, FIELDS, TIME_DIGITS, AggregateFunction, Field, Pool, keeps_set,
                                           state_of)
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import Aggregate, JobModel, WindowAggregate
from stategate.analyzer.reseed import not_reseedable, reseedable
from stategate.analyzer.families import MAX_DIGITS, Family, squares_scale
from stategate.analyzer.value_types import exact_type, family, is_integer

#: Layout names as recorded beside the state. v1 stored one state row per aggregate (unpivoted);
#: v2 kept string MIN/MAX fields in every plain slot; v3 gave every slot the fields of every shape.
LAYOUT_V1 = "stategate-unpivot-v1"
LAYOUT = "stategate-slots-v4"

#: The setting that sizes each pool at the first deploy.
WIDTH_SETTINGS: Mapping[Pool, str] = {Pool.PLAIN: "stategate.state.slots", Pool.TEXT: "stategate.state.text-slots",
                                      Pool.DISTINCT: "stategate.state.distinct-slots"}
SLOTS_SETTING = WIDTH_SETTINGS[Pool.PLAIN]
#: Generic slots at the first deploy, beside the shaped ones; text and distinct pools get the same
#: headroom when the query has any. A generic plain slot is 4 buffer fields, a shaped one 1 or 2.
#: A pipeline whose state can be re-seeded (:mod:`analyzer.reseed`) gets none: a change that does
#: not fit re-seeds instead, so no row pays for a redeploy that may never come.
HEADROOM = 2
#: The identity of the aggregate whose value is a group's row count, which every layout keeps
#: (``StageLayout.counted``).
ROW_COUNT = "COUNT(*)"
#: The scale exact values are kept at in generic slots, and in shaped ones whose argument's scale
#: is not certain (or that were recorded before shapes carried a scale).
EXACT_SCALE = 18


@dataclass(frozen=True)
class Shape:
    """What a slot's fields were made for: one aggregate function over one value family, its exact
    values kept at ``scale`` in ``precision`` digits; or, generic (no function), every aggregate its
    pool holds. ``distinct``: the DISTINCT form of an aggregate that keeps another state with it
    (``AggregateFunction.distinct_state``). Recorded as text: ``SUM:m2p10`` (a sum of DECIMAL(10, 2)
    values), ``SUM:i`` (of integers), ``MAX:t0p18``, ``AVG:d``, ``STDDEV_POP:w18`` (of a DECIMAL(38, 18):
    :attr:`~analyzer.families.Family.WIDE`), ``COUNT``, ``LAST_VALUE DISTINCT``,
    ``*``. A shape recorded without a precision (``SUM:m2``, before state rows were kept at Spark's
    width) takes values in 38 digits."""

    function: str | None = None
    family: Family | None = None
    scale: int | None = None
    precision: int | None = None
    distinct: bool = False

    @classmethod
    def parse(cls, text: str) -> Shape:
        if text == _GENERIC:
            return GENERIC
        if text.endswith(_DISTINCT):
            return cls(text.removesuffix(_DISTINCT), distinct=True)
        function, _, rest = text.partition(":")
        if not rest:
            return cls(function)
        scale, _, precision = rest[1:].partition("p")
        return cls(function, Family(rest[0]), int(scale) if scale else None, int(precision) if precision else None)

    def __str__(self) -> str:
        if self.function is None:
            return _GENERIC
        if self.family is None:
            return self.function + (_DISTINCT if self.distinct else "")
        scale = "" if self.scale is None else self.scale
        precision = "" if self.precision is None else f"p{self.precision}"
        return f"{self.function}:{self.family.value}{scale}{precision}"

    @property
    def kept_scale(self) -> int:
        """The scale this slot keeps exact values at."""
        return EXACT_SCALE if self.scale is None else self.scale

    def sql_type(self, field: Field) -> str:
        """The type a field of this slot takes values in (Spark's aggregate function keeps them as
        its own buffer does: a sum of DECIMAL(p, s) in 10 digits more): a decimal at the slot's
        scale and precision (a sum of squares at twice the scale, in 38 digits: :func:`squares_scale`),
        else the field's own."""
        if field.sql_type != "decimal":
            return field.sql_type
        if field.squared:
            return f"decimal({MAX_DIGITS},{squares_scale(self.kept_scale)})"
        return f"decimal({self.precision or MAX_DIGITS},{self.kept_scale})"

    def holds(self, other: Shape) -> bool:
        """Whether a slot of this shape holds an aggregate that needs a slot of ``other``: the same
        shape, or one that keeps more digits (integers as exact numbers, as slots recorded before
        integers had a field of their own keep them)."""
        if other.family is Family.INTEGER and self.family is Family.EXACT:
            other = other.as_exact
        wider = self.precision is None or (other.precision is not None and other.precision <= self.precision)
        return replace(self, precision=None) == replace(other, precision=None) and wider

    @property
    def as_exact(self) -> Shape:
        """An integer aggregate's shape as a slot without the integer field keeps it: exact, at scale 0."""
        return replace(self, family=Family.EXACT, scale=0, precision=None)

    def kept_family(self, family: Family) -> Family:
        """The family this slot keeps values an aggregate computes in ``family`` in: integers as
        exact numbers where the slot has no integer field (generic, or recorded exact); any value as
        text where the slot was shaped for one kept as text whatever its type
        (``AggregateFunction.text_otherwise``: FIRST_VALUE and LAST_VALUE over text, a type the
        declared columns do not make certain, or recorded before they kept numbers in their own type)."""
        function = AGGREGATES.get(self.function or "")
        if function is not None and self.family is None and function.text_otherwise:
            return Family.TEXT
        return Family.EXACT if family is Family.INTEGER and self.family in (None, Family.EXACT) else family

    def fields(self, pool: Pool, ordered_arrivals: bool = True) -> tuple[Field, ...]:
        """The fields a slot of this shape has in ``pool``, in buffer order: the fields its
        aggregate keeps, or every field of the pool for a generic slot (``ordered_arrivals``: its
        layout's, :attr:`StageLayout.ordered_arrivals`)."""
        if self.function is None:
            return tuple(f for f in FIELDS if f.pool is pool and f.generic)
        kept = {f for f, _ in state_of(self.function, self.family, self.distinct, ordered_arrivals)}
        return tuple(f for f in FIELDS if f in kept)

    def fits_generic(self, pool: Pool) -> bool:
        """Whether a generic slot of ``pool`` has every field a slot of this shape has (an
        integer's: those it keeps exact numbers in), at the scale it keeps them in
        (:data:`EXACT_SCALE`: the job would refuse a DECIMAL of more places as it started)."""
        shape = self.as_exact if self.family is Family.INTEGER else self
        return all(f.generic for f in shape.fields(pool)) and (shape.scale or 0) <= EXACT_SCALE


_GENERIC = "*"
_DISTINCT = " DISTINCT"
#: The aggregates only a slot of their own shape holds: fields of theirs no generic slot has.
#: (An integer's field is not generic, but a generic slot keeps integers as exact numbers.)
_SHAPED_ONLY = tuple(a.spelled for a in AGGREGATES.values()
                     if any(not f.generic for family, state in a.state.items() if family is not Family.INTEGER
                            for f, _ in state))
#: The shape of a slot made for no aggregate in particular.
GENERIC = Shape()


class NoRoom(ValueError):
    """A change needs more free slots than the recorded layout has (in ``pipeline``, where known;
    ``unseedable``: why its state cannot be re-seeded, where the recorded layout says it)."""

    def __init__(self, message: str, pipeline: str | None = None, unseedable: str | None = None) -> None:
        super().__init__(message)
        self.pipeline = pipeline
        self.unseedable = unseedable


#: Why a cascade recorded before its upstream states kept every field is not re-seeded.
PARTLY_KEPT = ("its upstream windows' state keeps only the fields their downstream read (recorded before "
               "stategate kept them all), which a re-seed cannot place")


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
class Slots:
    """The slots of one pool: plain (count, sums, min/max), text (min/max) or distinct (a set of values)."""

    shapes: tuple[Shape, ...] = ()  # per slot: the shape its fields were made for, or GENERIC
    assigned: tuple[tuple[str, int], ...] = ()  # (aggregate identity, slot), in assignment order
    retired: tuple[Retired, ...] = ()

    @property
    def width(self) -> int:
        return len(self.shapes)

    def slot_of(self, identity: str) -> int:
        return dict(self.assigned)[identity]

    def evolve(self, shapes: Mapping[str, Shape], watermark_ms: int | None, retire_until_ms: int | None,
               what: Pool, pinned: int | None = None) -> Slots:
        """The pool holding ``shapes`` (aggregate identity → shape, in query order): kept aggregates
        stay, dropped ones retire, added ones take a free slot of their own shape, else a free
        generic one; never slot ``pinned`` (``StageLayout.counted``)."""
        old = dict(self.assigned)
        kept = {i: old[i] for i in shapes if i in old}
        retired = [*self.retired, *(Retired(s, i, retire_until_ms) for i, s in self.assigned if i not in kept)]
        busy = set(kept.values()) | {r.slot for r in retired if not r.free_at(watermark_ms)}
        if pinned is not None:  # its field is the row count: no aggregate starts from zero there
            busy.add(pinned)
        free = [s for s in range(self.width) if s not in busy]
        added = [i for i in shapes if i not in kept]
        taken: dict[str, int] = {}
        # Shaped slots first: a generic slot is spent only where no slot of the aggregate's shape is free.
        for fits in (lambda i, s: self.shapes[s].holds(shapes[i]),
                     lambda i, s: self.shapes[s] == GENERIC and shapes[i].fits_generic(what)):
            for identity in [i for i in added if i not in taken]:
                slot = next((s for s in free if fits(identity, s)), None)
                if slot is not None:
                    taken[identity] = slot
                    free.remove(slot)
        if len(taken) < len(added):
            blocked = sum(1 for r in retired if not r.free_at(watermark_ms))
            message = (f"{len(added)} {what.value} aggregate(s) added ({', '.join(added)}) but only "
                       f"{len(taken) + len(free)} of {self.width} {what.value} slots are free ({len(kept)} kept, "
                       f"{blocked} retired and possibly still read by open windows)")
            if free:
                unfit = ", ".join(i for i in added if i not in taken)
                message += (f"; none of them fits {unfit}: a slot made for one aggregate takes only that "
                            "shape, and a generic slot no aggregate with fields generic slots lack "
                            f"({', '.join(_SHAPED_ONLY)}) or of a DECIMAL of more than {EXACT_SCALE} places "
                            f"(free: {', '.join(str(self.shapes[s]) for s in free)})")
            raise NoRoom(message)
        reused = set(taken.values())
        assigned = tuple((i, kept[i] if i in kept else taken[i]) for i in shapes)
        return Slots(self.shapes, assigned, tuple(r for r in retired if r.slot not in reused))

    def to_dict(self) -> dict[str, Any]:
        return {"width": self.width, "shapes": [str(s) for s in self.shapes], "assigned": dict(self.assigned),
                "retired": [{"slot": r.slot, "identity": r.identity, "reusable_from_ms": r.reusable_from_ms}
                            for r in self.retired]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Slots:
        return cls(tuple(Shape.parse(str(s)) for s in data["shapes"]),
                   tuple((str(i), int(s)) for i, s in data["assigned"].items()),
                   tuple(Retired(int(r["slot"]), str(r["identity"]), r["reusable_from_ms"])
                         for r in data["retired"]))


@dataclass(frozen=True)
class StageLayout:
    """The buffer of one window aggregation (a cascade has one per window): the slots of each pool.

    :param seeded: the state was carried from an older checkpoint into this layout (re-seeded,
        :mod:`analyzer.reseed`): its fields are filled by the functions that merge them, so that the
        carried state and input rows meet in one aggregation. Fixed for the checkpoint's life.
    :param set_keyed: the state key has a grouping-set column (``gs``): a stage with GROUPING SETS,
        one without group keys (Spark runs no session window keyed by its window alone), and every
        layout recorded before state rows were kept at Spark's width. Otherwise the column is
        always 0, and every state row would carry it for nothing. Fixed for the checkpoint's life:
        adding or removing GROUPING SETS, or every group key, is INCOMPATIBLE.
    :param whole: its state keeps every field of the buffer. Spark drops from a cascade's upstream
        aggregation the fields its downstream does not read (its row count, a retired slot), unless
        told not to (:func:`spark_jobs.state.kept_whole`); an upstream stage recorded before it was
        told keeps only those fields, so it goes on as it was written and is never re-seeded.
        Fixed for the checkpoint's life.
    :param window_first: the state key starts with the window, as Spark's own ``groupBy(window,
        key)`` keys it. RocksDB orders its rows by their bytes: window first, a micro-batch's new
        windows and the ones it closes are a few ranges of keys; key first, every batch touches
        every key's range, and at the production size RocksDB's block cache missed 3.8 times as
        often and its flushes wrote 42% more (``docs: benchmarks``). Layouts recorded before have
        the window last. Fixed for the checkpoint's life: the key is the state's schema, and so is
        a session's stored row (keyed by its group alone, it keeps the row in ``groupBy`` order).
    :param counted: the plain slot of a ``COUNT(*)`` (:data:`ROW_COUNT`) whose value is the row
        count every layout keeps (``n``: it says which groups exist and shapes sessions). That slot
        has no field of its own, so a query counting its rows keeps Spark's own width, not one count
        more. A fresh layout's COUNT(*) has counted every row, and so has a re-seeded one's carried
        from a layout where it was the row count; one added at a re-seed starts from zero, which the
        row count does not. Fixed for the checkpoint's life: the slot is never given to another
        aggregate, nor to a COUNT(*) added again after it was dropped (that one starts from zero).
    :param ordered_arrivals: its values kept as text with their arrivals (FIRST_VALUE of text, every
        value of a list) keep each arrival as two longs (:data:`~analyzer.aggregates.ORDERED`);
        layouts recorded before keep a nested struct (:data:`~analyzer.aggregates.ARRIVED_BEFORE`),
        which costs each value 24 bytes more in every state row, shuffle and changelog. Fixed for
        the checkpoint's life: the field's type is the state's schema; a re-seed carries the values
        into the new fields.
    """

    plain: Slots
    text: Slots
    distinct: Slots
    seeded: bool = False
    set_keyed: bool = True
    whole: bool = True
    window_first: bool = True
    counted: int | None = None
    ordered_arrivals: bool = True

    def pool(self, pool: Pool) -> Slots:
        return {Pool.PLAIN: self.plain, Pool.TEXT: self.text, Pool.DISTINCT: self.distinct}[pool]

    def slot_of(self, identity: str) -> tuple[Pool, int]:
        """The pool and slot an aggregate was assigned."""
        for pool in Pool:
            assigned = dict(self.pool(pool).assigned)
            if identity in assigned:
                return pool, assigned[identity]
        raise KeyError(identity)

    def is_row_count(self, pool: Pool, slot: int) -> bool:
        """Whether ``slot`` of ``pool`` is the row count's (:attr:`counted`): it has no field of its own."""
        return pool is Pool.PLAIN and slot == self.counted

    @property
    def counts_rows(self) -> bool:
        """Whether its COUNT(*) is its row count now (not dropped since: :attr:`counted`)."""
        return self.counted is not None and dict(self.plain.assigned).get(ROW_COUNT) == self.counted

    def to_dict(self) -> dict[str, Any]:
        return {**{pool.value: self.pool(pool).to_dict() for pool in Pool}, **({SEEDED: True} if self.seeded else {}),
                **({SET_KEYED: False} if not self.set_keyed else {}), **({WHOLE: True} if self.whole else {}),
                **({WINDOW_FIRST: True} if self.window_first else {}),
                **({COUNTED: self.counted} if self.counted is not None else {}),
                **({ORDERED_ARRIVALS: True} if self.ordered_arrivals else {})}

    @classmethod
    def of(cls, pools: Mapping[Pool, Slots], seeded: bool = False, set_keyed: bool = True,
           whole: bool = True, window_first: bool = True, counted: int | None = None,
           ordered_arrivals: bool = True) -> StageLayout:
        return cls(pools[Pool.PLAIN], pools[Pool.TEXT], pools[Pool.DISTINCT], seeded, set_keyed, whole, window_first,
                   counted, ordered_arrivals)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageLayout:
        counted = data.get(COUNTED)
        return cls.of({pool: Slots.from_dict(data[pool.value]) for pool in Pool}, bool(data.get(SEEDED, False)),
                      bool(data.get(SET_KEYED, True)), bool(data.get(WHOLE, False)), bool(data.get(WINDOW_FIRST, False)),
                      None if counted is None else int(counted), bool(data.get(ORDERED_ARRIVALS, False)))


#: The keys of a re-seeded stage, of one whose state key has no grouping-set column, of one whose
#: state keeps every field, of one whose state key starts with the window, of the slot whose
#: count is the row count, and of one whose arrivals are two longs, in a recorded layout.
SEEDED, SET_KEYED, WHOLE, WINDOW_FIRST, COUNTED, ORDERED_ARRIVALS = ("seeded", "gs", "whole", "window_first", "counted",
                                                                  "ordered_arrivals")


@dataclass(frozen=True)
class JobLayout:
    """Every pipeline's stage layouts, in the order of ``Pipeline.stages``.

    :param reseeded: the pipelines whose deployed state a restart carries into a new layout (their
        aggregates did not fit the deployed one): planned for this restart, not recorded
    """

    pipelines: Mapping[str, tuple[StageLayout, ...]] = field(default_factory=dict)
    name: str = LAYOUT
    reseeded: frozenset[str] = frozenset()

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
         watermarks: Mapping[str, int | None] | None = None, reseed: AbstractSet[str] = frozenset()) -> JobLayout:
    """The layout ``model`` runs with: fresh widths where nothing is deployed, else the deployed
    assignment evolved to the new aggregates. ``watermarks`` (per pipeline, from the checkpoint)
    decides which retired slots are free; unknown means none. A pipeline whose aggregates do not
    fit gets a fresh, re-seeded layout where its state can be re-seeded (``JobLayout.reseeded``,
    :mod:`analyzer.reseed`); any other raises :class:`NoRoom`. So does every pipeline of
    ``reseed`` that can be, whatever its aggregates (a new parallelism of state Spark does not
    repartition: :func:`analyzer.settings.reseeds_partitions`)."""
    pipelines: dict[str, tuple[StageLayout, ...]] = {}
    reseedable_now = reseedable(model)
    reseeded = set()
    for pipeline in model.pipelines:
        chain = pipeline.stages()
        if not chain:
            continue
        old = deployed.pipelines.get(pipeline.name) if deployed else None
        headroom = 0 if pipeline.name in reseedable_now else HEADROOM
        if old is None or len(old) != len(chain):
            pipelines[pipeline.name] = tuple(_fresh(model, stage, headroom) for stage in chain)
            continue
        # Why a re-seed could not carry the state into a new layout (None: it can). The aggregates
        # the deployed state has are those it carries; one added has nothing to carry.
        unseedable = not_reseedable(model, pipeline, {identity for kept in old for pool in Pool
                                                      for identity, _ in kept.pool(pool).assigned}) \
            or (None if all(stage.whole for stage in old[1:]) else PARTLY_KEPT)
        if pipeline.name in reseed and pipeline.name in reseedable_now:
            if unseedable is not None:
                raise NoRoom(f"pipeline {pipeline.name}: its state must be re-seeded into the new number of "
                             "state partitions", pipeline.name, unseedable)
            reseeded.add(pipeline.name)
            pipelines[pipeline.name] = _reseeded(model, chain, old, headroom)
            continue
        watermark = (watermarks or {}).get(pipeline.name)
        stages = []
        for position, (stage, layout) in enumerate(zip(chain, old)):
            if stage.window is None:  # an aggregation of whole windows: no state to evolve
                stages.append(_fresh(model, stage, headroom))
                continue
            until = _retire_until(model, stage, watermark)
            pooled = _pooled(model, stage)
            try:
                if unseedable is None and _outgrown(layout, pooled):
                    raise NoRoom("a STDDEV or VARIANCE of a DECIMAL of more than 16 digits keeps its sums in a "
                                 "slot recorded exact, which its values' squares or sums may overflow")
                plain, text, distinct = (layout.pool(pool).evolve(pooled[pool], watermark, until, pool,
                                                                  layout.counted if pool is Pool.PLAIN else None)
                                         for pool in Pool)
                evolved = replace(layout, plain=plain, text=text, distinct=distinct)
                if position and not layout.whole and any(evolved.pool(p).assigned != layout.pool(p).assigned
                                                         for p in Pool):
                    # Its state holds the fields its aggregates had: any other set is another schema.
                    raise NoRoom(f"the aggregates of the window {position} upstream change, and its state keeps "
                                 "only the fields of those it had")
                stages.append(evolved)
            except NoRoom as error:
                if unseedable is not None:
                    raise NoRoom(f"pipeline {pipeline.name}: {error}", pipeline.name, unseedable) from None
                reseeded.add(pipeline.name)
                stages = list(_reseeded(model, chain, old, headroom))
                break
        pipelines[pipeline.name] = tuple(stages)
    return JobLayout(pipelines, reseeded=frozenset(reseeded))


#: The families slots recorded before :attr:`Family.WIDE` keep its values in: exact (whose squares
#: at twice the DECIMAL's scale a value may overflow, a DECIMAL(38, 18)'s from 10 up, stopping the
#: job), and with an exact sum (which values near the DECIMAL's bound overflow, two DECIMAL(38, 18)s
#: of 6 * 10^19, leaving the window's result NULL).
_OUTGROWN = (Family.EXACT, Family.WIDE_EXACT_SUM)


def _outgrown(layout: StageLayout, pooled: Mapping[Pool, Mapping[str, Shape]]) -> bool:
    """Whether a kept aggregate's slot was recorded in a family (:data:`_OUTGROWN`) for values it
    now keeps as :attr:`Family.WIDE`: a STDDEV's or VARIANCE's of a DECIMAL of more than 16 digits.
    A re-seed carries its count, sums and squares into a slot that keeps those past what Spark
    multiplies exactly in DOUBLE."""
    return any(layout.pool(pool).shapes[slot].family in _OUTGROWN and shapes[identity].family is Family.WIDE
               for pool, shapes in pooled.items() for identity, slot in layout.pool(pool).assigned if identity in shapes)


def outgrown(model: JobModel, layout: JobLayout) -> list[str]:
    """The pipelines whose ``layout`` still keeps an aggregate in a slot it has outgrown
    (:func:`_outgrown`): those whose state cannot be re-seeded."""
    return [pipeline.name for pipeline in model.pipelines
            if any(stage.window is not None and _outgrown(kept, _pooled(model, stage))
                   for stage, kept in zip(pipeline.stages(), layout.pipelines.get(pipeline.name, ())))]


def argument_family(model: JobModel, aggregate: Aggregate) -> Family | None:
    """The value family an aggregate keeps its argument's values in (:mod:`analyzer.value_types`;
    integers, and exact numbers of a type wider than it keeps exactly, in the family its table
    entry computes them in); None where it cannot be told."""
    if not aggregate.args:
        return None
    expr = value_of(aggregate)
    found = family(model, expr)
    function = AGGREGATES.get(aggregate.function)
    if function is None:
        return found
    exact = exact_type(model, expr) if found is Family.EXACT and function.exact_digits is not None else None
    return function.kept_as(found, is_integer(model, expr), exact[0] if exact else None)


def value_of(aggregate: Aggregate) -> exp.Expr:
    """The argument whose values an aggregate keeps: its first, or the one after its key."""
    function = AGGREGATES.get(aggregate.function)
    return aggregate.args[function.value_at if function is not None else 0].expr


def pool_of(model: JobModel, aggregate: Aggregate) -> Pool:
    """Which pool an aggregate's state lives in: that of the fields it keeps (plain where the type
    of its argument cannot be told)."""
    if keeps_set(aggregate.function, aggregate.distinct):
        return Pool.DISTINCT
    found = argument_family(model, aggregate)
    try:
        return state_of(aggregate.function, found, aggregate.distinct)[0][0].pool
    except KeyError:
        return Pool.PLAIN


def shape_of(model: JobModel, aggregate: Aggregate) -> Shape:
    """The slot shape an aggregate needs: its function where its fields are the same over any value
    (``COUNT``, ``LAST_VALUE DISTINCT``: every value with its arrival; ``FIRST_VALUE`` of text, or of
    a type that is not certain, kept as text), else its function and the value family of its
    argument (``SUM:m``, ``AVG:d``, ``MAX:t``, ``MIN:s``, ``FIRST_VALUE:m2p10``;
    :mod:`analyzer.value_types`). A set of values
    (:func:`~analyzer.aggregates.keeps_set`) is one whatever it aggregates, and an argument whose
    type cannot be told needs every field: both are :data:`GENERIC`.

    A SUM, MIN or MAX of integers keeps a long, and one of other exact numbers whose type is
    certain keeps their own type (``SUM:m2p10``, ``MAX:m2p10``: a DECIMAL(10, 2), which Spark's sum
    keeps in DECIMAL(20, 2)); one of times keeps their microseconds in 18 digits
    (``MAX:t0p18``, :data:`~analyzer.aggregates.TIME_DIGITS`). So a state row is as wide as Spark's
    own (a decimal of up to 18 digits is a long in Spark's rows, a wider one 24 bytes), and a value
    is never rescaled (kept at :data:`EXACT_SCALE` instead, each would be: a big-number
    multiplication per row and field). An AVG of integers keeps a long sum, which wraps past a
    long's range as Flink's does; one of other exact numbers keeps their scale in 38 digits, as
    Flink's AVG sums them (``AVG:m2``), and divides by the count once, into Flink's scale
    (slots recorded before keep :data:`EXACT_SCALE`, which rounded a DECIMAL(38, 20)'s values
    and overflowed past 10^20 where Flink's sum does not). A STDDEV or
    VARIANCE of exact numbers keeps their scale in 38 digits, and its sum of squares twice it (of
    a DECIMAL of more than 16 digits, ``Family.WIDE``, beside sums in DOUBLE of the values and
    squares past what 38 digits hold): it needs a certain scale (:mod:`analyzer.runnable` refuses an
    argument without one)."""
    if keeps_set(aggregate.function, aggregate.distinct):
        return GENERIC
    function = AGGREGATES.get(aggregate.function)
    found = argument_family(model, aggregate)
    exact = exact_type(model, value_of(aggregate)) if found in (Family.EXACT, Family.WIDE) else None
    if function is not None and function.state_of(None) is not None \
            and not _in_own_type(function, aggregate, found, exact is not None):
        return Shape(aggregate.function, distinct=aggregate.distinct and bool(function.distinct_state))
    if found is None:
        return GENERIC
    own_type = function is not None and function.own_type
    if found is Family.TIME and own_type:
        return Shape(aggregate.function, found, 0, TIME_DIGITS)
    if exact is None:
        return Shape(aggregate.function, found)
    precision, scale = exact
    return Shape(aggregate.function, found, scale, precision if own_type else None)


def _in_own_type(function: AggregateFunction, aggregate: Aggregate, found: Family | None, certain: bool) -> bool:
    """Whether an aggregate that keeps any other value as text (``AggregateFunction.text_otherwise``)
    keeps this one's in their own type: values of a family it has a state for, a decimal only of a
    type the declared columns make ``certain``, and not with DISTINCT where it keeps another state."""
    return function.text_otherwise and found in function.state and (found is not Family.EXACT or certain) \
        and not (aggregate.distinct and function.distinct_state)


def _pooled(model: JobModel, stage: WindowAggregate) -> dict[Pool, dict[str, Shape]]:
    """Per pool: aggregate identity → slot shape, in query order."""
    pooled: dict[Pool, dict[str, Shape]] = {pool: {} for pool in Pool}
    for aggregate in stage.aggregates:
        pooled[pool_of(model, aggregate)][aggregate.identity] = shape_of(model, aggregate)
    return pooled


def _reseeded(model: JobModel, chain: tuple[WindowAggregate, ...], old: tuple[StageLayout, ...],
              headroom: int) -> tuple[StageLayout, ...]:
    """Fresh layouts for a chain whose deployed state (``old``, stage by stage) is carried into them
    (an aggregation of whole windows has none)."""
    return tuple(replace(_fresh(model, stage, headroom, was.counts_rows), seeded=stage.window is not None)
                 for stage, was in zip(chain, old))


def _fresh(model: JobModel, stage: WindowAggregate, headroom: int, rows_counted: bool = True) -> StageLayout:
    """A layout with the widths of the first deploy. Its COUNT(*) is the row count
    (``StageLayout.counted``) where its every group's rows were counted: ``rows_counted``, false for
    a re-seed from a state whose row count was not its COUNT(*). An aggregation of whole windows
    keeps no state (it runs in the micro-batch that closes them), so it has no headroom."""
    pooled = _pooled(model, stage)
    pools = {}
    for pool in Pool:
        shaped = list(pooled[pool].values())
        spare = headroom if stage.window is not None and (shaped or pool is Pool.PLAIN) else 0
        width = max(len(shaped), _setting(model, WIDTH_SETTINGS[pool], len(shaped) + spare))
        pools[pool] = Slots(tuple((shaped + [GENERIC] * width)[:width])).evolve(pooled[pool], None, None, pool)
    keyed = any(not k.is_window for k in stage.group_keys)
    counted = dict(pools[Pool.PLAIN].assigned).get(ROW_COUNT) if rows_counted else None
    return StageLayout.of(pools, set_keyed=stage.grouping_sets is not None or not keyed, counted=counted)


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
