"""Seeded single mutations of window jobs, each judged against the seed tables (tests/analyzer/mutations.py).

A sample runs here; ``benchmarks/analyzer_fuzz.py`` runs 10,000 and more and prints the counts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.analyzer.mutations import Mutation, describe, judge, jobs, mutated_jobs, mutations_of


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated_jobs())
def test_no_mutation_gets_an_unsafe_verdict_or_a_crash(mutation: Mutation) -> None:
    outcome, said = judge(mutation)
    assert outcome in ("correct", "strict", "not judged"), f"{outcome}: {describe(mutation)} -> {said}\n" \
        f"--- old\n{mutation.old.sql()}\n--- new\n{mutation.new.sql()}"


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(jobs())
def test_every_mutation_of_a_job_is_judged_and_the_unchanged_job_is_full(job) -> None:
    """The generator's own check: its jobs are valid and unchanged ones are FULL; all of a job's
    mutations, not a sample, get the verdict the seeds give them."""
    from stategate.analyzer import Verdict, compare

    assert compare(job.sql(), job.sql()).verdict is (Verdict.INCOMPATIBLE if job.emit else Verdict.FULL)
    for mutation in mutations_of(job):
        outcome, said = judge(mutation)
        assert outcome in ("correct", "not judged"), f"{outcome}: {describe(mutation)} -> {said}"
