"""Every quick-reference row and every example of seeds 000, 001 and 002, as (old, new) cases.

``rule`` is the suffix of the finding that decides the verdict: the test asserts the verdict and
that a finding with that rule carries the verdict's effect.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    old: str
    new: str
    verdict: str
    rule: str


def legacy(select: str, group: str = "a", window: str = "TUMBLE(ts, INTERVAL '1' MINUTE)",
           source: str = "MyTable") -> str:
    return f"SELECT {select}\nFROM {source}\nGROUP BY {group}, {window};"


def tvf(select: str, group: str = "a, window_start, window_end", size: str = "INTERVAL '1' MINUTE",
        source: str = "MyTable") -> str:
    return (f"SELECT {select}\nFROM TABLE(TUMBLE(TABLE {source}, DESCRIPTOR(ts), {size}))\n"
            f"GROUP BY {group};")


#: MyTable of the seeds, declared as a job the Spark engine runs declares it.
MY_TABLE = ("CREATE TABLE MyTable (a STRING, b BIGINT, c BIGINT, ts TIMESTAMP(3),\n"
            "  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND\n"
            ") WITH ('connector' = 'filesystem', 'path' = '/data/my_table', 'format' = 'csv');\n")


def runnable(query: str, settings: str = "") -> str:
    """A seed query as a whole job the Spark engine runs (what the deploy gate takes): ``MyTable``
    declared, and the query's rows written to the sink ``Out``, one column per output."""
    from stategate.analyzer import build

    width = len(build(MY_TABLE + query).pipelines[0].outputs)
    sink = f"CREATE TABLE Out ({', '.join(f'c{i} STRING' for i in range(width))}) WITH ('connector' = 'print');\n"
    return settings + MY_TABLE + sink + "INSERT INTO Out " + query


# ----------------------------------------------------------------------------- seed 000
G0 = legacy("a, SUM(b), MAX(c)")
G_START = legacy("a,\n  SUM(b),\n  MAX(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start")
G_DISTINCT = ("SELECT a, SUM(DISTINCT b), MAX(DISTINCT c), COUNT(c)\nFROM MyTable\n"
              "GROUP BY a, b, TUMBLE(rowtime, INTERVAL '15' MINUTE);")
G_EMIT_BASE = ("SELECT a, MAX(c)\nFROM (SELECT a, b, c + 1 AS c, ts FROM MyTable)\n"
               "GROUP BY b, a, TUMBLE(ts, INTERVAL '15' MINUTE);")

