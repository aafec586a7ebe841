"""Errors that point at the place in the user's SQL: file, line, column and clause."""

from __future__ import annotations


#: How much of a clause an error quotes: enough to find it, never a whole 5 MB statement.
_CLAUSE = 100


class SQLModelError(ValueError):
    """The script cannot be turned into a job model (syntax error, unsupported statement, ...).

    Carries the location so the CLI, the Spark job and the Airflow gate can all print
    ``job.sql:12:8: message`` without knowing where the error came from.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        col: int | None = None,
        clause: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.col = col
        self.clause = clause
        super().__init__(str(self))

    def located(self, source: str) -> SQLModelError:
        """The same error, attributed to ``source`` (a file name) when it had none."""
        if self.source:
            return self
        return SQLModelError(
            self.message, source=source, line=self.line, col=self.col, clause=self.clause
        )

    def __str__(self) -> str:
        where = ":".join(
            str(part) for part in (self.source or "<sql>", self.line, self.col) if part is not None
        )
        clause = self.clause if self.clause is None or len(self.clause) <= _CLAUSE else self.clause[:_CLAUSE - 1] + "…"
        clause = f" (in: {clause})" if clause else ""
        return f"{where}: {self.message}{clause}"
