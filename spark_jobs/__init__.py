"""The Spark side of stategate: a job script compiled to Structured Streaming queries."""
