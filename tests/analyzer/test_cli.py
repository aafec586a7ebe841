"""``stategate check`` as a CI pipeline runs it: a real process, real files, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analyzer.seed_cases import legacy

OLD = legacy("a, SUM(b), MAX(c)")
NEW = legacy("a, SUM(b), MAX(c), COUNT(c)")


def run(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("stategate", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "stategate.analyzer.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.sql", tmp_path / "new.sql"
    old.write_text(OLD)
    new.write_text(NEW)
    return old, new


def test_text_output_is_a_readable_table(files) -> None:
    result = run("check", *map(str, files))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("Verdict: PARTIAL")
    assert "group-window.aggregate.added" in result.stdout
    assert "added (start from zero): COUNT(MyTable.c)" in result.stdout


def test_json_output(files) -> None:
    result = run("check", *map(str, files), "--format", "json")
    data = json.loads(result.stdout)
    assert data["verdict"] == "PARTIAL"
    assert data["aggregates"] == {"kept": ["SUM(MyTable.b)", "MAX(MyTable.c)"],
                                  "added": ["COUNT(MyTable.c)"], "dropped": []}
    assert {"rule", "effect", "message", "before", "after"} <= set(data["findings"][0])


def test_markdown_output(files) -> None:
    result = run("check", *map(str, files), "--format", "markdown")
    assert "### State compatibility: **PARTIAL**" in result.stdout
    assert "| PARTIAL | `group-window.aggregate.added` |" in result.stdout


@pytest.mark.parametrize("fail_on, code", [("partial", 1), ("unknown", 0), ("incompatible", 0)])
def test_fail_on_blocks_at_or_above_the_severity(files, fail_on: str, code: int) -> None:
    assert run("check", *map(str, files), "--fail-on", fail_on).returncode == code


def test_invalid_sql_exits_2_naming_file_line_and_column(files) -> None:
    old, new = files
    new.write_text("SELECT a,\n  SUM(b\nFROM MyTable")
    result = run("check", str(old), str(new))
    assert result.returncode == 2
    assert f"{new}:" in result.stderr and "syntax error" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("select, message", [
    ("a, SUM(b),\n  MEDIAN(c)", "2:3: aggregate MEDIAN(c) is not supported (supported: "
     "COUNT, SUM, MIN, MAX, AVG, STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP, FIRST_VALUE, LAST_VALUE, LISTAGG, ARRAY_AGG, COLLECT, JSON_ARRAYAGG, JSON_OBJECTAGG, "
     "APPROX_COUNT_DISTINCT)"),
    ("a, SUM(b), weighted_avg(b, c)", "1:19: user-defined aggregate WEIGHTED_AVG(b, c) cannot run on Spark here"),
])
def test_sql_the_spark_job_cannot_run_exits_2_with_the_jobs_message(files, select: str, message: str) -> None:
    """No verdict for SQL that could never run: the job's message, at the construct's place."""
    old, new = files
    new.write_text(legacy(select))
    result = run("check", str(old), str(new))
    assert result.returncode == 2 and not result.stdout
    assert result.stderr == f"stategate: {new}:{message} (in: select#1)\n"


def test_unreadable_file_exits_2(files, tmp_path: Path) -> None:
    result = run("check", str(files[0]), str(tmp_path / "missing.sql"))
    assert result.returncode == 2
    assert "missing.sql" in result.stderr and "cannot read" in result.stderr


def test_the_deployed_layout_decides_whether_a_change_fits(tmp_path, files) -> None:
    """With the recorded slots, an added aggregate that has no free slot is INCOMPATIBLE."""
    from stategate.analyzer import build
    from stategate.analyzer.layout import plan
    from stategate.analyzer.signature import state_signature

    old, new = files
    narrow = "SET 'stategate.state.slots' = '2';\n"
    old.write_text(narrow + OLD)
    new.write_text(narrow + NEW)
    model = build(old.read_text())
    layout = tmp_path / "signature.json"
    layout.write_text(json.dumps(state_signature(model, plan(model))))
    assert run("check", str(old), str(new)).stdout.startswith("Verdict: PARTIAL")
    result = run("check", str(old), str(new), "--layout", str(layout), "--fail-on", "incompatible")
    assert result.returncode == 1
    assert result.stdout.startswith("Verdict: INCOMPATIBLE")
    assert "stategate.layout.no-room" in result.stdout
    (tmp_path / "broken.json").write_text("[1, 2]")
    broken = run("check", str(old), str(new), "--layout", str(tmp_path / "broken.json"))
    assert broken.returncode == 2 and "not a state signature" in broken.stderr
