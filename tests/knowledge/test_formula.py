"""The formula evaluator: allow-listed arithmetic, unknown values, and everything else refused."""

import math

import pytest

from knowledge.formula import FormulaError, UnknownValue, check_functions, parse


@pytest.mark.parametrize("text, env, expected", [
    ("a + b * 2", {"a": 1, "b": 3}, 7),
    ("(a + b) / 4", {"a": 1, "b": 3}, 1.0),
    ("a // 3 + a % 3", {"a": 10}, 4),
    ("2 ** 10", {}, 1024),
    ("-a + +a", {"a": 5}, 0),
    ("pow2_floor(100) + pow2_ceil(100)", {}, 64 + 128),
    ("pow2_floor(0.5) + pow2_ceil(1)", {}, 0 + 1),
    ("cdiv(7, 2) + cdiv(8, 2)", {}, 4 + 4),
    ("clamp(300, 16, 128) + clamp(3, 16, 128)", {}, 128 + 16),
    ("min(3, 1, 2) + max(3, 1, 2) + abs(-2)", {}, 1 + 3 + 2),
    ("floor(2.7) + ceil(2.1)", {}, 2 + 3),
    ("log2(1024)", {}, 10.0),
    ("x if x > 2 else 0", {"x": 3}, 3),
    ("1 < x <= 3", {"x": 3}, True),
    ("1 < x < 3", {"x": 3}, False),
    ("not (a and b) or c", {"a": True, "b": False, "c": False}, True),
])
def test_values(text, env, expected):
    assert parse(text).evaluate(env) == expected


def test_names_and_functions_are_reported():
    f = parse("clamp(pow2_floor(budget / (2 * d)), 16, 128) + seq_tiles(g, m)")
    assert f.names == {"budget", "d", "g", "m"}
    assert f.functions == {"clamp", "pow2_floor", "seq_tiles"}
    with pytest.raises(FormulaError, match="seq_tiles"):
        check_functions(f)
    check_functions(f, {"seq_tiles"})


@pytest.mark.parametrize("text", [
    "x.__class__",                       # attribute access
    "__import__('os').system('true')",   # string constant and attribute
    "x[0]",                              # subscript
    "(lambda: 1)()",                     # lambda, call of a non-name
    "[i for i in range(3)]",             # comprehension
    "max(a=1)",                          # keyword argument
    "a = 1",                             # statement
    "open",                              # fine as a name, but see test_unknown_name_fails_on_evaluation
    "'text'",                            # string
])
def test_disallowed_constructs(text):
    if text == "open":
        assert parse(text).names == {"open"}
        return
    with pytest.raises(FormulaError):
        parse(text)


def test_unknown_name_fails_on_evaluation():
    with pytest.raises(FormulaError, match="no variable 'open'"):
        parse("open").evaluate({})
    with pytest.raises(FormulaError, match="not allowed"):
        parse("getattr(x, y)").evaluate({"x": 1, "y": 2})


def test_null_value_raises_unknown_with_the_name():
    with pytest.raises(UnknownValue) as info:
        parse("num_compute_units * 2").evaluate({"num_compute_units": None})
    assert info.value.name == "num_compute_units"


def test_coalesce_and_known_handle_nulls():
    env = {"smem_cu": None, "footprint": 36.0}
    assert parse("coalesce(max(1, floor(smem_cu / footprint)), 1)").evaluate(env) == 1
    assert parse("coalesce(max(1, floor(smem_cu / footprint)), 1)").evaluate({**env, "smem_cu": 228}) == 6
    assert parse("known(smem_cu)").evaluate(env) is False
    assert parse("known(footprint)").evaluate(env) is True
    with pytest.raises(UnknownValue):
        parse("coalesce(smem_cu, smem_cu)").evaluate(env)


def test_arithmetic_errors_are_formula_errors():
    with pytest.raises(FormulaError, match="division by zero"):
        parse("1 / x").evaluate({"x": 0})
    with pytest.raises(FormulaError, match="exponent"):
        parse("2 ** 100000").evaluate({})
    with pytest.raises(FormulaError, match="log2"):
        parse("log2(0)").evaluate({})
    with pytest.raises(FormulaError):
        parse("x" * 700)


def test_short_circuit_skips_unknown_branches():
    assert parse("a if a > 0 else b").evaluate({"a": 2, "b": None}) == 2
    assert parse("False and b").evaluate({"b": None}) is False
    assert math.isclose(parse("sqrt(x)").evaluate({"x": 2.0}), math.sqrt(2.0))
