"""Static stage: named AST rules, each with a one-line rationale, run on a candidate before it executes.

The rules are a cheap first filter (shared/reference/verifier_threats.md, "How strong harnesses are built", 7);
the dynamic stage carries the weight. Each rule yields ``(node, detail)`` pairs; `check_source` turns them into
`Violation`s that name the rule, the line and the reason.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from agent.verifier import policy
from agent.verifier.signature import expected_parameters, signature_problems, varied_parameters
from agent.verifier.static_analysis import (
    CACHE_DECORATORS,
    SizeTaint,
    Source,
    assign_targets,
    chain_is_module,
    functions,
    imported_modules,
    literal_ints,
    math_receiver,
    module_rooted_mutations,
    module_statement,
    modules_on_chain,
    mutable_value,
    project_objects,
    torch_disallowed,
)
from agent.verifier.static_report import StaticReport, Violation
from kernels.task import TaskSpec

Finding = tuple[ast.AST, str]


@dataclass(frozen=True)
class Rule:
    """A named static rule: `check(source)` yields the offending nodes with a detail string."""

    name: str
    rationale: str
    check: Callable[[Source], Iterator[Finding]]


RULES: list[Rule] = []


def rule(name: str, rationale: str) -> Callable[[Callable[[Source], Iterator[Finding]]], Callable]:
    """Register a rule function under `name` with its one-line `rationale`."""

    def register(fn: Callable[[Source], Iterator[Finding]]) -> Callable:
        RULES.append(Rule(name, rationale, fn))
        return fn

    return register


def _imports(src: Source) -> Iterator[tuple[ast.AST, str, int]]:
    """(node, module name, level) for every import; ``from m import x`` also yields ``m.x``."""
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name, 0
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            yield node, module, node.level
            if module.split(".")[0] in policy.REFERENCE_MODULE_PREFIXES:
                for a in node.names:
                    yield node, f"{module}.{a.name}", node.level


def _category(module: str, package: str) -> str:
    root = module.split(".")[0]
    if policy.import_allowed(module, package):
        return "allowed"
    if root in policy.CONCURRENCY_MODULES:
        return "concurrency"
    if root in policy.INTROSPECTION_MODULES:
        return "introspection"
    if root in policy.IO_MODULES:
        return "io"
    if root in policy.REFERENCE_MODULE_PREFIXES:
        return "reference"
    return "other"


def _imports_in(src: Source, category: str) -> Iterator[Finding]:
    for node, module, level in _imports(src):
        if level:
            if category == "other":
                yield node, f"relative import (level {level}) of {module or '.'!r}"
            continue
        if _category(module, src.package) == category:
            yield node, f"imports {module!r}"


@rule("entry-point", "every call the verifier makes must bind: the task's required parameters in order, the ones it "
      "varies declared, the rest with defaults")
def _entry_point(src: Source) -> Iterator[Finding]:
    fn = src.entry()
    if fn is None:
        yield src.tree, f"no module-level `def {src.entry_point}(...)`"
        return
    if isinstance(fn, ast.AsyncFunctionDef):
        yield fn, f"{src.entry_point} is async"
    if fn.decorator_list:
        yield fn, f"{src.entry_point} is decorated (a wrapper would run instead of the function shown)"
    if src.expected_params is not None:
        for problem in signature_problems(fn.args, src.expected_params, src.varied_params):
            yield fn, f"{src.entry_point}: {problem}"
    for stmt in src.tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == src.entry_point for t in targets):
            yield stmt, f"{src.entry_point} is rebound at module level"


@rule("import-allowlist", "every module beyond torch, triton, math, typing and the task's kernel package is a way "
      "around the sandbox")
def _import_allowlist(src: Source) -> Iterator[Finding]:
    yield from _imports_in(src, "other")


@rule("no-reference-import", "the reference, spec, baseline and harness compute or judge the answer; importing "
      "them is a library call, not a kernel")
def _no_reference_import(src: Source) -> Iterator[Finding]:
    yield from _imports_in(src, "reference")


@rule("no-concurrency", "threads, processes, signals and async tasks run work outside the timed region")
def _no_concurrency(src: Source) -> Iterator[Finding]:
    yield from _imports_in(src, "concurrency")
    for node in ast.walk(src.tree):
        if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith):
            yield node, "async code"


@rule("no-introspection", "frames, gc, inspect and ctypes reach the harness's objects and can steal the expected "
      "output or switch guards off")
def _no_introspection(src: Source) -> Iterator[Finding]:
    yield from _imports_in(src, "introspection")
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Attribute) and node.attr in policy.INTROSPECTION_ATTRS:
            yield node, f"uses attribute .{node.attr}"


@rule("no-io", "file, network, clock and environment access can tamper with the harness or fetch answers")
def _no_io(src: Source) -> Iterator[Finding]:
    yield from _imports_in(src, "io")
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id == "open":
            yield node, "uses open()"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            if any(k.arg == "file" for k in node.keywords):
                yield node, "print(..., file=...) writes to a file or stream"


@rule("no-dynamic-code", "exec/eval/compile/__import__ and attribute lookups by computed strings hide what the "
      "other rules check")
def _no_dynamic_code(src: Source) -> Iterator[Finding]:
    lookups = {"getattr", "hasattr"}
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in lookups:
            yield from _string_lookup(src, node)
        elif isinstance(node, ast.Name) and node.id in policy.FORBIDDEN_BUILTINS and node.id != "open":
            parent = src.parent(node)
            if node.id in lookups and isinstance(parent, ast.Call) and parent.func is node:
                continue
            yield node, f"uses {node.id}"


def _string_lookup(src: Source, call: ast.Call) -> Iterator[Finding]:
    """getattr/hasattr(obj, "literal"[, default]) is an attribute access the other rules can see; anything else
    (a computed name, a module receiver, a private or forbidden name) is not allowed."""
    name = call.args[1] if len(call.args) >= 2 else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        yield call, f"{call.func.id}() with a computed attribute name"  # type: ignore[attr-defined]
        return
    attr = name.value
    forbidden = (policy.INTROSPECTION_ATTRS | policy.TIMING_AND_STREAM_NAMES | policy.TENSOR_COMPUTE_METHODS
                 | policy.IDENTITY_CALLS)
    if attr.startswith("_") or attr in forbidden or src.is_module_rooted(call.args[0]):
        yield call, f"{call.func.id}(..., {attr!r})"  # type: ignore[attr-defined]


@rule("no-torch-compute", "the answer must come from the candidate's Triton kernels; torch may only allocate and "
      "describe tensors")
def _no_torch_compute(src: Source) -> Iterator[Finding]:
    for node in src.maximal_chains():
        name = src.resolve(node)
        if not name or not src.is_module_rooted(node) or not name.startswith("torch"):
            continue
        parts = name.split(".")
        bad = torch_disallowed(parts)
        if bad and not set(parts) & policy.TIMING_AND_STREAM_NAMES:
            yield node, f"uses {bad}"


@rule("no-tensor-compute-methods", "outside a Triton kernel, tensor math, host reads and indexed writes are "
      "library calls that compute or fake the answer")
def _no_tensor_compute_methods(src: Source) -> Iterator[Finding]:
    entry = src.entry()
    params = {a.arg for a in entry.args.args} if entry else set()
    called = {id(n.func) for n in ast.walk(src.tree) if isinstance(n, ast.Call)}
    for node in ast.walk(src.tree):
        if src.in_kernel(node):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in policy.TENSOR_COMPUTE_METHODS and not math_receiver(src, node.func.value):
                yield node, f"calls .{node.func.attr}()"
        elif (isinstance(node, ast.Attribute) and id(node) not in called and node.attr in
              policy.TENSOR_COMPUTE_METHODS and not math_receiver(src, node.value)):
            yield node, f"takes .{node.attr} as a value (a method handed to map, a hook or another caller)"
        targets = assign_targets(node)
        for t in targets:
            base = t.value if isinstance(t, ast.Subscript) else None
            if isinstance(base, ast.Name) and base.id in params:
                yield t, f"writes {base.id}[...] on the host"


@rule("no-try-except", "a try/except around a launch hides a kernel that failed behind a fallback")
def _no_try_except(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            yield node, "try statement"


@rule("no-attribute-assignment", "assigning attributes patches timers, synchronize, launchers or tensor storage "
      "(.data) that the harness relies on")
def _no_attribute_assignment(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        for t in assign_targets(node):
            inner = t
            while isinstance(inner, ast.Subscript):
                inner = inner.value
            if isinstance(inner, ast.Attribute):
                yield t, f"assigns to {ast.unparse(t)}"


@rule("no-module-state", "state that survives between calls (caches keyed on pointers, ids or shapes, call "
      "counters) replays old answers")
def _no_module_state(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            yield node, f"{type(node).__name__.lower()} {', '.join(node.names)}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not src.in_kernel(node):
            for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                if mutable_value(d) or isinstance(d, ast.Call):
                    yield d, "mutable or computed default argument"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                name = src.resolve(dec.func if isinstance(dec, ast.Call) else dec) or ""
                if name.split(".")[-1] in CACHE_DECORATORS:
                    yield dec, f"caching decorator {name}"
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                value = getattr(stmt, "value", None)
                if isinstance(stmt, ast.Assign | ast.AnnAssign) and value is not None and mutable_value(value):
                    yield stmt, f"mutable class attribute in {node.name}"
    for stmt in src.tree.body:
        yield from module_statement(src, stmt)
    yield from module_rooted_mutations(src)


@rule("no-stateful-helpers", "the task modules' containers and tensors, and modules outside the candidate API "
      "(workspace pools), keep state across calls unseen by no-module-state")
def _no_stateful_helpers(src: Source) -> Iterator[Finding]:
    chains: list[tuple[ast.AST, str]] = [(n, src.resolve(n) or "") for n in src.maximal_chains()
                                         if src.is_module_rooted(n)]
    for node in ast.walk(src.tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            chains += [(node, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            chains += [(node, a.name) for a in node.names]
    for node, name in chains:
        setter = next((n for n in policy.PROCESS_STATE_SETTERS if name == n or name.startswith(n + ".")), None)
        if setter:
            yield node, f"{setter} sets process-wide state (it survives between calls)"
            continue
        for prefix, obj in project_objects(name, src.package):
            problem = _stateful(obj)
            if problem:
                yield node, f"{prefix} is {problem}"
                break


def _stateful(obj: object) -> str:
    """Why a project object gives a candidate state across calls ("" if it does not)."""
    if isinstance(obj, (*policy.STATEFUL_TYPES, torch.Tensor)):
        return f"a module-level {type(obj).__name__} (state that survives between calls)"
    home = obj if isinstance(obj, types.ModuleType) else sys.modules.get(getattr(obj, "__module__", "") or "")
    if home is not None and vars(home).get(policy.CANDIDATE_API_FLAG) is False:
        return (f"{'a module' if obj is home else 'from ' + home.__name__} outside the candidate API "
                f"({policy.CANDIDATE_API_FLAG} = False: it keeps buffers across calls)")
    return ""


@rule("no-provenance-checks", "asking how an input was made (inference mode, a view's offset, autograd state) lets a "
      "kernel behave honestly on the verifier's tensors only")
def _no_provenance_checks(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Attribute) and node.attr in policy.PROVENANCE_ATTRS and not src.in_kernel(node):
            yield node, f"reads .{node.attr} of {ast.unparse(node.value)[:40]}"


@rule("no-identity-keys", "pointers, ids and storages identify buffers across calls: the keys of result caches")
def _no_identity_keys(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if src.in_kernel(node) or not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in policy.IDENTITY_CALLS:
            yield node, f"calls {func.id}()"
        if isinstance(func, ast.Attribute) and func.attr in policy.IDENTITY_CALLS:
            yield node, f"calls .{func.attr}()"


@rule("no-literal-shape-branch", "comparing token or batch sizes with literals special-cases the benchmark's "
      "shapes instead of computing them")
def _no_literal_shape_branch(src: Source) -> Iterator[Finding]:
    scopes: list[ast.AST] = [src.tree, *functions(src.tree)]
    for scope in scopes:
        taint = SizeTaint(scope)  # type: ignore[arg-type]
        for node in ast.walk(scope):
            if isinstance(node, ast.Compare) and not src.in_kernel(node):
                sides = [node.left, *node.comparators]
                eq_ops = any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops)
                literals = [v for s in sides for v in literal_ints(s) if v not in (0, 1, -1)]
                if eq_ops and literals and any(taint.tainted(s) for s in sides if not literal_ints(s)):
                    yield node, f"compares a size with literal(s) {literals}: {ast.unparse(node)[:60]}"
            if isinstance(node, ast.Match) and taint.tainted(node.subject):
                yield node, "match on a size"


@rule("no-tensor-subclass", "a tensor subclass or torch-function hook intercepts the harness's own checks")
def _no_tensor_subclass(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = src.resolve(base) or ""
                if name.startswith("torch"):
                    yield node, f"class {node.name} derives from {name}"
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name in ("__torch_function__", "__torch_dispatch__"):
                    yield stmt, f"defines {stmt.name}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                and len(node.args) == 3:
            yield node, "creates a class with type(name, bases, dict)"


@rule("no-streams-timers", "side streams, graphs, events and private timers move work or clocks outside the "
      "harness's device-wide synchronize")
def _no_streams_timers(src: Source) -> Iterator[Finding]:
    always = {"elapsed_time", "perf_counter", "perf_counter_ns", "do_bench", "do_bench_cudagraph", "Stream",
              "ExternalStream", "set_stream", "CUDAGraph", "Event", "launch_enter_hook", "launch_exit_hook",
              "set_sync_debug_mode", "record_stream"}
    for node in src.maximal_chains():
        name = src.resolve(node) or ""
        parts = name.split(".")
        rooted = src.is_module_rooted(node) and parts[0] in ("torch", "triton")
        hits = [p for p in parts[1:] if p in always or (rooted and p in policy.TIMING_AND_STREAM_NAMES)]
        if hits:
            yield node, f"uses {name}"


@rule("no-private-access", "underscore and dunder attributes reach interpreter and library internals (torch._C, "
      "__globals__, __subclasses__)")
def _no_private_access(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            yield node, f"uses attribute .{node.attr}"
        if isinstance(node, ast.Name) and node.id.startswith("__") and node.id.endswith("__") \
                and node.id not in ("__name__",) and node.id not in policy.FORBIDDEN_BUILTINS:
            yield node, f"uses {node.id}"
        if isinstance(node, ast.alias) and node.name.split(".")[-1].startswith("_") and node.name != "__future__":
            yield node, f"imports private name {node.name}"


@rule("no-exit", "ending the process or raising interpreter-exit exceptions makes the harness see a half run")
def _no_exit(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in policy.EXIT_NAMES:
            yield node, f"uses {node.id}"
        if isinstance(node, ast.Attribute) and node.attr in ("_exit", "abort", "kill"):
            yield node, f"uses .{node.attr}"


@rule("entry-returns-output", "the contract writes the output in place; returning another tensor (an input, a "
      "view of one) is passthrough")
def _entry_returns_output(src: Source) -> Iterator[Finding]:
    fn = src.entry()
    if fn is None:
        return
    nested = {id(n) for f in functions(fn) if f is not fn for n in ast.walk(f)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and id(node) not in nested and node.value is not None:
            if not _plain_return(src, node.value):
                yield node, f"returns {ast.unparse(node.value)[:60]}"


def _plain_return(src: Source, value: ast.expr) -> bool:
    """None, the output argument itself, or the result of a plain function call (checked at run time)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if isinstance(value, ast.Name):
        return value.id == src.output_arg
    if isinstance(value, ast.Call):
        return isinstance(value.func, ast.Name) or src.is_module_rooted(value.func)
    return False


