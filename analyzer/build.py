"""SQL script → :class:`JobModel`. Parsing happens here and only here (parse once).

A script is split into statements on the tokenizer's semicolons, so every error can name the line of
the statement it comes from; each statement is parsed with the ``flink`` dialect and dispatched by
type: DDL fills the catalog, ``SET`` fills settings, ``INSERT INTO`` / ``SELECT`` become pipelines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from stategate.analyzer.dialect import Flink, FunctionLanguage
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.intervals import interval_ms
from stategate.analyzer.lineage import Resolver
from stategate.analyzer.scope import Relation, field_access, source_column
from stategate.analyzer.model import Column, Function, JobModel, Output, Pipeline, Resolved, Role, Table, View
from stategate.analyzer.scan import Span, prepare
from stategate.analyzer.stack import MAX_NESTING, deep

_DIALECT = Flink()


@dataclass(frozen=True)
class Statement:
    node: exp.Expr
    line: int
    text: str


def parse_statements(sql: str, source: str = "<sql>") -> list[Statement]:
    """Parse a script into located statements; errors carry file, line and column.

    Statements are split on the scanned text, so a plain ``INSERT INTO name <query>`` whose query
    text was parsed before is neither tokenized nor parsed again: generated scripts fan one query out
    to many sinks (40,000 INSERTs of a few bodies), and sqlglot's tokenizer alone reads about
    1.5 s per MB. Its pipelines share the parsed body, which :func:`_build` resolves once."""
    script = prepare(sql, source)
    sql = script.text
    statements: list[Statement] = []
    bodies: dict[str, exp.Expr] = {}  # INSERT bodies parsed so far, by their text
    sets = _StatementSets(source)
    for span in script.statements():
        text = sql[span.start:span.end].rstrip()
        target, body = _insert_parts(text)
        if body is not None and body in bodies:  # an INSERT: welcome inside a statement set or out
            statements.append(Statement(exp.Insert(this=target, expression=bodies[body]), span.line, text))
            continue
        chunk = sets.unwrap(_tokens(sql, span, source))
        if not chunk:
            continue
        text = sql[chunk[0].start : chunk[-1].end + 1]
        try:
            nodes = _DIALECT.parser().parse(chunk, sql)
        except ParseError as error:
            detail = error.errors[0] if error.errors else {}
            raise SQLModelError(
                f"syntax error: {detail.get('description', str(error))}",
                source=source,
                line=detail.get("line"),
                col=detail.get("col"),
                clause=_first_line(text),
            ) from None
        statements.extend(Statement(n, chunk[0].line, text) for n in nodes if n is not None)
        if body is not None and len(nodes) == 1 and isinstance(nodes[0], exp.Insert) \
                and not nodes[0].args.get("with_") and nodes[0].expression is not None:
            bodies[body] = nodes[0].expression
    sets.close()
    return statements


#: ``INSERT INTO name`` (or a quoted name) and the query text after it.
_PLAIN_INSERT = re.compile(r"INSERT\s+INTO\s+(?:`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*))\s+(?=[^\s(.])", re.I)


def _insert_parts(text: str) -> tuple[exp.Table | None, str | None]:
    """The target of a plain ``INSERT INTO name <query>`` and its query's text; None otherwise."""
    match = _PLAIN_INSERT.match(text)
    if match is None:
        return None, None
    quoted, plain = match.groups()
    name = quoted.replace("``", "`") if quoted is not None else plain
    return exp.Table(this=exp.to_identifier(name, quoted=quoted is not None)), text[match.end():]


def _tokens(sql: str, span: Span, source: str) -> list[Token]:
    """The tokens of one statement, placed in the script (lines, columns and offsets as if the whole
    script had been tokenized)."""
    try:
        tokens = _DIALECT.tokenize(sql[span.start:span.end])
    except TokenError as error:
        raise SQLModelError(f"cannot tokenize: {error}", source=source, line=span.line, col=span.col) from None
    for token in tokens:
        if token.line == 1:
            token.col += span.col - 1
        token.line += span.line - 1
        token.start += span.start
        token.end += span.start
    return tokens


_EXECUTE_SET = ("EXECUTE", "STATEMENT", "SET", "BEGIN")
_BEGIN_SET = ("BEGIN", "STATEMENT", "SET")
_SET_WORDS = (TokenType.EXECUTE, TokenType.BEGIN, TokenType.END)


