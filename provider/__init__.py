"""stategate's Airflow provider: a deploy gate for Spark Structured Streaming window jobs."""

__version__ = "0.1.0"
