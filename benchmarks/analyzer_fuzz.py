"""The analyzer under hostile input, at scale.

1. Seeded mutations (``tests/analyzer/mutations.py``): window jobs of every form (legacy group
   windows, the four window TVFs, Top-N over a window aggregation, Top-N of window rows), read
   directly or through a view, a CTE or a subquery, each changed once, and judged against the
   verdict the seed tables give the change: unsafe (more state reused than the seeds allow),
   wrong but safe, crashed.
2. Token-level mutations of valid scripts (deleted, swapped, duplicated and replaced tokens, random
   unicode, truncation), 1 MB scripts, deep nesting: each must end in a verdict or a located
   error, through the library and the CLI (``tests/analyzer/fuzzing.py``).

Prints the counts; exits 1 if any case was unsafe, crashed or broke a rule.

    .venv/bin/python benchmarks/analyzer_fuzz.py [--seeded 10000] [--cases 10000]
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analyzer.fuzzing import (
    WINDOW_QUERY, Case, check, huge_scripts, mutations, nested_parentheses, nested_subqueries)
from tests.analyzer.mutations import OUTCOMES, Mutation, describe, judge, mutated_jobs


def fuzz_seeded(cases: int) -> tuple[Counter, Counter, list[str]]:
    """Outcome counts, per-mutation counts of the bad outcomes, and the first bad cases in full."""
    outcomes: Counter = Counter()
    bad: Counter = Counter()
    shown: list[str] = []

    @settings(max_examples=cases, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated_jobs())
    def one(mutation: Mutation) -> None:
        outcome, said = judge(mutation)
        outcomes[outcome] += 1
        if outcome in ("unsafe", "strict", "crashed"):
            bad[(outcome, describe(mutation), str(mutation.expected and mutation.expected.value), said[:100])] += 1
            if outcome != "strict" and len(shown) < 5:
                shown.append(f"{outcome}: {describe(mutation)} -> {said}\n--- old\n{mutation.old.sql()}\n"
                             f"--- new\n{mutation.new.sql()}")

    one()
    return outcomes, bad, shown


def fuzz_mutations(cases: int) -> tuple[Counter, Counter, list[str], float]:
    outcomes: Counter = Counter()
    edits: Counter = Counter()
    failures: list[str] = []
    slowest = 0.0

    @settings(max_examples=cases, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutations())
    def one(case: Case) -> None:
        nonlocal slowest
        started = time.perf_counter()
        try:
            outcomes[check(case.old, case.new)] += 1
        except Exception:  # noqa: BLE001 - every failure is counted and shown, none stops the run
            outcomes["BROKE A RULE"] += 1
            failures.append(f"{case.new!r}\n{traceback.format_exc()}")
        slowest = max(slowest, time.perf_counter() - started)
        for edit in case.kind.split("+"):
            edits[edit] += 1

    one()
    return outcomes, edits, failures, slowest


def hostile_inputs() -> list[tuple[str, str, float, int]]:
    inputs = {f"{name} (1 MB)": script for name, script in huge_scripts().items()}
    inputs.update({f"{depth} nested subqueries": nested_subqueries(depth) for depth in (50, 100, 1000, 10000)})
    inputs.update({f"{depth} nested parentheses": nested_parentheses(depth) for depth in (20, 100, 10000)})
    rows = []
    for name, script in inputs.items():
        started = time.perf_counter()
        try:
            outcome = check(WINDOW_QUERY, script)
        except Exception:  # noqa: BLE001 - a hostile input's failure is reported, not raised
            outcome = "BROKE A RULE: " + traceback.format_exc(limit=3)
        rows.append((name, outcome, time.perf_counter() - started, len(script)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeded", type=int, default=10_000, help="seeded mutations to judge (default 10000)")
    parser.add_argument("--cases", type=int, default=10_000, help="token-mutated scripts to try (default 10000)")
    args = parser.parse_args()

    started = time.perf_counter()
    seeded, bad, shown = fuzz_seeded(args.seeded)
    elapsed = time.perf_counter() - started
    print(f"seeded mutations judged against the seed tables: {sum(seeded.values())} in {elapsed:.0f} s")
    for outcome in OUTCOMES:
        print(f"  {outcome:<14} {seeded[outcome]:>7}")
    for (outcome, what, expected, said), count in bad.most_common(15):
        print(f"  {count:>5} x {outcome}: {what}: seeds say {expected}, stategate {said}")
    for case in shown:
        print("\n" + case)

    started = time.perf_counter()
    outcomes, edits, failures, slowest = fuzz_mutations(args.cases)
    elapsed = time.perf_counter() - started
    total = sum(outcomes.values())
    print(f"mutated scripts: {total} in {elapsed:.0f} s ({1000 * elapsed / max(total, 1):.1f} ms each, "
          f"slowest {1000 * slowest:.0f} ms)")
    for outcome, count in outcomes.most_common():
        print(f"  {outcome:<14} {count:>7}")
    print("  edits applied: " + ", ".join(f"{edit} {count}" for edit, count in edits.most_common()))

    print("\nhostile inputs:")
    rows = hostile_inputs()
    for name, outcome, seconds, size in rows:
        print(f"  {name:<36} {size / 1e6:6.2f} MB {seconds:7.2f} s  {outcome}")

    broken = len(failures) + sum(outcome.startswith("BROKE") for _, outcome, _, _ in rows) \
        + seeded["unsafe"] + seeded["crashed"]
    for failure in failures[:5]:
        print("\n" + failure)
    print(f"\ncases that broke a rule (unsafe verdict, crash, traceback, verdict without a readable script): "
          f"{broken}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
