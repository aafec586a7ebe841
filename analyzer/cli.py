"""``stategate check OLD.sql NEW.sql``: the verdict for a change, for people and for CI pipelines.

Exit status: 0 when a verdict is reached; 1 with ``--fail-on`` when the verdict is at or above that
severity (so a merge can be blocked); 2 when a file cannot be read or its SQL is invalid.

``--layout FILE`` adds the deployed state layout (the ``signature.json`` the job wrote beside its
checkpoint, or a deployment record holding one under ``signature``), so the answer also says whether
the new aggregates fit the recorded slots, as the Airflow gate does at deploy time.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from stategate.analyzer.build import build_file
from stategate.analyzer.compare import compare_models
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.report import Verdict

EXIT_OK, EXIT_FAIL_ON, EXIT_INVALID = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stategate",
        description="State compatibility of streaming window SQL changes.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="compare two versions of a job's SQL")
    check.add_argument("old", help="the deployed SQL file")
    check.add_argument("new", help="the SQL file to deploy")
    check.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    check.add_argument("--layout", help="the deployed state signature (signature.json or deployment.json)")
    check.add_argument(
        "--fail-on",
        choices=("partial", "unknown", "incompatible"),
        help="exit 1 when the verdict is at or above this severity",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        deployed = _layout(args.layout) if args.layout else None
        report = compare_models(build_file(args.old), build_file(args.new), deployed)
    except (SQLModelError, LayoutFileError) as error:
        print(f"stategate: {error}", file=sys.stderr)
        return EXIT_INVALID
    render = {"text": report.to_text, "json": report.to_json, "markdown": report.to_markdown}
    print(render[args.format]().rstrip("\n"))
    if args.fail_on and report.verdict >= Verdict(args.fail_on.upper()):
        return EXIT_FAIL_ON
    return EXIT_OK


class LayoutFileError(ValueError):
    """The --layout file cannot be read as a state signature."""


def _layout(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise LayoutFileError(f"{path}: cannot read the state layout: {error}") from None
    signature = data.get("signature", data) if isinstance(data, dict) else None
    if not isinstance(signature, dict) or "layout" not in signature:
        raise LayoutFileError(f"{path}: not a state signature (no 'layout' key)")
    return signature


if __name__ == "__main__":
    sys.exit(main())
