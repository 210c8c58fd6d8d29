"""The entry-point signature a candidate must have: the task's baseline's (`TaskSpec.baseline_module`), read from
the imported baseline, else from the baseline's source file without importing it (an import error of the
baseline must not let a candidate through with any signature)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

from kernels.task import TaskSpec

_EMPTY = inspect.Parameter.empty


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
    defaults = [_EMPTY] * (len(args) - len(fn.args.defaults)) + [_literal(d) for d in fn.args.defaults]
    out = list(zip((a.arg for a in args), defaults))
    out += [(a.arg, _EMPTY if d is None else _literal(d)) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)]
    return tuple(out)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _EMPTY
