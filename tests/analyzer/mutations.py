"""Window jobs and single mutations of them, each with the verdict the seed tables give it.

The generator works on an abstract :class:`Job` (window kind and size, time attribute, group keys,
aggregates, the view / CTE / subquery the query reads through, the Top-N around it) and renders it
as Flink SQL. A :class:`Mutation` changes one thing and states the expected verdict from the seed
tables (000 legacy group windows, 001 window TVFs, 002 window Top-N), reasoning on the job itself,
never on the analyzer's model; ``None`` where the seeds are silent (not judged).

:func:`judge` compares the analyzer's verdict with that expectation:

* ``unsafe``: a verdict that reuses more state than the seeds allow (FULL or PARTIAL where they say
  something stricter, FULL where they say PARTIAL). The one answer stategate must never give.
* ``strict``: wrong but safe (stricter than the seeds);
* ``correct``, ``not judged``, and ``crashed`` (anything but a verdict for a valid job).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Callable

from hypothesis import strategies as st

from stategate.analyzer import SQLModelError, Verdict, compare

FULL, PARTIAL, UNKNOWN, INCOMPATIBLE = Verdict.FULL, Verdict.PARTIAL, Verdict.UNKNOWN, Verdict.INCOMPATIBLE

DDL = ("CREATE TABLE MyTable (a STRING, b BIGINT, c DOUBLE, d STRING, e INT, ts TIMESTAMP(3), "
       "pt AS PROCTIME(), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
       "WITH ('connector' = 'filesystem', 'path' = 'in', 'format' = 'csv');\n")
#: The columns the wrapper passes on, as it computes them by default.
COLUMNS = (("a", "a"), ("b", "b"), ("c", "c"), ("d", "d"), ("e", "e"), ("ts", "ts"), ("pt", "pt"))
KEY_COLUMNS = ("a", "d", "e")  # group keys read these
VALUE_COLUMNS = ("b", "c")  # aggregates read these
FUNCTIONS = ("SUM", "MAX", "MIN", "COUNT", "AVG")
#: Interval arguments in minutes, in SQL order, per kind; legacy HOP is (slide, size) too.
SIZES = {"TUMBLE": ((1,), (5,), (10,)), "HOP": ((1, 5), (5, 10), (2, 10)),
         "CUMULATE": ((1, 5), (5, 10), (2, 10)), "SESSION": ((1,), (5,), (10,))}
LEGACY_KINDS = ("TUMBLE", "HOP", "SESSION")


@dataclass(frozen=True)
class Job:
    form: str  # legacy | tvf | topn (Top-N over a window TVF aggregation) | ranked (Top-N of TVF rows)
    kind: str
    sizes: tuple[int, ...]
    time: str  # ts (rowtime) | pt (proctime)
    keys: tuple[str, ...]  # non-window group keys, as column names
    window_at: int  # where the window key(s) stand among the keys
    aggregates: tuple[tuple[str, str], ...]  # (function, argument); argument "DISTINCT c" is distinct
    window_outputs: tuple[str, ...]
    wrapper: str  # none | view | cte | subquery
    columns: tuple[tuple[str, str], ...] = COLUMNS
    limit: int = 3
    order: str = "DESC"
    nulls: str = ""  # "" | NULLS FIRST | NULLS LAST
    partition: tuple[str, ...] = ()  # Top-N partition keys besides the window's
    emit: bool = False

    # ---------------------------------------------------------------- SQL
    def sql(self) -> str:
        source = "V" if self.wrapper != "none" else "MyTable"
        projection = ", ".join(expr if expr == name else f"{expr} AS {name}" for name, expr in self.columns)
        body = f"SELECT {projection} FROM MyTable"
        prefix = DDL + ("SET 'table.exec.emit.early-fire.enabled' = 'true';\n" if self.emit else "")
        if self.wrapper == "view":
            prefix += f"CREATE TEMPORARY VIEW V AS {body};\n"
        with_ = f"WITH V AS ({body}) " if self.wrapper == "cte" else ""
        if self.wrapper == "subquery":  # a window TVF reads a name: the subquery stands in a view
            if self.form == "legacy":
                source = f"({body}) AS V"
            else:
                prefix += f"CREATE TEMPORARY VIEW W AS SELECT * FROM ({body}) AS V;\n"
                source = "W"
        return prefix + with_ + self._query(source) + ";"

    def _query(self, source: str) -> str:
        intervals = ", ".join(f"INTERVAL '{m}' MINUTE" for m in self.sizes)
        aggregates = [f"{f}({arg}) AS {self._alias(f, arg)}" for f, arg in self.aggregates]
        if self.form == "legacy":
            window = f"{self.kind}({self.time}, {intervals})"
            outputs = [f"{self.kind}_{field.split('_')[1].upper()}({self.time}, {intervals}) AS {field}"
                       for field in self.window_outputs]
            group = list(self.keys)
            group.insert(self.window_at, window)
            return f"SELECT {', '.join([*self.keys, *aggregates, *outputs])} FROM {source} GROUP BY {', '.join(group)}"
        tvf = f"TABLE({self.kind}(TABLE {source}, DESCRIPTOR({self.time}), {intervals}))"
        if self.form == "ranked":
            row = ", ".join((*KEY_COLUMNS[:2], *VALUE_COLUMNS, "window_start", "window_end"))
            return (f"SELECT {', '.join((*self.window_outputs, 'a', 'b'))} FROM (SELECT {row}, {self._rank('b')} "
                    f"FROM {tvf}) WHERE rk <= {self.limit}")
        group = list(self.keys)
        group[self.window_at:self.window_at] = ["window_start", "window_end"]
        # The ranking partitions by the window: its input carries both attributes, its output any.
        carried = self.window_outputs if self.form == "tvf" else ("window_start", "window_end")
        inner = f"SELECT {', '.join([*self.keys, *aggregates, *carried])} FROM {tvf} GROUP BY {', '.join(group)}"
        if self.form == "tvf":
            return inner
        outer = [*self.keys, *(self._alias(*a) for a in self.aggregates), *self.window_outputs]
        first = self._alias(*self.aggregates[0])
        return (f"SELECT {', '.join(outer)} FROM (SELECT *, {self._rank(first)} FROM ({inner})) "
                f"WHERE rk <= {self.limit}")

    def _rank(self, order_by: str) -> str:
        partition = ", ".join((*self.partition, "window_start", "window_end"))
        nulls = f" {self.nulls}" if self.nulls else ""
        return f"ROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY {order_by} {self.order}{nulls}) AS rk"

    @staticmethod
    def _alias(function: str, argument: str) -> str:
        return f"{function.lower()}_{argument.replace('DISTINCT ', 'distinct_').replace('*', 'all')}"

    # ---------------------------------------------------------------- what the seeds compare
    def column(self, name: str) -> str:
        return dict(self.columns)[name]

    def key_values(self) -> tuple[str, ...]:
        return tuple(self.column(k) for k in self.keys)

    def identities(self) -> list[tuple[str, str]]:
        """Each aggregate as its state is named: function and the computation it reads."""
        def value(argument: str) -> str:
            distinct = argument.startswith("DISTINCT ")
            column = argument.removeprefix("DISTINCT ")
            return ("DISTINCT " if distinct else "") + (self.column(column) if column in dict(self.columns) else column)
        return [(f, value(a)) for f, a in self.aggregates]


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    form = draw(st.sampled_from(("legacy", "tvf", "tvf", "topn", "ranked")))
    kinds = LEGACY_KINDS if form == "legacy" else ("TUMBLE", "HOP", "CUMULATE") if form != "tvf" else tuple(SIZES)
    kind = draw(st.sampled_from(kinds))
    keys = tuple(draw(st.lists(st.sampled_from(KEY_COLUMNS), min_size=1, max_size=3, unique=True)))
    aggregates = draw(st.lists(st.tuples(st.sampled_from(FUNCTIONS), st.sampled_from(VALUE_COLUMNS)),
                               min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        aggregates.append(("COUNT", "*"))
    if form in ("legacy", "tvf") and draw(st.integers(0, 4)) == 0:
        aggregates.append(("COUNT", "DISTINCT " + draw(st.sampled_from(VALUE_COLUMNS))))
    wrappers = ("none", "view", "cte", "subquery")
    return Job(
        form=form, kind=kind, sizes=draw(st.sampled_from(SIZES[kind])),
        time="ts" if form in ("topn", "ranked") else draw(st.sampled_from(("ts", "ts", "pt"))),
        keys=keys, window_at=draw(st.integers(0, len(keys))), aggregates=tuple(dict.fromkeys(aggregates)),
        window_outputs=draw(st.sampled_from(((), ("window_start",), ("window_start", "window_end")))),
        wrapper=draw(st.sampled_from(wrappers)),
    )


@dataclass(frozen=True)
class Mutation:
    name: str
    old: Job
    new: Job
    expected: Verdict | None  # None: the seeds are silent


def _aggregate_verdict(old: Job, new: Job) -> Verdict:
    """Seeds 000/001's aggregate rows, on the jobs' own aggregates."""
    before, after = old.identities(), new.identities()
    distinct_before = {i for i in before if i[1].startswith("DISTINCT ")}
    distinct_after = {i for i in after if i[1].startswith("DISTINCT ")}
    if distinct_before != distinct_after:
        return INCOMPATIBLE  # add, delete or modify a distinct aggregate
    if not before or not after:
        return FULL if not before and not after else INCOMPATIBLE
    kept = [i for i in after if i in before]
    if not kept:
        return INCOMPATIBLE  # the only aggregate modified, or the set changed entirely
    if any(i not in before for i in after):
        return PARTIAL  # added or modified ones start from zero
    return FULL  # deleted or reordered


def _top_n(old: Job, new: Job, verdict: Verdict) -> Verdict:
    """Seed 002: adding, removing or modifying an aggregate field feeding the ranking is incompatible."""
    if old.form == "topn" and sorted(old.identities()) != sorted(new.identities()):
        return INCOMPATIBLE
    return verdict


def mutations_of(job: Job) -> list[Mutation]:
    """Every single mutation that applies to ``job``, with its expected verdict."""
    found: list[Mutation] = []

    def add(name: str, new: Job, expected: Verdict | None) -> None:
        found.append(Mutation(name, job, new, expected))

    other_sizes = [s for s in SIZES[job.kind] if s != job.sizes]
    add("window size", replace(job, sizes=other_sizes[0]), INCOMPATIBLE)
    kinds = [k for k in (LEGACY_KINDS if job.form == "legacy" else ("TUMBLE", "HOP", "CUMULATE")) if k != job.kind]
    new_kind = kinds[0]
    add("window type", replace(job, kind=new_kind, sizes=SIZES[new_kind][0]), INCOMPATIBLE)
    if job.form != "ranked":
        add("time attribute", replace(job, time="pt" if job.time == "ts" else "ts"), INCOMPATIBLE)
    for wrapper in ("none", "view", "cte", "subquery"):
        if wrapper != job.wrapper:
            add(f"read through {wrapper}", replace(job, wrapper=wrapper), FULL)
    if job.form == "ranked":
        found += _ranked(job)
        return found
    unused = [k for k in KEY_COLUMNS if k not in job.keys]
    if unused:
        add("add group key", replace(job, keys=(*job.keys, unused[0])), INCOMPATIBLE)
    if len(job.keys) > 1:
        add("delete group key", replace(job, keys=job.keys[1:], window_at=min(job.window_at, len(job.keys) - 1)),
            INCOMPATIBLE)
        add("reorder group keys", replace(job, keys=job.keys[::-1]), INCOMPATIBLE)
    add("move window key", replace(job, window_at=(job.window_at + 1) % (len(job.keys) + 1)),
        INCOMPATIBLE if job.form == "topn" else FULL)
    key = job.keys[0]
    add("group key computed in the wrapper", _computed(job, key, f"UPPER({key})" if key != "e" else "e + 1"),
        INCOMPATIBLE)
    for column in VALUE_COLUMNS:
        new = _computed(job, column, f"{column} * 2")
        add(f"aggregate input {column} computed in the wrapper", new, _top_n(job, new, _aggregate_verdict(job, new)))
    fresh = next((("MIN", c) for c in VALUE_COLUMNS if ("MIN", c) not in job.aggregates), None)
    if fresh:
        new = replace(job, aggregates=(*job.aggregates, fresh))
        add("add aggregate", new, _top_n(job, new, _aggregate_verdict(job, new)))
    if len(job.aggregates) > 1:
        new = replace(job, aggregates=job.aggregates[1:])
        add("delete aggregate", new, _top_n(job, new, _aggregate_verdict(job, new)))
        new = replace(job, aggregates=job.aggregates[::-1])
        add("reorder aggregates", new, None if job.form == "topn" else FULL)
    function, argument = job.aggregates[-1]
    if not argument.startswith("DISTINCT") and argument != "*":
        swapped = next(f for f in FUNCTIONS if f != function and (f, argument) not in job.aggregates)
        new = replace(job, aggregates=(*job.aggregates[:-1], (swapped, argument)))
        add("modify aggregate function", new, _top_n(job, new, _aggregate_verdict(job, new)))
    if job.form != "topn":
        add("add distinct aggregate", replace(job, aggregates=(*job.aggregates, ("COUNT", "DISTINCT e"))),
            INCOMPATIBLE)
    outputs = ("window_start",) if job.window_outputs != ("window_start",) else ("window_start", "window_end")
    add("window attribute outputs", replace(job, window_outputs=outputs), FULL)
    if job.form == "legacy":
        add("early fire", replace(job, emit=True), INCOMPATIBLE)
    if job.form == "topn":
        found += _ranking(job)
    return found


def _computed(job: Job, column: str, expression: str) -> Job:
    return replace(job, wrapper="view" if job.wrapper == "none" else job.wrapper,
                   columns=tuple((n, expression if n == column else e) for n, e in job.columns))


def _ranking(job: Job) -> list[Mutation]:
    """Seed 002's ranking rows: N, ORDER BY (with where NULLs rank), PARTITION BY."""
    default = "NULLS LAST" if job.order == "DESC" else "NULLS FIRST"  # Flink collates NULL low
    flipped = "NULLS FIRST" if default == "NULLS LAST" else "NULLS LAST"
    changes = [
        ("top-n N", replace(job, limit=job.limit + 2), INCOMPATIBLE),
        ("top-n direction", replace(job, order="ASC" if job.order == "DESC" else "DESC"), INCOMPATIBLE),
        ("top-n nulls flipped", replace(job, nulls=flipped), INCOMPATIBLE),
        ("top-n nulls spelled out", replace(job, nulls=default), FULL),
    ]
    keys = [k for k in job.keys if k not in job.partition]
    if keys:
        changes.append(("top-n partition key added", replace(job, partition=(*job.partition, keys[0])), INCOMPATIBLE))
    if len(job.partition) > 1:
        changes.append(("top-n partition reordered", replace(job, partition=job.partition[::-1]), FULL))
    return [Mutation(name, job, new, expected) for name, new, expected in changes]