SEED_000 = [
    Case("000-add-aggregate", G0, legacy("a, SUM(b), MAX(c), COUNT(c)"), "PARTIAL", "aggregate.added"),
    Case("000-delete-aggregate", G0, legacy("a, MAX(c)"), "FULL", "aggregate.deleted"),
    Case("000-add-and-delete-aggregates", G0, legacy("a, MAX(c), COUNT(c)"), "PARTIAL", "aggregate.added"),
    Case("000-modify-aggregate", G0, legacy("a, SUM(b), MIN(c)"), "PARTIAL", "aggregate.modified"),
    Case("000-reorder-aggregates", G0, legacy("a, MAX(c), SUM(b)"), "FULL", "aggregate.reordered"),
    Case("000-field-calculation-changes", G0,
         "SELECT a, SUM(b), MAX(c)\nFROM (SELECT a, b, SUBSTRING(c, 1, 5) AS c FROM MyTable)\n"
         "GROUP BY a, TUMBLE(ts, INTERVAL '1' MINUTE);", "PARTIAL", "aggregate.modified"),
    Case("000-add-window-end", G_START,
         legacy("a,\n  SUM(b),\n  MAX(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start,\n"
                "  tumble_end(ts, INTERVAL '1' MINUTE) AS window_end"), "FULL", "window-attribute-output"),
    Case("000-delete-window-start", G_START, legacy("a,\n  SUM(b),\n  MAX(c)"), "FULL",
         "window-attribute-output"),
    Case("000-move-window-key", G_DISTINCT,
         "SELECT a, SUM(DISTINCT b), MAX(DISTINCT c), COUNT(c)\nFROM MyTable\n"
         "GROUP BY a, TUMBLE(rowtime, INTERVAL '15' MINUTE), b;", "FULL", "group-key.window-moved"),
    Case("000-no-aggregates-before-or-after",
         "SELECT a, b, c\nFROM MyTable\nGROUP BY a, b, c, TUMBLE(rowtime, INTERVAL '15' MINUTE);",
         "SELECT a, b, c, TUMBLE_START(rowtime, INTERVAL '15' MINUTE) AS ws\nFROM MyTable\n"
         "GROUP BY a, b, c, TUMBLE(rowtime, INTERVAL '15' MINUTE);", "FULL", "aggregate.none"),
    Case("000-window-type", G_START,
         legacy("a,\n  SUM(b),\n  MAX(c),\n  hop_start(ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) AS window_start",
                window="HOP(ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)"), "INCOMPATIBLE", "window.type"),
    Case("000-window-size", G_START,
         legacy("a,\n  SUM(b),\n  MAX(c),\n  tumble_start(ts, INTERVAL '2' MINUTE) AS window_start",
                window="TUMBLE(ts, INTERVAL '2' MINUTE)"), "INCOMPATIBLE", "window.size"),
    Case("000-time-attribute", G_START,
         legacy("a,\n  SUM(b),\n  MAX(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start",
                window="TUMBLE(proctime, INTERVAL '1' MINUTE)"), "INCOMPATIBLE", "window.time-attribute"),
    Case("000-add-group-key", G_START,
         legacy("a,\n  SUM(b),\n  MAX(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start",
                group="a, d"), "INCOMPATIBLE", "group-key.changed"),
    Case("000-modify-group-key", G0, legacy("a, SUM(b), MAX(c)", source="(SELECT a || 'x' AS a, b, c, ts FROM MyTable)"),
         "INCOMPATIBLE", "group-key.changed"),
    Case("000-add-distinct-aggregate",
         legacy("a,\n  SUM(b),\n  MAX(c),\n  COUNT(DISTINCT c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start"),
         legacy("a,\n  SUM(b),\n  COUNT(DISTINCT b),\n  MAX(c),\n  COUNT(DISTINCT c),\n"
                "  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start"),
         "INCOMPATIBLE", "aggregate.distinct-changed"),
    Case("000-delete-all-aggregates",
         legacy("a,\n  SUM(b),\n  COUNT(DISTINCT b),\n  MAX(c),\n  COUNT(DISTINCT c),\n"
                "  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start"),
         legacy("a,\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start"),
         "INCOMPATIBLE", "aggregate.all-deleted"),
    Case("000-add-early-fire", G_EMIT_BASE,
         "SET 'table.exec.emit.early-fire.enabled' = 'true';\nSET 'table.exec.emit.early-fire.delay' = '500ms';\n"
         + G_EMIT_BASE, "INCOMPATIBLE", "emit.changed"),
    Case("000-add-late-fire", G_EMIT_BASE,
         "SET 'table.exec.emit.late-fire.enabled' = 'true';\nSET 'table.exec.emit.late-fire.delay' = '1s';\n"
         "SET 'table.exec.emit.allow-lateness' = '5s';\n" + G_EMIT_BASE, "INCOMPATIBLE", "emit.changed"),
    Case("000-early-fire-present-before-and-after",
         "SET 'table.exec.emit.early-fire.enabled' = 'true';\n" + G_EMIT_BASE,
         "SET 'table.exec.emit.early-fire.enabled' = 'true';\n" + G_EMIT_BASE.replace("MAX(c)", "MAX(c), MIN(c)"),
         "INCOMPATIBLE", "emit.enabled"),
    Case("000-reorder-non-window-keys", G_DISTINCT,
         "SELECT a, SUM(DISTINCT b), MAX(DISTINCT c), COUNT(c)\nFROM MyTable\n"
         "GROUP BY b, a, TUMBLE(rowtime, INTERVAL '15' MINUTE);", "INCOMPATIBLE", "group-key.reordered"),
    Case("000-add-aggregate-to-none",
         "SELECT a, b, c\nFROM MyTable\nGROUP BY a, b, c, TUMBLE(rowtime, INTERVAL '15' MINUTE);",
         "SELECT a, b, c, COUNT(c)\nFROM MyTable\nGROUP BY a, b, c, TUMBLE(rowtime, INTERVAL '15' MINUTE);",
         "INCOMPATIBLE", "aggregate.added-to-none"),
    Case("000-only-remaining-aggregate-modified",
         "SELECT a, SUM(b), MAX(b), MAX(c)\nFROM MyTable\nGROUP BY b, a, TUMBLE(ts, INTERVAL '15' MINUTE);",
         G_EMIT_BASE, "INCOMPATIBLE", "aggregate.no-overlap"),
    Case("000-only-one-aggregate-modified",
         "SELECT a, MAX(c)\nFROM MyTable\nGROUP BY b, a, TUMBLE(ts, INTERVAL '15' MINUTE);",
         G_EMIT_BASE, "INCOMPATIBLE", "aggregate.only-one-modified"),
    Case("000-aggregates-entirely-different",
         "SELECT a, SUM(b), MAX(b), MAX(c) FROM MyTable\nGROUP BY a, TUMBLE(ts, INTERVAL '1' SECOND);",
         "SELECT a, MIN(b), AVG(b) FROM MyTable\nGROUP BY a, TUMBLE(ts, INTERVAL '1' SECOND);",
         "INCOMPATIBLE", "aggregate.no-overlap"),
    Case("000-python-udaf",
         "SELECT COUNT(DISTINCT b), a, SUM(DISTINCT b)\nFROM MyTable\nGROUP BY a, c;",
         "SELECT COUNT(DISTINCT b), a, SUM(DISTINCT b), weighted_avg(a, b)\nFROM MyTable\nGROUP BY a, c;",
         "UNKNOWN", "udaf"),
    Case("000-python-udaf-declared-in-window",
         "CREATE TEMPORARY FUNCTION weighted_avg AS 'udfs.WeightedAvg' LANGUAGE PYTHON;\n"
         + legacy("a, SUM(b), weighted_avg(b, c)"),
         "CREATE TEMPORARY FUNCTION weighted_avg AS 'udfs.WeightedAvg' LANGUAGE PYTHON;\n"
         + legacy("a, SUM(b), weighted_avg(b, c)", window="TUMBLE(ts, INTERVAL '2' MINUTE)"),
         "UNKNOWN", "udaf"),
]

