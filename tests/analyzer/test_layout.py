"""The slot layout: where each aggregate's state lives, and which changes the recorded layout can take."""

from __future__ import annotations

import pytest

from stategate.analyzer import Report, SQLModelError, Verdict, build, compare_models
from stategate.analyzer.report import Carried
from stategate.analyzer.judgement import Deployed, judge
from stategate.analyzer.aggregates import (ALL_ARRIVED, ALL_ORDERED, ARRIVAL_ORDER, COUNTED, EXACT_BY_ORDER,
                                           EXACT_SQUARES, EXACT_SUM, FIRST_ARRIVED, FIRST_ORDERED,
                                           FLOATING_BY_ORDER, INTEGER_BY_ORDER, INTEGER_VALUE, LAST_ARRIVED,
                                           LAST_ORDERED, Pool)
from stategate.analyzer.families import Family
from stategate.analyzer.layout import (
    GENERIC, LAYOUT_V1, JobLayout, NoRoom, Shape, plan,
)
from stategate.analyzer.signature import state_signature

DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,\n"
       "  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = '{connector}');\n")


def job(aggregates: str, settings: str = "", connector: str = "kafka") -> str:
    """A TUMBLE job with ``aggregates``; over a Kafka topic, whose state is not re-seeded, so its
    layout keeps headroom (windows over files re-seed instead: :mod:`analyzer.reseed`)."""
    return (settings + DDL.format(connector=connector) + f"SELECT item, window_start, {aggregates}\n"
            "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
            "GROUP BY item, window_start, window_end;")


def deployed(sql: str) -> dict:
    model = build(sql)
    return state_signature(model, plan(model))


def judged(old: str, new: str, signature: dict) -> Report:
    """The judgement of ``new`` against ``old`` deployed with the state layout ``signature``."""
    report = judge(build(new), Deployed(build(old), signature)).report
    assert report is not None
    return report


def slots(sql: str, signature: dict | None = None, watermark: int | None = None) -> dict[str, int]:
    layout = plan(build(sql), JobLayout.from_signature(signature) if signature else None, {"select#1": watermark})
    return dict(layout.pipelines["select#1"][0].plain.assigned)


def test_a_first_deploy_shapes_a_slot_per_aggregate_and_leaves_generic_free_slots() -> None:
    signature = deployed(job("SUM(price), MAX(bidtime), COUNT(*), AVG(CAST(price AS DOUBLE))"))
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
    assert pool["assigned"] == {"SUM(Bid.price)": 0, "MAX(Bid.bidtime)": 1, "COUNT(*)": 2,
                                "AVG(CAST(Bid.price AS DOUBLE))": 3}
    assert pool["shapes"] == ["SUM:m2p10", "MAX:t0p18", "COUNT", "AVG:d", str(GENERIC), str(GENERIC)]
    assert pool["width"] == 6


def test_an_argument_of_unknown_type_gets_a_generic_slot() -> None:
    signature = deployed(job("SUM(price), MAX(undeclared_fn(price))"))
    assert signature["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]["shapes"] == [
        "SUM:m2p10", *[str(GENERIC)] * 3]


