"""The seed documents, row by row: the verdict and the finding that decides it."""

from __future__ import annotations

import pytest

from stategate.analyzer import Verdict, compare
from tests.analyzer.seed_cases import ALL, Case


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_seed_case(case: Case) -> None:
    report = compare(case.old, case.new)
    rules = [(f.rule, f.effect.value) for f in report.findings]
    assert report.verdict.value == case.verdict, rules
    deciding = [f for f in report.findings if f.rule.endswith(case.rule)]
    assert deciding, f"no finding {case.rule!r} in {rules}"
    assert any(f.effect.value == case.verdict for f in deciding), rules


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_finding_explains_itself(case: Case) -> None:
    report = compare(case.old, case.new)
    for finding in report.findings:
        assert finding.rule and finding.message
    # Some finding gives the verdict, and none asks for more caution than it.
    assert any(f.effect is report.verdict for f in report.findings), report.findings
    assert not any(f.effect > report.verdict for f in report.findings), report.findings
    assert report.to_dict()["verdict"] == report.verdict.value


#: Rules that fire on what a script *contains*, not on what changed: an unchanged script keeps them.
PRESENCE_RULES = ("emit.enabled", "udaf", "udtf", "window-filter", "field-calculation.present",
                  "grouping-sets.present", "aggregate-on-window-field", "no-window", "aggregate.none",
                  "unchanged")


@pytest.mark.parametrize("script", sorted({c.old for c in ALL} | {c.new for c in ALL}))
def test_an_unchanged_script_reports_no_change(script: str) -> None:
    report = compare(script, script)
    assert all(f.rule.endswith(PRESENCE_RULES) for f in report.findings), report.findings
    if all(f.rule.endswith(("unchanged", "aggregate.none")) for f in report.findings):
        assert report.verdict is Verdict.FULL
