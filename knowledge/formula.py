"""Safe arithmetic formulas over named variables (the pattern catalog's parameter rules and priors).

A formula is one Python *expression* parsed with `ast` and evaluated by walking an allow-list of node types:
numbers and booleans, names, ``+ - * / // % **``, unary ``- + not``, comparisons (chains allowed), ``and`` /
``or``, ``a if cond else b`` and calls of allow-listed functions by bare name with positional arguments. Nothing
else parses: no attributes, subscripts, strings, lambdas, comprehensions or keyword arguments, so a catalog entry
cannot reach Python objects. ``eval``/``exec`` are never used.

Unknown values: a variable bound to ``None`` (a null profile field) raises `UnknownValue` naming the variable when
the formula uses it. ``coalesce(a, b, ...)`` returns its first argument that evaluates to a known value and
``known(x)`` tests whether ``x`` is known, so a catalog entry can say what to assume when a fact is missing.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from core.errors import ChiploreError

Number = float | int | bool

#: Largest exponent allowed in ``a ** b`` (keeps a malformed entry from building huge integers).
MAX_EXPONENT = 256
#: Longest formula accepted, in characters.
MAX_FORMULA_CHARS = 600


class FormulaError(ChiploreError):
    """A formula does not parse, uses a construct outside the allow-list, or fails to evaluate."""


class UnknownValue(FormulaError):
    """The formula needs a value that is unknown (``None``), e.g. a null profile field.

    Attributes:
        name: the variable whose value is unknown.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is unknown")
        self.name = name


def _pow2_floor(x: float) -> int:
    """Largest power of two <= x (0 for x < 1)."""
    return 0 if x < 1 else 1 << (int(math.floor(x)).bit_length() - 1)


def _pow2_ceil(x: float) -> int:
    """Smallest power of two >= x (1 for x <= 1)."""
    return 1 if x <= 1 else 1 << (int(math.ceil(x)) - 1).bit_length()


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def _cdiv(a: float, b: float) -> int:
    if b == 0:
        raise FormulaError("cdiv by zero")
    return -(-int(a) // int(b))


def _log2(x: float) -> float:
    if x <= 0:
        raise FormulaError(f"log2 of non-positive value {x}")
    return math.log2(x)


def _log(x: float) -> float:
    if x <= 0:
        raise FormulaError(f"log of non-positive value {x}")
    return math.log(x)


#: Functions every formula may call, by name. Task-specific helpers are added per evaluation (`evaluate`).
BUILTINS: dict[str, Callable[..., Number]] = {
    "min": min, "max": max, "abs": abs,
    "floor": lambda x: int(math.floor(x)), "ceil": lambda x: int(math.ceil(x)),
    "log": _log, "log2": _log2, "sqrt": lambda x: math.sqrt(x),
    "clamp": _clamp, "cdiv": _cdiv, "pow2_floor": _pow2_floor, "pow2_ceil": _pow2_ceil,
}
#: Functions the evaluator handles itself because they look at unknown values instead of failing on them.
SPECIAL_FUNCTIONS = ("coalesce", "known")

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Name,
            ast.Constant, ast.Load, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, *_BINOPS, *_CMPOPS)


@dataclass(frozen=True)
class Formula:
    """A parsed, checked formula.

    Attributes:
        text: the source expression.
        names: free variable names it reads (function names excluded).
        functions: names of the functions it calls.
    """

    text: str
    names: frozenset[str]
    functions: frozenset[str]
    tree: ast.Expression

    def evaluate(self, env: Mapping[str, Any], functions: Mapping[str, Callable[..., Number]] | None = None) -> Any:
        """Value of the formula with variables from `env` (a value of ``None`` means unknown).

        Raises:
            UnknownValue: a variable the result depends on is ``None``.
            FormulaError: a variable is missing from `env`, a function is not allowed, or arithmetic fails
                (division by zero, overflow, an exponent above `MAX_EXPONENT`).
        """
        funcs = {**BUILTINS, **(functions or {})}
        return _Evaluator(env, funcs, self.text).visit(self.tree.body)


@lru_cache(maxsize=4096)
def parse(text: str) -> Formula:
    """Parse and check `text` against the allow-list.

    Raises:
        FormulaError: syntax error, a construct outside the allow-list, keyword arguments, a call of something
            other than a bare name, a string constant, or text longer than `MAX_FORMULA_CHARS`.
    """
    src = str(text).strip()
    if not src:
        raise FormulaError("empty formula")
    if len(src) > MAX_FORMULA_CHARS:
        raise FormulaError(f"formula longer than {MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"formula {src!r} does not parse: {exc.msg}") from None
    names: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise FormulaError(f"formula {src!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
            raise FormulaError(f"formula {src!r}: constant {node.value!r} is not a number")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.keywords:
                raise FormulaError(f"formula {src!r}: only calls like f(a, b) of allowed functions are allowed")
            functions.add(node.func.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in functions:
            names.add(node.id)
    return Formula(src, frozenset(names), frozenset(functions), tree)


def check_functions(formula: Formula, extra: set[str] | frozenset[str] = frozenset()) -> None:
    """Raise FormulaError if `formula` calls a function outside `BUILTINS`, the special ones and `extra`."""
    allowed = set(BUILTINS) | set(SPECIAL_FUNCTIONS) | set(extra)
    bad = sorted(formula.functions - allowed)
    if bad:
        raise FormulaError(f"formula {formula.text!r} calls unknown function(s) {bad}; allowed: {sorted(allowed)}")


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], funcs: Mapping[str, Callable[..., Number]], text: str) -> None:
        self.env, self.funcs, self.text = env, funcs, text

    def visit(self, node: ast.AST) -> Any:
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:  # parse() already refused it; kept as a second guard
            raise FormulaError(f"formula {self.text!r}: {type(node).__name__} is not allowed")
        return handler(node)

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id not in self.env:
            raise FormulaError(f"formula {self.text!r}: no variable {node.id!r}")
        value = self.env[node.id]
        if value is None:
            raise UnknownValue(node.id)
        return value

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise FormulaError(f"formula {self.text!r}: exponent {right} above {MAX_EXPONENT}")
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise FormulaError(f"formula {self.text!r}: {exc}") from None

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else +value

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value: Any = is_and
        for operand in node.values:
            value = self.visit(operand)
            if bool(value) != is_and:
                return value
        return value

    def _Compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def _Call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]  # parse() only admits bare names
        if name == "coalesce":
            return self._coalesce(node.args)
        if name == "known":
            if len(node.args) != 1:
                raise FormulaError(f"formula {self.text!r}: known() takes one argument")
            return self._known(node.args[0])
        if name not in self.funcs:
            raise FormulaError(f"formula {self.text!r}: function {name!r} is not allowed")
        args = [self.visit(a) for a in node.args]
        try:
            return self.funcs[name](*args)
        except FormulaError:
            raise
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise FormulaError(f"formula {self.text!r}: {name}(): {exc}") from None

    def _coalesce(self, args: list[ast.expr]) -> Any:
        missing: UnknownValue | None = None
        for arg in args:
            try:
                return self.visit(arg)
            except UnknownValue as exc:
                missing = exc
        raise missing or FormulaError(f"formula {self.text!r}: coalesce() needs arguments")

    def _known(self, arg: ast.expr) -> bool:
        try:
            self.visit(arg)
        except UnknownValue:
            return False
        return True