def test_an_exact_slot_keeps_the_type_of_its_argument_where_every_engine_agrees_on_it() -> None:
    """As Spark's own buffers: a SUM, MIN or MAX takes its argument in its own type (Spark's sum
    keeps 10 digits more), DECIMAL arithmetic's as Flink and Spark both type it (``price / 3`` a
    DECIMAL(21, 13), ``price * price`` a DECIMAL(21, 4)), a value that is one of its operands' (a
    CASE's, a COALESCE's: every whole digit and place of any), ABS's of its operand's, FLOOR's at
    scale 0, and an integer's in a long. Where the engines part (past 38 digits a COALESCE keeps
    its scale on Spark, its whole digits on Flink), the slot keeps 18 places in 38 digits, as it did
    before shapes had scales; an AVG and a STDDEV keep their argument's scale in 38 digits, as
    Flink's AVG sums it (a DECIMAL(38, 20)'s 20 places, which 18 rounded)."""
    sql = job("SUM(price), MAX(CAST(price AS DECIMAL(12, 4))), MIN(CHAR_LENGTH(item)), SUM(price / 3), AVG(price), "
              "SUM(CAST(price AS DECIMAL(32, 2))), MIN(CAST(price AS BIGINT)), STDDEV_POP(price), "
              "MAX(price * price), SUM(ABS(price)), MAX(CASE WHEN item = 'a' THEN price ELSE 0 END), "
              "SUM(COALESCE(price, CAST(1 AS DECIMAL(5, 3)))), MIN(FLOOR(price)), "
              "SUM(COALESCE(CAST(price AS DECIMAL(38, 0)), price)), AVG(CAST(price AS DECIMAL(38, 20)))")
    shapes = deployed(sql)["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]["shapes"]
    assert shapes[:15] == ["SUM:m2p10", "MAX:m4p12", "MIN:i", "SUM:m13p21", "AVG:m2", "SUM:m2p32", "MIN:i",
                           "STDDEV_POP:m2", "MAX:m4p21", "SUM:m2p10", "MAX:m2p12", "SUM:m3p11", "MIN:m0p9", "SUM:m",
                           "AVG:m20"]
    parsed = [Shape.parse(s) for s in shapes[:8]]
    assert [s.sql_type(EXACT_SUM) for s in parsed if s.family is Family.EXACT] == [
        "decimal(10,2)", "decimal(12,4)", "decimal(21,13)", "decimal(38,2)", "decimal(32,2)", "decimal(38,2)"]
    assert Shape.parse("AVG:m20").sql_type(EXACT_SUM) == "decimal(38,20)"
    assert Shape.parse("AVG:m").sql_type(EXACT_SUM) == "decimal(38,18)", "as slots recorded before keep it"
    assert parsed[2].fields(Pool.PLAIN) == (INTEGER_VALUE,) and parsed[2].sql_type(INTEGER_VALUE) == "bigint"
    assert parsed[7].sql_type(EXACT_SQUARES) == "decimal(38,4)"


def test_a_slot_recorded_in_38_digits_holds_an_aggregate_kept_narrower_now() -> None:
    """Slots recorded before state rows were kept at Spark's width have no precision: 38 digits,
    which hold a narrower aggregate of their shape; a narrower slot never holds a wider one."""
    recorded, now = Shape.parse("MAX:m2"), Shape.parse("MAX:m2p10")
    assert recorded.sql_type(EXACT_SUM) == "decimal(38,2)" and str(now) == "MAX:m2p10"
    assert recorded.holds(now) and now.holds(now) and not now.holds(recorded)
    assert not Shape.parse("MAX:m2p12").holds(Shape.parse("MAX:m3p12"))
    # An integer's slot holds a long; a slot recorded before keeps integers as exact numbers.
    assert Shape.parse("SUM:m0").holds(Shape.parse("SUM:i")) and not Shape.parse("SUM:m0p10").holds(Shape("SUM", Family.INTEGER))
    assert Shape("SUM", Family.INTEGER).fits_generic(Pool.PLAIN)
    assert GENERIC.kept_family(Family.INTEGER) is Family.EXACT and recorded.kept_family(Family.INTEGER) is Family.EXACT
    assert Shape.parse("MAX:i").kept_family(Family.INTEGER) is Family.INTEGER
    signature = deployed(job("SUM(price), MAX(price)", "SET 'stategate.state.slots' = '3';\n"))
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
    pool["shapes"] = ["SUM:m2", "MAX:m2", "MIN:m2"]  # as recorded before
    assert slots(job("SUM(price), MAX(price), MIN(price)"), signature) == {
        "SUM(Bid.price)": 0, "MAX(Bid.price)": 1, "MIN(Bid.price)": 2}


def test_reordering_keeps_every_slot_and_adding_takes_a_free_one() -> None:
    signature = deployed(job("SUM(price), MAX(price)"))
    assert slots(job("MAX(price), SUM(price)"), signature) == {"MAX(Bid.price)": 1, "SUM(Bid.price)": 0}
    assert slots(job("MIN(price), SUM(price), MAX(price)"), signature)["MIN(Bid.price)"] == 2


def test_a_retired_slot_is_reused_only_once_no_open_window_can_hold_its_values() -> None:
    signature = deployed(job("SUM(price), MAX(price), MIN(price), COUNT(item)"))  # width 6
    retired_at = 1_000_000
    dropped = state_signature(build(job("SUM(price)")), plan(build(job("SUM(price)")),
                                                           JobLayout.from_signature(signature),
                                                           {"select#1": retired_at}))
    pool = dropped["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
    # The last window open at the retirement ends within delay (1 s) + size (10 min) of it.
    assert {r["slot"]: r["reusable_from_ms"] for r in pool["retired"]} == {
        1: retired_at + 1000 + 600_000, 2: retired_at + 1000 + 600_000, 3: retired_at + 1000 + 600_000}
    wide = job("SUM(price), AVG(price), COUNT(item), MAX(price), MIN(price), MIN(bidtime)")
    with pytest.raises(NoRoom, match="5 plain aggregate"):
        slots(wide, dropped, watermark=retired_at + 601_000 - 1)
    reused = slots(wide, dropped, watermark=retired_at + 601_000)
    # Each retired slot takes an aggregate of its own shape; the rest take the generic slots.
    assert reused == {"SUM(Bid.price)": 0, "MAX(Bid.price)": 1, "MIN(Bid.price)": 2, "COUNT(Bid.item)": 3,
                      "AVG(Bid.price)": 4, "MIN(Bid.bidtime)": 5}


def test_a_count_of_every_row_is_the_row_count_and_its_slot_is_never_reused() -> None:
    """A fresh layout keeps an unfiltered COUNT(*) in the row count every layout has, so a state
    row holds no second count. Dropped, its slot goes on counting rows: nothing added later starts
    there, not even COUNT(*) again, which must start from zero in the windows already open."""
    signature = deployed(job("SUM(price), COUNT(*)", "SET 'stategate.state.slots' = '3';\n"))
    stage = signature["pipelines"]["select#1"]["stages"][0]["slots"]
    assert stage["counted"] == 1 and stage["plain"]["assigned"] == {"SUM(Bid.price)": 0, "COUNT(*)": 1}
    assert JobLayout.from_signature(signature).pipelines["select#1"][0].counts_rows
    freed = {"select#1": 10**12}  # every window open at a retirement long closed
    dropped = state_signature(build(job("SUM(price)")), plan(build(job("SUM(price)")),
                                                           JobLayout.from_signature(signature), freed))
    again = plan(build(job("SUM(price), COUNT(*)")), JobLayout.from_signature(dropped), freed).pipelines["select#1"][0]
    assert dict(again.plain.assigned)["COUNT(*)"] == 2 and again.counted == 1 and not again.counts_rows
    with pytest.raises(NoRoom, match="only 1 of 3 plain slots are free"):
        plan(build(job("SUM(price), COUNT(*), COUNT(item)")), JobLayout.from_signature(dropped), freed)
    assert deployed(job("SUM(price), COUNT(1)"))["pipelines"]["select#1"]["stages"][0]["slots"]["counted"] == 1
    # A count of some rows, or of values, is not the row count.
    for other in ("COUNT(*) FILTER (WHERE price > 1)", "COUNT(item)", "COUNT(DISTINCT item)"):
        assert "counted" not in deployed(job(f"SUM(price), {other}"))["pipelines"]["select#1"]["stages"][0]["slots"]


def test_a_free_shaped_slot_takes_only_an_aggregate_of_its_shape() -> None:
    signature = deployed(job("SUM(price), MAX(price)", "SET 'stategate.state.slots' = '2';\n"))
    dropped = state_signature(build(job("SUM(price)")), plan(build(job("SUM(price)")),
                                                           JobLayout.from_signature(signature), {"select#1": 0}))
    freed = {"select#1": 10**9}
    assert plan(build(job("SUM(price), MAX(price)")), JobLayout.from_signature(dropped), freed) \
        .pipelines["select#1"][0].plain.assigned == (("SUM(Bid.price)", 0), ("MAX(Bid.price)", 1))
    with pytest.raises(NoRoom, match=r"only 1 of 2 plain slots are free .*none of them fits MIN\(Bid.bidtime\).*"
                                     r"free: MAX:m2p10"):
        plan(build(job("SUM(price), MIN(bidtime)")), JobLayout.from_signature(dropped), freed)


def test_a_change_that_does_not_fit_is_incompatible_before_deploy() -> None:
    old = job("SUM(price)", "SET 'stategate.state.slots' = '2';\n")
    new = job("SUM(price), MAX(price), MIN(price)", "SET 'stategate.state.slots' = '2';\n")
    report = judged(old, new, deployed(old))
    assert report.verdict is Verdict.INCOMPATIBLE
    finding = next(f for f in report.findings if f.rule == "stategate.layout.no-room")
    assert "2 plain aggregate(s) added" in finding.message and "only 1 of 2" in finding.message
    # Without the deployed layout the same change is the seeds' PARTIAL.
    assert compare_models(build(old), build(new)).verdict is Verdict.PARTIAL


def test_a_decimal_of_more_places_than_a_generic_slot_keeps_is_incompatible_before_deploy() -> None:
    """A generic headroom slot keeps exact values at 18 places: an added SUM or AVG of a DECIMAL of
    more would have its values rounded, and the job refuses it as it starts. The gate says so
    before the redeploy changes anything (it said PARTIAL, and the job then refused to start); one
    of 18 places takes the free slot."""
    old = job("SUM(price)")
    report = judged(old, job("SUM(price), SUM(CAST(price AS DECIMAL(38, 20)))"), deployed(old))
    assert report.verdict is Verdict.INCOMPATIBLE
    finding = next(f for f in report.findings if f.rule == "stategate.layout.no-room")
    assert "none of them fits SUM(CAST(Bid.price AS DECIMAL(38, 20)))" in finding.message
    assert "a DECIMAL of more than 18 places (free: *, *)" in finding.message
    assert judged(old, job("SUM(price), AVG(CAST(price AS DECIMAL(38, 18)))"), deployed(old)).verdict is Verdict.PARTIAL


def test_a_distinct_aggregate_needs_a_distinct_slot() -> None:
    old = job("SUM(price)")
    new = job("SUM(price), COUNT(DISTINCT item)")
    report = judged(old, new, deployed(old))
    assert "stategate.layout.no-room" in {f.rule for f in report.findings}


def text_slots(sql: str, signature: dict | None = None) -> dict[str, int]:
    layout = plan(build(sql), JobLayout.from_signature(signature) if signature else None)
    return dict(layout.pipelines["select#1"][0].text.assigned)


def test_min_and_max_of_text_live_in_text_slots_told_from_the_declared_types() -> None:
    sql = job("MAX(item), MIN(UPPER(item)), MAX(CAST(price AS STRING)), MIN(REGEXP_EXTRACT(item, 'a+')), "
              "MAX(price), MIN(bidtime)")
    signature = deployed(sql)
    pools = signature["pipelines"]["select#1"]["stages"][0]["slots"]
    assert pools["text"]["assigned"] == {"MAX(Bid.item)": 0, "MIN(UPPER(Bid.item))": 1,
                                         "MAX(CAST(Bid.price AS TEXT))": 2,
                                         "MIN(REGEXP_EXTRACT(Bid.item, 'a+'))": 3}
    assert pools["text"]["width"] == 6
    assert pools["plain"]["assigned"] == {"MAX(Bid.price)": 0, "MIN(Bid.bidtime)": 1}


def test_a_job_without_text_aggregates_has_no_text_slots_unless_reserved() -> None:
    old = job("SUM(price)")
    assert deployed(old)["pipelines"]["select#1"]["stages"][0]["slots"]["text"]["width"] == 0
    report = judged(old, job("SUM(price), MAX(item)"), deployed(old))
    finding = next(f for f in report.findings if f.rule == "stategate.layout.no-room")
    assert report.verdict is Verdict.INCOMPATIBLE and "1 text aggregate(s) added" in finding.message
    reserved = job("SUM(price)", "SET 'stategate.state.text-slots' = '1';\n")
    new = job("SUM(price), MAX(item)", "SET 'stategate.state.text-slots' = '1';\n")
    assert judged(reserved, new, deployed(reserved)).verdict is Verdict.PARTIAL
    assert text_slots(new, deployed(reserved)) == {"MAX(Bid.item)": 0}


@pytest.mark.parametrize("layout", [LAYOUT_V1, "stategate-slots-v2", "stategate-slots-v3"])
def test_state_of_an_older_layout_is_refused_by_name(layout: str) -> None:
    sql = job("SUM(price)")
    report = judged(sql, sql, {"layout": layout, "pipelines": {}})
    assert report.verdict is Verdict.INCOMPATIBLE
    finding = next(f for f in report.findings if f.rule == "stategate.layout.old")
    assert layout in finding.message and "archive the checkpoint" in finding.message


def test_a_changed_width_setting_applies_after_the_state_is_cleared() -> None:
    old, new = job("SUM(price)"), job("SUM(price)", "SET 'stategate.state.slots' = '12';\n")
    report = judged(old, new, deployed(old))
    assert report.verdict is Verdict.FULL
    assert "stategate.setting.layout" in {f.rule for f in report.findings}
    assert slots(new, deployed(old)) == {"SUM(Bid.price)": 0}


def test_a_bad_width_is_a_located_error() -> None:
    with pytest.raises(SQLModelError, match="stategate.state.slots' must be a whole number"):
        plan(build(job("SUM(price)", "SET 'stategate.state.slots' = 'many';\n")))


def test_a_spread_is_shaped_by_what_flink_computes_it_in() -> None:
    """A STDDEV or VARIANCE of a DECIMAL keeps its scale; of an integer, DOUBLE (as Flink computes
    it); VAR_SAMP and VARIANCE are one aggregate."""
    signature = deployed(job("STDDEV_POP(price), VAR_SAMP(CHAR_LENGTH(item)), VARIANCE(CHAR_LENGTH(item))"))
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
    assert pool["shapes"][:2] == ["STDDEV_POP:m2", "VARIANCE:d"]
    assert pool["assigned"] == {"STDDEV_POP(Bid.price)": 0, "VARIANCE(LENGTH(Bid.item))": 1}
    assert Shape.parse("STDDEV_POP:m2").fields(Pool.PLAIN) == (COUNTED, EXACT_SUM, EXACT_SQUARES)


def test_a_spread_added_later_never_takes_a_generic_slot() -> None:
    """Generic slots keep the fields of the releases that made them: a sum of squares is not one."""
    old = job("SUM(price)")
    signature = deployed(old)
    report = judged(old, job("SUM(price), STDDEV_POP(price)"), signature)
    assert report.verdict is Verdict.INCOMPATIBLE
    assert "stategate.layout.no-room" in {f.rule for f in report.findings}
    assert "none of them fits STDDEV_POP(Bid.price)" in report.to_text()
    assert judged(old, job("SUM(price), MAX(price)"), signature).verdict is Verdict.PARTIAL


def test_the_report_counts_what_a_restart_carries_and_where_an_added_aggregate_starts_from_zero() -> None:
    old = job("SUM(price)")
    carried = (Carried("select#1", 12_402, 17),)
    partial = judge(build(job("SUM(price), MAX(price)")), Deployed(build(old), deployed(old), carried=carried)).report
    assert partial is not None and partial.verdict is Verdict.PARTIAL
    text = partial.to_text()
    assert "select#1: 12,402 state row(s) (one per key and open window, or slice of one) at micro-batch 17" in text
    assert "MAX(Bid.price) start(s) from zero in each of those 12,402 row(s)" in text
    assert partial.to_dict()["carried"] == [{"pipeline": "select#1", "state_rows": 12_402, "batch": 17}]
    assert "12,402 row(s)" in partial.to_markdown()
    resized = job("SUM(price)").replace("'10' MINUTES", "'15' MINUTES")
    cleared = judge(build(resized), Deployed(build(old), deployed(old), carried=carried)).report
    assert cleared is not None and cleared.verdict is Verdict.INCOMPATIBLE and not cleared.carried


def test_arrival_ordered_aggregates_take_text_slots_of_their_own_shape() -> None:
    """FIRST_VALUE, LAST_VALUE and LISTAGG keep values with their arrival, in text slots shaped
    for them: FIRST_VALUE of a DECIMAL(10, 2) keeps its arrival as one number and the value in its
    own type; one added later finds no generic slot to take, and the report names what generic
    slots cannot hold. Reordered, they restart FULL; a MIN or MAX of text still takes a generic text
    slot."""
    old = job("SUM(price), FIRST_VALUE(price), LISTAGG(item, ';')")
    signature = deployed(old)
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["text"]
    assert pool["shapes"] == ["FIRST_VALUE:m2p10", "LISTAGG:s", "*", "*"]
    assert Shape.parse(pool["shapes"][0]).fields(Pool.TEXT) == (ARRIVAL_ORDER, EXACT_BY_ORDER)
    assert Shape.parse(pool["shapes"][0]).sql_type(EXACT_BY_ORDER) == "decimal(10,2)"
    assert pool["assigned"] == {"FIRST_VALUE(Bid.price)": 0, "LISTAGG(Bid.item, ';')": 1}
    assert judged(old, job("LISTAGG(item, ';'), SUM(price), FIRST_VALUE(price)"), signature).verdict is Verdict.FULL
    added = judged(old, job("SUM(price), FIRST_VALUE(price), LISTAGG(item, ';'), LAST_VALUE(price)"), signature)
    assert added.verdict is Verdict.INCOMPATIBLE
    assert "none of them fits LAST_VALUE(Bid.price)" in added.to_text()
    assert ("(STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP, FIRST_VALUE, LAST_VALUE, LISTAGG, ARRAY_AGG, COLLECT, "
            "JSON_ARRAYAGG, JSON_OBJECTAGG, APPROX_COUNT_DISTINCT)") in added.to_text()
    assert judged(old, job("SUM(price), LISTAGG(item, ';'), MAX(item)"), signature).verdict is Verdict.PARTIAL


def test_first_and_last_value_keep_numbers_and_times_in_their_own_type_and_slots_recorded_before_as_text() -> None:
    """FIRST_VALUE and LAST_VALUE of an integer, a floating-point number or a time keep its
    arrival as one number beside the value as a MIN or MAX keeps it; of text, or of a type the
    declared columns do not make certain (a boolean), every value as text with its arrival. A slot
    recorded when they kept every value as text keeps doing so: the same job restarts FULL on it,
    and the engine reads the slot as text whatever the argument's family."""
    sql = job("FIRST_VALUE(bidtime), LAST_VALUE(CAST(price AS INT)), FIRST_VALUE(CAST(price AS DOUBLE)), "
              "LAST_VALUE(price > 1)")
    pool = deployed(sql)["pipelines"]["select#1"]["stages"][0]["slots"]["text"]
    assert pool["shapes"][:4] == ["FIRST_VALUE:t0p18", "LAST_VALUE:i", "FIRST_VALUE:d", "LAST_VALUE"]
    assert [Shape.parse(s).fields(Pool.TEXT) for s in pool["shapes"][:4]] == [
        (ARRIVAL_ORDER, EXACT_BY_ORDER), (ARRIVAL_ORDER, INTEGER_BY_ORDER), (ARRIVAL_ORDER, FLOATING_BY_ORDER),
        (LAST_ORDERED,)]
    old = job("SUM(price), FIRST_VALUE(price)")
    signature = deployed(old)
    recorded = signature["pipelines"]["select#1"]["stages"][0]["slots"]["text"]
    recorded["shapes"][0] = "FIRST_VALUE"  # as a checkpoint of an earlier version recorded it
    assert judged(old, old, signature).verdict is Verdict.FULL
    legacy = Shape.parse("FIRST_VALUE")
    assert legacy.kept_family(Family.EXACT) is Family.TEXT and legacy.fields(Pool.TEXT) == (FIRST_ORDERED,)
    # A layout recorded before arrivals were two longs keeps the value with its arrival as a struct.
    assert legacy.fields(Pool.TEXT, ordered_arrivals=False) == (FIRST_ARRIVED,)
    kept = plan(build(old), JobLayout.from_signature(signature)).pipelines["select#1"][0]
    assert str(kept.text.shapes[0]) == "FIRST_VALUE" and dict(kept.text.assigned)["FIRST_VALUE(Bid.price)"] == 0


def test_last_value_distinct_keeps_every_value_in_a_slot_of_its_own_shape() -> None:
    """LAST_VALUE(DISTINCT) is the value whose first arrival is the latest: it keeps every value
    with its arrival, as LISTAGG does, where LAST_VALUE keeps the latest alone. Its shape says so,
    recorded and read back, so a slot LAST_VALUE left never takes it, nor it one of LAST_VALUE's."""
    old = job("LAST_VALUE(item), LAST_VALUE(DISTINCT item)")
    signature = deployed(old)
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["text"]
    assert pool["shapes"] == ["LAST_VALUE", "LAST_VALUE DISTINCT", "*", "*"]
    shapes = [Shape.parse(shape) for shape in pool["shapes"][:2]]
    assert [str(shape) for shape in shapes] == pool["shapes"][:2] and not shapes[0].holds(shapes[1])
    assert shapes[0].fields(Pool.TEXT) == (LAST_ORDERED,) and shapes[1].fields(Pool.TEXT) == (ALL_ORDERED,)
    # A layout recorded before arrivals were two longs keeps them as a struct.
    assert [shape.fields(Pool.TEXT, ordered_arrivals=False) for shape in shapes] == [(LAST_ARRIVED,), (ALL_ARRIVED,)]
    assert judged(old, job("LAST_VALUE(DISTINCT item), LAST_VALUE(item)"), signature).verdict is Verdict.FULL
    swapped = judged(old, job("LAST_VALUE(DISTINCT price), LAST_VALUE(price)"), signature)
    assert swapped.verdict is Verdict.INCOMPATIBLE and "none of them fits LAST_VALUE(DISTINCT Bid.price)" in swapped.to_text()


def test_a_tumble_job_over_files_leaves_no_headroom_and_re_seeds_what_does_not_fit() -> None:
    """Its state can be carried into a new layout (:mod:`analyzer.reseed`), so no state row pays
    for slots a later aggregate might take: an added aggregate re-seeds, PARTIAL as the rules say."""
    old, new = (job("SUM(price)", connector="filesystem"),
                job("SUM(price), MAX(price), COUNT(*)", connector="filesystem"))
    signature = deployed(old)
    stage = signature["pipelines"]["select#1"]["stages"][0]["slots"]
    assert stage["plain"]["shapes"] == ["SUM:m2p10"] and "seeded" not in stage
    # Lists and sets too: Spark serializes them in its state, and the re-seed reads them back.
    listed = deployed(job("COUNT(DISTINCT item), LISTAGG(item), ARRAY_AGG(price)", connector="filesystem"))
    assert {pool: len(p["shapes"]) for pool, p in listed["pipelines"]["select#1"]["stages"][0]["slots"].items()
            if isinstance(p, dict)} == {"plain": 0, "text": 2, "distinct": 1}
    judgement = judge(build(new), Deployed(build(old), signature))
    assert judgement.report is not None and judgement.report.verdict is Verdict.PARTIAL
    assert [f.rule for f in judgement.report.findings if f.rule.startswith("stategate.layout")] == \
        ["stategate.layout.reseed"]
    assert judgement.layout is not None and judgement.layout.reseeded == {"select#1"}
    seeded = state_signature(build(new), judgement.layout)["pipelines"]["select#1"]["stages"][0]["slots"]
    assert seeded["seeded"] is True and seeded["plain"]["assigned"] == \
        {"SUM(Bid.price)": 0, "MAX(Bid.price)": 1, "COUNT(*)": 2}
    # A change that fits the re-seeded layout restarts on it, as it is.
    again = judge(build(new), Deployed(build(new), state_signature(build(new), judgement.layout)))
    assert again.layout is not None and not again.layout.reseeded and again.layout.pipelines["select#1"][0].seeded


def test_an_added_sketch_re_seeds_and_a_kept_one_keeps_headroom_instead() -> None:
    """APPROX_COUNT_DISTINCT's sketch cannot be read back as values: a re-seed cannot carry one. One
    added has nothing to carry (it starts from zero), so adding it re-seeds, PARTIAL; a pipeline
    that has one keeps headroom slots for a later aggregate, as one that cannot re-seed does."""
    old, new = (job("SUM(price)", connector="filesystem"),
                job("SUM(price), APPROX_COUNT_DISTINCT(item, 0.9)", connector="filesystem"))
    judgement = judge(build(new), Deployed(build(old), deployed(old)))
    assert judgement.report is not None and judgement.report.verdict is Verdict.PARTIAL
    assert judgement.layout is not None and judgement.layout.reseeded == {"select#1"}
    slots = state_signature(build(new), judgement.layout)["pipelines"]["select#1"]["stages"][0]["slots"]
    assert slots["text"]["assigned"] == {"APPROX_COUNT_DISTINCT(Bid.item, 0.9)": 0}
    fresh = deployed(new)["pipelines"]["select#1"]["stages"][0]["slots"]
    assert fresh["plain"]["shapes"] == ["SUM:m2p10", "*", "*"]
    more = job("SUM(price), APPROX_COUNT_DISTINCT(item, 0.9), MAX(price)", connector="filesystem")
    assert judged(new, more, deployed(new)).verdict is Verdict.PARTIAL


@pytest.mark.parametrize(("aggregates", "connector", "why"), [
    ("SUM(price)", "kafka", "only a file source is re-read from where the old version stopped"),
    ("COUNT(DISTINCT item), LISTAGG(item)", "kafka", "only a file source is re-read from where the old version stopped"),
    ("APPROX_COUNT_DISTINCT(item)", "filesystem",
     "APPROX_COUNT_DISTINCT(item) keeps a sketch of its values, which no aggregation merges with new rows"),
])
def test_what_cannot_be_re_seeded_keeps_its_headroom_and_says_why_a_change_does_not_fit(
        aggregates: str, connector: str, why: str) -> None:
    old = job(aggregates, "SET 'stategate.state.slots' = '1';\n", connector)
    new = job(f"{aggregates}, MAX(price), MIN(price)", "SET 'stategate.state.slots' = '1';\n", connector)
    assert len(deployed(job(aggregates, connector=connector))["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
               ["shapes"]) > 1, "generic headroom slots"
    report = judged(old, new, deployed(old))
    assert report.verdict is Verdict.INCOMPATIBLE
    [finding] = [f for f in report.findings if f.rule == "stategate.layout.no-room"]
    assert "its state cannot be re-seeded: " in finding.message and why in finding.message


def test_the_state_key_has_a_grouping_set_column_only_where_the_query_needs_one() -> None:
    """Without GROUPING SETS the column would always be 0; Spark runs no session window keyed by its
    window alone, so a stage without group keys keeps it. A layout recorded before has it."""
    def stage(sql: str) -> dict:
        return deployed(sql)["pipelines"]["select#1"]["stages"][0]["slots"]

    keyed = stage(job("SUM(price)"))
    assert keyed["gs"] is False
    assert "gs" not in stage(job("SUM(price)").replace("GROUP BY item, window_start, window_end",
                                                       "GROUP BY window_start, window_end, ROLLUP (item)"))
    assert "gs" not in stage(job("SUM(price)").replace("SELECT item,", "SELECT").replace("GROUP BY item,", "GROUP BY"))
    del keyed["gs"]
    signature = deployed(job("SUM(price)"))
    signature["pipelines"]["select#1"]["stages"][0]["slots"] = keyed
    later = plan(build(job("SUM(price), MAX(price)")), JobLayout.from_signature(signature), {"select#1": 0})
    assert later.pipelines["select#1"][0].set_keyed


def test_a_cascade_recorded_before_its_upstream_state_kept_every_field_changes_nothing_upstream() -> None:
    """An upstream window recorded without ``whole`` keeps in its state only the fields its
    downstream read: any other set of aggregates there would be another state schema, which Spark
    refuses at the restart. So such a change is INCOMPATIBLE before anything starts, and says why; a
    change downstream that fits is not."""
    def cascade(inner: str, outer: str) -> str:
        return ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,\n"
                "  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND)\n"
                "WITH ('connector' = 'filesystem', 'path' = '/bids', 'format' = 'csv');\n"
                f"CREATE VIEW M AS SELECT item, window_time AS t, {inner}\n"
                "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))\n"
                "GROUP BY item, window_start, window_end, window_time;\n"
                f"SELECT item, window_start, {outer} FROM TABLE(TUMBLE(TABLE M, DESCRIPTOR(t), INTERVAL '20' MINUTES))\n"
                "GROUP BY item, window_start, window_end;")

    old = cascade("SUM(price) AS s, MAX(price) AS m", "SUM(s), MAX(m)")
    recorded = deployed(old)
    stages = recorded["pipelines"]["select#1"]["stages"]
    assert [stage["slots"].pop("whole") for stage in stages] == [True, True]  # as an older stategate recorded it
    retired = judged(old, cascade("SUM(price) AS s", "SUM(s)"), recorded)
    assert retired.verdict is Verdict.INCOMPATIBLE
    [finding] = [f for f in retired.findings if f.rule == "stategate.layout.no-room"]
    assert "the aggregates of the window 1 upstream change" in finding.message
    assert "cannot be re-seeded: its upstream windows' state keeps only the fields" in finding.message
    assert judged(old, cascade("SUM(price) AS s, MAX(price) AS m", "MAX(m), SUM(s)"), recorded).verdict is Verdict.FULL
    assert judged(old, cascade("SUM(price) AS s", "SUM(s)"), deployed(old)).verdict is Verdict.FULL, \
        "recorded with whole upstream state, the same change restarts"


def test_a_spread_of_a_decimal_of_more_than_19_digits_keeps_its_sums_past_the_exact_ones_in_double() -> None:
    """A STDDEV or VARIANCE keeps the squares of a DECIMAL(p, s) at scale 2s, in 2p digits: up to
    16 digits a window's sum of squares holds 10^6 of them at the type's bound (exact numbers,
    ``m``); a wider DECIMAL keeps its values below 10^(16 - s) and their squares beside the others'
    in DOUBLE (``v``: a DECIMAL(38, 18)'s square of 10 passes 38 digits at scale 36, two values of
    6 * 10^19 its 38 digits at scale 18, a DECIMAL(19, 4)'s squares' sum may pass 38). The digits
    are Flink's type of the argument: ``price * qty`` of a DECIMAL(10, 2) and an INT is a
    DECIMAL(21, 2). Past a scale of 19 no square is exact: its sum's field stays a valid decimal.
    Integers stay DOUBLE, DISTINCT keeps its set."""
    layout = plan(build(job("STDDEV_POP(price), VAR_POP(CAST(price AS DECIMAL(19, 4))), "
                            "STDDEV_SAMP(CAST(price AS DECIMAL(38, 18))), VARIANCE(price * CAST(price AS INT)), "
                            "STDDEV_POP(CAST(price AS BIGINT) * 4000000000), VAR_POP(DISTINCT CAST(price AS DECIMAL(30, 10))), "
                            "VAR_SAMP(CAST(price AS DECIMAL(38, 35)))")))
    stage = layout.pipelines["select#1"][0]
    assert [str(s) for s in stage.plain.shapes if s.function not in (None, "COUNT")] == [
        "STDDEV_POP:m2", "VARIANCE_POP:v4", "STDDEV_SAMP:v18", "VARIANCE:v2", "STDDEV_POP:d", "VARIANCE:v35"]
    wide, widest = (s for s in stage.plain.shapes if s.family is Family.WIDE and s.scale in (18, 35))
    assert [(f.stem, wide.sql_type(f)) for f in wide.fields(Pool.PLAIN)] == [
        ("c", "int"), ("x", "decimal(38,18)"), ("d", "double"), ("q", "double"), ("qx", "decimal(38,36)")]
    assert widest.sql_type(EXACT_SQUARES) == "decimal(38,38)"


@pytest.mark.parametrize("recorded", ["m18", "w18"])
@pytest.mark.parametrize("connector, rule, verdict", [("kafka", "stategate.layout.outgrown", Verdict.UNKNOWN),
                                                      ("filesystem", "stategate.layout.reseed", Verdict.FULL)])
def test_a_wide_decimals_spread_in_a_slot_recorded_exact_re_seeds_or_asks_a_human(recorded: str, connector: str,
                                                                                  rule: str, verdict: Verdict) -> None:
    """A slot an earlier release recorded for a STDDEV of a DECIMAL(38, 18) keeps its squares at
    scale 36, which the square of 10 overflows (``m18``), or its values' sum at scale 18, which two
    values of 6 * 10^19 overflow (``w18``). Restarted, the same SQL re-seeds it into a slot that
    keeps such values and squares in DOUBLE where the state can be re-seeded (a file source); where
    it cannot (a Kafka topic), the job would go on losing them: a human decides (clear the state)."""
    sql = job("STDDEV_POP(CAST(price AS DECIMAL(38, 18)))", connector=connector)
    signature = deployed(sql)
    pool = signature["pipelines"]["select#1"]["stages"][0]["slots"]["plain"]
    assert "STDDEV_POP:v18" in pool["shapes"]
    pool["shapes"] = [s.replace(":v18", f":{recorded}") for s in pool["shapes"]]
    report = judged(sql, sql, signature)
    [finding] = [f for f in report.findings if f.rule in ("stategate.layout.outgrown", "stategate.layout.reseed")]
    assert (finding.rule, finding.effect, report.verdict) == (rule, verdict, verdict)
    if verdict is Verdict.UNKNOWN:
        assert "square from 10 up" in finding.message and "only a file source is re-read" in finding.message
    # Recorded as it is now, the same SQL restarts on its slots.
    assert judged(sql, sql, deployed(sql)).verdict is Verdict.FULL
