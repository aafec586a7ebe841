"""The ``flink`` sqlglot dialect: Flink SQL's streaming constructs on top of sqlglot's ANSI core.

sqlglot ships no Flink dialect, and Flink's windowing syntax does not parse in any of the shipped ones:
``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ...))`` passes a table and a descriptor as function
arguments, ``GROUP BY TUMBLE(ts, ...)`` is a grouping function rather than a scalar, DDL carries
``WATERMARK FOR`` and ``pt AS PROCTIME()`` columns, and UDTFs are joined with ``LATERAL TABLE(f(x))``.
Those become dedicated expression nodes here, so the job model reads them by type instead of guessing
from anonymous function names, and every node round-trips through :class:`Flink.Generator`.

Flink identifiers are case-sensitive and quoted with backticks; the dialect keeps their case.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy, build_regexp_extract, regexp_extract_sql
from sqlglot.helper import seq_get
from sqlglot.tokens import TokenType
from sqlglot.typing import annotate_by_numeric_arg

from stategate.analyzer.decimals import INTEGER_DIGITS, common, literal_digits, round_places, rounded, whole_digits
from stategate.analyzer.families import MAX_DIGITS

if t.TYPE_CHECKING:
    from sqlglot.optimizer.annotate_types import TypeAnnotator

WINDOW_KINDS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
#: The interval arguments of each window TVF by name, in their positional order (Flink's named
#: form: ``TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL ...)``).
NAMED_INTERVALS = {
    "TUMBLE": ("SIZE", "OFFSET"),
    "HOP": ("SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("STEP", "SIZE", "OFFSET"),
    "SESSION": ("GAP",),
}
#: Arguments a named call may leave out.
OPTIONAL_INTERVALS = ("OFFSET",)
GROUP_WINDOW_KINDS = ("TUMBLE", "HOP", "SESSION")
AUXILIARY_PROPERTIES = ("START", "END", "ROWTIME", "PROCTIME")


class Descriptor(exp.Expression):
    """``DESCRIPTOR(col, ...)``: names the time attribute column of a window TVF."""

    arg_types = {"expressions": True}


class WindowTableArg(exp.Expression):
    """``TABLE t [PARTITION BY k, ...]``: the input relation argument of a window TVF."""

    arg_types = {"this": True, "partition_by": False}


class WindowTVF(exp.Expression, exp.Func):
    """``TUMBLE|HOP|CUMULATE|SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL ...[, offset])``."""

    arg_types = {"kind": True, "table": True, "descriptor": True, "expressions": True}


class GroupWindow(exp.Expression, exp.Func):
    """Legacy group window ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)``, ``SESSION(ts, gap)`` in GROUP BY."""

    arg_types = {"kind": True, "this": True, "expressions": True}


class GroupWindowAuxiliary(exp.Expression, exp.Func):
    """``TUMBLE_START(ts, size)`` and its kin: a property of the enclosing legacy group window."""

    arg_types = {"kind": True, "property": True, "this": True, "expressions": True}


class LateralTable(exp.Expression):
    """``LATERAL TABLE(udtf(args)) [AS T(c1, c2)]``: a table function joined to each row."""

    arg_types = {"this": True, "alias": False}


class SystemFunction(exp.Property):
    """``SYSTEM`` of ``CREATE TEMPORARY SYSTEM FUNCTION``: a function without a catalog namespace.
    For state, it is a function like any other."""

    arg_types: t.ClassVar[dict[str, t.Any]] = {}


class FunctionLanguage(exp.Property):
    """``LANGUAGE JAVA|SCALA|PYTHON`` of ``CREATE FUNCTION``."""

    arg_types = {"this": True}


def _auxiliary_builders() -> dict[str, t.Callable[[list], exp.Expr]]:
    def builder(kind: str, prop: str) -> t.Callable[[list], exp.Expr]:
        return lambda args: GroupWindowAuxiliary(
            kind=exp.var(kind), property=exp.var(prop), this=args[0] if args else None,
            expressions=args[1:],
        )

    return {
        f"{kind}_{prop}": builder(kind, prop)
        for kind in GROUP_WINDOW_KINDS
        for prop in AUXILIARY_PROPERTIES
    }


#: Flink's names of the functions sqlglot parses into nodes named otherwise.
_FLINK_NAMES: dict[type[exp.Func], str] = {exp.JSONArrayAgg: "JSON_ARRAYAGG", exp.JSONObjectAgg: "JSON_OBJECTAGG",
                                           exp.ApproxDistinct: "APPROX_COUNT_DISTINCT"}


def function_name(node: exp.Func) -> str:
    """A function call's name as Flink spells it (upper case)."""
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    return _FLINK_NAMES.get(type(node)) or node.sql_name().upper()


