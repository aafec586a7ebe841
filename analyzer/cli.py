"""``stategate check``: the verdict for a change, for people, for CI pipelines and for pre-commit.

Where the deployed version comes from:

* ``stategate check OLD.sql NEW.sql`` — two files;
* ``stategate check NEW.sql... --base REV`` — each file as git has it at ``REV`` (default ``HEAD``):
  the verdict of the change a commit or pull request makes. A file new at ``REV`` is a first deploy;
* ``stategate check NEW.sql --deployed ROOT --job NAME`` — the job's deployment record and the state
  layout beside its checkpoint, under any root the Airflow provider accepts: the answer the gate
  will give at deploy time.

The new SQL must be something the Spark job can run (:mod:`analyzer.runnable`): its windows,
aggregates and joins; against a deployment root, also its tables and sinks, as the gate refuses
them. Otherwise there is no verdict: the job's own message, at its place.

``--deployed`` reads the deployment root through the Airflow provider, which this module does not
import: the provider registers its reader under the entry point group :data:`DEPLOYMENTS`, so the
analyzer stays below the layers that use it.

Exit status: 0 when a verdict is reached; 1 with ``--fail-on`` when a verdict is at or above that
severity (so a merge can be blocked); 2 when a file cannot be read, its SQL is invalid or holds a
construct the Spark job cannot run, or the deployed version cannot be found.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from stategate.analyzer.build import build, build_file
from stategate.analyzer.compare import compare_models
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.judgement import Deployed, Judgement, judge
from stategate.analyzer.model import JobModel
from stategate.analyzer.report import FIRST_DEPLOY, Report, Verdict
from stategate.analyzer.runnable import check_constructs, check_runnable

EXIT_OK, EXIT_FAIL_ON, EXIT_INVALID = 0, 1, 2
#: The entry point group of the reader of a deployment root: ``(model, root, job, conn_id) ->
#: Judgement``, raising ``OSError`` or ``ValueError`` when the deployment cannot be read.
DEPLOYMENTS = "stategate.deployments"


class DeployedVersionError(ValueError):
    """The deployed version (a git revision, a deployment root, a layout file) cannot be read."""


@dataclass(frozen=True)
class Check:
    """One file's answer: its report, or None for a first deploy (with why)."""

    path: str
    report: Report | None
    first_deploy: str = ""

    def render(self, form: str) -> str:
        if self.report is not None:
            return {"text": self.report.to_text, "json": self.report.to_json,
                    "markdown": self.report.to_markdown}[form]().rstrip("\n")
        if form == "json":
            return json.dumps({"verdict": FIRST_DEPLOY, "reason": self.first_deploy, "findings": []}, indent=2)
        if form == "markdown":
            return f"### State compatibility: **{FIRST_DEPLOY}**\n\n_{self.first_deploy}_"
        return f"Verdict: {FIRST_DEPLOY} — {self.first_deploy}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stategate",
        description="State compatibility of streaming window SQL changes.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="compare a job's new SQL with its deployed version",
        usage="stategate check OLD.sql NEW.sql | NEW.sql... --base [REV] | NEW.sql --deployed ROOT --job NAME")
    check.add_argument("files", nargs="+", metavar="FILE",
                       help="OLD.sql NEW.sql; with --base or --deployed, the new SQL file(s) only")
    source = check.add_mutually_exclusive_group()
    source.add_argument("--base", nargs="?", const="HEAD", metavar="REV",
                        help="take each file's deployed version from git at REV (default HEAD)")
    source.add_argument("--deployed", metavar="ROOT",
                        help="take the deployed SQL and state layout from the job's deployment record "
                             "under ROOT (file:///..., s3://bucket/..., as the Airflow gate's root)")
    check.add_argument("--job", help="with --deployed: the job, a directory under ROOT")
    check.add_argument("--conn-id", help="with --deployed: the Airflow connection of an object-store ROOT")
    check.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    check.add_argument("--layout", help="the deployed state signature (signature.json or deployment.json)")
    check.add_argument(
        "--fail-on",
        choices=("partial", "unknown", "incompatible"),
        help="exit 1 when the verdict is at or above this severity",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    problem = _usage_problem(args)
    if problem:
        parser.error(problem)
    try:
        layout = _layout(args.layout) if args.layout else None
        if args.deployed:
            checks = [_against_deployment(args.files[0], args.deployed, args.job, args.conn_id)]
        elif args.base is not None:
            checks = [_against_git(path, args.base, layout) for path in args.files]
        else:
            old, new = args.files
            checks = [Check(new, _judged(build_file(old), _constructs_run(build_file(new)), layout))]
    except (SQLModelError, DeployedVersionError) as error:
        print(f"stategate: {error}", file=sys.stderr)
        return EXIT_INVALID
    try:
        for check in checks:
            if len(checks) > 1 and args.format != "json":
                print(f"{'##' if args.format == 'markdown' else '=='} {check.path}")
            print(check.render(args.format), flush=True)
    except BrokenPipeError:  # the reader (head, a pager) left: the verdict still sets the exit code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.fail_on and any(c.report and c.report.verdict >= Verdict(args.fail_on.upper()) for c in checks):
        return EXIT_FAIL_ON
    return EXIT_OK


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.deployed:
        if not args.job:
            return "--deployed needs --job NAME"
        if len(args.files) != 1:
            return "--deployed takes one new SQL file"
        if args.layout:
            return "--deployed reads the layout from the deployment root; drop --layout"
    elif args.job or args.conn_id:
        return "--job and --conn-id go with --deployed"
    elif args.base is None and len(args.files) != 2:
        return "give OLD.sql NEW.sql, or the new file(s) with --base [REV] or --deployed ROOT --job NAME"
    if args.format == "json" and len(args.files) > 1 and args.base is not None:
        return "--format json takes one file at a time"
    return None


def _against_git(path: str, revision: str, layout: dict | None) -> Check:
    """``path`` against the same path in git at ``revision``."""
    file = Path(path)
    folder = str(file.resolve().parent)
    if _git(folder, "rev-parse", "--git-dir").returncode != 0:
        raise DeployedVersionError(f"{path}: not inside a git repository, so --base has no history to read")
    if _git(folder, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").returncode != 0:
        raise DeployedVersionError(f"{path}: {revision!r} is not a revision of the git repository here")
    old = _git(folder, "show", f"{revision}:./{file.name}")
    new = _constructs_run(build_file(path))
    if old.returncode != 0:
        return Check(path, None, f"{path} is new at {revision}: a first deploy, no state to reuse")
    return Check(path, _judged(build(old.stdout, source=f"{path}@{revision}"), new, layout))


def _constructs_run(model: JobModel) -> JobModel:
    """``model``, once its windows, aggregates and joins are ones the Spark job runs."""
    check_constructs(model)
    return model


def _judged(old: JobModel, new: JobModel, layout: Mapping[str, Any] | None) -> Report:
    """``new`` against ``old``; with the deployed state's ``layout``, also whether its aggregates fit."""
    if layout is None:
        return compare_models(old, new)
    report = judge(new, Deployed(old, layout)).report
    assert report is not None, "a deployed state with a layout is judged"
    return report


def _git(folder: str, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise DeployedVersionError(f"cannot run git: {error}") from None


def _against_deployment(path: str, root: str, job: str, conn_id: str | None) -> Check:
    """``path`` against the job's deployment root, exactly as the Airflow gate judges them."""
    model = build_file(path)
    check_runnable(model)
    try:
        judgement = _deployment_reader()(model, root, job, conn_id)
    except (OSError, ValueError) as error:
        raise DeployedVersionError(f"cannot read the deployment of {job!r} under {root}: {error}") from None
    if judgement.report is None:
        return Check(path, None, f"{judgement.first_deploy} of {job} under {root}: a first deploy, starting fresh")
    return Check(path, judgement.report)


def _deployment_reader() -> Callable[[JobModel, str, str, str | None], Judgement]:
    """The reader of deployment roots the Airflow provider registers (:data:`DEPLOYMENTS`)."""
    found = entry_points(group=DEPLOYMENTS, name="root")
    if not found:
        raise DeployedVersionError("--deployed reads a deployment root through stategate's Airflow provider, "
                                   f"which registers no '{DEPLOYMENTS}' entry point here: install it "
                                   "(pip install airflow-provider-stategate)")
    return next(iter(found)).load()


def _layout(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise DeployedVersionError(f"{path}: cannot read the state layout: {error}") from None
    signature = data.get("signature", data) if isinstance(data, dict) else None
    if not isinstance(signature, dict) or "layout" not in signature:
        raise DeployedVersionError(f"{path}: not a state signature (no 'layout' key)")
    return signature


if __name__ == "__main__":
    sys.exit(main())