class _StatementSets:
    """Flink's statement-set wrappers, taken off the statements of a script one by one.

    ``EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END;`` and ``BEGIN STATEMENT SET;
    INSERT ...; END;`` submit several INSERTs as one job: here, as on Spark, every INSERT is a
    pipeline of the job anyway, so the wrapper itself changes no state. Only INSERTs may stand in a
    set, and a set must be closed."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.opened: Token | None = None

    def unwrap(self, chunk: list[Token]) -> list[Token]:
        """The statement's tokens without a set's opening or closing words; [] when nothing is left."""
        if not chunk:
            return chunk
        words = tuple(t.text.upper() for t in chunk[:4]) if chunk[0].token_type in _SET_WORDS else ()
        if words[:3] == _BEGIN_SET and len(chunk) == 3 or words == _EXECUTE_SET:
            if self.opened is not None:
                raise _set_error("a statement set inside a statement set", chunk[0], self.source)
            self.opened, chunk = chunk[0], chunk[len(_EXECUTE_SET):] if words == _EXECUTE_SET else []
        elif words == ("END",) and len(chunk) == 1:
            if self.opened is None:
                raise _set_error("END without BEGIN STATEMENT SET", chunk[0], self.source)
            self.opened, chunk = None, []
        if chunk and self.opened is not None and chunk[0].text.upper() != "INSERT":
            raise _set_error(f"only INSERT INTO statements may stand in a statement set, not "
                             f"{chunk[0].text.upper()}", chunk[0], self.source)
        return chunk

    def close(self) -> None:
        if self.opened is not None:
            raise _set_error("the statement set is not closed with END;", self.opened, self.source)


def _set_error(problem: str, token: Token, source: str) -> SQLModelError:
    return SQLModelError(f"syntax error: {problem}", source=source, line=token.line, col=token.col,
                         clause="STATEMENT SET")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:80]


@deep
def build(sql: str, source: str = "<sql>") -> JobModel:
    """The job model of a whole script (on a stack deep enough for :data:`MAX_NESTING` levels)."""
    try:
        return _build(sql, source)
    except RecursionError:
        # Nesting is bounded by the scan; what recurses past the stack here is another chain, say
        # tens of thousands of operators in one expression.
        raise SQLModelError(f"the script nests expressions too deeply to analyse (more than {MAX_NESTING} "
                            "levels, or an operator chain as deep)", source=source) from None


def _build(sql: str, source: str) -> JobModel:
    if not sql.strip():
        raise SQLModelError("the script is empty", source=source)
    statements = parse_statements(sql, source)
    if not statements:
        raise SQLModelError("the script has no statements (only comments)", source=source)
    script = _Script()
    for statement in statements:
        try:
            script.dispatch(statement)
        except SQLModelError as error:
            raise _locate(error, source, statement) from None
    resolver = Resolver(script.tables, script.views, script.functions)
    pipelines: list[Pipeline] = []
    resolved: dict[int, Relation] = {}  # a query body shared by several INSERTs resolves once
    for index, (statement, sink, query) in enumerate(script.queries, start=1):
        try:
            relation = resolved.get(id(query)) or resolver.query(query)
        except SQLModelError as error:
            raise _locate(error, source, statement) from None
        resolved[id(query)] = relation
        pipelines.append(_pipeline(relation, sink, index, statement))
    return JobModel(
        tables=script.tables, views=script.view_models, functions=script.functions, settings=script.settings,
        pipelines=tuple(pipelines), source=source,
    )


def build_file(path: str | Path) -> JobModel:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SQLModelError(f"cannot read the file: {error}", source=str(path)) from None
    return build(text, source=str(path))


def _locate(error: SQLModelError, source: str, statement: Statement) -> SQLModelError:
    return SQLModelError(
        error.message,
        source=source,
        line=error.line or statement.line,
        col=error.col,
        clause=error.clause or _first_line(statement.text),
    )


@dataclass
class _Script:
    """What a script's statements declare, in their order. A table and a view share one namespace,
    functions another; as on Flink, a second CREATE of a name is refused (a query would otherwise
    read whichever definition came last, wherever it stands), and with IF NOT EXISTS it is skipped,
    the first kept."""

    tables: dict[str, Table] = field(default_factory=dict)
    views: dict[str, exp.Query] = field(default_factory=dict)
    view_models: dict[str, View] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    queries: list[tuple[Statement, str | None, exp.Expr]] = field(default_factory=list)
    #: Where each name was declared, by namespace ("TABLE" for tables and views) and name.
    declared: dict[tuple[str, str], int] = field(default_factory=dict)

    def dispatch(self, statement: Statement) -> None:
        node = statement.node
        if isinstance(node, exp.Create):
            self._create(node, statement.line)
        elif isinstance(node, exp.Set):
            for item in node.expressions:
                assignment = item.this
                if not isinstance(assignment, exp.EQ):
                    raise SQLModelError("SET expects 'key' = 'value'")
                self.settings[assignment.this.name] = assignment.expression.name
        elif isinstance(node, exp.Insert):
            target = node.this
            sink = target.this.name if isinstance(target, exp.Schema) else target.name
            if node.expression is None:
                raise SQLModelError(f"INSERT INTO {sink} has no query")
            self.queries.append((statement, sink, _with_leading_ctes(node)))
        elif isinstance(node, (exp.Select, exp.Subquery)):
            self.queries.append((statement, None, node))
        elif isinstance(node, exp.Query):
            raise SQLModelError(f"unsupported query form {node.key.upper()}: only SELECT queries are supported")
        else:
            raise SQLModelError(
                f"unsupported statement {_first_line(statement.text).split(' ')[0].upper()}: expected "
                "CREATE TABLE / TEMPORARY VIEW / FUNCTION, SET, INSERT INTO or SELECT"
            )

    def _create(self, node: exp.Create, line: int) -> None:
        kind = (node.args.get("kind") or "").upper()
        if kind not in ("TABLE", "VIEW", "FUNCTION"):
            raise SQLModelError(f"unsupported statement CREATE {kind}")
        if not self._declares(node, kind, line):
            return
        if kind == "TABLE":
            table = _table(node, line)
            self.tables[table.name] = table
        elif kind == "VIEW":
            name = node.this.name
            if not isinstance(node.expression, exp.Query):
                raise SQLModelError(f"CREATE TEMPORARY VIEW {name} needs AS SELECT ...")
            self.views[name] = node.expression
            self.view_models[name] = View(name, node.expression.sql(dialect=Flink))
        else:
            function = _function(node)
            self.functions[function.name] = function

    def _declares(self, node: exp.Create, kind: str, line: int) -> bool:
        """Whether the CREATE at ``line`` declares its name: False for IF NOT EXISTS of a declared one."""
        name = node.this.this.name if isinstance(node.this, exp.Schema) else node.this.name
        namespace = "FUNCTION" if kind == "FUNCTION" else "TABLE"
        first = self.declared.get((namespace, name))
        if first is None:
            self.declared[namespace, name] = line
            return True
        if node.args.get("exists"):
            return False
        what = "function" if kind == "FUNCTION" else "table or view"
        raise SQLModelError(f"{name} is already declared, at line {first}: Flink refuses a second CREATE of a {what} "
                            "name; use another name, or CREATE ... IF NOT EXISTS to keep the first")


def _with_leading_ctes(insert: exp.Insert) -> exp.Expr:
    """The query of an INSERT, with the common tables of a ``WITH ... INSERT INTO`` before it (sqlglot
    hangs those on the INSERT): they are in scope of the query as if written after INSERT INTO."""
    query, leading = insert.expression, insert.args.get("with_")
    if leading is None:
        return query
    if not isinstance(query, exp.Select):
        raise SQLModelError(f"unsupported query form {query.key.upper()}: only SELECT queries are supported")
    query = query.copy()
    own = query.args.get("with_")
    query.set("with_", exp.With(expressions=[*(c.copy() for c in leading.expressions),
                                             *(own.expressions if own else [])],
                                recursive=leading.args.get("recursive")))
    return query


def _table(node: exp.Create, line: int) -> Table:
    schema = node.this
    if not isinstance(schema, exp.Schema):
        raise SQLModelError("CREATE TABLE needs a column list")
    name = schema.this.name
    columns: list[Column] = []
    rowtime = proctime = None
    watermark = None
    delay = None
    raw = {e.name: e for e in schema.expressions if isinstance(e, exp.ColumnDef)}
    primary = {key.name for e in schema.expressions if isinstance(e, exp.PrimaryKey) for key in e.expressions}
    for element in schema.expressions:
        if isinstance(element, exp.ColumnDef):
            computed = next(
                (c.args["kind"].this for c in element.args.get("constraints") or []
                 if isinstance(c.args.get("kind"), exp.ComputedColumnConstraint)),
                None,
            )
            if computed is not None and _is_proctime(computed):
                proctime = element.name
            resolved = None
            if computed is not None:
                resolved = Resolved.of(computed.copy().transform(lambda n: _own_column(n, name, raw)), computed)
            kind = element.args.get("kind")
            not_null = element.name in primary or any(
                isinstance(c.args.get("kind"), exp.NotNullColumnConstraint) and not c.args["kind"].args.get("allow_null")
                for c in element.args.get("constraints") or [])
            columns.append(Column(element.name, kind.sql(dialect=Flink) if kind else None, resolved, not_null))
        elif isinstance(element, exp.WatermarkColumnConstraint):
            if rowtime is not None:
                raise SQLModelError(f"table {name} declares a second WATERMARK (on {element.this.name}): "
                                    f"a table has one time attribute, here {rowtime}")
            rowtime = element.this.name
            if rowtime not in raw:
                raise SQLModelError(f"WATERMARK FOR {rowtime}: no such column in {name}")
            strategy = element.expression
            watermark = Resolved.of(strategy, strategy)
            delay = _watermark_delay(strategy, rowtime)
    options: dict[str, str] = {}
    partition_keys: tuple[str, ...] = ()
    properties = node.args.get("properties")
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.LikeProperty):
            raise SQLModelError(f"CREATE TABLE {name} ... LIKE {prop.this.name} is not supported: declare "
                                "the columns of the table")
        if isinstance(prop, exp.PartitionedByProperty):
            partition_keys = tuple(key.name for key in prop.this.expressions)
            unknown = [key for key in partition_keys if key not in raw]
            if unknown:
                raise SQLModelError(f"PARTITIONED BY ({', '.join(unknown)}): no such column in {name}")
        elif type(prop) is exp.Property:  # a WITH ('key' = 'value') option
            options[prop.name] = prop.args["value"].name
        # A table COMMENT touches neither state nor the engine.
    return Table(name, tuple(columns), options, rowtime, watermark, delay, proctime, line, partition_keys)


def _is_proctime(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.upper() == "PROCTIME"


def _own_column(node: exp.Expr, table: str, columns: Mapping[str, exp.ColumnDef]) -> exp.Expr:
    """In a computed column, a reference to another column of the table (``price``), or to a field
    of one of its ROW columns (``bid.dateTime``), resolved."""
    if not isinstance(node, exp.Column):
        return node
    parts = [part.name for part in node.parts]
    if parts[0] not in columns:
        return node
    return field_access(source_column(table, parts[0]), parts[1:])


def _watermark_delay(strategy: exp.Expr, rowtime: str) -> int | None:
    """Delay of ``ts - INTERVAL ...`` (0 for ``ts``); None for strategies Spark cannot express."""
    if isinstance(strategy, exp.Column) and strategy.name == rowtime:
        return 0
    if isinstance(strategy, exp.Sub) and isinstance(strategy.this, exp.Column) \
            and strategy.this.name == rowtime and isinstance(strategy.expression, exp.Interval):
        return interval_ms(strategy.expression)
    return None


def _function(node: exp.Create) -> Function:
    language = "JAVA"
    properties = node.args.get("properties")
    for prop in properties.expressions if properties else []:
        if isinstance(prop, FunctionLanguage):
            language = prop.this.name.upper()
    class_name = node.expression.name if isinstance(node.expression, exp.Literal) else ""
    return Function(node.this.name, class_name, language)


def _pipeline(relation: Relation, sink: str | None, index: int, statement: Statement) -> Pipeline:
    outputs = tuple(relation.outputs) or tuple(
        Output(n, Resolved.of(relation.columns[n]), Role.EXPRESSION) for n in relation.names
    )
    return Pipeline(
        name=sink or f"select#{index}",
        sink=sink,
        aggregate=relation.aggregate,
        topn=relation.topn,
        outputs=outputs,
        line=statement.line,
        written=statement.text,
        unsupported=tuple(relation.unsupported),
        joins=tuple(relation.joins),
        joined=tuple(relation.joined),
        join=relation.join,
    )
