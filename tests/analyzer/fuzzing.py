"""Hostile job scripts for the analyzer: mutations of valid ones, huge ones, deeply nested ones.

Shared by ``tests/analyzer/test_fuzz.py`` (a sample, in every CI run) and
``benchmarks/analyzer_fuzz.py`` (10,000 cases and more, with counts). :func:`check` states what a
user relies on, whatever the input: the analyzer answers with a verdict or with a located error,
never with a crash, and never with a verdict for a script it could not read.
"""

from __future__ import annotations

import contextlib
import io
import random
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from stategate.analyzer import JobModel, SQLModelError, Verdict, build, compare_models
from stategate.analyzer.runnable import check_constructs
from stategate.analyzer.cli import main as cli_main
from stategate.analyzer.dialect import Flink
from tests.analyzer.seed_cases import ALL

REPO = Path(__file__).resolve().parents[2]
SOURCE = "new.sql"

#: Every script of the seed cases, the example job and the demo's next versions of it: all valid.
CORPUS: tuple[str, ...] = tuple(sorted({c.old for c in ALL} | {c.new for c in ALL})) + tuple(
    (REPO / "dags" / folder / name).read_text()
    for folder, name in (("stategate_jobs", "bids.sql"), ("stategate_demo", "v2.sql"), ("stategate_demo", "v3.sql")))

#: A plain window query: the deployed script the huge and nested ones are compared with.
WINDOW_QUERY = "SELECT a, SUM(b) FROM MyTable GROUP BY a, TUMBLE(ts, INTERVAL '1' MINUTE)"

EDITS = ("delete", "swap", "duplicate", "replace", "unicode", "truncate")
ONE_MB = 1_000_000


@dataclass(frozen=True)
class Case:
    kind: str
    old: str
    new: str