# ----------------------------------------------------------------------------- seed 001
T0 = tvf("a, sum(b), max(c)")
T_START = tvf("a, sum(b), max(c), window_start")
T_SUB = ("SELECT a, sum(b), max(c), window_start, window_end\n"
         "FROM (SELECT a, b, c, window_start, window_end\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
         "GROUP BY a, window_start, window_end;")
T_CALC = ("SELECT a, sum(b), max(c), window_start, window_end\n"
          "FROM (SELECT a, b, c,\n             window_start + (INTERVAL '1' SECOND) AS window_start,\n"
          "             window_end\n"
          "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
          "GROUP BY a, window_start, window_end;")
T_DISTINCT = ("SELECT a, sum(b), count(DISTINCT b), max(c), count(DISTINCT c),\n"
              "  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start\nFROM MyTable\n"
              "GROUP BY a, tumble(ts, INTERVAL '1' MINUTE);")
T_GSETS = ("SELECT a, sum(b), max(c), window_start, window_end\n"
           "FROM (SELECT a, b, c, window_start, window_end\n"
           "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
           "GROUP BY GROUPING SETS ((a), (window_start), (window_end));")

SEED_001 = [
    Case("001-add-aggregate", T0, tvf("a, sum(b), max(c), count(c)"), "PARTIAL", "aggregate.added"),
    Case("001-delete-aggregate", T0, tvf("a, max(c)"), "FULL", "aggregate.deleted"),
    Case("001-add-and-delete-aggregates", T0, tvf("a, max(c), count(c)"), "PARTIAL", "aggregate.added"),
    Case("001-modify-aggregate", T0, tvf("a, sum(b), min(c)"), "PARTIAL", "aggregate.modified"),
    Case("001-reorder-aggregates", T0, tvf("a, max(c), sum(b)"), "FULL", "aggregate.reordered"),
    Case("001-field-calculation-via-view", T0,
         "CREATE TEMPORARY VIEW MyView AS SELECT a, b, substring(c, 1, 5) AS c, ts FROM MyTable;\n"
         + tvf("a, sum(b), max(c)", source="MyView"), "PARTIAL", "aggregate.modified"),
    Case("001-add-window-end", T_START, tvf("a, sum(b), max(c), window_start, window_end"), "FULL",
         "window-attribute-output"),
    Case("001-delete-window-start", T_START, tvf("a, sum(b), max(c)"), "FULL", "window-attribute-output"),
    Case("001-add-window-time", T0, tvf("a, sum(b), max(c), window_time"), "FULL", "window-attribute-output"),
    Case("001-no-aggregates-before-or-after", tvf("a, b", group="a, b, window_end, window_start"),
         tvf("a, b, window_start", group="a, b, window_end, window_start"), "FULL", "aggregate.none"),
    Case("001-window-keys-reordered", tvf("a, sum(b), max(c)", group="a, c, window_end, window_start"),
         tvf("a, sum(b), max(c)", group="a, window_end, c, window_start"), "FULL", "group-key.window-moved"),
    Case("001-window-type-to-hop", T_START,
         "SELECT a, sum(b), max(c),\n  hop_start(ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) AS window_start\n"
         "FROM MyTable\nGROUP BY a, hop(ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE);",
         "INCOMPATIBLE", "window.type"),
    Case("001-window-size-tvf", T0, tvf("a, sum(b), max(c)", size="INTERVAL '2' MINUTE"), "INCOMPATIBLE",
         "window.size"),
    Case("001-window-size-example", T_START,
         "SELECT a, sum(b), max(c),\n  tumble_start(ts, INTERVAL '2' MINUTE) AS window_start\n"
         "FROM MyTable\nGROUP BY a, tumble(ts, INTERVAL '2' MINUTE);", "INCOMPATIBLE", "window.size"),
    Case("001-time-attribute-example", T_START,
         "SELECT a, sum(b), max(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start\n"
         "FROM MyTable\nGROUP BY a, tumble(proctime, INTERVAL '1' MINUTE);", "INCOMPATIBLE",
         "window.time-attribute"),
    Case("001-add-group-key-example",
         "SELECT a, sum(b), max(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start\n"
         "FROM MyTable\nGROUP BY a, tumble(ts, INTERVAL '1' MINUTE);",
         "SELECT a, sum(b), max(c),\n  tumble_start(ts, INTERVAL '1' MINUTE) AS window_start\n"
         "FROM MyTable\nGROUP BY a, d, tumble(ts, INTERVAL '1' MINUTE);", "INCOMPATIBLE", "group-key.changed"),
    Case("001-delete-group-key", tvf("a, sum(b)", group="a, d, window_start, window_end"), tvf("a, sum(b)"),
         "INCOMPATIBLE", "group-key.changed"),
    Case("001-reorder-non-window-keys", tvf("a, sum(b), max(c)", group="a, c, window_end, window_start"),
         tvf("a, sum(b), max(c)", group="c, a, window_end, window_start"), "INCOMPATIBLE",
         "group-key.reordered"),
    Case("001-delete-distinct-aggregate", T_DISTINCT, T_DISTINCT.replace("count(DISTINCT b), ", ""),
         "INCOMPATIBLE", "aggregate.distinct-changed"),
    Case("001-modify-distinct-aggregate", tvf("a, sum(b), count(DISTINCT c)"),
         tvf("a, sum(b), count(DISTINCT b)"), "INCOMPATIBLE", "aggregate.distinct-changed"),
    Case("001-delete-all-aggregates", T_DISTINCT,
         "SELECT a, tumble_start(ts, INTERVAL '1' MINUTE) AS window_start\nFROM MyTable\n"
         "GROUP BY a, tumble(ts, INTERVAL '1' MINUTE);", "INCOMPATIBLE", "aggregate.all-deleted"),
    Case("001-add-aggregate-to-none", tvf("a, b", group="a, b, window_end, window_start"),
         tvf("a, b, count(a)", group="a, b, window_end, window_start"), "INCOMPATIBLE",
         "aggregate.added-to-none"),
    Case("001-only-one-aggregate-modified",
         "INSERT INTO MySink SELECT a, sum(b)\nFROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' SECOND))\n"
         "GROUP BY a, window_start, window_end;",
         "CREATE TEMPORARY VIEW MyView AS SELECT a, b + 1 AS b, ts FROM MyTable;\n"
         "INSERT INTO MySink SELECT a, sum(b)\nFROM TABLE(TUMBLE(TABLE MyView, DESCRIPTOR(ts), INTERVAL '1' SECOND))\n"
         "GROUP BY a, window_start, window_end;", "INCOMPATIBLE", "aggregate.only-one-modified"),
    Case("001-aggregates-entirely-different",
         "INSERT INTO MySink SELECT a, sum(b)\nFROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' SECOND))\n"
         "GROUP BY a, c, window_start, window_end;",
         "INSERT INTO MySink SELECT a, min(b)\nFROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' SECOND))\n"
         "GROUP BY a, c, window_start, window_end;", "INCOMPATIBLE", "aggregate.only-one-modified"),
    Case("001-add-field-calculation", T_SUB, T_CALC, "INCOMPATIBLE", "field-calculation.added-or-removed"),
    Case("001-delete-field-calculation", T_CALC, T_SUB, "INCOMPATIBLE", "field-calculation.added-or-removed"),
    Case("001-window-start-and-end-in-group-by",
         "SELECT a, sum(b), max(c), window_start\nFROM (SELECT a, b, c, window_start\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\nGROUP BY a, window_start;",
         T_SUB, "INCOMPATIBLE", "group-key.window-fields"),
    Case("001-add-grouping-sets", T_SUB, T_GSETS, "INCOMPATIBLE", "grouping-sets.added-or-removed"),
    Case("001-delete-rollup", tvf("a, sum(b)", group="window_start, window_end, ROLLUP (a)"),
         tvf("a, sum(b)"), "INCOMPATIBLE", "grouping-sets.added-or-removed"),
    Case("001-field-calculation-before-and-after", T_CALC, T_CALC.replace("max(c)", "max(c), min(c)"),
         "UNKNOWN", "field-calculation.present"),
    Case("001-add-window-filter", T_SUB,
         "SELECT a, sum(b), max(c), window_start, window_end\n"
         "FROM (SELECT a, b, c, window_start, window_end\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\n"
         "      WHERE window_start >= TIMESTAMP '2024-04-15 08:06:00.000')\n"
         "GROUP BY a, window_start, window_end;", "UNKNOWN", "window-filter"),
    Case("001-add-udtf",
         "SELECT a, sum(b), length(c), window_start, window_end\n"
         "FROM (SELECT a, b, c, window_start, window_end\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
         "GROUP BY a, c, window_start, window_end;",
         "SELECT a, sum(b), length(c), window_start, window_end, c1, c2\n"
         "FROM (SELECT a, b, c, window_start, window_end, c1, c2\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)),\n"
         "           LATERAL TABLE(split(c)) AS T(c1, c2))\n"
         "GROUP BY a, c, window_start, window_end, c1, c2;", "UNKNOWN", "udtf"),
    Case("001-add-python-udaf",
         "SELECT a, sum(b), max(c), window_start\n"
         "FROM (SELECT a, b, c, window_start\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
         "GROUP BY a, window_start;",
         "SELECT a, sum(b), c, window_start\n"
         "FROM (SELECT a, b, weighted_avg(c) AS c, window_start\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\n"
         "      GROUP BY a, b, window_start)\n"
         "GROUP BY a, c, window_start;", "UNKNOWN", "udaf"),
    Case("001-add-aggregate-on-window-start", T_SUB,
         "SELECT a, sum(b), max(c), MAX(window_start) AS ag, window_end\n"
         "FROM (SELECT a, b, c, window_start, window_end\n"
         "      FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))\n"
         "GROUP BY (a, window_start, window_end);", "UNKNOWN", "aggregate-on-window-field"),
    Case("001-grouping-sets-before-and-after", T_GSETS, T_GSETS.replace("max(c)", "max(c), min(c)"),
         "UNKNOWN", "grouping-sets.present"),
]

