CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '@ROOT@/bids', 'format' = 'csv');
CREATE TABLE Out (supplier_id STRING, window_start TIMESTAMP(3), bids BIGINT, first_price DECIMAL(10, 2),
  last_bid TIMESTAMP(3), last_cents INT, last_item STRING) WITH ('connector' = 'print');
INSERT INTO Out SELECT supplier_id, window_start, COUNT(*), FIRST_VALUE(price), LAST_VALUE(bidtime),
  LAST_VALUE(CAST(price * 100 AS INT)), LAST_VALUE(item)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY supplier_id, window_start, window_end;
