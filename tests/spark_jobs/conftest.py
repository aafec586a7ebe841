"""Fixtures of the engine's tests that run jobs as their own processes."""

from __future__ import annotations

from collections import Counter
from typing import Callable

import pytest

from stategate.spark_jobs.job import run
from tests.spark_jobs.crashes import duplicates, job_script, sink_rows, write_bids


@pytest.fixture(scope="session")
def uninterrupted(spark, tmp_path_factory) -> Callable[[int, int], dict[str, Counter]]:
    """The sinks' rows of the three-pipeline job (``crashes.job_script``) run once, uninterrupted, over
    ``files`` bid files of ``rows_per_file`` bids: what every killed, stopped or node-losing run of the
    same input must end with. The input is the same for a size wherever it is written (seeded), so
    the tests that compare against it share one run per size."""
    runs: dict[tuple[int, int], dict[str, Counter]] = {}

    def rows(files: int, rows_per_file: int) -> dict[str, Counter]:
        if (files, rows_per_file) not in runs:
            root = tmp_path_factory.mktemp("uninterrupted")
            write_bids(root / "incoming", files, rows_per_file)
            run(spark, job_script(root), root / "checkpoint")
            expected = sink_rows(root)
            assert all(len(r) > files for r in expected.values()) and duplicates(expected) == 0
            runs[files, rows_per_file] = expected
        return runs[files, rows_per_file]

    return rows
