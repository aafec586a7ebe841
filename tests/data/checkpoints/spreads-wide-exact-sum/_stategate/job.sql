CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(38, 18), item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '@ROOT@/bids', 'format' = 'csv');
CREATE TABLE Out (supplier_id STRING, window_start TIMESTAMP(3), bids BIGINT, spread DECIMAL(38, 18),
  variance DECIMAL(38, 18)) WITH ('connector' = 'print');
INSERT INTO Out SELECT supplier_id, window_start, COUNT(*), STDDEV_POP(price), VAR_SAMP(price)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY supplier_id, window_start, window_end;
