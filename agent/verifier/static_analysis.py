"""AST facts the static rules share: import aliases, dotted-name resolution, Triton kernel bodies, the entry
point, and names that carry token/batch sizes.

Nothing here executes the candidate: the file is parsed with `ast.parse` only.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field

from agent.verifier import policy

#: Decorators that make a function a Triton kernel (its body is Triton, not host Python).
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})


@dataclass
class Source:
    """A parsed candidate with the facts every rule needs.

    Attributes:
        tree: the module AST. filename: shown in reasons. entry_point / output_arg: from the task.
        package: the task's kernel package (its family and helper modules are importable).
        expected_params: ``(name, default)`` pairs of the baseline's entry point (None: unknown).
        varied_params: names the verifier passes with non-default values (`signature.varied_parameters`).
        aliases: local name -> dotted path it stands for: imports (``tl`` -> ``triton.language``) and local
            names bound to an imported name or an attribute chain rooted at one (``T = torch``,
            ``pk = T.serialization.pickle``), resolved to a fixpoint, in any scope.
        kernel_nodes: ids of every node inside a Triton kernel body.
        parents: id(node) -> parent node.
    """

    tree: ast.Module
    filename: str
    entry_point: str
    output_arg: str
    package: str
    expected_params: tuple[tuple[str, object], ...] | None = None
    varied_params: frozenset[str] = frozenset()
    aliases: dict[str, str] = field(default_factory=dict)
    kernel_nodes: set[int] = field(default_factory=set)
    parents: dict[int, ast.AST] = field(default_factory=dict)

    @staticmethod
    def parse(text: str, filename: str, entry_point: str, output_arg: str, package: str,
              expected_params: tuple[tuple[str, object], ...] | None = None,
              varied_params: frozenset[str] = frozenset()) -> Source:
        """Parse `text`; raises SyntaxError as `ast.parse` does."""
        src = Source(ast.parse(text, filename=filename), filename, entry_point, output_arg, package, expected_params,
                     varied_params)
        for node in ast.walk(src.tree):
            for child in ast.iter_child_nodes(node):
                src.parents[id(child)] = node
        src.aliases = _collect_aliases(src.tree)
        for fn in functions(src.tree):
            if any(src.resolve(_decorator_target(d)) in KERNEL_DECORATORS for d in fn.decorator_list):
                src.kernel_nodes.update(id(n) for n in ast.walk(fn) if n is not fn)
        return src

    def resolve(self, node: ast.AST | None) -> str | None:
        """Dotted name of a Name/Attribute chain with import aliases expanded (``tl.dot`` ->
        ``triton.language.dot``); a chain rooted at a local variable keeps the variable name; None for others."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def is_module_rooted(self, node: ast.AST) -> bool:
        """Whether a Name/Attribute chain starts at an imported name."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.aliases

    def in_kernel(self, node: ast.AST) -> bool:
        """Whether `node` lies inside a Triton kernel body."""
        return id(node) in self.kernel_nodes

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def entry(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The module-level definition of the entry point, or None."""
        for stmt in self.tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == self.entry_point:
                return stmt
        return None

    def maximal_chains(self) -> Iterator[ast.Attribute | ast.Name]:
        """Every Name/Attribute chain that is not itself the `.value` of a longer Attribute."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute | ast.Name):
                parent = self.parent(node)
                if isinstance(parent, ast.Attribute) and parent.value is node:
                    continue
                yield node


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every (nested) function definition."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _decorator_target(dec: ast.expr) -> ast.expr:
    return dec.func if isinstance(dec, ast.Call) else dec


def _collect_aliases(tree: ast.Module) -> dict[str, str]:
    aliases = _import_aliases(tree)
    bindings = list(_name_bindings(tree))
    changed = True
    while changed:
        changed = False
        for name, value in bindings:
            dotted = _chain_name(value, aliases)
            if dotted is not None and aliases.get(name) != dotted and name not in aliases:
                aliases[name] = dotted
                changed = True
    return aliases


def _chain_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Dotted name of a Name/Attribute chain whose root is a known alias, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    parts.append(aliases[node.id])
    return ".".join(reversed(parts))


def _name_bindings(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(name, value) for every simple binding of a name: assignments (tuples unpacked pairwise), walrus,
    annotated assignments and parameter defaults (flow-insensitive: any scope, any order)."""
    for node in ast.walk(tree):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
        while pairs:
            target, value = pairs.pop()
            if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
                    and len(target.elts) == len(value.elts):
                pairs.extend(zip(target.elts, value.elts))
            elif isinstance(target, ast.Name):
                yield target.id, value
            elif isinstance(target, ast.arg):
                yield target.arg, value


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def literal_ints(node: ast.AST) -> list[int]:
    """Integer literals in `node` when it is an int constant or a tuple/list/set of them (else [])."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [-v for v in literal_ints(node.operand)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.LShift):
        left, right = literal_ints(node.left), literal_ints(node.right)
        if len(left) == 1 and len(right) == 1 and isinstance(node.left, ast.Constant | ast.BinOp | ast.UnaryOp):
            a, b = left[0], right[0]
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.FloorDiv: a // b if b else 0,
                   ast.LShift: a << b if 0 <= b < 64 else 0}
            return [ops[type(node.op)]]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        out: list[int] = []
        for elt in node.elts:
            out.extend(literal_ints(elt))
        return out
    return []


class SizeTaint:
    """Names in one function that carry token or batch sizes (``x.shape[0]``, ``len(x)``, ``x.numel()``,
    ``max_len_extend``, whole shapes), propagated through simple assignments in source order."""

    SIZE_PARAMS = frozenset({"max_len_extend", "extend_seq_lens_cpu"})

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        self.names: set[str] = set()
        params = fn.args.args if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) else []
        self.names.update(a.arg for a in params if a.arg in self.SIZE_PARAMS)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                self._bind(node.target, node.value)

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)
        elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Attribute) \
                and value.attr == "shape" and target.elts and isinstance(target.elts[0], ast.Name):
            self.names.add(target.elts[0].id)
        elif isinstance(target, ast.Name) and self.tainted(value):
            self.names.add(target.id)

    def tainted(self, node: ast.AST) -> bool:
        """Whether expression `node` carries a token/batch size (``x.shape[1]`` does not; ``x.shape`` does)."""
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return literal_ints(node.slice) == [0] or self.tainted(node.slice)
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "len":
                return True
            if isinstance(func, ast.Attribute) and func.attr in ("numel", "nelement"):
                return True
            if isinstance(func, ast.Attribute) and func.attr == "size":
                return not node.args or literal_ints(node.args[0]) == [0]
        return any(self.tainted(child) for child in ast.iter_child_nodes(node))


def torch_disallowed(parts: list[str]) -> str | None:
    """First disallowed prefix of a ``torch.*`` dotted name (``torch.matmul``), or None if it is allowed."""
    if len(parts) < 2:
        return None
    if parts[1] not in policy.TORCH_ALLOWED_ATTRS:
        return ".".join(parts[:2])
    tables = {"cuda": policy.TORCH_CUDA_ALLOWED_ATTRS, "version": policy.TORCH_VERSION_ALLOWED_ATTRS,
              "Tensor": frozenset()}
    if len(parts) > 2 and parts[1] in tables and parts[2] not in tables[parts[1]]:
        return ".".join(parts[:3])
    return None


def math_receiver(src: Source, node: ast.AST) -> bool:
    """Whether a call receiver is the math or triton module (their .exp/.max are not tensor methods)."""
    name = src.resolve(node)
    return bool(name) and src.is_module_rooted(node) and name.split(".")[0] in ("math", "triton")


def assign_targets(node: ast.AST) -> list[ast.AST]:
    """Leaf targets of an assignment, augmented assignment or del statement (tuples unpacked)."""
    if isinstance(node, ast.Assign):
        raw = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        raw = [node.target]
    elif isinstance(node, ast.Delete):
        raw = list(node.targets)
    else:
        return []
    out: list[ast.AST] = []
    while raw:
        t = raw.pop()
        if isinstance(t, ast.Tuple | ast.List):
            raw.extend(t.elts)
        elif isinstance(t, ast.Starred):
            raw.append(t.value)
        else:
            out.append(t)
    return out


STATE_CONSTRUCTORS = frozenset({"dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "deque",
                                 "Counter", "WeakValueDictionary", "WeakKeyDictionary", "ChainMap"})
CACHE_DECORATORS = frozenset({"lru_cache", "cache", "cached_property", "memoize"})


def mutable_value(node: ast.AST) -> bool:
    """A list/dict/set display or comprehension, or a call to a mutable-container constructor."""
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in STATE_CONSTRUCTORS
    return False


def module_statement(src: Source, stmt: ast.stmt) -> Iterator[tuple[ast.AST, str]]:
    """Module-level statements that are not imports, definitions, docstrings or constant assignments."""
    if isinstance(stmt, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return
    if isinstance(stmt, ast.If):
        for inner in stmt.body + stmt.orelse:
            yield from module_statement(src, inner)
        return
    if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
        if not constant_expression(src, stmt.value):
            yield stmt, f"module-level value {ast.unparse(stmt.value)[:60]!r} is not a constant"
        return
    yield stmt, f"module-level {type(stmt).__name__} statement runs code at import"


def constant_expression(src: Source, node: ast.AST) -> bool:
    """Constants, tuples of them, names, and calls to constructors that build immutable configuration."""
    if isinstance(node, ast.Constant | ast.Name | ast.Attribute):
        return True
    if isinstance(node, ast.Tuple):
        return all(constant_expression(src, e) for e in node.elts)
    if isinstance(node, ast.UnaryOp | ast.BinOp | ast.BoolOp | ast.Compare | ast.IfExp):
        return all(constant_expression(src, c) for c in ast.iter_child_nodes(node)
                   if isinstance(c, ast.expr))
    if isinstance(node, ast.Call):
        name = src.resolve(node.func) or ""
        ok = name in ("triton.Config", "triton.language.constexpr", "triton.next_power_of_2", "int", "float",
                      "str", "bool", "tuple", "frozenset") or name.startswith(("math.", src.package + "."))
        ok = ok or name in {f"torch.cuda.{a}" for a in policy.TORCH_CUDA_ALLOWED_ATTRS}
        return ok and all(constant_expression(src, a) for a in node.args) and all(
            constant_expression(src, k.value) for k in node.keywords)
    return False


def modules_on_chain(dotted: str) -> Iterator[tuple[str, types.ModuleType]]:
    """(prefix, module) for every module an already-imported dotted chain passes through after its root, found
    with `inspect.getattr_static` on the verifier's own modules (nothing is imported or executed)."""
    parts = dotted.split(".")
    obj: object = sys.modules.get(parts[0])
    if obj is None:
        return
    for depth, part in enumerate(parts[1:], start=2):
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return
        if isinstance(obj, types.ModuleType):
            yield ".".join(parts[:depth]), obj


