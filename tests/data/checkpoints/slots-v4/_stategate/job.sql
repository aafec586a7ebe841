CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '@ROOT@/bids', 'format' = 'csv');
CREATE TABLE Out (item STRING, window_start TIMESTAMP(3), bids BIGINT, total DECIMAL(38, 2), cents INT,
  last_bid TIMESTAMP(3), top DECIMAL(10, 2)) WITH ('connector' = 'print');
INSERT INTO Out SELECT item, window_start, COUNT(*), SUM(price), SUM(CAST(price * 100 AS INT)), MAX(bidtime), MAX(price)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY item, window_start, window_end;