class FlinkParser(parser.Parser):
    # Flink has no built-in SPLIT/ generic table functions: user functions with those names must stay
    # anonymous instead of being forced into sqlglot's Split arity.
    FUNCTIONS = {
        **{k: v for k, v in parser.Parser.FUNCTIONS.items() if k not in {"SPLIT"}},
        **_auxiliary_builders(),
        "TABLE": lambda args: exp.TableFromRows(this=args[0] if args else None),
        # REGEXP_EXTRACT(s, re[, group]): the third argument is the group (sqlglot's own reads a
        # position, which Spark's generator drops), 0 (the whole match) where none is written.
        "REGEXP_EXTRACT": build_regexp_extract(exp.RegexpExtract),
        # TIMESTAMPDIFF(unit, from, to): the unit first, as Flink writes it (sqlglot's own reads it last).
        "TIMESTAMPDIFF": lambda args: exp.TimestampDiff(this=seq_get(args, 2), expression=seq_get(args, 1),
                                                        unit=exp.var(args[0].name.upper()) if args else None),
        # TIMESTAMPADD(unit, count, time): likewise (sqlglot's own reads it as a call of unknown meaning).
        "TIMESTAMPADD": lambda args: exp.TimestampAdd(this=seq_get(args, 2), expression=seq_get(args, 1),
                                                      unit=exp.var(args[0].name.upper()) if args else None),
        # LOG10(x) and LOG2(x) stay themselves: sqlglot's own read them as LOG(10, x) and LOG(2, x),
        # which divide two logarithms (LOG(10, 1000) is 2.9999999999999996 on Flink and Spark alike).
        **{name: (lambda args, name=name: exp.Anonymous(this=name, expressions=args)) for name in ("LOG10", "LOG2")},
    }

    FUNC_TOKENS = {*parser.Parser.FUNC_TOKENS, TokenType.SESSION}

    FUNCTION_PARSERS = {
        **parser.Parser.FUNCTION_PARSERS,
        **{kind: (lambda self, k=kind: self._parse_window_function(k)) for kind in WINDOW_KINDS},
        "DESCRIPTOR": lambda self: self.expression(
            Descriptor(expressions=self._parse_csv(self._parse_column))
        ),
        # INITCAP(s): Flink's takes no delimiters (sqlglot's own adds its default ones to the call).
        "INITCAP": lambda self: self.expression(exp.Initcap.from_arg_list(self._parse_function_args())),
        # JSON_ARRAYAGG(value [ORDER BY ...] [NULL | ABSENT ON NULL]); JSON_OBJECTAGG is sqlglot's own.
        "JSON_ARRAYAGG": lambda self: self.expression(exp.JSONArrayAgg(
            this=self._parse_disjunction(), order=self._parse_order(),
            null_handling=self._parse_on_handling("NULL", "NULL", "ABSENT"))),
    }

    CONSTRAINT_PARSERS = {
        **parser.Parser.CONSTRAINT_PARSERS,
        "WATERMARK": lambda self: self.expression(
            exp.WatermarkColumnConstraint(
                this=self._match(TokenType.FOR) and self._parse_column(),
                expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
            )
        ),
    }

    SCHEMA_UNNAMED_CONSTRAINTS = {*parser.Parser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}

    PROPERTY_PARSERS = {
        **parser.Parser.PROPERTY_PARSERS,
        "LANGUAGE": lambda self: self._parse_function_language(),
        "SYSTEM": lambda self: self.expression(SystemFunction()),
    }

    def _parse_json_key_value(self) -> exp.JSONKeyValue | None:
        # JSON_OBJECTAGG(KEY k VALUE v): Flink takes any expression as the value (``qty > 40``),
        # where sqlglot's own stops before a comparison.
        self._match_text_seq("KEY")
        key = self._parse_column()
        self._match_set(self.JSON_KEY_VALUE_SEPARATOR_TOKENS)
        self._match_text_seq("VALUE")
        value = self._parse_disjunction()
        return self.expression(exp.JSONKeyValue(this=key, expression=value)) if key or value else None

    def _warn_unsupported(self) -> None:
        # sqlglot keeps a statement it cannot parse as an opaque Command (and logs a warning); a
        # job script whose meaning is unknown must not be compared, so that is a syntax error here.
        self.raise_error("unsupported syntax")

    def _parse_csv(self, parse_method: t.Callable[[], t.Any], sep: TokenType = TokenType.COMMA) -> list:
        # sqlglot skips empty list items (``SELECT a, , b``, ``GROUP BY a,``); Flink rejects them,
        # and a script with a dropped column must not be compared as if it were the one intended.
        items = [first] if (first := parse_method()) is not None else []
        while self._match(sep):
            separator = self._prev
            if items and isinstance(items[-1], exp.Expr):
                self._add_comments(items[-1])
            item = parse_method()
            if item is None or not items:
                self.raise_error(f"an item is missing before or after '{separator.text}'", separator)
            items.append(item)
        return items

    def _parse_group(self, skip_group_by_token: bool = False) -> exp.Group | None:
        # sqlglot also reads other dialects' suffixes (``GROUP BY a GROUPING SETS (...)``, ``WITH
        # ROLLUP``, ``WITH TOTALS``); in Flink they are syntax errors, and a mutated comma must not
        # turn into a different grouping.
        group = super()._parse_group(skip_group_by_token)
        if group is not None and any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals")):
            self.raise_error("GROUPING SETS, ROLLUP and CUBE go in the GROUP BY list, after a comma")
        return group

    def _parse_function_language(self) -> FunctionLanguage:
        language = self._parse_var_or_string()
        if language is None:  # raise_error returns when the parser collects its errors
            self.raise_error("LANGUAGE needs JAVA, SCALA or PYTHON")
        return self.expression(FunctionLanguage(this=exp.var(language.name.upper() if language else "")))

    def _parse_join(self, *args: t.Any, **kwargs: t.Any) -> exp.Join | None:
        # Likewise ``FROM t,``: sqlglot drops a comma join whose table does not parse.
        comma = self._curr if self._curr and self._curr.token_type == TokenType.COMMA else None
        join = super()._parse_join(*args, **kwargs)
        if comma is not None and join is None:
            self.raise_error("a table is missing after ','", comma)
        return join

    def _parse_window_function(self, kind: str) -> exp.Expr:
        if self._next is not None and self._next.token_type == TokenType.FARROW:
            return self._parse_named_window_function(kind)
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts()
            partition_by = []
            if self._match(TokenType.PARTITION_BY):
                # The key list and the DESCRIPTOR share one comma-separated argument list.
                partition_by.append(self._parse_disjunction())
                while self._match(TokenType.COMMA) and not self._curr.text.upper() == "DESCRIPTOR":
                    partition_by.append(self._parse_disjunction())
            else:
                self._match(TokenType.COMMA)
            arg = self.expression(WindowTableArg(this=table, partition_by=partition_by or None))
            descriptor = self._parse_disjunction()
            intervals = self._parse_csv(self._parse_disjunction) if self._match(TokenType.COMMA) else []
            return self.expression(
                WindowTVF(kind=exp.var(kind), table=arg, descriptor=descriptor, expressions=intervals)
            )
        args = self._parse_csv(self._parse_disjunction)
        return self.expression(
            GroupWindow(kind=exp.var(kind), this=args[0] if args else None, expressions=args[1:])
        )

    def _parse_named_window_function(self, kind: str) -> exp.Expr:
        """``KIND(DATA => TABLE t [PARTITION BY k, ...], TIMECOL => DESCRIPTOR(ts), SIZE => ...)``, in
        any order, as the positional call it stands for."""
        named: dict[str, t.Any] = {}
        while True:
            name_token = self._curr
            if name_token is None or self._next is None or self._next.token_type != TokenType.FARROW:
                self.raise_error(f"{kind} mixes named and positional arguments: name each one (NAME => value)")
            name = name_token.text.upper()
            if name in named:
                self.raise_error(f"{kind} names {name} twice", name_token)
            self._advance(2)
            if name == "DATA":
                if not self._match(TokenType.TABLE):
                    self.raise_error(f"{kind}'s DATA takes TABLE name")
                table = self._parse_table_parts()
                partition_by = []
                if self._match(TokenType.PARTITION_BY):
                    partition_by.append(self._parse_disjunction())
                    while self._curr is not None and self._curr.token_type == TokenType.COMMA and not (
                            self._index + 2 < len(self._tokens)
                            and self._tokens[self._index + 2].token_type == TokenType.FARROW):
                        self._advance()
                        partition_by.append(self._parse_disjunction())
                named[name] = self.expression(WindowTableArg(this=table, partition_by=partition_by or None))
            else:
                named[name] = self._parse_disjunction()
            if not self._match(TokenType.COMMA):
                break
        intervals = NAMED_INTERVALS[kind]
        unknown = sorted(set(named) - {"DATA", "TIMECOL", *intervals})
        missing = [n for n in ("DATA", "TIMECOL", *intervals) if n not in named and n not in OPTIONAL_INTERVALS]
        if unknown or missing:
            problems = ([f"unknown argument {', '.join(unknown)}"] if unknown else []) + (
                [f"missing {', '.join(missing)}"] if missing else [])
            self.raise_error(f"{kind}: {'; '.join(problems)} (it takes DATA, TIMECOL, {', '.join(intervals)})")
        return self.expression(WindowTVF(kind=exp.var(kind), table=named["DATA"], descriptor=named["TIMECOL"],
                                         expressions=[named[n] for n in intervals if n in named]))

    def _parse_lateral(self) -> exp.Lateral | None:
        index = self._index
        if self._match(TokenType.LATERAL) and self._match(TokenType.TABLE):
            self._match_l_paren()
            function = self._parse_function()
            self._match_r_paren()
            return self.expression(
                LateralTable(this=function, alias=self._parse_table_alias())
            )  # type: ignore[return-value]
        self._retreat(index)
        return super()._parse_lateral()