# ----------------------------------------------------------------------------- seed 002


def topn(outer: str = "a, b, c, window_start", partition: str = "b, window_start, window_end",
         order: str = "c", inner_select: str = "a, sum(b) AS b, max(c) AS c, window_start, window_end",
         group: str = "a, window_start, window_end", where: str = "rk < 3",
         size: str = "INTERVAL '1' MINUTE") -> str:
    return (f"SELECT {outer} FROM (\nSELECT *,\nROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY {order}) AS rk\n"
            f"FROM (\nSELECT {inner_select}\nFROM TABLE(tumble(TABLE MyTable, DESCRIPTOR(ts), {size}))\n"
            f"GROUP BY {group}\n)\n) WHERE {where};")


N0 = topn()
SEED_002 = [
    Case("002-add-window-end-output", N0, topn(outer="a, b, c, window_start, window_end"), "FULL", "output.window"),
    Case("002-include-rank", N0, topn(outer="a, b, c, window_start, rk"), "FULL", "output.rank"),
    Case("002-reorder-partition-keys", topn(partition="a, b, window_start, window_end", group="a, b, window_start, window_end"),
         topn(partition="b, a, window_start, window_end", group="a, b, window_start, window_end"), "FULL",
         "partition-key.reordered"),
    Case("002-window-size", N0, topn(size="INTERVAL '2' MINUTE"), "INCOMPATIBLE", "window.size"),
    Case("002-add-group-key", N0, topn(group="a, d, window_start, window_end"), "INCOMPATIBLE", "group-key.changed"),
    Case("002-add-aggregate-field", N0,
         topn(outer="a, b, c, d, window_start",
              inner_select="a, sum(b) AS b, max(c) AS c, min(d) AS d, window_start, window_end"),
         "INCOMPATIBLE", "aggregate.changed"),
    Case("002-add-partition-key", N0, topn(partition="a, b, window_start, window_end"), "INCOMPATIBLE",
         "partition-key.changed"),
    Case("002-change-order-by", N0, topn(order="c DESC"), "INCOMPATIBLE", "order-by.changed"),
    Case("002-change-n", N0, topn(where="rk < 5"), "INCOMPATIBLE", "n.changed"),
    Case("002-reorder-window-keys", topn(group="a, b, window_start, window_end"),
         topn(group="a, b, window_end, window_start"), "INCOMPATIBLE", "group-key.window-moved"),
    Case("002-reorder-non-window-keys", topn(group="a, b, window_start, window_end"),
         topn(group="b, a, window_start, window_end"), "INCOMPATIBLE", "group-key.reordered"),
    Case("002-remove-top-n", N0,
         "SELECT a, sum(b) AS b, max(c) AS c, window_start, window_end\n"
         "FROM TABLE(tumble(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\nGROUP BY a, window_start, window_end;",
         "INCOMPATIBLE", "added-or-removed"),
]

ALL = SEED_000 + SEED_001 + SEED_002
