"""The unsafe-verdict classes an outside mutation suite found, each as a family of shapes.

A FULL or PARTIAL is a promise that the old state is safe to reuse; each class below once broke it
(or, for a no-op rewrite, refused state that was safe). The cases are written per class, not per
example: the same class is tried in several positions a user can write it.
"""

from __future__ import annotations

import pytest

from stategate.analyzer import Verdict, build, compare
from tests.analyzer.seed_cases import legacy, tvf

FULL, PARTIAL, INCOMPATIBLE = Verdict.FULL, Verdict.PARTIAL, Verdict.INCOMPATIBLE
COLUMNS = "a, b, c, ts"


def over(source: str, kind: str) -> str:
    """The same window aggregation over ``source``: a legacy group window or a window TVF."""
    if kind == "legacy":
        return legacy("a, SUM(b) AS s, MAX(c) AS m", source=source)
    return tvf("a, SUM(b) AS s, MAX(c) AS m, window_start", source=source)


def cte(body: str, query: str, name: str = "v") -> str:
    return f"WITH {name} AS ({body}) {query}"


KINDS = ("legacy", "tvf")

# ------------------------------------------------------------------------------------------- WITH
#: (what changes inside the CTE body, the columns it selects instead of a, b, c, ts, the verdict
#: the same change gets when written as a view).
CTE_BODY_CHANGES = [
    ("group key computed", "UPPER(a) AS a, b, c, ts", INCOMPATIBLE),
    ("aggregate input computed", "a, b + 1 AS b, c, ts", PARTIAL),
    ("time attribute to proctime", "a, b, c, PROCTIME() AS ts", INCOMPATIBLE),
    ("columns swapped", "b AS a, a AS b, c, ts", INCOMPATIBLE),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("label, changed, verdict", CTE_BODY_CHANGES, ids=[c[0] for c in CTE_BODY_CHANGES])
def test_a_change_inside_a_cte_is_judged_as_the_same_change_in_a_view(kind, label, changed, verdict) -> None:
    old_cte = cte(f"SELECT {COLUMNS} FROM MyTable", over("v", kind))
    new_cte = cte(f"SELECT {changed} FROM MyTable", over("v", kind))
    as_view = compare(f"CREATE TEMPORARY VIEW v AS SELECT {COLUMNS} FROM MyTable;\n" + over("v", kind),
                      f"CREATE TEMPORARY VIEW v AS SELECT {changed} FROM MyTable;\n" + over("v", kind))
    assert as_view.verdict is verdict, as_view.to_text()
    report = compare(old_cte, new_cte)
    assert report.verdict is verdict, report.to_text()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["top-level", "nested", "inside INSERT", "WITH before INSERT", "in a view",
                                   "in a subquery", "shadowing the table", "column list"])
def test_a_change_reaches_the_verdict_wherever_the_cte_stands(kind, where) -> None:
    def script(columns: str) -> str:
        body = f"SELECT {columns} FROM MyTable"
        if where == "top-level":
            return cte(body, over("v", kind))
        if where == "nested":
            return f"WITH u AS ({body}), v AS (SELECT * FROM u) {over('v', kind)}"
        if where == "inside INSERT":
            return "INSERT INTO S " + cte(body, over("v", kind))
        if where == "WITH before INSERT":
            return f"WITH v AS ({body}) INSERT INTO S {over('v', kind)}"
        if where == "in a view":
            return f"CREATE TEMPORARY VIEW w AS WITH v AS ({body}) SELECT * FROM v;\n" + over("w", kind)
        if where == "in a subquery":  # a window TVF reads a name, so the subquery stands in a view
            return (f"CREATE TEMPORARY VIEW w AS SELECT * FROM (WITH v AS ({body}) SELECT * FROM v) AS q;\n"
                    + over("w", kind))
        if where == "shadowing the table":
            return cte(body.replace("FROM MyTable", "FROM Raw"), over("MyTable", kind), name="MyTable")
        return f"WITH v (a, b, c, ts) AS ({body}) {over('v', kind)}"

    assert compare(script(COLUMNS), script(COLUMNS)).verdict is FULL
    assert compare(script(COLUMNS), script("UPPER(a) AS a, b, c, ts")).verdict is INCOMPATIBLE
    assert compare(script(COLUMNS), script("a, b * 2 AS b, c, ts")).verdict is PARTIAL


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("wrapped", [
    cte("SELECT * FROM MyTable", "{query}"),
    cte(f"SELECT {COLUMNS} FROM MyTable", "{query}"),
    f"WITH u AS (SELECT * FROM MyTable), v AS (SELECT {COLUMNS} FROM u) {{query}}",
    f"WITH v (a, b, c, ts) AS (SELECT {COLUMNS} FROM MyTable) {{query}}",
], ids=["star", "columns", "two deep", "column list"])
def test_wrapping_an_unchanged_query_in_a_no_op_cte_is_full(kind, wrapped) -> None:
    report = compare(over("MyTable", kind), wrapped.format(query=over("v", kind)))
    assert report.verdict is FULL, report.to_text()