class FlinkGenerator(generator.Generator):
    TRANSFORMS = {
        **generator.Generator.TRANSFORMS,
        Descriptor: lambda self, e: self.func("DESCRIPTOR", *e.expressions),
        WindowTableArg: lambda self, e: "TABLE "
        + self.sql(e, "this")
        + (f" PARTITION BY {self.expressions(e, key='partition_by', flat=True)}"
           if e.args.get("partition_by") else ""),
        WindowTVF: lambda self, e: self.func(
            e.args["kind"].name, e.args["table"], e.args["descriptor"], *e.expressions
        ),
        GroupWindow: lambda self, e: self.func(e.args["kind"].name, e.this, *e.expressions),
        GroupWindowAuxiliary: lambda self, e: self.func(
            f"{e.args['kind'].name}_{e.args['property'].name}", e.this, *e.expressions
        ),
        LateralTable: lambda self, e: f"LATERAL TABLE({self.sql(e, 'this')})"
        + (f" AS {self.sql(e, 'alias')}" if e.args.get("alias") else ""),
        FunctionLanguage: lambda self, e: f"LANGUAGE {self.sql(e, 'this')}",
        SystemFunction: lambda self, e: "SYSTEM",
        # VVR's name, where sqlglot writes APPROX_DISTINCT.
        exp.ApproxDistinct: lambda self, e: self.func("APPROX_COUNT_DISTINCT", e.this, e.args.get("accuracy")),
        # Flink's spelling, where sqlglot writes ``key: value``.
        exp.JSONKeyValue: lambda self, e: f"KEY {self.sql(e, 'this')} VALUE {self.sql(e, 'expression')}",
        # REGEXP_EXTRACT(s, re): group 0 (the whole match) is Flink's default, written as it was.
        exp.RegexpExtract: regexp_extract_sql,
        exp.TimestampDiff: lambda self, e: self.func("TIMESTAMPDIFF", e.args.get("unit"), e.expression, e.this),
        exp.TimestampAdd: lambda self, e: self.func("TIMESTAMPADD", e.args.get("unit"), e.expression, e.this),
    }

    TYPE_MAPPING = {**generator.Generator.TYPE_MAPPING, exp.DataType.Type.STRUCT: "ROW",
                    exp.DataType.Type.LIST: "MULTISET"}

    PROPERTIES_LOCATION = {
        **generator.Generator.PROPERTIES_LOCATION,
        FunctionLanguage: exp.Properties.Location.POST_EXPRESSION,
        SystemFunction: exp.Properties.Location.POST_CREATE,
    }

    def property_sql(self, expression: exp.Property) -> str:
        # Flink's WITH options keep their keys quoted: 'connector' = 'filesystem'.
        key = expression.args.get("this")
        if isinstance(key, exp.Literal) and key.is_string:
            return f"{self.sql(key)} = {self.sql(expression, 'value')}"
        return super().property_sql(expression)