def project_objects(dotted: str, package: str) -> Iterator[tuple[str, object]]:
    """(prefix, object) for every prefix of a dotted chain into the task's kernel `package` (``kernels.x.mod.name
    .attr``) from the package on: its longest module prefix is imported (the task's own kernel code, which the
    verifier trusts), the rest found with `inspect.getattr_static` (no attribute code runs). Nothing for chains
    outside `package` or names that do not exist."""
    if not (dotted == package or dotted.startswith(package + ".")):
        return
    parts = dotted.split(".")
    depth = len(package.split("."))
    obj: object = importlib.import_module(package)
    yield package, obj
    for i in range(depth, len(parts)):
        prefix = ".".join(parts[:i + 1])
        if isinstance(obj, types.ModuleType) and policy.import_allowed(prefix, package):
            try:
                obj = importlib.import_module(prefix)
            except ImportError:
                obj = _static_attr(obj, parts[i])
        else:
            obj = _static_attr(obj, parts[i])
        if obj is _MISSING:
            return
        yield prefix, obj


_MISSING = object()


def _static_attr(obj: object, name: str) -> object:
    try:
        return inspect.getattr_static(obj, name)
    except AttributeError:
        return _MISSING


def chain_is_module(dotted: str) -> bool:
    """Whether an already-imported dotted chain (or a bare imported name) ends at a module object."""
    parts = dotted.split(".")
    if len(parts) == 1:
        return isinstance(sys.modules.get(parts[0]), types.ModuleType)
    found = list(modules_on_chain(dotted))
    return bool(found) and found[-1][0] == dotted