@rule("no-module-escape", "modules re-exported by torch, triton or project code (torch.importlib, pickle, "
      "kernels.x.torch) escape the import rules and the name-based rules")
def _no_module_escape(src: Source) -> Iterator[Finding]:
    chains: list[tuple[ast.AST, str]] = []
    for node in src.maximal_chains():
        name = src.resolve(node)
        if name and src.is_module_rooted(node):
            chains.append((node, name))
    for node in ast.walk(src.tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            chains += [(node, f"{node.module}.{a.name}") for a in node.names]
    imported = imported_modules(src.tree)  # judged by the import rules already (one reason, the right one)
    # a module object reached through a project module's namespace (``from kernels.x.workspace import torch``)
    # hides every later use of it from the name-based rules
    project = set(policy.REFERENCE_MODULE_PREFIXES) | {src.package.split(".")[0]}
    for node, name in chains:
        for prefix, module in modules_on_chain(name):
            if name.split(".")[0] in project and module.__name__ != prefix:
                yield node, (f"{prefix} is the module {module.__name__}, reached through another module's "
                             f"namespace (import {module.__name__} directly)")
                break
            if module.__name__ not in imported and not policy.module_reachable(module.__name__, src.package):
                yield node, f"{prefix} is the module {module.__name__}"
                break



@rule("no-module-value", "a module bound to a new name, passed or stored (T = torch) hides every later use of it "
      "from the name-based rules")
def _no_module_value(src: Source) -> Iterator[Finding]:
    for node in src.maximal_chains():
        if not isinstance(getattr(node, "ctx", None), ast.Load) or not src.is_module_rooted(node):
            continue
        name = src.resolve(node)
        if name and chain_is_module(name) and not src.in_kernel(node):
            yield node, f"uses the module {name} as a value"


@rule("no-host-readout", "format()/repr()/ascii() of a tensor element reads its value to the host, where plain "
      "Python can compute the answer")
def _no_host_readout(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in policy.HOST_READOUT_BUILTINS and not src.in_kernel(node):
            yield node, f"uses {node.id}"


#: Triton's launch-time callbacks: code the candidate hands to Triton runs from Triton's (trusted) frames.
LAUNCH_CALLBACKS = frozenset({"add_pre_run_hook", "pre_run_hooks", "pre_hook", "post_hook", "launch_enter_hook",
                              "launch_exit_hook", "set_allocator"})


@rule("no-implicit-callbacks", "special methods (__index__, __del__, __torch_function__ ...) make torch or Python "
      "run candidate code inside library calls or after the call")
def _no_implicit_callbacks(src: Source) -> Iterator[Finding]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Attribute) and node.attr in LAUNCH_CALLBACKS:
            yield node, f"uses .{node.attr} (a callback Triton runs at launch, on the candidate's behalf)"
        if isinstance(node, ast.keyword) and node.arg in LAUNCH_CALLBACKS:
            yield node, f"passes {node.arg}= (a callback Triton runs at launch, on the candidate's behalf)"
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            names = [stmt.name] if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) else [
                t.id for t in assign_targets(stmt) if isinstance(t, ast.Name)]
            for name in names:
                if name.startswith("__") and name.endswith("__") and name not in policy.ALLOWED_SPECIAL_METHODS:
                    yield stmt, f"class {node.name} defines {name}"


def rule_names() -> list[str]:
    """Names of every registered rule, in order."""
    return [r.name for r in RULES]


def check_source(text: str, filename: str, task: TaskSpec) -> StaticReport:
    """Run every rule on candidate source `text` written for `task`.

    Returns:
        `StaticReport`; ``syntax_error`` is set (and no rule runs) when the file does not parse.
    """
    package = policy.kernel_package(task.optimized_module)
    try:
        src = Source.parse(text, filename, task.entry_point, task.output_args[0], package,
                           expected_parameters(task), varied_parameters(task))
    except SyntaxError as exc:
        return StaticReport((), f"{filename}:{exc.lineno}: syntax error: {exc.msg}")
    found: list[Violation] = []
    seen: set[tuple[str, int, str]] = set()
    for r in RULES:
        for node, detail in r.check(src):
            line = getattr(node, "lineno", 1)
            key = (r.name, line, detail)
            if key not in seen:
                seen.add(key)
                found.append(Violation(r.name, line, detail, r.rationale))
    found.sort(key=lambda v: (v.line, v.rule))
    return StaticReport(tuple(found))
