"""Any input ends in a verdict or in one located error (file:line:col), and valid Flink SQL is read.

``check`` (tests/analyzer/fuzzing.py) runs each script through the library and through
``stategate check`` and asserts that nothing but a located ``SQLModelError`` escapes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stategate.analyzer import SQLModelError, Verdict, build, compare
from stategate.analyzer.intervals import MAX_MS
from tests.analyzer.fuzzing import WINDOW_QUERY, check, nested_parentheses
from tests.analyzer.seed_cases import tvf

SOURCE = "new.sql"


def refused(script: str) -> str:
    """The error a script gets, after checking the CLI gives the same (no verdict, exit 2)."""
    assert check(WINDOW_QUERY, script) == "invalid"
    with pytest.raises(SQLModelError) as error:
        build(script, source=SOURCE)
    return str(error.value)


def tumble(interval: str, offset: str = "") -> str:
    return tvf("a, SUM(b)", size=interval + (f", {offset}" if offset else ""))


# ------------------------------------------------------------------------------ absurd literals
@pytest.mark.parametrize("script, at, problem", [
    (tumble("INTERVAL '" + "9" * 400 + "' MINUTE"), "'999", "longer than"),
    (tumble("INTERVAL '1' MINUTE", "INTERVAL '" + "9" * 30 + "' DAY"), "'999", "longer than"),
    (tumble("INTERVAL '0.0001' SECOND"), "'0.0001'", "not a whole number of milliseconds"),
    (tumble("INTERVAL '-5' MINUTE"), "'-5'", "must be positive"),
])
def test_an_absurd_interval_is_an_error_at_its_place(script: str, at: str, problem: str) -> None:
    """Located at the literal (line 2, its column), quoted short: never a 400-digit message."""
    message = refused(script)
    line = script.splitlines()[1]
    assert message.startswith(f"{SOURCE}:2:{line.index(at) + 1}:") and problem in message, message
    assert len(message) < 400


def test_an_interval_the_parser_cannot_read_is_a_located_syntax_error() -> None:
    assert refused(WINDOW_QUERY.replace("'1'", "'1e400'")).startswith(f"{SOURCE}:1:76: syntax error")


def test_an_interval_as_long_as_a_java_long_is_read_and_one_more_is_refused() -> None:
    biggest = tumble(f"INTERVAL '{MAX_MS}' MILLISECOND")
    assert build(biggest).pipelines[0].aggregate.window.shape.size_ms == MAX_MS
    assert "longer than" in refused(tumble(f"INTERVAL '{MAX_MS + 1}' MILLISECOND"))


@pytest.mark.parametrize("bound", ["'abc'", "2.5", "NULL", "a", "'3'"])
def test_a_top_n_bound_that_is_not_a_whole_number_is_an_error(bound: str) -> None:
    script = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY b) "
              f"AS rk FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) WHERE rk <= {bound}")
    assert "without an upper bound" in refused(script)


# ------------------------------------------------------------------------------ broken text
@pytest.mark.parametrize("tail, what, line, col", [
    ("\n  SELECT 'never closed", "a string", 2, 10),
    ("\n/* never closed", "a comment", 2, 1),
    ("\n\n  `never closed", "a quoted identifier", 3, 3),
    ("\n-- fine\nSELECT 'it''s closed' /* and /* not nested */ `a``b`,\n 'x", "a string", 4, 2),
])
def test_an_unterminated_string_comment_or_identifier_names_its_line_and_column(tail, what, line, col) -> None:
    message = refused(WINDOW_QUERY + ";" + tail)
    assert message.startswith(f"{SOURCE}:{line}:{col}: syntax error: {what} opened here is never closed"), message


@pytest.mark.parametrize("where", ["in code", "in a comment", "in a string"])
def test_a_nul_byte_is_an_error_at_its_place_wherever_it_stands(where: str) -> None:
    lines = [WINDOW_QUERY + ";", "-- a comment", "SELECT 'a string';"]
    index = {"in code": 0, "in a comment": 1, "in a string": 2}[where]
    column = {"in code": 7, "in a comment": 5, "in a string": 10}[where]
    lines[index] = lines[index][:column - 1] + "\x00" + lines[index][column - 1:]
    message = refused("\n".join(lines))
    assert message.startswith(f"{SOURCE}:{index + 1}:{column}: syntax error: a NUL byte"), message


def test_a_byte_order_mark_is_accepted(tmp_path) -> None:
    assert check(WINDOW_QUERY, "\ufeff" + WINDOW_QUERY) == "FULL"
    path = tmp_path / "bom.sql"
    path.write_bytes(b"\xef\xbb\xbf" + WINDOW_QUERY.encode())
    result = subprocess.run([sys.executable, "-m", "stategate.analyzer.cli", "check", str(path), str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.split()[1] == "FULL", result.stderr


def test_random_bytes_and_truncations_end_in_a_located_error_or_a_verdict(tmp_path) -> None:
    import random

    rng = random.Random(7)
    path = tmp_path / "noise.sql"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    result = subprocess.run([sys.executable, "-m", "stategate.analyzer.cli", "check", str(path), str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.startswith(f"stategate: {path}"), result.stderr
    assert "Traceback" not in result.stderr
    script = tumble("INTERVAL '1' MINUTE")
    for cut in range(0, len(script), 7):
        check(WINDOW_QUERY, script[:cut])


def test_a_ten_thousand_character_identifier_is_read() -> None:
    name = "c" * 10_000
    assert check(WINDOW_QUERY, WINDOW_QUERY.replace("SUM(b)", f"SUM(b), MAX({name})")) == "PARTIAL"


# ------------------------------------------------------------------------------ valid Flink SQL
NAMED = ("SELECT a, SUM(b) FROM TABLE({call}) GROUP BY a, window_start, window_end")


@pytest.mark.parametrize("named, positional", [
    ("TUMBLE(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES)",
     "TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '10' MINUTES)"),
    ("TUMBLE(SIZE => INTERVAL '10' MINUTES, DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts))",
     "TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '10' MINUTES)"),
    ("TUMBLE(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, "
     "OFFSET => INTERVAL '1' MINUTE)", "TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '1' MINUTE)"),
    ("HOP(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, SLIDE => INTERVAL '5' MINUTES)",
     "HOP(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)"),
    ("CUMULATE(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts), STEP => INTERVAL '5' MINUTES, SIZE => INTERVAL '10' MINUTES)",
     "CUMULATE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)"),
    ("SESSION(DATA => TABLE MyTable PARTITION BY a, TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '5' MINUTES)",
     "SESSION(TABLE MyTable PARTITION BY a, DESCRIPTOR(ts), INTERVAL '5' MINUTES)"),
])
def test_named_window_tvf_arguments_mean_what_their_positional_call_means(named, positional) -> None:
    assert check(NAMED.format(call=positional), NAMED.format(call=named)) == "FULL"
    resized = named.replace("INTERVAL '10' MINUTES", "INTERVAL '20' MINUTES").replace(
        "GAP => INTERVAL '5'", "GAP => INTERVAL '6'")
    assert compare(NAMED.format(call=positional), NAMED.format(call=resized)).verdict is Verdict.INCOMPATIBLE


@pytest.mark.parametrize("call, problem", [
    ("TUMBLE(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts))", "missing SIZE"),
    ("TUMBLE(DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts), SIZ => INTERVAL '1' MINUTE)", "unknown argument SIZ"),
    ("TUMBLE(DATA => TABLE MyTable, DESCRIPTOR(ts), SIZE => INTERVAL '1' MINUTE)", "mixes named and positional"),
    ("TUMBLE(DATA => TABLE MyTable, DATA => TABLE MyTable, TIMECOL => DESCRIPTOR(ts))", "names DATA twice"),
])
def test_a_wrong_named_argument_is_named_in_the_error(call: str, problem: str) -> None:
    assert problem in refused(NAMED.format(call=call))


@pytest.mark.parametrize("written, same_as", [
    ("INTERVAL '1:30' MINUTE TO SECOND", "INTERVAL '90' SECOND"),
    ("INTERVAL '1 12' DAY TO HOUR", "INTERVAL '36' HOUR"),
    ("INTERVAL '1 00:30' DAY TO MINUTE", "INTERVAL '1470' MINUTE"),
    ("INTERVAL '0 00:01:30.500' DAY TO SECOND", "INTERVAL '90500' MILLISECOND"),
    ("INTERVAL '2:15' HOUR TO MINUTE", "INTERVAL '135' MINUTE"),
    ("INTERVAL '100' MINUTE(3)", "INTERVAL '100' MINUTE"),
    ("INTERVAL '2' DAY(2) TO SECOND(3)".replace("'2'", "'2 00:00:00'"), "INTERVAL '2' DAY"),
])
def test_compound_intervals_and_precision_are_read_by_value(written: str, same_as: str) -> None:
    assert check(tumble(same_as), tumble(written)) == "FULL"
    assert compare(tumble("INTERVAL '7' MINUTE"), tumble(written)).verdict is Verdict.INCOMPATIBLE


@pytest.mark.parametrize("interval, problem", [
    ("INTERVAL '1:75' MINUTE TO SECOND", "SECOND field 75 is above 59"),
    ("INTERVAL '1' MINUTE TO SECOND", "takes 2 fields"),
    ("INTERVAL '1-2' YEAR TO MONTH", "YEAR TO MONTH"),
    ("INTERVAL '1' MONTH", "no fixed length"),
])
def test_an_interval_flink_reads_but_no_window_can_use_is_refused_by_name(interval: str, problem: str) -> None:
    assert problem in refused(tumble(interval))


def test_a_temporary_system_function_is_a_function_like_any_other() -> None:
    udaf = "CREATE TEMPORARY SYSTEM FUNCTION wavg AS 'pkg.WeightedAvg' LANGUAGE PYTHON;\n"
    model = build(udaf + tumble("INTERVAL '1' MINUTE"))
    assert model.functions["wavg"].language == "PYTHON"
    assert check(tumble("INTERVAL '1' MINUTE"), udaf + tumble("INTERVAL '1' MINUTE")) == "FULL"
    used = udaf + tvf("a, SUM(b), wavg(b, c)")
    assert compare(tvf("a, SUM(b)"), used).verdict is Verdict.UNKNOWN


MY_TABLE = "CREATE TABLE MyTable (a STRING, b BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');\n"
VIEW_V = "CREATE TEMPORARY VIEW V AS SELECT a, b, ts FROM MyTable WHERE b > {};\n"


@pytest.mark.parametrize("script, line, first", [
    (VIEW_V.format(1) + VIEW_V.format(2) + tvf("a, SUM(b)", source="V"), 2, 1),
    # a view named like a table: one namespace, as on Flink
    ("CREATE TEMPORARY VIEW MyTable AS SELECT 1 AS a;\n" + tvf("a, SUM(b)"), 1, 0),
    # two on one line
    (VIEW_V.format(1).strip() + " " + VIEW_V.format(2) + tvf("a, SUM(b)", source="V"), 1, 1),
    ("CREATE FUNCTION f AS 'pkg.F';\nCREATE TEMPORARY FUNCTION f AS 'pkg.G';\n" + tvf("a, SUM(b)"), 2, 1),
])
def test_a_name_declared_twice_is_refused_naming_both_places(script: str, line: int, first: int) -> None:
    """As Flink refuses it: else a query would read whichever definition came last, wherever it stands
    (a fuzz case against Flink ran a cascade over another query's view of the same name)."""
    message = refused(MY_TABLE + script)
    assert message.startswith(f"{SOURCE}:{line + 1}:") and f"already declared, at line {first + 1}" in message, message


def test_if_not_exists_keeps_the_first_declaration() -> None:
    script = VIEW_V.format(1) + VIEW_V.format(2).replace("VIEW V", "VIEW IF NOT EXISTS V") + tvf("a, SUM(b)", source="V")
    model = build(MY_TABLE + script)
    assert "> 1" in model.views["V"].sql


@pytest.mark.parametrize("depth", [100, 500])
def test_expressions_nested_hundreds_deep_are_analysed(depth: int) -> None:
    assert check(WINDOW_QUERY, nested_parentheses(depth)) == "FULL"
    deeper = WINDOW_QUERY.replace("SUM(b)", "SUM(b), MAX(" + "(b + " * depth + "1" + ")" * depth + ")")
    assert check(WINDOW_QUERY, deeper) == "PARTIAL"