def _annotate_div(annotator: TypeAnnotator, div: exp.Div) -> exp.Div:
    """Flink divides integers as integers, in the wider operand's type (``7 / 2`` is the INT 3, a
    TINYINT by a TINYINT a TINYINT); any other division as sqlglot types it."""
    left, right = div.left.type, div.right.type
    if left is not None and right is not None and left.this in exp.DataType.INTEGER_TYPES \
            and right.this in exp.DataType.INTEGER_TYPES:
        annotator._set_type(div, annotator._maybe_coerce(left, right))
        return div
    return annotator._annotate_div(div)


def _annotate_round(annotator: TypeAnnotator, node: exp.Round | exp.Trunc) -> exp.Round | exp.Trunc:
    """Flink rounds (ROUND) or truncates (TRUNCATE) a number in its own kind: an integer or a
    floating-point number keeps its type, a DECIMAL is one of :func:`analyzer.decimals.rounded`'s
    digits; sqlglot calls any a DOUBLE."""
    kind, places = node.this.type, round_places(node)
    if kind is None or places is None or not kind.is_type(*exp.DataType.NUMERIC_TYPES):
        annotator._set_type(node, exp.DataType.Type.DOUBLE)
    elif kind.this == exp.DataType.Type.DECIMAL and len(kind.expressions) == 2:
        declared, scale = (int(e.name) for e in kind.expressions)
        precision, scale = rounded(declared, scale, places)
        annotator._set_type(node, exp.DataType.build(f"DECIMAL({precision}, {scale})"))
    else:
        annotator._set_type(node, kind)
    return node


