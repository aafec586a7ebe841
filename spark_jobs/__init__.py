"""The Spark side of stategate: a job script compiled to Structured Streaming queries."""

#: Beside Spark's files in every checkpoint: the SQL the state was built by and its layout
#: (``spark_jobs.guard``). The provider deletes it first when it archives a checkpoint piecewise.
RECORD_DIR = "_stategate"
