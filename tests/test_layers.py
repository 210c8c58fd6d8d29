"""The layer order, checked on the imports (AST, function-level ones included) of every module of our packages.

    kernels -> core -> hardware_profiles -> knowledge -> ingest -> agent

- `kernels` imports only torch, triton and the standard library (a kernel folder stays usable on its own; the
  report's drop-in copies it); a task folder imports only the shared kernels modules (`kernels.task`,
  `kernels.chip`, `kernels.launch`, `kernels.timing`) and its own folder, never another task's.
- every other package imports only from packages before it, and of `kernels` only the contract: everything
  task-specific is read through `TaskSpec` (docs/ARCHITECTURE.md, "Adding a task").
- no import-time cycle (module-scope imports) between the modules and subpackages of `agent` (`agent.loop`,
  `agent.verifier`, `agent.proposers`, ...), and nothing below the CLI imports `agent.cli`, lazily or not (the CLI
  is the top: `agent.demo` runs commands through the runner the CLI hands it).
- no importlib indirection between our own packages (``importlib.import_module("knowledge...")``); the task
  registry (`kernels.task.TASK_MODULES`) is the one place that names modules by string.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernels", "core", "hardware_profiles", "knowledge", "ingest", "agent")
#: What every task shares and the rest of chiplore may import: the contract, the chip limits a kernel runs with,
#: the direct launcher, the timing helper and the covering arrays of the hidden trials.
CONTRACT = {"kernels", "kernels.task", "kernels.chip", "kernels.covering", "kernels.launch", "kernels.tensormap",
            "kernels.timing"}
KERNEL_DEPENDENCIES = {"torch", "triton"}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path, module_scope: bool = False) -> set[str]:
    """Dotted names a module imports (``from a.b import c`` gives ``a.b.c`` when that is a module, else ``a.b``);
    with `module_scope`, only the imports that run when the module is imported (its top-level statements)."""
    out = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in (tree.body if module_scope else ast.walk(tree)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.add("<relative import>")
    return out


IMPORTS = {name: _imports(path) for name, path in MODULES.items()}
MODULE_SCOPE_IMPORTS = {name: _imports(path, module_scope=True) for name, path in MODULES.items()}


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def test_every_package_is_scanned():
    assert {m.split(".")[0] for m in MODULES} == set(PACKAGES) and len(MODULES) > 100


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_packages_before_them(package):
    allowed = set(PACKAGES[:PACKAGES.index(package) + 1])
    bad = sorted((m, t) for m, targets in IMPORTS.items() if m.split(".")[0] == package
                 for t in targets if _ours(t) and t.split(".")[0] not in allowed and package != "kernels")
    assert not bad, f"upward imports: {bad}"


def test_kernels_import_torch_triton_stdlib_and_the_contract_only():
    bad = []
    for module, targets in IMPORTS.items():
        if not module.startswith("kernels"):
            continue
        folder = module.split(".")[1] if module.count(".") >= 1 and MODULES[module].parent != ROOT / "kernels" \
            else None
        for t in targets:
            root = t.split(".")[0]
            if root == "kernels":
                own = folder is not None and t.startswith(f"kernels.{folder}")
                if not (own or t in CONTRACT):
                    bad.append((module, t))
            elif root not in KERNEL_DEPENDENCIES and root not in sys.stdlib_module_names:
                bad.append((module, t))
    assert not bad, bad


def test_outside_kernels_only_the_contract_is_imported():
    bad = sorted((m, t) for m, targets in IMPORTS.items() if not m.startswith("kernels")
                 for t in targets if t.split(".")[0] == "kernels" and t not in CONTRACT)
    assert not bad, f"task-specific imports outside kernels/: {bad}"


def _unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "agent" else parts[0]


def test_no_import_time_cycle_between_agent_modules_and_subpackages():
    graph: dict[str, set[str]] = defaultdict(set)
    for module, targets in MODULE_SCOPE_IMPORTS.items():
        for t in targets:
            if _ours(t) and _unit(t) != _unit(module):
                graph[_unit(module)].add(_unit(t))

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted(u for u in list(graph) if u in reachable(u))
    assert not cycles, f"import cycles through {cycles}"


def test_no_importlib_indirection_between_our_packages():
    bad = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__", "find_spec") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _ours(arg.value):
                    bad.append((module, arg.value))
    assert not bad, bad


def test_nothing_below_the_cli_imports_it():
    bad = sorted((m, t) for m, targets in IMPORTS.items() if not m.startswith("agent.cli")
                 for t in targets if t == "agent.cli" or t.startswith("agent.cli."))
    assert not bad, bad


def _documentation_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that document: docstrings, and the ``help=`` / ``description=`` texts of CLI
    options and tool parameters."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
            out |= {id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
    return out


def _task_mentions_in_code(path: Path, names: tuple[str, ...]) -> list[str]:
    """Where a .py file names one of `names` outside comments and documentation: identifiers, attributes, import
    names and string constants other than docstrings and help texts (``file:line name``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _documentation_strings(tree)
    hits = []
    for node in ast.walk(tree):
        texts = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            texts.append(node.value)
        elif isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
        elif isinstance(node, ast.alias):
            texts.append(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            texts.append(node.module)
        hits += [f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')} {n}" for t in texts for n in names
                 if n in t]
    return hits


def test_outside_kernels_no_code_names_a_task():
    """agent/, knowledge/ and ingest/ reach every task through the contract only: a registered task's name (or the
    module of its spec) appears there in comments and documentation at most, never in code or data files
    (issue 17: ``git grep extend_attention agent/ knowledge/ ingest/`` finds nothing but documentation)."""
    from kernels.task import TASK_MODULES

    names = tuple(TASK_MODULES)
    assert {"extend_attention", "splitk_gemm"} <= set(names)
    hits = []
    for package in ("agent", "knowledge", "ingest"):
        for path in sorted((ROOT / package).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".md", ".pyc"):
                continue
            if path.suffix == ".py":
                hits += _task_mentions_in_code(path, names)
            else:
                text = path.read_text(encoding="utf-8", errors="replace")
                hits += [f"{path.relative_to(ROOT)} {n}" for n in names if n in text]
    assert not hits, f"task-specific names outside kernels/: {hits}"


def _layout_picture() -> str:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layout: folders and the imports between them", 1)[1]
    return section.split("```", 2)[1]


def test_layout_picture_matches_the_packages_and_the_task_folders():
    """docs/ARCHITECTURE.md's picture names the packages top to bottom in the reverse of the layer order checked
    above (kernels apart, at the bottom), every registered task's folder, and for each task folder only modules and
    files that exist in it."""
    import re

    from kernels.task import TASK_MODULES

    picture = _layout_picture()
    tops = [m.group(1) for m in re.finditer(r"^   ([a-z_]+)/", picture, re.MULTILINE)]
    assert tops == list(reversed(PACKAGES[1:])) + ["kernels"], tops
    blocks = re.findall(r"^ {13}([a-z_<>]+)/ +(.*(?:\n {32}.*)*)", picture, re.MULTILINE)
    named = {folder: re.split(r",\s*", " ".join(body.split())) for folder, body in blocks}
    tasks = {module.split(".")[1] for module in TASK_MODULES.values()}
    assert tasks <= set(named), (tasks, set(named))
    for task in tasks:
        folder = ROOT / "kernels" / task
        missing = [n for n in named[task] if not list(folder.glob(n if "." in n else f"{n}.py"))]  # family*: globs
        assert not missing, f"kernels/{task}/ has no {missing} (docs/ARCHITECTURE.md layout picture)"