def test_a_cte_read_twice_is_one_relation_and_a_change_to_it_is_seen_by_both_reads() -> None:
    query = ("SELECT x.a, SUM(x.b) AS s FROM v x JOIN v y ON x.a = y.a "
             "GROUP BY x.a, TUMBLE(x.ts, INTERVAL '1' MINUTE)")
    old = cte(f"SELECT {COLUMNS} FROM MyTable", query)
    assert compare(old, old).verdict is FULL
    assert compare(old, cte("SELECT a, b, c + 1 AS c, ts FROM MyTable", query)).verdict is not FULL


def test_a_cte_sees_earlier_ones_and_not_itself_and_a_view_sees_none() -> None:
    from stategate.analyzer import SQLModelError, build

    with pytest.raises(SQLModelError, match="twice"):
        build(f"WITH v AS (SELECT * FROM MyTable), v AS (SELECT * FROM MyTable) {over('v', 'tvf')}")
    with pytest.raises(SQLModelError, match="2 columns"):
        build(f"WITH v (a, b) AS (SELECT {COLUMNS} FROM MyTable) {over('v', 'tvf')}")
    # A view's body reads the catalog, not the CTEs of the query that reads the view.
    viewed = build("CREATE TEMPORARY VIEW w AS SELECT * FROM MyTable;\n"
                   + cte("SELECT UPPER(a) AS a, b, c, ts FROM MyTable", over("w", "tvf"), name="MyTable"))
    assert [k.value.key for k in viewed.pipelines[0].aggregate.group_keys][0] == "MyTable.a"


# ------------------------------------------------------------------------------------- Top-N NULLS
def ranked(order: str) -> str:
    inner = tvf("a, SUM(b) AS s, window_start, window_end").rstrip(";")
    return (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
            f"ORDER BY {order}) AS rk FROM ({inner})) WHERE rk <= 3")


@pytest.mark.parametrize("old, new, verdict", [
    ("s DESC", "s DESC NULLS LAST", FULL),  # Flink: NULLs rank last in descending order
    ("s", "s ASC NULLS FIRST", FULL),  # and first in ascending order
    ("s ASC", "s NULLS FIRST", FULL),
    ("s DESC", "s DESC NULLS FIRST", INCOMPATIBLE),
    ("s ASC", "s ASC NULLS LAST", INCOMPATIBLE),
    ("s DESC NULLS FIRST", "s DESC NULLS LAST", INCOMPATIBLE),
    ("s DESC, a", "s DESC, a NULLS LAST", INCOMPATIBLE),
])
def test_the_null_order_of_a_top_n_key_is_part_of_its_ranking(old, new, verdict) -> None:
    report = compare(ranked(old), ranked(new))
    assert report.verdict is verdict, report.to_text()
    assert compare(ranked(new), ranked(old)).verdict is verdict


# ---------------------------------------------------------------- Top-N directly on a window TVF
def direct(outer="a, b, window_start", columns="a, b, c, window_start, window_end",
           partition="window_start, window_end", order="b DESC", size="10", where="", n=3) -> str:
    return (f"SELECT {outer} FROM (SELECT {columns}, ROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY "
            f"{order}) AS rk FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '{size}' MINUTES)) "
            f"{where}) WHERE rk <= {n}")


@pytest.mark.parametrize("edit, verdict", [
    ({"size": "15"}, INCOMPATIBLE),
    ({"n": 5}, INCOMPATIBLE),
    ({"order": "b ASC"}, INCOMPATIBLE),
    ({"order": "c DESC"}, INCOMPATIBLE),
    ({"order": "b DESC NULLS FIRST"}, INCOMPATIBLE),
    ({"order": "b DESC NULLS LAST"}, FULL),
    ({"partition": "a, window_start, window_end"}, INCOMPATIBLE),
    ({"columns": "a, b * 2 AS b, c, window_start, window_end"}, INCOMPATIBLE),
    ({"columns": "a, b, window_start, window_end"}, INCOMPATIBLE),
    ({"where": "WHERE c > 0"}, INCOMPATIBLE),
    ({"outer": "a, b, window_start, window_end"}, FULL),
    ({"outer": "a, b, window_start, rk"}, FULL),
], ids=lambda v: str(v))
def test_a_top_n_over_a_window_tvf_is_judged_by_seed_002(edit, verdict) -> None:
    report = compare(direct(), direct(**edit))
    assert report.verdict is verdict, report.to_text()
    assert report.findings and all(f.effect <= verdict for f in report.findings)


