"""The Spark side of stategate: a job script compiled to Structured Streaming queries."""

import re

#: Beside Spark's files in every checkpoint: the SQL the state was built by and its layout
#: (``spark_jobs.guard``). The provider deletes it first when it archives a checkpoint piecewise.
RECORD_DIR = "_stategate"


def query_dir_name(pipeline: str) -> str:
    """The directory, under a job's checkpoint, of the streaming query of one pipeline."""
    return re.sub(r"[^A-Za-z0-9_.#-]", "_", pipeline)


def query_dir(checkpoint: str, pipeline: str) -> str:
    """Where the streaming query of a pipeline keeps its checkpoint."""
    return f"{checkpoint.rstrip('/')}/{query_dir_name(pipeline)}"
