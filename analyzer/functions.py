"""The scalar functions a job may call: the ones Spark has, and Flink's that the engine writes otherwise.

The engine runs a job's expressions as Spark SQL (sqlglot's Spark generator over the model), which
Spark parses when the job starts. A function Spark has not (Flink's ``JSON_VALUE``, a user-defined
function) used to stop the job there, after the gate had stopped, archived or restarted the deployed
one. The gate now refuses it by name at its place (:func:`spark_lacks`), from Spark's own registry
(:data:`SPARK_FUNCTIONS`, recorded from Spark 4.2 and compared with the running Spark by the tests).

Some of Flink's functions Spark has not, or has under the same name and computes otherwise; each of
:data:`FLINK_FUNCTIONS` is written in Spark's SQL as Flink computes it (:func:`flink_call`,
which the engine's translation calls for every node), checked against Flink's own results in
``tests/data/flink/flink_functions.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import ErrorLevel, exp
from sqlglot.generators.spark import SparkGenerator

from stategate.analyzer.aggregates import AGGREGATES
from stategate.analyzer.dialect import GroupWindow, GroupWindowAuxiliary, WindowTVF, function_name
from stategate.analyzer.value_types import Typing

#: The functions Spark 4.2 calls by name: its registry (``SHOW SYSTEM FUNCTIONS``, names only, not
#: its operators) and the two its grammar reads itself. ``tests/spark_jobs/test_functions.py``
#: compares the registry with the running Spark's, so an upgrade that adds or drops one is seen.
SPARK_GRAMMAR = frozenset({"timestampadd", "timestampdiff"})
SPARK_FUNCTIONS = SPARK_GRAMMAR | frozenset("""
abs acos acosh add_months aes_decrypt aes_encrypt aggregate and any any_value approx_count_distinct
approx_percentile approx_top_k approx_top_k_accumulate approx_top_k_combine approx_top_k_estimate array
array_agg array_append array_compact array_contains array_distinct array_except array_insert array_intersect
array_join array_max array_min array_position array_prepend array_remove array_repeat array_size array_sort
array_union arrays_overlap arrays_zip ascii asin asinh assert_true atan atan2 atanh avg base64 between bigint
bin binary bit_and bit_count bit_get bit_length bit_or bit_xor bitmap_and_agg bitmap_bit_position
bitmap_bucket_number bitmap_construct_agg bitmap_count bitmap_or_agg bool_and bool_or boolean bround btrim
cardinality case cast cbrt ceil ceiling char char_length character_length chr coalesce collate collation
collations collect_list collect_set concat concat_ws contains conv convert_timezone corr cos cosh cot count
count_if count_min_sketch covar_pop covar_samp crc32 csc cume_dist curdate current_catalog current_database
current_date current_path current_schema current_time current_timestamp current_timezone current_user date
date_add date_diff date_format date_from_unix_date date_part date_sub date_trunc dateadd datediff datepart day
dayname dayofmonth dayofweek dayofyear decimal decode degrees dense_rank div double e element_at elt encode
endswith equal_null every exists exp explode explode_outer expm1 extract factorial filter find_in_set first
first_value flatten float floor forall format_number format_string from_avro from_csv from_json from_protobuf
from_unixtime from_utc_timestamp from_xml get get_json_object getbit greatest grouping grouping_id hash hex
histogram_numeric hll_sketch_agg hll_sketch_estimate hll_union hll_union_agg hour hypot if ifnull ilike in
initcap inline inline_outer input_file_block_length input_file_block_start input_file_name instr int
is_valid_utf8 is_valid_variant is_variant_null isnan isnotnull isnull java_method json_array_length
json_object_keys json_tuple kll_merge_agg_bigint kll_merge_agg_double kll_merge_agg_float kll_sketch_agg_bigint
kll_sketch_agg_double kll_sketch_agg_float kll_sketch_get_n_bigint kll_sketch_get_n_double
kll_sketch_get_n_float kll_sketch_get_quantile_bigint kll_sketch_get_quantile_double
kll_sketch_get_quantile_float kll_sketch_get_rank_bigint kll_sketch_get_rank_double kll_sketch_get_rank_float
kll_sketch_merge_bigint kll_sketch_merge_double kll_sketch_merge_float kll_sketch_to_string_bigint
kll_sketch_to_string_double kll_sketch_to_string_float kurtosis lag last last_day last_value lcase lead least
left len length levenshtein like listagg ln localtimestamp locate log log10 log1p log2 lower lpad ltrim
luhn_check make_date make_dt_interval make_interval make_time make_timestamp make_timestamp_ltz
make_timestamp_ntz make_valid_utf8 make_ym_interval map map_concat map_contains_key map_entries map_filter
map_from_arrays map_from_entries map_keys map_values map_zip_with mask max max_by md5 mean measure median min
min_by minute mod mode monotonically_increasing_id month monthname months_between named_struct nanvl negative
next_day not now nth_value ntile nullif nullifzero nvl nvl2 octet_length or overlay parse_json parse_url
percent_rank percentile percentile_approx percentile_cont percentile_disc pi pmod posexplode posexplode_outer
position positive pow power printf python_worker_logs quarter quote radians raise_error rand randn random
randstr range rank reduce reflect regexp regexp_count regexp_extract regexp_extract_all regexp_instr regexp_like
regexp_replace regexp_substr regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy
regr_syy repeat replace reverse right rint rlike round row_number rpad rtrim schema_of_avro schema_of_csv
schema_of_json schema_of_variant schema_of_variant_agg schema_of_xml sec second sentences sequence session_user
session_window sha sha1 sha2 shiftleft shiftright shiftrightunsigned shuffle sign signum sin sinh size skewness
slice smallint some sort_array soundex space spark_partition_id split split_part sql_keywords sqrt st_asbinary
st_geogfromwkb st_geomfromwkb st_setsrid st_srid stack startswith std stddev stddev_pop stddev_samp str_to_map
string string_agg struct substr substring substring_index sum tan tanh theta_difference theta_intersection
theta_intersection_agg theta_sketch_agg theta_sketch_estimate theta_union theta_union_agg time time_bucket
time_diff time_from_micros time_from_millis time_from_seconds time_to_micros time_to_millis time_to_seconds
time_trunc timestamp timestamp_micros timestamp_millis timestamp_seconds tinyint to_avro to_binary to_char
to_csv to_date to_json to_number to_protobuf to_time to_timestamp to_timestamp_ltz to_timestamp_ntz
to_unix_timestamp to_utc_timestamp to_varchar to_variant_object to_xml transform transform_keys transform_values
translate trim trunc try_add try_aes_decrypt try_avg try_divide try_element_at try_make_interval
try_make_timestamp try_make_timestamp_ltz try_make_timestamp_ntz try_mod try_multiply try_parse_json
try_parse_url try_reflect try_subtract try_sum try_to_binary try_to_date try_to_number try_to_time
try_to_timestamp try_url_decode try_validate_utf8 try_variant_get tuple_difference_double
tuple_difference_integer tuple_difference_theta_double tuple_difference_theta_integer
tuple_intersection_agg_double tuple_intersection_agg_integer tuple_intersection_double
tuple_intersection_integer tuple_intersection_theta_double tuple_intersection_theta_integer
tuple_sketch_agg_double tuple_sketch_agg_integer tuple_sketch_estimate_double tuple_sketch_estimate_integer
tuple_sketch_summary_double tuple_sketch_summary_integer tuple_sketch_theta_double tuple_sketch_theta_integer
tuple_union_agg_double tuple_union_agg_integer tuple_union_double tuple_union_integer tuple_union_theta_double
tuple_union_theta_integer typeof ucase unbase64 unhex uniform unix_date unix_micros unix_millis unix_seconds
unix_timestamp upper url_decode url_encode user uuid validate_utf8 var_pop var_samp variance variant_explode
variant_explode_outer variant_get vector_avg vector_cosine_similarity vector_inner_product vector_l2_distance
vector_norm vector_normalize vector_sum version weekday weekofyear when width_bucket window window_time xpath
xpath_boolean xpath_double xpath_float xpath_int xpath_long xpath_number xpath_short xpath_string xxhash64 year
zeroifnull zip_with
""".split())


@dataclass(frozen=True)
class FlinkFunction:
    """One of Flink's functions, as the engine writes it in Spark's SQL.

    :param arities: the numbers of arguments Flink's function takes.
    :param written: its Spark SQL from its operands (already written for Spark) and the call
        itself (with the types of its operands), as Flink computes it.
    :param refused: why the engine cannot write a call of it (a form it does not run), or None.
    :param variadic: it takes its last arity's arguments or more.
    """

    arities: tuple[int, ...]
    written: Callable[[list[exp.Expr], exp.Func, Typing], exp.Expr]
    refused: Callable[[exp.Func, Typing], str | None] = lambda call, typing: None
    variadic: bool = False

    def takes(self, count: int) -> bool:
        """Whether it takes ``count`` arguments."""
        return count in self.arities or self.variadic and count > self.arities[-1]

    @property
    def described(self) -> str:
        """The numbers of arguments it takes, as the gate's message says them."""
        return " or ".join(map(str, self.arities)) + (" or more" if self.variadic else "")