def test_reordering_the_partition_keys_of_a_direct_top_n_is_full() -> None:
    old = direct(partition="a, c, window_start, window_end")
    assert compare(old, direct(partition="c, a, window_start, window_end")).verdict is FULL


# ------------------------------------------------------------------ what PARTIAL must name
AGGREGATE_MODIFIERS = [
    ("FIRST_VALUE(c)", "FIRST_VALUE(c) IGNORE NULLS"),
    ("LAST_VALUE(c) IGNORE NULLS", "LAST_VALUE(c) RESPECT NULLS"),
    ("PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY b)", "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY c)"),
    ("PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY b)", "PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY b)"),
    ("ARRAY_AGG(c ORDER BY b)", "ARRAY_AGG(c ORDER BY b DESC)"),
    ("SUM(b) FILTER (WHERE c > 1)", "SUM(b) FILTER (WHERE c > 2)"),
    ("JSON_ARRAYAGG(c)", "JSON_ARRAYAGG(c NULL ON NULL)"),
    ("JSON_OBJECTAGG(KEY a VALUE c)", "JSON_OBJECTAGG(KEY a VALUE c ABSENT ON NULL)"),
    ("JSON_OBJECTAGG(KEY a VALUE c)", "JSON_OBJECTAGG(KEY a VALUE b)"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("old, new", AGGREGATE_MODIFIERS)
def test_a_modifier_of_an_aggregate_is_part_of_its_state(kind, old, new) -> None:
    def script(aggregate: str) -> str:
        select = f"a, SUM(b) AS s, {aggregate} AS x"
        return legacy(select) if kind == "legacy" else tvf(select)

    report = compare(script(old), script(new))
    assert report.verdict is PARTIAL, report.to_text()
    assert report.aggregates.kept == ("SUM(MyTable.b)",)
    assert len(report.aggregates.added) == len(report.aggregates.dropped) == 1
    assert compare(script(old), script(old)).verdict is FULL


@pytest.mark.parametrize("old, new", [
    ("JSON_ARRAYAGG(c)", "JSON_ARRAYAGG(c ABSENT ON NULL)"),
    ("JSON_OBJECTAGG(KEY a VALUE c)", "JSON_OBJECTAGG(a VALUE c NULL ON NULL)"),
    ("ARRAY_AGG(c)", "ARRAY_AGG(c RESPECT NULLS)"),
    ("ARRAY_AGG(DISTINCT c) RESPECT NULLS", "ARRAY_AGG(DISTINCT c)"),
])
def test_an_aggregate_s_default_null_clause_written_out_keeps_its_state(old, new) -> None:
    """JSON_ARRAYAGG skips NULLs unless told NULL ON NULL, JSON_OBJECTAGG and ARRAY_AGG keep them
    unless told ABSENT ON NULL or IGNORE NULLS: writing out the default is the same aggregate."""
    report = compare(tvf(f"a, {old} AS x"), tvf(f"a, {new} AS x"))
    assert report.verdict is FULL, report.to_text()


def test_plain_aggregates_keep_the_identities_checkpoints_recorded() -> None:
    """Identities are state names: a plain call is named as before modifiers were read."""
    report = compare(tvf("a, COUNT(*), COUNT(b), SUM(b), MAX(c), COUNT(DISTINCT c)"),
                     tvf("a, COUNT(*), COUNT(b), SUM(b), MAX(c), COUNT(DISTINCT c)"))
    assert report.aggregates.kept == ("COUNT(*)", "COUNT(MyTable.b)", "SUM(MyTable.b)", "MAX(MyTable.c)",
                                      "COUNT(DISTINCT MyTable.c)")


CASCADE = ("CREATE TEMPORARY VIEW w1 AS SELECT window_start AS ws, window_end AS we, window_time AS rt, a, "
           "SUM(b) AS sb {extra} FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '5' MINUTES)) "
           "GROUP BY a, window_start, window_end, window_time;\n"
           "SELECT a, window_start, SUM(sb) AS total {outer} FROM TABLE(TUMBLE(TABLE w1, DESCRIPTOR(rt), "
           "INTERVAL '10' MINUTES)) GROUP BY a, window_start, window_end;")


@pytest.mark.parametrize("extra, outer, added", [
    (", MIN(c) AS mc", "", ("upstream window: MIN(MyTable.c)",)),
    (", MIN(c) AS mc", ", MAX(mc) AS m", ("MAX(MIN(MyTable.c))", "upstream window: MIN(MyTable.c)")),
    ("", ", COUNT(*) AS n", ("COUNT(*)",)),
])
def test_a_partial_verdict_names_the_added_aggregates_of_every_stage(extra, outer, added) -> None:
    report = compare(CASCADE.format(extra="", outer=""), CASCADE.format(extra=extra, outer=outer))
    assert report.verdict is PARTIAL, report.to_text()
    assert report.aggregates.added == added
    assert "upstream window: SUM(MyTable.b)" in report.aggregates.kept


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("old, new, verdict, rules", [
    ("", "HAVING SUM(b) > 1", FULL, ["stategate.having"]),
    ("HAVING SUM(b) > 1", "HAVING SUM(b) > 2 AND SUM(b) < 100", FULL, ["stategate.having"]),
    ("HAVING SUM(b) > 1", "", FULL, ["stategate.having"]),
    # An aggregate only HAVING reads is state like any other: added, it starts from zero.
    ("", "HAVING COUNT(*) > 1", PARTIAL, ["aggregate.added", "stategate.having"]),
])
def test_having_is_judged_on_emit_and_its_aggregates_as_state(kind, old, new, verdict, rules) -> None:
    """Flink evaluates HAVING on each window's results where it is emitted (a Calc after the window
    aggregate): a changed condition keeps the state; an aggregate it adds is one more aggregate."""
    def script(having: str) -> str:
        if kind == "legacy":
            return legacy("a, SUM(b) AS s", window=f"TUMBLE(ts, INTERVAL '1' MINUTE) {having}")
        return tvf("a, SUM(b) AS s", group=f"a, window_start, window_end {having}")

    report = compare(script(old), script(new))
    assert report.verdict is verdict, report.to_text()
    assert all(any(f.rule.endswith(rule) for f in report.findings) for rule in rules), report.to_text()
    assert compare(script(new), script(new)).verdict is FULL


def test_a_where_over_an_aggregation_s_rows_is_its_having() -> None:
    """``SELECT * FROM (window aggregation) WHERE s > 1`` is Flink's Calc after the window
    aggregate, as a HAVING is: the same condition, judged the same way (it was refused as a filter
    after a window aggregation, and sent to a human)."""
    inner = tvf("a, window_start, window_end, SUM(b) AS s").rstrip(";")
    having = tvf("a, window_start, window_end, SUM(b) AS s", group="a, window_start, window_end HAVING SUM(b) > 1")
    where = f"SELECT * FROM ({inner}) WHERE s > 1;"
    assert [c.key for c in build(where).pipelines[0].aggregate.having] \
        == [c.key for c in build(having).pipelines[0].aggregate.having]
    report = compare(f"SELECT * FROM ({inner}) WHERE s > 1;", f"SELECT * FROM ({inner}) WHERE s > 2;")
    assert report.verdict is FULL and [f.rule for f in report.findings] == ["stategate.having"], report.to_text()


def test_a_select_distinct_over_a_window_tvf_is_its_group_by() -> None:
    """Flink plans ``SELECT DISTINCT a, window_start, window_end`` over a window TVF as a window
    aggregation of no aggregates, grouped by its items: judged as that GROUP BY (it was refused, and
    judged UNKNOWN): every change from it is judged as the same change from the GROUP BY."""
    window = "FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))"
    distinct = f"SELECT DISTINCT a, window_start, window_end {window};"
    grouped = tvf("a, window_start, window_end")
    assert build(distinct).pipelines[0].aggregate.group_keys == build(grouped).pipelines[0].aggregate.group_keys
    assert compare(distinct, grouped).verdict is FULL, compare(distinct, grouped).to_text()
    for new in (tvf("a, window_start, window_end, SUM(b) AS s"), f"SELECT DISTINCT a, c, window_start, window_end {window};",
                f"SELECT DISTINCT a, window_start, window_end {window.replace('1', '2')};"):
        assert compare(distinct, new).findings == compare(grouped, new).findings
        assert compare(distinct, new).verdict is INCOMPATIBLE
