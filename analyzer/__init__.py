"""State-compatibility analysis of Flink-dialect streaming window SQL.

``compare(old_sql, new_sql)`` returns a :class:`Report` whose ``verdict`` says whether a job can
restart from its checkpoint after the change (FULL / PARTIAL), must clear its state (INCOMPATIBLE),
or needs a human (UNKNOWN).
"""

from stategate.analyzer.build import build, build_file
from stategate.analyzer.compare import compare, compare_models
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import JobModel
from stategate.analyzer.report import FIRST_DEPLOY, AggregatePlan, Finding, Report, Verdict

__all__ = [
    "FIRST_DEPLOY",
    "AggregatePlan",
    "Finding",
    "JobModel",
    "Report",
    "SQLModelError",
    "Verdict",
    "build",
    "build_file",
    "compare",
    "compare_models",
]
