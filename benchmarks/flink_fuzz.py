"""Flink fuzz: random window aggregations, run by Flink and by stategate, compared row for row.

Where ``flink_oracle.py`` records a fixed set of calls per family, each case here draws its own: 3-8
aggregate calls (each aggregate the engine runs, where Flink 2.3 runs it over the window kind),
DISTINCT and ``FILTER (WHERE ...)`` now and then, over columns and expressions (arithmetic, casts,
``CASE``, ``COALESCE``, text functions, times), an expression over aggregates now and then; a window
of each kind with its size, slide or step drawn (a TUMBLE offset now and then); a grouping (by the
supplier, by nothing, by a computed key, by ``GROUPING SETS``; a SESSION by its partition); a
``WHERE`` now and then; and bids with NULLs in every column, INTs at their range's ends and NULL
keys now and then (``flink_oracle.bids``). STDDEV and VARIANCE get cases of their own, compared as
``test_flink_equality`` compares them (Flink computes them in DOUBLE). An aggregation is written
with a legacy group window now and then. A case's shape is the aggregation itself, or now and then
what reads it: a cascade (a window of any kind over the aggregation's ``window_time``, aggregating
its results), a window Top-N (``ROW_NUMBER()`` per window) or a window join (inner or left, with
another aggregation of the same windows over filtered bids).

``record`` runs each case through PyFlink, in a venv of its own as for the oracle, and writes it in
the oracle's fixture format; ``compare`` runs every fixture of the folder through stategate and
prints each difference (exits 1 on any)::

    .flink/bin/python benchmarks/flink_fuzz.py record --seed 1 --cases 40 /tmp/flink-fuzz
    .venv/bin/python benchmarks/flink_fuzz.py compare /tmp/flink-fuzz
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.flink_oracle import CLOSER, COLUMNS, NOT_HOP, TUMBLE_ONLY, bids, run_flink

#: What a numeric aggregate takes: columns of each type, and expressions Flink and Spark type apart
#: (a DECIMAL times an INT, divided by an integer literal, a CASE without ELSE, narrowing casts),
#: and DECIMALs of 38 digits or of a scale past 18 (whose sums no window here takes past their type:
#: Flink's overflows to NULL and starts again, ``docs/pages/sql.md``). A STDDEV or VARIANCE of those
#: (``IN_DOUBLE``: a scale past 18, values past 10^(16 - s)) is computed from sums in DOUBLE, Flink's
#: from a running mean: its case is compared as ``floating``, to a relative 1e-9, as
#: ``tests/data/flink/wide_sums.json`` is.
NUMBERS = ("price", "qty", "score", "price * qty", "qty + 1", "-qty", "price - 100", "price / 4", "ABS(price)",
           "COALESCE(qty, 0)", "CASE WHEN qty > 40 THEN price END", "CAST(qty AS BIGINT)", "CAST(qty AS SMALLINT)",
           "CAST(price AS DOUBLE)", "CAST(score AS DECIMAL(12, 4))",
           *(IN_DOUBLE := ("CAST(price AS DECIMAL(38, 2)) * 1000000000000000000", "CAST(price AS DECIMAL(38, 20))",
                           "CAST(price / 1000.0 AS DECIMAL(38, 36))", "CAST(price / 1000.0 AS DECIMAL(19, 19))")))
TEXTS = ("supplier_id", "UPPER(supplier_id)", "CAST(qty AS STRING)", "CAST(price AS STRING)",
         "CONCAT(supplier_id, '-', CAST(qty AS STRING))")
#: (A time moved by an INT at its range's end is a year Python cannot hold: moved by at most 999 minutes.)
TIMES = ("bidtime", "TIMESTAMPADD(MINUTE, MOD(qty, 1000), bidtime)")
#: What JSON_ARRAYAGG and JSON_OBJECTAGG take: Flink and Spark write a DOUBLE and a time in JSON apart (refused).
JSON_VALUES = ("price", "qty", "supplier_id", "price * qty")
FILTERS = ("qty > 40", "price < 200", "score IS NOT NULL", "supplier_id = 's2'", "qty IS NULL",
           "price > 100 AND qty < 50", "MOD(qty, 3) = 0", "score > 0")
#: Whole SELECT items over aggregates.
OVER_AGGREGATES = ("SUM(qty) - MIN(qty)", "CAST(COUNT(*) AS DOUBLE) / 2", "MAX(price) - MIN(price)",
                   "COALESCE(SUM(price), 0) + 1", "COUNT(DISTINCT supplier_id) * 10", "AVG(qty) * 2")
#: Where a DISTINCT is drawn: the aggregates whose DISTINCT both engines define one result for.
WITH_DISTINCT = ("COUNT", "SUM", "MIN", "MAX", "AVG", "LAST_VALUE")
VARIANCES = ("STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "VARIANCE")
#: Per grouping: the key column the SELECT list writes first, and the GROUP BY's keys before the window's.
GROUPINGS = {"supplier": ("supplier_id", "supplier_id, "), "none": ("'all' AS supplier_id", ""),
             "computed": ("UPPER(supplier_id) AS supplier_id", "UPPER(supplier_id), "),
             "sets": ("supplier_id", "GROUPING SETS ((supplier_id), ()), ")}
WHERES = ("", "", "WHERE qty IS NOT NULL\n", "WHERE price > 50 OR score < 0\n")
SEPARATORS = ("", ", ';'", ", ' | '")
#: What ARRAY_AGG and COLLECT take: Flink writes a DOUBLE as text otherwise than Python, and cannot hand
#: a MULTISET of times to Python.
ELEMENTS = ("price", "qty", "supplier_id", "price * qty", "CAST(qty AS BIGINT)", "qty > 40")
#: Conditions on a window's results, some over aggregates the SELECT list does not show.
HAVINGS = ("HAVING COUNT(*) > 2", "HAVING SUM(qty) > 100 OR COUNT(*) = 1", "HAVING MAX(price) IS NOT NULL",
           "HAVING AVG(qty) < 50 AND MIN(score) < 0")
#: A cascade's aggregates over each result of the aggregation it reads (``{}``).
OVER_RESULTS = ("SUM({})", "MIN({})", "MAX({})", "COUNT({})", "AVG({})", "SUM({}) FILTER (WHERE {} > 0)")
#: A cascade's window over the aggregation's windows, read from the view ``{}`` by their ``window_time``.
OUTER_WINDOWS = ("TUMBLE(TABLE {}, DESCRIPTOR(window_time), INTERVAL '30' MINUTES)",
                 "HOP(TABLE {}, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '30' MINUTES)",
                 "CUMULATE(TABLE {}, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '30' MINUTES)",
                 "SESSION(TABLE {} PARTITION BY supplier_id, DESCRIPTOR(window_time), INTERVAL '5' MINUTES)")


def _distinct(rng: random.Random, function: str) -> str:
    return "DISTINCT " if function in WITH_DISTINCT and rng.random() < 0.2 else ""


def draw_call(rng: random.Random, variance: bool, numeric: bool = False) -> str:
    """One SELECT item over the groups: an aggregate call (with its FILTER now and then), or an
    expression over aggregates; ``numeric``: one whose result is a number."""
    if variance:
        call = f"{rng.choice(VARIANCES)}({'DISTINCT ' if rng.random() < 0.2 else ''}{rng.choice(NUMBERS)})"
    else:
        kind = rng.choice(("COUNT", "COUNT(*)", "SUM", "MIN", "MAX", "AVG") if numeric else (
            "COUNT", "COUNT(*)", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "JSON_ARRAYAGG",
            "JSON_OBJECTAGG", "ARRAY_AGG", "COLLECT", "TEXT", "TIME", "OVER"))
        if kind == "OVER":
            return rng.choice(OVER_AGGREGATES)
        if kind == "COUNT(*)":
            call = kind
        elif kind == "TEXT":
            function = rng.choice(("MIN", "MAX"))
            call = f"{function}({_distinct(rng, function)}{rng.choice(TEXTS)})"
        elif kind == "TIME":
            call = f"{rng.choice(('MIN', 'MAX', 'FIRST_VALUE', 'LAST_VALUE'))}({rng.choice(TIMES)})"
        elif kind == "LISTAGG":
            call = f"LISTAGG({rng.choice(TEXTS)}{rng.choice(SEPARATORS)})"
        elif kind == "JSON_ARRAYAGG":  # Flink's parser takes no FILTER after it
            return f"JSON_ARRAYAGG({rng.choice(JSON_VALUES)}{rng.choice(('', ' NULL ON NULL'))})"
        elif kind == "JSON_OBJECTAGG":  # keyed by the bid's second, which no two bids share (bids())
            return (f"JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE {rng.choice(JSON_VALUES)}"
                    f"{rng.choice(('', ' ABSENT ON NULL'))})")
        elif kind == "ARRAY_AGG":
            nulls = rng.choice(("", "", " IGNORE NULLS", " RESPECT NULLS"))
            if nulls:  # inside the parentheses or after them; Flink takes no FILTER with either
                inside, element = rng.random() < 0.5, rng.choice(ELEMENTS)
                return f"ARRAY_AGG({element}{nulls})" if inside else f"ARRAY_AGG({element}){nulls}"
            call = f"ARRAY_AGG({rng.choice(ELEMENTS)})"
        elif kind == "COLLECT":
            call = f"COLLECT({rng.choice(ELEMENTS)})"
        else:
            call = f"{kind}({_distinct(rng, kind)}{rng.choice(NUMBERS)})"
    return call + (f" FILTER (WHERE {rng.choice(FILTERS)})" if rng.random() < 0.35 else "")


def draw_windows(rng: random.Random) -> dict[str, tuple[str, str]]:
    """Each kind's window: its TVF, and its legacy group window where Flink has one (none for
    CUMULATE, nor for a TUMBLE with an offset)."""
    slide = rng.choice((1, 2, 5))
    offset = f", INTERVAL '{rng.choice((1, 2))}' MINUTES" if rng.random() < 0.3 else ""
    size = rng.choice((1, 2, 5, 10, 15)) * (3 if offset else 1)  # an offset within the size
    hop, cumulate, gap = slide * rng.choice((2, 3, 4)), slide * rng.choice((2, 3, 6)), rng.choice((1, 2, 3, 5))
    # A HOP's or CUMULATE's offset may pass its slide or step, or be negative: Flink takes any.
    shifted = f", INTERVAL '{rng.choice((-7, -1, 1, 3, 12, 61))}' MINUTES" if rng.random() < 0.3 else ""
    return {
        "tumble": (f"TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{size}' MINUTES{offset})",
                   "" if offset else f"TUMBLE(bidtime, INTERVAL '{size}' MINUTES)"),
        "hop": (f"HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{slide}' MINUTES, INTERVAL '{hop}' MINUTES{shifted})",
                "" if shifted else f"HOP(bidtime, INTERVAL '{slide}' MINUTES, INTERVAL '{hop}' MINUTES)"),
        "cumulate": (f"CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{slide}' MINUTES, "
                     f"INTERVAL '{cumulate}' MINUTES{shifted})", ""),
        "session": (f"SESSION(TABLE Bid PARTITION BY supplier_id, DESCRIPTOR(bidtime), INTERVAL '{gap}' MINUTES)",
                    f"SESSION(bidtime, INTERVAL '{gap}' MINUTES)"),
    }


def _grouped(window: str, group_window: str, key: str, keys: str, select: str, where: str) -> str:
    """An aggregation of ``select`` by ``keys`` and a window: of the TVF ``window``, or, where
    ``group_window`` is given, of that legacy group window (its start and end written as the TVF's
    columns are)."""
    if group_window:
        function, arguments = group_window.split("(", 1)
        return (f"SELECT {key}, {function}_START({arguments} AS window_start, {function}_END({arguments} AS "
                f"window_end,\n  {select}\nFROM Bid\n{where}GROUP BY {keys}{group_window}")
    return f"SELECT {key}, window_start, window_end,\n  {select}\nFROM TABLE({window})\n{where}" \
           f"GROUP BY {keys}window_start, window_end"


def as_flink(call: str) -> str:
    """A call as Flink's side of the fixture runs it: an ARRAY_AGG cast to text, which is how Flink
    hands an array with a NULL to Python (``flink_oracle.AS_TEXT``; the fixtures' helper writes
    stategate's arrays the same way)."""
    return f"CAST({call} AS STRING)" if call.startswith("ARRAY_AGG") else call


def draw_case(seed: int) -> tuple[str, dict[str, tuple[str, str]], list[str]]:
    """A case's comparison (``exact``, ``double`` or ``floating``), its query per window kind (stategate's, and
    Flink's where it casts an array to text) and its bids."""
    rng = random.Random(seed)
    extremes, null_keys = rng.random() < 0.3, rng.random() < 0.3
    compare = "double" if rng.random() < 0.25 else "exact"
    shape = rng.choice(("aggregation", "aggregation", "aggregation", "cascade", "top-n", "join"))
    calls = list(dict.fromkeys(draw_call(rng, compare == "double", numeric=shape == "cascade")
                               for _ in range(rng.randint(3, 8))))
    if compare == "double" and any(wide in call for call in calls for wide in IN_DOUBLE):
        compare = "floating"
    where = rng.choice(WHERES)
    outer = [rng.choice(OVER_RESULTS).format(f"a{i}", f"a{i}") for i in range(len(calls))]
    outer_window = rng.choice(OUTER_WINDOWS)
    rows = rng.randint(1, 3)
    top = (rng.choice(("DESC", "ASC")), rng.choice((f"rownum <= {rows}", f"rownum < {rows + 1}", "rownum = 1",
                                                    f"rownum BETWEEN 2 AND {rows + 1}", f"{rows} >= rownum",
                                                    f"rownum <= {rows} AND n > 1")))
    how, condition = rng.choice(("JOIN", "LEFT JOIN")), rng.choice(FILTERS)
    legacy = shape == "aggregation" and rng.random() < 0.3
    # (The engine reads a cascade's inner windows from its state, before a HAVING: refused there.)
    having = f"\n{rng.choice(HAVINGS)}" if shape != "cascade" and rng.random() < 0.25 else ""
    found = {}
    for kind, (window, group_window) in draw_windows(rng).items():
        # (In a legacy group window Flink 2.3 finds no implementation of a JSON aggregate, or writes a
        # text value without its quotes: docs/pages/sql.md.)
        kept = [i for i, c in enumerate(calls) if (kind == "tumble" or not c.startswith(TUMBLE_ONLY))
                and (kind != "hop" or not c.startswith(NOT_HOP)) and not (legacy and group_window and c.startswith("JSON_"))]
        # (Under GROUPING SETS, a NULL supplier's windows and the total's have the same key: not
        # comparable; what reads an aggregation is drawn over a grouping by one key or none.)
        groupings = [g for g in GROUPINGS if g != "sets" or not (null_keys or shape != "aggregation")]
        grouping = "supplier" if kind == "session" else rng.choice(("supplier", "supplier", *groupings))
        if not kept:
            continue
        key, keys = GROUPINGS[grouping]
        # (The other side's sessions are this side's, its bids filtered per aggregate: where two
        # sides' sessions differ, Flink's planner may join them as a regular join, by their starts
        # too, which stategate does not follow; docs/pages/sql.md, window joins.)
        if kind == "session":
            other = _grouped(window, "", key, keys, f"COUNT(*) FILTER (WHERE {condition}) AS m, "
                             f"MAX(qty) FILTER (WHERE {condition}) AS mq", where)
        else:
            other = _grouped(window, "", key, keys, "COUNT(*) AS m, MAX(qty) AS mq", f"WHERE {condition}\n")
        # (The engine runs no window over a HOP's or CUMULATE's results: those kinds' own aggregation.)
        found[kind] = tuple(
            _shaped("aggregation" if shape == "cascade" and kind in ("hop", "cumulate") else shape, kind.title(),
                    _grouped(window, group_window if legacy else "", key, keys,
                             ",\n  ".join(f"{form(calls[i])} AS a{i}" for i in kept), where) + having,
                    ([outer[i] for i in kept], outer_window), top, (how, other))
            for form in (str, as_flink))
    lines = bids(seed, rng.choice((200, 400, 800)), rng.choice((1800, 7200)), extremes=extremes, null_keys=null_keys)
    return compare, found, lines


def _shaped(shape: str, kind: str, aggregation: str, outer: tuple[list[str], str], top: tuple[str, str],
            join: tuple[str, str]) -> str:
    """The query of a case's shape over its ``aggregation``: itself; a cascade, the ``outer`` calls
    in the ``outer`` window (:data:`OUTER_WINDOWS`) over the aggregation's windows (read by their
    ``window_time`` from a view named after the window ``kind``: a script defines a view once); the
    ``top`` rows per window by their count, then their key (a bound on ``rownum`` written one of
    the ways Flink takes: ``<=``, ``<``, ``=``, ``BETWEEN``, reversed, beside another predicate);
    or a window ``join`` (an inner or a left one) of it with another aggregation of the same windows
    and keys, over filtered bids (or, of SESSION windows, with filtered aggregates)."""
    view = f"{kind}Windows"
    if shape == "join":
        how, other = join
        return (f"CREATE TEMPORARY VIEW {view} AS\n{aggregation};\nCREATE TEMPORARY VIEW {kind}Others AS\n{other};\n"
                f"SELECT L.*, R.m, R.mq\nFROM {view} AS L {how} {kind}Others AS R\n"
                "ON L.supplier_id = R.supplier_id AND L.window_start = R.window_start AND L.window_end = R.window_end")
    if shape == "cascade":
        inner = aggregation.replace("window_start, window_end,", "window_time,", 1) + ", window_time"
        calls, window = outer
        select = ",\n  ".join(f"{call} AS a{i}" for i, call in enumerate(calls))
        return (f"CREATE TEMPORARY VIEW {view} AS\n{inner};\nSELECT supplier_id, window_start, window_end, "
                f"COUNT(*) AS n,\n  {select}\nFROM TABLE({window.format(view)})\n"
                "GROUP BY supplier_id, window_start, window_end")
    if shape == "top-n":
        order, bound = top
        counted = aggregation.replace("window_start, window_end,", "window_start, window_end, COUNT(*) AS n,", 1)
        return (f"SELECT * FROM (\n  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
                f"ORDER BY n {order}, supplier_id {order}) AS rownum\n  FROM (\n{counted}))\nWHERE {bound}")
    return aggregation


def record(folder: Path, first: int, cases: int) -> int:
    """Each case's rows from Flink, as a fixture of the oracle's format; a query Flink refuses is
    left out of its case (and said)."""
    import pyflink

    folder.mkdir(parents=True, exist_ok=True)
    closes = CLOSER.split(",")[0][:19]
    for seed in range(first, first + cases):
        compare, sql, lines = draw_case(seed)
        queries, rows = {}, {}
        for kind, (query, flinks) in sql.items():
            try:
                found = run_flink(lines, {kind: flinks})[kind]
            except Exception as error:  # noqa: BLE001 - Flink's refusal is the case's, not the run's
                print(f"case {seed} {kind}: Flink refused it: {str(error).splitlines()[0][:200]}")
                continue
            # Every window but those the closing bid is in (whatever the grouping makes its key).
            queries[kind], rows[kind] = query, [row for row in found if str(row[2]) <= closes]
        fixture = {"command": f"benchmarks/flink_fuzz.py record --seed {seed} --cases 1",
                   "flink": pyflink.version.__version__, "compare": compare, "columns": COLUMNS, "input": lines,
                   "queries": queries, "rows": rows}
        (folder / f"case-{seed:05d}.json").write_text(json.dumps(fixture, indent=1) + "\n")
        print(f"case {seed}: {compare}, " + ", ".join(f"{kind} {len(r)} windows" for kind, r in rows.items()),
              flush=True)
    return 0


def compare(folder: Path) -> int:
    """stategate's rows for every fixture of ``folder`` against Flink's."""
    from stategate.spark_jobs.session import get_session
    from tests.spark_jobs.flink_fixtures import assert_equals_flink, run_fixture

    spark = get_session("stategate-flink-fuzz")
    spark.sparkContext.setLogLevel("ERROR")
    started, windows, different = time.perf_counter(), 0, []
    fixtures = sorted(folder.glob("case-*.json"))
    for path in fixtures:
        recorded = json.loads(path.read_text())
        if not recorded["queries"]:
            continue
        with tempfile.TemporaryDirectory() as work:
            try:
                rows, kinds, pipelines = run_fixture(spark, recorded, Path(work))
                assert_equals_flink(recorded, rows, kinds, pipelines)
                print(f"{path.name}: {', '.join(kinds)}: equal", flush=True)
            except Exception as difference:  # noqa: BLE001 - a job failing where Flink ran is a difference too
                different.append(path.name)
                print(f"{path.name}: DIFFERENT: {str(difference)[:500]}", flush=True)
        windows += sum(len(found) for found in recorded["rows"].values())
    print(f"\n{len(fixtures)} cases, {windows} windows of Flink's in {time.perf_counter() - started:.0f} s")
    print("RESULT: " + (f"DIFFERENT in {different}" if different else "every window equal to Flink's"))
    return 1 if different else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="Flink's rows for random cases (run with PyFlink's Python)")
    recording.add_argument("folder", type=Path)
    recording.add_argument("--seed", type=int, default=1, help="the first case's seed")
    recording.add_argument("--cases", type=int, default=40)
    comparing = commands.add_parser("compare", help="stategate's rows against the recorded ones")
    comparing.add_argument("folder", type=Path)
    args = parser.parse_args()
    return record(args.folder, args.seed, args.cases) if args.command == "record" else compare(args.folder)


if __name__ == "__main__":
    sys.exit(main())