def imported_modules(tree: ast.AST) -> set[str]:
    """Modules a file names in its own import statements (``import a.b``, ``from a.b import c``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def module_names(src: Source) -> set[str]:
    """Names the candidate binds at module level (imports, definitions, assignments)."""
    names = set(src.aliases)
    for stmt in src.tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        for target in assign_targets(stmt):
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def module_rooted_mutations(src: Source) -> Iterator[tuple[ast.AST, str]]:
    """In-place container methods (`policy.MUTATING_METHODS`) called on, and item assignments into, an object reached
    from a module-level name: ``_mm.cache.update(...)``, ``_CALLS.append(...)``, ``_SEEN[key] = out`` keep state
    between calls whatever the object is."""
    names = module_names(src)
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) and not src.in_kernel(node):
            for target in assign_targets(node) if not isinstance(node, ast.Delete) else node.targets:
                root = _chain_root(target.value) if isinstance(target, ast.Subscript) else None
                if root is not None and root.id in names and not is_local(src, node, root.id):
                        yield node, f"writes into {ast.unparse(target)[:60]}, reached from module-level {root.id}"
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in policy.MUTATING_METHODS or src.in_kernel(node):
            continue
        root = _chain_root(node.func.value)
        if root is not None and root.id in names and not is_local(src, node, root.id):
            yield node, f"{ast.unparse(node.func)}(...) changes an object reached from module-level {root.id}"


def _chain_root(node: ast.AST) -> ast.Name | None:
    """The name an attribute/subscript chain starts at (``_mm`` of ``_mm.cache[k]``), None for other roots."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def is_local(src: Source, node: ast.AST, name: str) -> bool:
    """Whether `name` is a parameter or an assigned local of the function that encloses `node`."""
    fn = src.parent(node)
    while fn is not None and not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        fn = src.parent(fn)
    if fn is None:
        return False
    args = fn.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    if name in params:
        return True
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(fn))