@cache
def _pieces(script: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The script as (gaps, tokens): ``gaps[i]`` is the text before token ``i``, ``gaps[-1]`` the tail."""
    tokens = Flink().tokenize(script)
    gaps, texts, end = [], [], 0
    for token in tokens:
        gaps.append(script[end:token.start])
        texts.append(script[token.start:token.end + 1])
        end = token.end + 1
    gaps.append(script[end:])
    return tuple(gaps), tuple(texts)


@st.composite
def mutations(draw: st.DrawFn) -> Case:
    """A corpus script with one to three token-level edits."""
    old = draw(st.sampled_from(CORPUS))
    gaps, tokens = map(list, _pieces(old))
    kinds = []
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        kind = draw(st.sampled_from(EDITS))
        kinds.append(kind)
        i = draw(st.integers(0, len(tokens) - 1))
        j = draw(st.integers(0, len(tokens) - 1))
        if kind == "delete":
            del tokens[i], gaps[i]
        elif kind == "swap":
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
            gaps.insert(i, " ")
        elif kind == "replace":
            tokens[i] = tokens[j]
        elif kind == "unicode":
            tokens.insert(i, draw(st.text(min_size=1, max_size=8)))
            gaps.insert(i, draw(st.sampled_from(("", " "))))
        else:  # truncate
            tokens, gaps = tokens[:i], gaps[:i] + [""]
    new = "".join(g + t for g, t in zip(gaps, tokens)) + gaps[-1]
    return Case("+".join(kinds), old, new)


#: Pieces of Flink's CREATE TABLE grammar: (text, whether stategate reads it). Column pieces follow
#: a column's type; table pieces follow the column list.
COLUMN_PIECES = (("NOT NULL", True), ("COMMENT 'a column'", True), ("PRIMARY KEY NOT ENFORCED", True),
                 ("METADATA FROM 'timestamp'", False), ("METADATA VIRTUAL", False))
EXTRA_COLUMNS = (("cost AS price * 2", True), ("PRIMARY KEY (item) NOT ENFORCED", True),
                 ("note STRING COMMENT 'free text'", True), ("meta TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'", False))
TABLE_PIECES = (("COMMENT 'bids'", True), ("PARTITIONED BY (item)", True), ("PARTITIONED BY (nope)", False),
                ("LIKE Other", False))
DDL_BASE_TABLE = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, "
                  "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) "
                  "WITH ('connector' = 'filesystem', 'path' = 'bids', 'format' = 'csv');\n")
DDL_QUERY = ("SELECT item, window_start, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
             "INTERVAL '1' MINUTE)) GROUP BY item, window_start, window_end;")


@st.composite
def ddl_scripts(draw: st.DrawFn) -> tuple[str, bool]:
    """A window job whose source table is declared with a draw of Flink's DDL grammar, and whether
    every piece drawn is one stategate reads (else a located error is the right answer)."""
    readable = True
    columns = ["bidtime TIMESTAMP(3)", "price DECIMAL(10, 2)", "item STRING"]
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, len(columns) - 1))
        piece, ok = draw(st.sampled_from(COLUMN_PIECES))
        columns[i] += " " + piece
        readable &= ok
    for piece, ok in draw(st.lists(st.sampled_from(EXTRA_COLUMNS), max_size=2, unique=True)):
        columns.append(piece)
        readable &= ok
    columns.append("WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND")
    clauses = []
    for piece, ok in draw(st.lists(st.sampled_from(TABLE_PIECES), max_size=2, unique=True)):
        clauses.append(piece)
        readable &= ok
    like = [c for c in clauses if c.startswith("LIKE")]
    table = (f"CREATE TABLE Bid ({', '.join(columns)}) {' '.join(c for c in clauses if c not in like)} "
             f"WITH ('connector' = 'filesystem', 'path' = 'bids', 'format' = 'csv') {' '.join(like)};\n")
    return table + DDL_QUERY, readable


#: The plain declaration the drawn ones are compared with: a state-neutral change when read.
DDL_BASE = DDL_BASE_TABLE + DDL_QUERY


def nested_subqueries(depth: int) -> str:
    inner = "MyTable"
    for _ in range(depth):
        inner = f"(SELECT * FROM {inner})"
    return WINDOW_QUERY.replace("FROM MyTable", f"FROM {inner}") + ";"


def nested_parentheses(depth: int) -> str:
    return WINDOW_QUERY.replace("SUM(b)", f"SUM({'(' * depth}b{')' * depth})") + ";"


def huge_scripts(size: int = ONE_MB, seed: int = 0) -> dict[str, str]:
    """Scripts of about ``size`` characters, each stressing a different part of the analyzer."""
    rng = random.Random(seed)
    base, query = WINDOW_QUERY + ";", WINDOW_QUERY
    insert = "INSERT INTO S{} " + query + ";\n"
    noise = "".join(chr(rng.choice((rng.randrange(32, 127), rng.randrange(0xA0, 0xD7FF),
                                    rng.randrange(0xE000, 0x10FFFF)))) for _ in range(size))
    return {
        "comment": f"-- {'x' * size}\n{base}",
        "string literal": query.replace("SUM(b)", f"SUM(b), '{'y' * size}' AS padding") + ";",
        "unicode noise": noise,
        "unicode noise after a script": base + "\n" + noise,
        "garbage tokens": " ".join(rng.choice(("SELECT", "(", ")", ",", "FROM", "a", "'s'", "GROUP", "BY", "1"))
                                   for _ in range(size // 2))[:size],
        "unclosed string": base + "\n'" + "z" * size,
        "many statements": "".join(insert.format(i) for i in range(size // len(insert.format(0)))),
        "wide select": "SELECT a, " + ", ".join(f"SUM(b + {i}) AS s{i}" for i in range(size // 24))
                       + " FROM MyTable GROUP BY a, TUMBLE(ts, INTERVAL '1' MINUTE);",
    }


def check(old: str, new: str) -> str:
    """The outcome of comparing ``old`` (valid) with ``new``: a verdict, or "invalid".

    Asserts, through the library and through the CLI's own entry point:

    * nothing but :class:`SQLModelError` escapes, and that names the file it is about;
    * when the new script cannot be read there is no verdict at all, so never FULL or PARTIAL;
    * a script that can be read, compared with itself, is never PARTIAL and never INCOMPATIBLE but
      for an emit setting (seed 000: those break compatibility even unchanged);
    * the command line gives the library's verdict, or refuses (exit 2, the file named) a script
      whose constructs the Spark job cannot run.
    """
    deployed = build(old, source="old.sql")
    try:
        model = build(new, source=SOURCE)
    except SQLModelError as error:
        assert str(error).startswith(SOURCE), f"the error does not name the file: {error}"
        outcome = "invalid"
    else:
        report = compare_models(deployed, model)
        report.to_text(), report.to_json(), report.to_markdown()
        # A second, separate build: state identities must not depend on one parse's objects.
        itself = compare_models(model, build(new, source=SOURCE))
        assert itself.verdict is not Verdict.PARTIAL, itself.to_text()
        assert all(f.rule.endswith("emit.enabled") for f in itself.findings
                   if f.effect is Verdict.INCOMPATIBLE), itself.to_text()
        outcome = report.verdict.value
    assert cli_outcome(old, new) == (outcome if outcome == "invalid" or runs(model) else "invalid")
    return outcome


def runs(model: JobModel) -> bool:
    """Whether the Spark job runs the windows, aggregates and joins of ``model``."""
    try:
        check_constructs(model)
    except SQLModelError as error:
        assert str(error).startswith(SOURCE), f"the refusal does not name the file: {error}"
        return False
    return True


def cli_outcome(old: str, new: str) -> str:
    """``stategate check`` in this process: exit 2 and one ``stategate:`` line, or a verdict."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / "old.sql", Path(folder) / SOURCE]
        for path, text in zip(paths, (old, new)):
            path.write_text(text, encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli_main(["check", *map(str, paths)])
    if status == 2:
        assert err.getvalue().startswith("stategate: ") and "Traceback" not in err.getvalue(), err.getvalue()
        return "invalid"
    assert status == 0 and not err.getvalue(), err.getvalue()
    return out.getvalue().split()[1]
