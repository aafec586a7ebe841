"""Joins: each window aggregation in a joined branch is judged by its seed rules, and the join itself
is an operator no rule covers (UNKNOWN, named) unless the query is unchanged.

The jobs have the shapes of Nexmark's q7 (bids joined with the highest price of each tumbling window)
and q8 (persons and auctions, each windowed, joined on the seller and the window)."""

from __future__ import annotations

from stategate.analyzer import Verdict, build, compare

SOURCES = """CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3),
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem', 'path' = 'b', 'format' = 'json');
CREATE TABLE person (id BIGINT, name STRING, dateTime TIMESTAMP(3),
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem', 'path' = 'p', 'format' = 'json');
CREATE TABLE auction (id BIGINT, seller BIGINT, dateTime TIMESTAMP(3),
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem', 'path' = 'a', 'format' = 'json');
"""


def highest_bid(size: str = "10", branch: str = "MAX(price) AS maxprice", alias: str = "dateTime") -> str:
    """q7's shape: every bid whose price is the highest of the tumbling window it ended in."""
    return SOURCES + f"""CREATE TABLE highest (auction BIGINT, price BIGINT, bidder BIGINT, dateTime TIMESTAMP(3))
  WITH ('connector' = 'print');
INSERT INTO highest
SELECT B.auction, B.price, B.bidder, B.dateTime AS {alias}
FROM bid B
JOIN (
  SELECT {branch}, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '{size}' SECOND))
  GROUP BY window_start, window_end
) B1 ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.endtime - INTERVAL '{size}' SECOND AND B1.endtime;"""


def new_users(auction_aggregates: str = "") -> str:
    """q8's shape: persons who opened an auction in the tumbling window they registered in."""
    return SOURCES + f"""CREATE TABLE newcomers (id BIGINT, name STRING, starttime TIMESTAMP(3))
  WITH ('connector' = 'print');
INSERT INTO newcomers
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime{auction_aggregates}
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;"""


def rules(report) -> dict[str, tuple[Verdict, str]]:
    return {f.rule: (f.effect, f.pipeline) for f in report.findings}


def test_a_window_change_inside_a_joined_branch_is_incompatible_beside_the_join() -> None:
    report = compare(highest_bid("10"), highest_bid("60"))
    assert report.verdict is Verdict.INCOMPATIBLE
    found = rules(report)
    assert found["window-tvf.window.size"] == (Verdict.INCOMPATIBLE, "joined window 1")
    assert found["stategate.join"][0] is Verdict.UNKNOWN
    join = next(f for f in report.findings if f.rule == "stategate.join")
    assert "JOIN (SELECT MAX(price) AS maxprice" in join.message  # the join is named


def test_an_aggregate_added_to_a_joined_branch_is_partial_and_the_join_leaves_it_to_a_human() -> None:
    report = compare(highest_bid(), highest_bid(branch="MAX(price) AS maxprice, COUNT(*) AS bids"))
    assert report.verdict is Verdict.UNKNOWN
    branch = [f for f in report.findings if f.pipeline == "joined window 1"]
    assert branch and max(f.effect for f in branch) is Verdict.PARTIAL
    assert "stategate.join" in rules(report)


def test_the_first_aggregate_of_a_joined_side_is_incompatible() -> None:
    report = compare(new_users(), new_users(", COUNT(*) AS auctions"))
    assert report.verdict is Verdict.INCOMPATIBLE
    assert rules(report)["window-tvf.aggregate.added-to-none"] == (Verdict.INCOMPATIBLE, "joined window 1")


def test_a_joined_branch_gaining_its_window_aggregation_is_incompatible() -> None:
    plain = highest_bid().replace(
        "SELECT MAX(price) AS maxprice, window_end AS endtime\n"
        "  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))\n"
        "  GROUP BY window_start, window_end",
        "SELECT price AS maxprice, dateTime AS endtime FROM bid")
    assert build(plain).pipelines[0].joined == ()
    report = compare(plain, highest_bid())
    assert report.verdict is Verdict.INCOMPATIBLE
    assert rules(report)["stategate.aggregation.added-or-removed"][0] is Verdict.INCOMPATIBLE


def test_unchanged_queries_with_joins_are_full() -> None:
    for sql in (highest_bid(), new_users()):
        report = compare(sql, sql)
        assert report.verdict is Verdict.FULL, report.findings


def test_every_window_aggregation_of_a_join_is_in_the_model() -> None:
    q8 = build(new_users()).pipelines[0]
    assert q8.aggregate is not None and q8.aggregate.source_table == "person"
    assert [a.source_table for a in q8.joined] == ["auction"]
    assert len(q8.joins) == 1 and q8.joins[0].startswith("JOIN (SELECT seller")
    q7 = build(highest_bid()).pipelines[0]
    assert q7.aggregate is None and [a.window.shape.size_ms for a in q7.joined] == [10_000]


def test_the_join_kind_is_named_and_a_projection_after_the_join_is_full() -> None:
    q7, q8 = build(highest_bid()).pipelines[0], build(new_users()).pipelines[0]
    assert type(q7.join).__name__ == "IntervalJoin" and (q7.join.bound, q7.join.lower_ms, q7.join.upper_ms) == \
        ("endtime", 10_000, 0)
    assert type(q8.join).__name__ == "WindowJoin" and q8.join.kinds == ("INNER",)

    # The join's inputs and condition are what its state holds; an output alias after it is not.
    assert compare(highest_bid(), highest_bid(alias="bidtime")).verdict is Verdict.FULL
    renamed = new_users().replace("SELECT P.id, P.name, P.starttime", "SELECT P.id AS pid, P.name, P.starttime")
    assert compare(new_users(), renamed).verdict is Verdict.FULL

    left = compare(new_users(), new_users().replace(") P\nJOIN (", ") P\nLEFT JOIN ("))
    assert left.verdict is Verdict.UNKNOWN
    assert "the query's window join (LEFT JOIN (SELECT seller" in next(
        f.message for f in left.findings if f.rule == "stategate.join")
    wider = compare(highest_bid(), highest_bid().replace("AND B1.endtime;", "AND B1.endtime + INTERVAL '1' SECOND;"))
    assert wider.verdict is Verdict.UNKNOWN
    assert "the query's interval join" in next(f.message for f in wider.findings if f.rule == "stategate.join")


def hot_items(maximum: str = "MAX(CountBids.num) AS maxn") -> str:
    """q5's shape: each auction's bids per HOP window, joined with the largest count of its window."""
    counts = """SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end"""
    return SOURCES + f"""SELECT AuctionBids.auction, AuctionBids.num
FROM ({counts}) AS AuctionBids
JOIN (SELECT {maximum}, CountBids.starttime, CountBids.endtime
      FROM ({counts}) AS CountBids
      GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;"""


def test_an_aggregation_of_windows_by_their_window_is_judged_by_the_window_rules() -> None:
    """MaxBids groups the HOP windows it reads by their window: in that window, as Flink plans it."""
    joined = build(hot_items()).pipelines[0].joined[0]
    assert joined.window is None and joined.per_window
    changed = compare(hot_items(), hot_items("MIN(CountBids.num) AS maxn"))
    assert rules(changed)["window-tvf.aggregate.only-one-modified"] == (Verdict.INCOMPATIBLE, "joined window 1")
    assert "stategate.no-window" not in rules(changed)
    added = compare(hot_items(), hot_items("MAX(CountBids.num) AS maxn, COUNT(*) AS auctions"))
    assert rules(added)["window-tvf.aggregate.added"] == (Verdict.PARTIAL, "joined window 1")
    assert added.verdict is Verdict.UNKNOWN  # the join's input gained a column
