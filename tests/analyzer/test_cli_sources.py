"""Where ``stategate check`` finds the deployed version: git at a revision (a pull request's base, a
pre-commit hook) and a job's deployment root (the answer the Airflow gate will give). Real git
repositories, a real deployment root, the installed console script and the real pre-commit tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analyzer.seed_cases import legacy

REPO = Path(__file__).resolve().parents[2]
V1 = legacy("a, SUM(b), MAX(c)")
PARTIAL = legacy("a, SUM(b), MAX(c), COUNT(c)")
INCOMPATIBLE = legacy("a, SUM(b), MAX(c)", window="TUMBLE(ts, INTERVAL '2' MINUTE)")
BIN = Path(sys.executable).parent


def stategate(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "stategate"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose jobs/bids.sql was V1 at the first commit and PARTIAL at the second."""
    repo = tmp_path / "repo"
    (repo / "jobs").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "jobs" / "bids.sql").write_text(V1)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first deploy")
    (repo / "jobs" / "bids.sql").write_text(PARTIAL)
    git(repo, "commit", "-q", "-am", "count bids")
    return repo


def test_base_compares_the_working_file_with_git_at_a_revision(repo: Path) -> None:
    job = repo / "jobs" / "bids.sql"
    unchanged = stategate("check", str(job), "--base", cwd=repo)
    assert unchanged.returncode == 0, unchanged.stderr
    assert unchanged.stdout.startswith("Verdict: FULL")
    since_first = stategate("check", "jobs/bids.sql", "--base", "HEAD~1", "--format", "json", cwd=repo)
    assert json.loads(since_first.stdout)["aggregates"]["added"] == ["COUNT(MyTable.c)"]
    job.write_text(INCOMPATIBLE)  # from inside the folder, by a relative path
    changed = stategate("check", "bids.sql", "--base", "HEAD", "--fail-on", "incompatible", cwd=repo / "jobs")
    assert changed.returncode == 1 and changed.stdout.startswith("Verdict: INCOMPATIBLE")


def test_a_file_new_at_the_revision_is_a_first_deploy(repo: Path) -> None:
    (repo / "jobs" / "clicks.sql").write_text(V1)
    result = stategate("check", "jobs/clicks.sql", "jobs/bids.sql", "--base", "HEAD~1", "--fail-on", "partial",
                       cwd=repo)
    assert result.returncode == 1, "bids.sql is PARTIAL since HEAD~1"
    clicks, bids = result.stdout.split("== jobs/bids.sql")
    assert clicks.startswith("== jobs/clicks.sql") and "Verdict: FIRST_DEPLOY" in clicks
    assert "jobs/clicks.sql is new at HEAD~1: a first deploy" in clicks
    assert "Verdict: PARTIAL" in bids
    first = stategate("check", "jobs/clicks.sql", "--base", "--format", "json", cwd=repo)
    assert json.loads(first.stdout)["verdict"] == "FIRST_DEPLOY"


@pytest.mark.parametrize("args, message", [
    (["--base", "no-such-rev"], "'no-such-rev' is not a revision"),
    (["--base", "HEAD", "--job", "bids"], "--job and --conn-id go with --deployed"),
])
def test_a_bad_revision_or_option_exits_2_and_says_why(repo: Path, args: list[str], message: str) -> None:
    result = stategate("check", "jobs/bids.sql", *args, cwd=repo)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_base_outside_a_git_repository_exits_2(tmp_path: Path) -> None:
    (tmp_path / "job.sql").write_text(V1)
    result = stategate("check", "job.sql", "--base", cwd=tmp_path)
    assert result.returncode == 2 and "not inside a git repository" in result.stderr


def test_the_pre_commit_hook_blocks_an_incompatible_commit(repo: Path, tmp_path: Path) -> None:
    """The hook as the pre-commit framework runs it (try-repo: this repository's hook definitions),
    on the files staged in a real repository."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}

    def hook(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "pre-commit"), "try-repo", str(REPO), "stategate-check-installed",
                               "--files", "jobs/bids.sql", *args], cwd=repo, capture_output=True, text=True,
                              timeout=300, env=env)

    job = repo / "jobs" / "bids.sql"
    job.write_text(PARTIAL.replace("COUNT(c)", "COUNT(c), MIN(c)"))
    git(repo, "add", ".")
    allowed = hook()
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    job.write_text(INCOMPATIBLE)
    git(repo, "add", ".")
    blocked = hook("--verbose")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "Verdict: INCOMPATIBLE" in blocked.stdout and "Failed" in blocked.stdout


def test_the_hook_definitions_follow_the_framework(tmp_path: Path) -> None:
    result = subprocess.run([str(BIN / "pre-commit"), "validate-manifest", str(REPO / ".pre-commit-hooks.yaml")],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
