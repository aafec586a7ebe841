"""The Nexmark benchmark's windowed queries as its Flink SQL publishes them (nexmark/nexmark,
``nexmark-flink/src/main/resources/queries``), with only the connectors swapped: the source is a
directory of JSON events, each sink a directory of CSV files. And a generator of their events.

The source is one stream of events, a nested row per kind (``person``, ``auction``, ``bid``), its
rowtime computed from whichever row the event holds, and a view per kind.

``python -m tests.nexmark [--events N] [--root DIR]`` (``make nexmark``) generates the events, writes
each query's job script and runs it as a user would, with ``python -m stategate.spark_jobs run``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2020, 4, 15, 8, 0, 0)
PERSON, AUCTION, BID = 0, 1, 2

SOURCE = """CREATE TABLE nexmark (
    event_type int,
    person ROW<
        id  BIGINT,
        name  VARCHAR,
        emailAddress  VARCHAR,
        creditCard  VARCHAR,
        city  VARCHAR,
        state  VARCHAR,
        dateTime TIMESTAMP(3),
        extra  VARCHAR>,
    auction ROW<
        id  BIGINT,
        itemName  VARCHAR,
        description  VARCHAR,
        initialBid  BIGINT,
        reserve  BIGINT,
        dateTime  TIMESTAMP(3),
        expires  TIMESTAMP(3),
        seller  BIGINT,
        category  BIGINT,
        extra  VARCHAR>,
    bid ROW<
        auction  BIGINT,
        bidder  BIGINT,
        price  BIGINT,
        dateTime  TIMESTAMP(3),
        extra  VARCHAR>,
    dateTime AS
        CASE
            WHEN event_type = 0 THEN person.dateTime
            WHEN event_type = 1 THEN auction.dateTime
            ELSE bid.dateTime
        END,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    'connector' = 'filesystem',
    'path' = '{events}',
    'format' = 'json'
);

CREATE VIEW person AS
SELECT
    person.id,
    person.name,
    person.emailAddress,
    person.creditCard,
    person.city,
    person.state,
    dateTime,
    person.extra
FROM nexmark WHERE event_type = 0;

CREATE VIEW auction AS
SELECT
    auction.id,
    auction.itemName,
    auction.description,
    auction.initialBid,
    auction.reserve,
    dateTime,
    auction.expires,
    auction.seller,
    auction.category,
    auction.extra
FROM nexmark WHERE event_type = 1;

CREATE VIEW bid AS
SELECT
    bid.auction,
    bid.bidder,
    bid.price,
    dateTime,
    bid.extra
FROM nexmark WHERE event_type = 2;
"""


def _sink(name: str, columns: str) -> str:
    return (f"CREATE TABLE {name} (\n{columns}\n) WITH (\n  'connector' = 'filesystem',\n"
            f"  'path' = '{{out}}/{name}',\n  'format' = 'csv'\n);\n")


#: Query name → (sink table, the query's script after the source).
QUERIES: dict[str, tuple[str, str]] = {
    "q11": ("nexmark_q11", _sink("nexmark_q11", "  bidder BIGINT,\n  bid_count BIGINT,\n  starttime TIMESTAMP(3),\n"
                                                "  endtime TIMESTAMP(3)") + """
INSERT INTO nexmark_q11
SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
"""),
    "q12": ("discard_sink", _sink("discard_sink", "  bidder BIGINT,\n  bid_count BIGINT,\n  starttime TIMESTAMP(3),\n"
                                                  "  endtime TIMESTAMP(3)") + """
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;

INSERT INTO discard_sink
SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
"""),
    "q5": ("nexmark_q5", _sink("nexmark_q5", "  auction  BIGINT,\n  num  BIGINT") + """
INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
 FROM (
   SELECT
     auction,
     count(*) AS num,
     window_start AS starttime,
     window_end AS endtime
     FROM TABLE(
             HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT
     max(CountBids.num) AS maxn,
     CountBids.starttime,
     CountBids.endtime
   FROM (
     SELECT
       count(*) AS num,
       window_start AS starttime,
       window_end AS endtime
     FROM TABLE(
                HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
     ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND
    AuctionBids.endtime = MaxBids.endtime AND
    AuctionBids.num >= MaxBids.maxn;
"""),
    "q7": ("nexmark_q7", _sink("nexmark_q7", "  auction  BIGINT,\n  bidder  BIGINT,\n  price  BIGINT,\n"
                                            "  dateTime  TIMESTAMP(3),\n  extra  VARCHAR") + """
INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;
"""),
    "q8": ("nexmark_q8", _sink("nexmark_q8", "  id  BIGINT,\n  name  VARCHAR,\n  stime  TIMESTAMP(3)") + """
INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name,
        window_start AS starttime,
        window_end AS endtime
  FROM TABLE(
            TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller,
        window_start AS starttime,
        window_end AS endtime
  FROM TABLE(
        TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
"""),
}


def script(query: str, events: Path, out: Path) -> str:
    """The query's whole job script: the source, its views, the sink and the INSERT."""
    return (SOURCE + QUERIES[query][1]).replace("{events}", str(events)).replace("{out}", str(out))


@dataclass(frozen=True)
class Mix:
    """How many of every 20 events are persons and auctions (the rest are bids)."""

    persons: int = 2
    auctions: int = 4


def generate(count: int, seed: int = 7, step: timedelta = timedelta(milliseconds=100), mix: Mix = Mix(),
             close: bool = True) -> list[dict]:
    """``count`` events in time order, ``step`` apart: persons, the auctions they sell (sellers are
    recent persons, so a seller and its auction often share a window) and bids on recent auctions
    by known persons. With ``close``, a last person far ahead moves the watermark past every window."""
    rng = random.Random(seed)
    events: list[dict] = []
    persons: list[int] = []
    auctions: list[int] = []
    for i in range(count):
        at = START + step * i
        when = _time(at)
        draw = rng.randrange(20)
        if draw < mix.persons or not persons:
            persons.append(len(persons) + 1000)
            events.append(_person(persons[-1], when))
        elif draw < mix.persons + mix.auctions or not auctions:
            auctions.append(len(auctions) + 1)
            events.append({"event_type": AUCTION, "auction": {
                "id": auctions[-1], "itemName": f"item-{auctions[-1]}", "description": "", "initialBid": 1,
                "reserve": 100, "dateTime": when, "expires": _time(at + timedelta(minutes=5)),
                "seller": rng.choice(persons[-3:]), "category": rng.randrange(10), "extra": ""}})
        else:
            events.append({"event_type": BID, "bid": {
                "auction": rng.choice(auctions[-8:]), "bidder": rng.choice(persons), "price": rng.randrange(1, 500),
                "dateTime": when, "extra": f"e{i}"}})
    if close:
        events.append(_person(-1, _time(START + step * count + timedelta(days=1))))
    return events


def write(events: list[dict], directory: Path, name: str = "events.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(json.dumps(e) + "\n" for e in events))
    return directory


def rows(events: list[dict], kind: int) -> list[dict]:
    """The events of one kind, as the kind's view gives them (its row's fields, ``dateTime`` parsed)."""
    field = {PERSON: "person", AUCTION: "auction", BID: "bid"}[kind]
    return [{**e[field], "dateTime": datetime.fromisoformat(e[field]["dateTime"])}
            for e in events if e["event_type"] == kind]


def _person(pid: int, when: str) -> dict:
    return {"event_type": PERSON, "person": {
        "id": pid, "name": f"person-{pid}", "emailAddress": f"p{pid}@example.com", "creditCard": "",
        "city": "Paris", "state": "", "dateTime": when, "extra": ""}}


def _time(at: datetime) -> str:
    return at.isoformat(sep=" ", timespec="milliseconds")


def main(argv: list[str] | None = None) -> int:
    """Run every query on generated events; print its exit status, time and the rows it wrote."""
    parser = argparse.ArgumentParser(prog="python -m tests.nexmark")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--root", type=Path, help="where events, scripts, checkpoints and sinks go (default: a temp dir)")
    args = parser.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="nexmark-"))
    events = write(generate(args.events), root / "events")
    print(f"{args.events:,} events over {args.events / 10:.0f} s of event time in {events}")
    failed = 0
    for query, (sink, _) in sorted(QUERIES.items(), key=lambda item: int(item[0][1:])):
        path = root / f"{query}.sql"
        path.write_text(script(query, events, root / "out"))
        command = [sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(path),
                   "--checkpoint", str(root / "checkpoint" / query)]
        started = time.monotonic()
        runs = 2 if query == "q12" else 1  # processing time: the next run closes the last windows
        for run in range(runs):
            if run:
                time.sleep(10.5)
            status = subprocess.run(command, capture_output=True, text=True)
            if status.returncode:
                break
        rows = sum(len(part.read_text().splitlines()) for part in (root / "out" / sink).glob("part-*.csv"))
        outcome = "ran" if status.returncode == 0 else f"exit {status.returncode}: {status.stderr.strip()[-200:]}"
        print(f"{query:<4} {outcome:<8} {time.monotonic() - started:6.1f} s  {rows:>6,} rows in {sink}"
              f"{' (2 runs)' if runs == 2 else ''}", flush=True)
        failed += status.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