#: The integer types Flink and Spark share, narrowest first.
_INTEGERS = (exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT, exp.DType.BIGINT)


def _annotate_floor(annotator: TypeAnnotator, node: exp.Floor | exp.Ceil) -> exp.Expr:
    """``FLOOR(t TO HOUR)`` and ``CEIL(t TO DAY)`` are of their time's type. Of a number, of its
    kind, as Flink types them: an integer's and a floating-point number's their own type, a
    DECIMAL(p, s)'s a DECIMAL of scale 0 (:func:`whole_digits`). (The job computes them so, but
    in a group key's state: ``spark_jobs.expressions.to_column``'s ``state_key``.)"""
    kind = node.this.type
    if node.args.get("to") is not None and kind is not None:
        annotator._set_type(node, kind)
        return node
    digits = _declared_digits(kind) if kind is not None and kind.is_type(exp.DType.DECIMAL) else None
    if digits is not None and not node.args.get("decimals"):
        annotator._set_type(node, exp.DataType.build(f"DECIMAL({whole_digits(*digits)}, 0)"))
        return node
    return annotate_by_numeric_arg(annotator, node)


#: The units by which ``TIMESTAMPADD`` moves a DATE to a DATE; by any other, to a TIMESTAMP(6).
WHOLE_DAYS = frozenset({"DAY", "WEEK", "MONTH", "QUARTER", "YEAR"})


