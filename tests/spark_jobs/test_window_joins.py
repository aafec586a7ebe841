"""Window joins of two sources with watermarks of their own: the query's watermark is the smaller,
so both sides emit a window in the same micro-batch, and the join of that batch is complete."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pandas as pd

from tests.spark_jobs.helpers import collect

START = datetime(2020, 4, 15, 8, 0, 0)


def write(path, rows: list[tuple[datetime, str, int]]) -> None:
    path.mkdir(parents=True)
    (path / "0.csv").write_text("".join(f"{at:%Y-%m-%d %H:%M:%S.%f},{key},{value}\n" for at, key, value in rows))


def test_full_outer_hop_join_of_two_sources_with_different_delays(spark, tmp_path) -> None:
    rng = random.Random(3)
    clicks = [(START + timedelta(milliseconds=rng.randrange(60_000)), f"k{rng.randrange(6)}", 1) for _ in range(300)]
    views = [(START + timedelta(milliseconds=rng.randrange(60_000)), f"k{rng.randrange(9)}", rng.randrange(10))
             for _ in range(300)]
    far = START + timedelta(hours=1)
    write(tmp_path / "clicks", sorted(clicks) + [(far, "closer", 0)])
    write(tmp_path / "views", sorted(views) + [(far, "closer", 0)])
    ddl = "".join(
        f"CREATE TABLE {name} (at TIMESTAMP(3), k STRING, v INT, WATERMARK FOR at AS at - INTERVAL '{delay}' SECOND)"
        f" WITH ('connector' = 'filesystem', 'path' = '{tmp_path / name}', 'format' = 'csv');\n"
        for name, delay in (("clicks", 2), ("views", 7)))
    sql = ddl + """
SELECT COALESCE(C.k, V.k) AS k, COALESCE(C.ws, V.ws) AS ws, C.n, V.total
FROM (SELECT k, COUNT(*) AS n, window_start AS ws, window_end AS we
      FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(at), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
      GROUP BY k, window_start, window_end) C
FULL OUTER JOIN
     (SELECT k, SUM(v) AS total, window_start AS ws, window_end AS we
      FROM TABLE(HOP(TABLE views, DESCRIPTOR(at), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
      GROUP BY k, window_start, window_end) V
ON C.k = V.k AND C.ws = V.ws AND C.we = V.we"""

    def windows(rows: list[tuple[datetime, str, int]], column: str, how: str) -> pd.DataFrame:
        frame = pd.DataFrame(rows, columns=["at", "k", "v"])
        parts = []
        for end in pd.date_range(START, START + timedelta(seconds=70), freq="5s"):
            inside = frame[(frame["at"] >= end - timedelta(seconds=10)) & (frame["at"] < end)]
            grouped = inside.groupby("k").v.agg(how).rename(column).reset_index()
            parts.append(grouped.assign(ws=end - timedelta(seconds=10)))
        return pd.concat(parts)

    expected = windows(clicks, "n", "count").merge(windows(views, "total", "sum"), on=["k", "ws"], how="outer")
    expected = sorted(tuple("NULL" if pd.isna(v) else str(int(v)) if isinstance(v, float) else str(v) for v in row)
                      for row in expected[["k", "ws", "n", "total"]].itertuples(index=False))
    assert any("NULL" in row[2:] for row in expected)
    assert collect(spark, sql, tmp_path / "checkpoint") == expected
