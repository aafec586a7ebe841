"""The analyzer under hostile input: a sample here (400 mutations, 120 DDL scripts);
``benchmarks/analyzer_fuzz.py`` runs 10,000+."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings

from stategate.analyzer import SQLModelError, build
from stategate.analyzer.stack import MAX_NESTING

from tests.analyzer.fuzzing import (
    DDL_BASE, ONE_MB, WINDOW_QUERY, Case, check, ddl_scripts, huge_scripts, mutations, nested_parentheses, nested_subqueries)


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_mutated_scripts_get_a_verdict_or_a_located_error(case: Case) -> None:
    check(case.old, case.new)


@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(ddl_scripts())
def test_the_ddl_grammar_gets_a_verdict_or_a_located_error(drawn: tuple[str, bool]) -> None:
    """Column constraints, computed and metadata columns, PARTITIONED BY, LIKE, COMMENT: what
    stategate reads is analysed like any table, the rest is a located error, never a crash."""
    script, readable = drawn
    assert check(DDL_BASE, script) == ("FULL" if readable else "invalid"), script


@pytest.mark.parametrize("name", ["comment", "string literal", "unicode noise", "unicode noise after a script",
                                  "garbage tokens", "unclosed string"])
def test_one_megabyte_scripts(name: str) -> None:
    script = huge_scripts()[name]
    assert len(script) >= ONE_MB
    readable = name in ("comment", "string literal")
    assert check(WINDOW_QUERY, script) == ("FULL" if readable else "invalid")


@pytest.mark.parametrize("depth", [10, 500, MAX_NESTING - 1, MAX_NESTING + 1, 5000])
def test_deeply_nested_subqueries_and_parentheses(depth: int) -> None:
    """Nesting is analysed up to the documented limit (one level of it is the window's own call),
    then refused with a located error; never a crash."""
    assert check(WINDOW_QUERY, nested_subqueries(depth)) == ("FULL" if depth < MAX_NESTING else "invalid")
    assert check(WINDOW_QUERY, nested_parentheses(depth)) == ("FULL" if depth < MAX_NESTING else "invalid")


def test_five_megabytes_of_open_parentheses_are_refused_at_once_with_their_place() -> None:
    script = WINDOW_QUERY + ";\n" + "(" * 5_000_000
    started = time.perf_counter()
    with pytest.raises(SQLModelError) as refused:
        build(script, source="new.sql")
    assert time.perf_counter() - started < 5
    assert str(refused.value).startswith(f"new.sql:2:{MAX_NESTING + 1}: syntax error: parentheses")


def test_the_command_line_prints_one_error_line_not_a_traceback(tmp_path) -> None:
    old, new = tmp_path / "old.sql", tmp_path / "new.sql"
    old.write_text(WINDOW_QUERY)
    new.write_text(nested_parentheses(5000) + huge_scripts()["unicode noise"])
    result = subprocess.run([sys.executable, "-m", "stategate.analyzer.cli", "check", str(old), str(new)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith(f"stategate: {new}:") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and not result.stdout