def _annotate_timestamp_add(annotator: TypeAnnotator, node: exp.TimestampAdd) -> exp.TimestampAdd:
    """``TIMESTAMPADD(unit, n, t)`` is of ``t``'s type, as Flink types it: a DATE moved by
    :data:`WHOLE_DAYS` stays a DATE, by hours, minutes or seconds it is a TIMESTAMP(6), and a
    TIMESTAMP moved by milliseconds keeps at least their digits. (sqlglot's is a TIMESTAMP of no
    digits of a second, whose text would drop a TIMESTAMP(3)'s.)"""
    kind, unit = node.this.type, node.text("unit").upper()
    if kind is not None and kind.is_type(exp.DType.DATE):
        annotator._set_type(node, kind if unit in WHOLE_DAYS else exp.DataType.build("TIMESTAMP(6)"))
    elif kind is not None and kind.is_type(*exp.DataType.TEMPORAL_TYPES):
        digits = int(kind.expressions[0].name) if kind.expressions else None
        if unit == "MILLISECOND" and digits is not None and digits < 3:
            kind = exp.DataType.build(f"{kind.this.value}(3)")
        annotator._set_type(node, kind)
    else:
        annotator._set_type(node, exp.DType.TIMESTAMP)
    return node


#: The nodes whose value is one of their operands' (NULLs aside), and so of their operands' common type.
ONE_OF_OPERANDS = (exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least)
OneOfOperands = t.Union[exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least]


def value_operands(node: OneOfOperands) -> list[exp.Expr]:
    """The operands whose value a node of :data:`ONE_OF_OPERANDS` takes: a CASE's branches (each
    a WHEN's THEN, and its ELSE), an IF's two, every argument of a COALESCE, GREATEST or LEAST."""
    if isinstance(node, exp.Case):
        return [*(when.args["true"] for when in node.args.get("ifs") or []),
                *([node.args["default"]] if node.args.get("default") else [])]
    if isinstance(node, exp.If):
        return [node.args["true"], *([node.args["false"]] if node.args.get("false") is not None else [])]
    return [node.this, *node.expressions]


def _common_number(types: list[exp.DataType]) -> exp.DataType | None:
    """The type of a value that is one of numbers of ``types`` (NULLs aside), as Spark types it, and
    Flink but beside a FLOAT: a FLOAT or a DOUBLE beside any other number makes a DOUBLE (Flink
    keeps a FLOAT beside integers, and in a COALESCE or GREATEST beside a DECIMAL: a floating-point
    value either way); integers are the widest of them; DECIMALs and integers are a DECIMAL of every
    whole digit and place any of them has (:func:`decimals.common`; past 38 digits Spark's, which
    cuts the whole digits). None where one is no such number, or a DECIMAL of no certain digits."""
    kinds = [kind for kind in types if not kind.is_type(exp.DType.NULL)]
    if not kinds or not all(kind.is_type(*_INTEGERS, exp.DType.DECIMAL, exp.DType.FLOAT, exp.DType.DOUBLE)
                            for kind in kinds):
        return None
    if all(kind.is_type(exp.DType.FLOAT) for kind in kinds):
        return exp.DataType.build("FLOAT")
    if any(kind.is_type(exp.DType.FLOAT, exp.DType.DOUBLE) for kind in kinds):
        return exp.DataType.build("DOUBLE")
    if all(kind.is_type(*_INTEGERS) for kind in kinds):
        return exp.DataType.build(max((kind.this for kind in kinds), key=_INTEGERS.index))
    found = [(INTEGER_DIGITS[kind.this], 0) if kind.is_type(*_INTEGERS) else _declared_digits(kind) for kind in kinds]
    digits = [known for known in found if known is not None]
    if len(digits) < len(found):
        return None
    # Past 38 digits, Spark's: the scale kept, the whole digits cut.
    precision, scale = common(digits) or (MAX_DIGITS, max(scale for _, scale in digits))
    return exp.DataType.build(f"DECIMAL({precision}, {scale})")


def _declared_digits(kind: exp.DataType) -> tuple[int, int] | None:
    """A DECIMAL type's (precision, scale), where it has both."""
    if len(kind.expressions) != 2:
        return None
    return int(kind.expressions[0].name), int(kind.expressions[1].name)