def _ranked(job: Job) -> list[Mutation]:
    """A Top-N of window TVF rows: the window, the rows kept and the ranking are its state."""
    found = _ranking(replace(job, keys=KEY_COLUMNS[:2]))
    found = [Mutation(m.name, job, replace(m.new, keys=job.keys), m.expected) for m in found]
    found += [Mutation("ranked row computed in the wrapper", job, _computed(job, "b", "b + 1"), INCOMPATIBLE),
              Mutation("unranked column computed in the wrapper", job, _computed(job, "e", "e + 1"), FULL),
              Mutation("window attribute outputs", job, replace(
                  job, window_outputs=("window_start",) if job.window_outputs != ("window_start",) else ()), FULL)]
    return found


@st.composite
def mutated_jobs(draw: st.DrawFn) -> Mutation:
    job = draw(jobs())
    return draw(st.sampled_from(mutations_of(job)))


OUTCOMES = ("correct", "strict", "unsafe", "not judged", "crashed")


def judge(mutation: Mutation, run: Callable[[str, str], Verdict] | None = None) -> tuple[str, str]:
    """The outcome class of one mutation, and what the analyzer said."""
    run = run or (lambda old, new: compare(old, new).verdict)
    try:
        verdict = run(mutation.old.sql(), mutation.new.sql())
    except SQLModelError as error:  # the generator writes only valid Flink SQL
        return "crashed", f"refused a valid job: {error}"
    except Exception as error:  # noqa: BLE001 - every failure is a finding of the suite, reported, not raised
        return "crashed", f"{type(error).__name__}: {error}"
    expected = mutation.expected
    if expected is None:
        return "not judged", verdict.value
    if verdict is expected:
        return "correct", verdict.value
    if verdict < expected and verdict in (FULL, PARTIAL):
        return "unsafe", verdict.value
    return "strict" if verdict > expected else "unsafe", verdict.value


def describe(mutation: Mutation) -> str:
    fields = {f.name: getattr(mutation.old, f.name) for f in dataclasses.fields(Job)
              if getattr(mutation.old, f.name) != getattr(mutation.new, f.name)}
    return f"{mutation.name} ({mutation.old.form} {mutation.old.kind}, changed {', '.join(fields) or 'nothing'})"