#: Flink's INITCAP starts a word at an ASCII letter or digit after any other character (Calcite's
#: ``SqlFunctions.initcap``), and changes only ASCII letters; Spark's starts one after a space.
_WORDS = r"(?<=[^A-Za-z0-9])|(?=[^A-Za-z0-9])"
#: What Flink's SPLIT_INDEX splits on when its separator is empty: Java's whitespace
#: (``StringUtils.splitByWholeSeparatorPreserveAllTokens``), every one a separator.
_WHITESPACE = r"\p{javaWhitespace}"


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _initcap(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
    """Each run of ASCII letters and digits with its first letter upper case and the rest lower; any
    other character kept as it is (Flink's ``INITCAP('straße x_y')`` is ``StraßE X_Y``)."""
    word = exp.column("word")
    capitalised = _call("concat", exp.Upper(this=exp.Substring(this=word.copy(), start=exp.Literal.number(1),
                                                               length=exp.Literal.number(1))),
                        exp.Lower(this=exp.Substring(this=word.copy(), start=exp.Literal.number(2))))
    is_word = exp.RegexpLike(this=word.copy(), expression=exp.Literal.string("^[A-Za-z0-9]"))
    each = exp.Lambda(this=exp.If(this=is_word, true=capitalised, false=word.copy()),
                      expressions=[exp.to_identifier("word")])
    pieces = _call("split", args[0], exp.Literal.string(_WORDS), exp.Literal.number(-1))
    return _call("array_join", _call("transform", pieces, each), exp.Literal.string(""))


def _split_index(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
    """Flink's ``SPLIT_INDEX(text, separator, index)``: the ``index``-th piece (from 0) of ``text``
    cut at each whole ``separator`` (an empty one: at each whitespace; an integer: the character of
    that code, 1 to 255), empty pieces kept; NULL for an index out of range, an empty text, and
    where any argument is NULL."""
    text, separator, index = args
    if typing.integer_bits(call.expressions[1]) is not None:
        in_range = exp.Between(this=separator.copy(), low=exp.Literal.number(1), high=exp.Literal.number(255))
        separator = exp.If(this=in_range, true=exp.Chr(expressions=[separator]), false=exp.null())
    quoted = _call("concat", exp.Literal.string(r"\Q"),
                   _call("replace", separator.copy(), exp.Literal.string(r"\E"), exp.Literal.string(r"\E\\E\Q")),
                   exp.Literal.string(r"\E"))
    pattern = exp.If(this=exp.EQ(this=separator, expression=exp.Literal.string("")),
                     true=exp.Literal.string(_WHITESPACE), false=quoted)
    pieces = _call("split", text.copy(), pattern, exp.Literal.number(-1))
    missing = exp.or_(exp.LT(this=index.copy(), expression=exp.Literal.number(0)),
                      exp.EQ(this=text, expression=exp.Literal.string("")),
                      exp.GTE(this=index.copy(), expression=_call("size", pieces.copy())))
    return exp.Case(ifs=[exp.If(this=missing, true=exp.null())],
                    default=_call("element_at", pieces, exp.Add(this=index, expression=exp.Literal.number(1))))


def _matches_whole(pattern: str) -> Callable[[list[exp.Expr], exp.Func, Typing], exp.Expr]:
    """Whether the whole text is one or more characters of ``pattern``'s class (FALSE for NULL and
    an empty text), as Flink's ``IS_DIGIT`` (``Character.isDigit``) and ``IS_ALPHA``
    (``Character.isLetter``) test it."""
    def written(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
        whole = exp.RegexpLike(this=args[0], expression=exp.Literal.string(rf"\A{pattern}+\z"))
        return exp.Coalesce(this=whole, expressions=[exp.false()])
    return written


def _epoch(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
    """Flink's ``TO_TIMESTAMP_LTZ(epoch[, precision])``: the instant ``epoch`` seconds (precision 0)
    or milliseconds (3, the default) after 1970, where Spark's of that name parses a text."""
    seconds = len(call.expressions) == 2 and call.expressions[1].name == "0"
    return _call("timestamp_seconds" if seconds else "timestamp_millis", args[0])


def _epoch_refused(call: exp.Func, typing: Typing) -> str | None:
    epoch, *precision = call.expressions
    if typing.integer_bits(epoch) is None:
        return ("the engine runs TO_TIMESTAMP_LTZ of an integer epoch (Flink's of a text parses it in a format "
                "of Java's, Spark's of the same name in its own)")
    if precision and not (isinstance(precision[0], exp.Literal) and precision[0].name in ("0", "3")):
        return "its precision must be 0 (seconds) or 3 (milliseconds), written as a number"
    return None


def java_double(value: str) -> exp.Expr:
    """A DOUBLE of Java's that no number literal writes: ``Infinity``, ``-Infinity``, ``NaN``, ``-0.0``."""
    return exp.cast(exp.Literal.string(value), exp.DType.DOUBLE)


def _none_null(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
    """GREATEST and LEAST as Flink's: NULL where any argument is NULL (Spark's skip NULLs); of one
    argument, that argument (Spark's take two or more)."""
    if len(args) == 1:
        return args[0]
    some_null = exp.or_(*[exp.Is(this=arg.copy(), expression=exp.null()) for arg in args])
    return exp.Case(ifs=[exp.If(this=some_null, true=exp.null())],
                    default=type(call)(this=args[0], expressions=args[1:]))


def _java_log(value: exp.Expr, spark: str) -> exp.Expr:
    """A logarithm as Java's ``Math`` computes it (Flink's): Spark's function ``spark`` of a positive
    number (or NaN), ``-Infinity`` of 0 and NaN of a negative one, where Spark's is NULL; NULL of
    NULL."""
    zero = exp.Literal.number(0)
    return exp.Case(ifs=[exp.If(this=exp.GT(this=value.copy(), expression=zero), true=_call(spark, value.copy())),
                         exp.If(this=exp.EQ(this=value.copy(), expression=zero.copy()), true=java_double("-Infinity")),
                         exp.If(this=exp.LT(this=value.copy(), expression=zero.copy()), true=java_double("NaN"))])


def _logarithm(spark: str) -> Callable[[list[exp.Expr], exp.Func, Typing], exp.Expr]:
    """LN, LOG10 and LOG2 as Flink computes them (:func:`_java_log`)."""
    return lambda args, call, typing: _java_log(args[0], spark)


def _log(args: list[exp.Expr], call: exp.Func, typing: Typing) -> exp.Expr:
    """Flink's ``LOG(x)`` (the natural logarithm) and ``LOG(base, x)``: Java's ``log(x) / log(base)``,
    which is Spark's where both are positive; elsewhere Java's logarithms divided, as Java divides
    them (a base of 1 leaves ``-Infinity`` or NaN over 0, which is itself)."""
    if len(args) == 1:
        return _java_log(args[0], "ln")
    base, value = args
    one, zero = exp.Literal.number(1), exp.Literal.number(0)
    positive = exp.and_(exp.GT(this=base.copy(), expression=zero), exp.GT(this=value.copy(), expression=zero.copy()))
    return exp.Case(ifs=[exp.If(this=positive, true=_call("log", base.copy(), value.copy())),
                         exp.If(this=exp.EQ(this=base.copy(), expression=one), true=_java_log(value, "ln"))],
                    default=exp.Div(this=_java_log(value, "ln"), expression=_java_log(base, "ln")))


#: Flink's functions that Spark has not, or computes otherwise, by Flink's name.
FLINK_FUNCTIONS: dict[str, FlinkFunction] = {
    "INITCAP": FlinkFunction((1,), _initcap),
    "SPLIT_INDEX": FlinkFunction((3,), _split_index),
    # The ISO week, Monday first, as Spark's WEEKOFYEAR (an INT; Flink's is a BIGINT).
    "WEEK": FlinkFunction((1,), lambda args, call, typing: exp.cast(exp.WeekOfYear(this=args[0]), exp.DType.BIGINT)),
    "IS_DIGIT": FlinkFunction((1,), _matches_whole(r"\p{Nd}")),
    "IS_ALPHA": FlinkFunction((1,), _matches_whole(r"\p{L}")),
    "TO_TIMESTAMP_LTZ": FlinkFunction((1, 2), _epoch, _epoch_refused),
    "GREATEST": FlinkFunction((1,), _none_null, variadic=True),
    "LEAST": FlinkFunction((1,), _none_null, variadic=True),
    "LN": FlinkFunction((1,), _logarithm("ln")),
    # The dialect keeps LOG10 and LOG2 (sqlglot reads them as LOG(10, x), whose quotient is not
    # Java's log10: 2.9999999999999996 of 1000).
    "LOG10": FlinkFunction((1,), _logarithm("log10")),
    "LOG2": FlinkFunction((1,), _logarithm("log2")),
    "LOG": FlinkFunction((1, 2), _log),
}


def _operands(call: exp.Func) -> list[exp.Expr]:
    """A call's arguments in the order Flink writes them."""
    if isinstance(call, exp.Anonymous):
        return list(call.expressions)
    return [operand for value in call.args.values()
            for operand in (value if isinstance(value, list) else [value]) if isinstance(operand, exp.Expr)]


def flink_call(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """``node`` in Spark's SQL as Flink computes it, where it is one of :data:`FLINK_FUNCTIONS`
    (its operands ``translated``); None for any other node."""
    if not isinstance(node, exp.Func):
        return None
    function = FLINK_FUNCTIONS.get(function_name(node))
    if function is None:
        return None
    return function.written([translated(operand) for operand in _operands(node)], node, typing)


class _Calls(SparkGenerator):
    """Spark's generator, noting the name of every function it writes."""

    def __init__(self) -> None:
        super().__init__(unsupported_level=ErrorLevel.IGNORE)
        self.names: list[str] = []

    def func(self, name: str, *args: object, prefix: str = "(", suffix: str = ")", normalize: bool = True) -> str:
        self.names.append(name.lower())
        return super().func(name, *args, prefix=prefix, suffix=suffix, normalize=normalize)


_NOT_SCALAR = (exp.AggFunc, GroupWindow, GroupWindowAuxiliary, WindowTVF)


def spark_lacks(expr: exp.Expr, typing: Typing) -> tuple[exp.Func, str] | None:
    """The first function call of ``expr`` that the engine cannot write for Spark, with why: one
    Spark has not, or one of :data:`FLINK_FUNCTIONS` in a form the engine does not write (its
    operands of the types ``typing`` gives). None
    where Spark has every one. Each call is written alone (its own calls replaced by columns), so
    the name found is that call's."""
    for node in expr.dfs(prune=_not_scalar):
        if not isinstance(node, exp.Func) or _not_scalar(node):
            continue
        name = function_name(node)
        flink = FLINK_FUNCTIONS.get(name)
        if flink is not None:
            if not flink.takes(len(_operands(node))):
                return node, f"{name} takes {flink.described} argument(s)"
            why = flink.refused(node, typing)
            if why is not None:
                return node, why
            continue
        calls = _Calls()
        calls.generate(node.copy().transform(
            lambda n: exp.column("_") if isinstance(n, exp.Func) and n.parent is not None else n))
        missing = next((called for called in calls.names if called not in SPARK_FUNCTIONS), None)
        if missing is not None:
            written = "" if missing.upper() == name else f" (the engine writes {name} with it)"
            return node, f"Spark has no function {missing.upper()}{written}: the engine cannot run it"
    return None


def _not_scalar(node: exp.Expr) -> bool:
    """An aggregate's call (the table of aggregates decides it, and its arguments are checked as the
    aggregate's) or a window's (the engine's operators run it)."""
    return isinstance(node, _NOT_SCALAR) or isinstance(node, exp.Func) and function_name(node) in AGGREGATES