#: sqlglot's own annotators of the nodes :func:`_annotate_one_of` types where they are numbers.
_SQLGLOT_ANNOTATORS = {kind: Dialect.EXPRESSION_METADATA[kind]["annotator"] for kind in ONE_OF_OPERANDS}


def _annotate_one_of(annotator: TypeAnnotator, node: OneOfOperands) -> exp.Expr:
    """A node of :data:`ONE_OF_OPERANDS` over numbers is of their common type
    (:func:`_common_number`), where sqlglot keeps a DECIMAL of any digits over a DOUBLE (so the gate
    placed ``MAX(CASE WHEN ... THEN price ELSE score END)`` in a slot of exact numbers, and the job
    then refused it); over anything else, as sqlglot types it."""
    found = _common_number([_operand_type(operand) for operand in value_operands(node)])
    if found is None:
        return _SQLGLOT_ANNOTATORS[type(node)](annotator, node)
    annotator._set_type(node, found)
    return node


def _operand_type(operand: exp.Expr) -> exp.DataType:
    """An operand's type as the engines type it: a number literal with a point is a DECIMAL of its
    own digits (``0.5`` a DECIMAL(1, 1)), where sqlglot's is a DOUBLE."""
    literal = operand.unnest()
    digits = literal_digits(literal) if isinstance(literal, exp.Literal) and literal.is_number else None
    if digits is not None and not literal.is_int:
        return exp.DataType.build(f"DECIMAL({digits[0]}, {digits[1]})")
    return operand.type or exp.DataType.build("UNKNOWN")


def _annotate_first_operand(annotator: TypeAnnotator, node: exp.Nullif | exp.Sign) -> exp.Expr:
    """``NULLIF(a, b)`` is of ``a``'s type, on Flink and Spark alike (sqlglot's is both operands'
    common one); ``SIGN(x)`` of ``x``'s, on Flink (sqlglot's is an INT, Spark's a DOUBLE: the job
    computes Flink's, ``spark_jobs.expressions``)."""
    annotator._set_type(node, node.this.type)
    return node


class Flink(Dialect):
    NORMALIZATION_STRATEGY = NormalizationStrategy.CASE_SENSITIVE
    EXPRESSION_METADATA = {**Dialect.EXPRESSION_METADATA, exp.Div: {"annotator": _annotate_div},
                           exp.Round: {"annotator": _annotate_round}, exp.Trunc: {"annotator": _annotate_round},
                           exp.Floor: {"annotator": _annotate_floor}, exp.Ceil: {"annotator": _annotate_floor},
                           **{kind: {"annotator": _annotate_one_of} for kind in ONE_OF_OPERANDS},
                           exp.Nullif: {"annotator": _annotate_first_operand},
                           exp.Sign: {"annotator": _annotate_first_operand},
                           exp.TimestampAdd: {"annotator": _annotate_timestamp_add}}
    # Flink's planner collates NULL low (FlinkPlannerImpl.defaultNullCollation = LOW): first when
    # ascending, last when descending. The parser fills in that default where no NULLS is written.
    NULL_ORDERING = "nulls_are_small"
    # Flink's CONCAT_WS skips NULL arguments (a NULL separator gives NULL), as Spark's does.
    CONCAT_WS_COALESCE = True

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'"]
        STRING_ESCAPES = ["'", "\\"]
        # EXECUTE opens a statement set (``EXECUTE STATEMENT SET BEGIN ... END``), whose INSERTs
        # must stay statements of their own, not the text of one opaque command.
        COMMANDS = tokens.Tokenizer.COMMANDS - {TokenType.EXECUTE}
        # Flink's comments do not nest: the first */ closes /* a /* b */.
        NESTED_COMMENTS = False
        # ROW<name TYPE, ...> (and ROW(name TYPE, ...)) is Flink's nested row type, as Presto's ROW;
        # MULTISET<T> (COLLECT's result) its nested bag, held as sqlglot's LIST (Flink has no LIST).
        KEYWORDS = {**{k: v for k, v in tokens.Tokenizer.KEYWORDS.items() if k != "LIST"},
                    "ROW": TokenType.STRUCT, "MULTISET": TokenType.LIST}

    Parser = FlinkParser
    Generator = FlinkGenerator
