-- v2: adds the top bid (PARTIAL: bids and total keep their state, top_bid starts from zero).
CREATE TABLE Bid (
  bidtime TIMESTAMP(3),
  price DECIMAL(10, 2),
  item STRING,
  supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/tmp/stategate-input/bids', 'format' = 'csv');

CREATE TABLE SupplierTotals (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  supplier_id STRING,
  bids BIGINT,
  total DECIMAL(38, 2),
  top_bid DECIMAL(10, 2)
) WITH ('connector' = 'filesystem', 'path' = '/tmp/stategate-output/supplier_totals', 'format' = 'parquet');

INSERT INTO SupplierTotals
SELECT window_start, window_end, supplier_id, COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS top_bid
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY supplier_id, window_start, window_end;
