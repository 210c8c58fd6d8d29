"""The entry-point contract between a candidate and the verifier (static rule ``entry-point``, and the calls the
sandbox child makes).

The verifier calls the entry point with keyword arguments: the keys of ``TaskSpec.make_inputs``. A candidate is
acceptable when every such call binds to it:
- the task's required parameters (those without a default in the baseline) come first, in the task's order, as
  ordinary parameters (SGLang's own callers pass them positionally);
- every parameter the verifier passes with a non-default value is declared, or the candidate takes ``**kwargs``;
- every other parameter has a default, and a parameter the baseline also declares has the baseline's default;
- a keyword the candidate does not declare is passed only when its value differs from the baseline's default
  (`bind_call`), so a kernel may leave out an optional tail it does not support.
The task's parameters are the baseline's (`TaskSpec.baseline_module`), read from the imported baseline, else from the
baseline's source file without importing it (an import error of the baseline must not let a candidate through with
any signature).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernels.task import TaskSpec

EMPTY = inspect.Parameter.empty
_VARIED: dict[str, frozenset[str]] = {}


def expected_parameters(task: TaskSpec) -> tuple[tuple[str, object], ...] | None:
    """``(name, default)`` pairs of the task's baseline entry point (``inspect.Parameter.empty`` = required), or
    None when the baseline defines no such function."""
    try:
        fn = getattr(importlib.import_module(task.baseline_module), task.entry_point)
    except (ImportError, AttributeError):
        return _from_source(task.baseline_module, task.entry_point)
    return tuple((p.name, p.default) for p in inspect.signature(fn).parameters.values())


def _from_source(module: str, name: str) -> tuple[tuple[str, object], ...] | None:
    """The parameters of function `name` in `module`'s source file (defaults: literals only), or None."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return None
    args = fn.args.posonlyargs + fn.args.args
    defaults = [EMPTY] * (len(args) - len(fn.args.defaults)) + [_literal(d) for d in fn.args.defaults]
    out = list(zip((a.arg for a in args), defaults))
    out += [(a.arg, EMPTY if d is None else _literal(d)) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)]
    return tuple(out)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return EMPTY


def is_default(value: Any, default: Any) -> bool:
    """Whether `value` is the parameter default `default`: the same object, or an equal plain scalar (bool, int,
    float, str; a tensor or list is never a default here)."""
    if value is default:
        return True
    plain = (bool, int, float, str)
    return (default is not EMPTY and isinstance(value, plain) and isinstance(default, plain)
            and isinstance(value, bool) == isinstance(default, bool) and value == default)


def varied_parameters(task: TaskSpec) -> frozenset[str]:
    """Names the verifier passes with a value that is not the baseline's default in at least one of the task's test
    cases (every feature a hidden random case draws is among the test cases'), plus every required parameter:
    the names a candidate must declare. Computed once per task from ``make_inputs`` on the CPU."""
    if task.name not in _VARIED:
        defaults = dict(expected_parameters(task) or ())
        names: set[str] = {n for n, d in defaults.items() if d is EMPTY}
        for case in task.test_cases:
            for name, value in task.make_inputs(case, case.seed, "cpu").items():
                if name not in defaults or not is_default(value, defaults[name]):
                    names.add(name)
        _VARIED[task.name] = frozenset(names)
    return _VARIED[task.name]


def signature_problems(args: ast.arguments, expected: Sequence[tuple[str, object]], varied: frozenset[str]
                       ) -> list[str]:
    """What keeps the verifier's calls from binding to a function with parameters `args` (the AST of its
    signature), as one sentence each; [] when every call binds (the rules in the module docstring)."""
    problems = []
    if args.posonlyargs:
        problems.append("takes positional-only parameters (the verifier passes every argument by keyword)")
    positional = [a.arg for a in args.args]
    required = [name for name, default in expected if default is EMPTY]
    if positional[:len(required)] != required:
        problems.append(f"its first parameters {positional[:len(required)]} are not the task's required ones "
                        f"{required}, in that order")
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    known = dict(expected)
    for name in positional[len(required):] + [a.arg for a in args.kwonlyargs]:
        if name in required:
            continue
        if name not in defaults:
            problems.append(f"parameter {name} has no default (only the task's required parameters may lack one)")
            continue
        if name in known:
            try:
                value = ast.literal_eval(defaults[name])
            except ValueError:
                value = "<non-literal>"
            if not is_default(value, known[name]):
                problems.append(f"default of {name} is {value!r}, the baseline's is {known[name]!r}")
    declared = set(positional) | {a.arg for a in args.kwonlyargs}
    missing = sorted(varied - declared)
    if missing and args.kwarg is None:
        problems.append(f"lacks parameter(s) {', '.join(missing)}, which the verifier passes with values other "
                        "than their defaults (declare them or take **kwargs)")
    return problems


def bind_call(fn: types.FunctionType, inputs: Mapping[str, Any], expected: Sequence[tuple[str, object]] | None
              ) -> dict[str, Any]:
    """The keyword arguments of the verifier's call of `fn` with `inputs`: all of them when `fn` takes
    ``**kwargs``, else those `fn` declares; an undeclared one is dropped when its value is the task's default for it.
    Read from ``fn.__code__`` (not `inspect.signature`, which a ``__signature__`` attribute could steer).

    Raises:
        TypeError: `fn` does not declare an argument that `inputs` sets to a value other than its default (named).
    """
    code = fn.__code__
    if code.co_flags & inspect.CO_VARKEYWORDS:
        return dict(inputs)
    names = code.co_varnames[code.co_posonlyargcount:code.co_argcount + code.co_kwonlyargcount]
    declared = set(names)
    defaults = dict(expected or ())
    out = {}
    for name, value in inputs.items():
        if name in declared:
            out[name] = value
        elif not (name in defaults and is_default(value, defaults[name])):
            shown = type(value).__name__ if not isinstance(value, (bool, int, float, str, type(None))) else repr(value)
            raise TypeError(f"{fn.__name__} does not declare parameter {name!r}, which this call passes as {shown}")
    return out
