"""The best kernel as a self-contained package to drop into the host code base (SGLang for extend attention).

A candidate imports its task's kernel modules (the family module and what it imports). `write_dropin` copies the
candidate and every ``kernels.*`` module it needs, transitively, into one package folder named by the task's
`kernels.task.DropIn` and rewrites those imports as relative ones, so the package needs only torch and triton.
`kernels/` imports nothing else of chiplore (DESIGN.md layering), which is what makes this possible. Where the task's
`DropIn` names a host module, the package also offers ``patch_host()`` (rebinds the entry point in that module, the
one-line patch) and a README.md saying how to use it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from core.atomic_io import atomic_write_text
from core.errors import ChiploreError
from kernels.task import DropIn

_PATCH = '''

def patch_host():
    """Make the host code use this kernel: rebind ``{module}.{entry_point}`` to this package's, before the host
    imports it (see README.md). Returns the function it replaced."""
    import importlib

    module = importlib.import_module("{module}")
    replaced = module.{entry_point}
    module.{entry_point} = {entry_point}
    return replaced
'''

_README = """# {package}

{summary}

```python
import {package}; {package}.patch_host()   # rebinds {module}.{entry_point}
```

{notes}"""

_FROM = re.compile(r"^(\s*)from\s+(kernels(?:\.\w+)+)\s+import\s", re.MULTILINE)


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


def _kernel_imports(source: str) -> set[str]:
    """Names of ``kernels.*`` modules imported by `source`: ``from kernels.x.y import ...`` names ``kernels.x.y``;
    ``from kernels.x import y`` with ``x`` a package names its submodule ``kernels.x.y`` (not the package's
    ``__init__``, which imports the task's entry points and would pull every kernel module in)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernels.") and not node.level:
            if _is_package(node.module):
                out |= {f"{node.module}.{alias.name}" for alias in node.names}
            else:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("kernels."):
                    raise ChiploreError(f"drop-in: 'import {alias.name}' is not supported; use 'from ... import'")
    return out


def _module_file(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ChiploreError(f"drop-in: module {name!r} has no Python source file")
    return Path(spec.origin)


def write_dropin(candidate: Path, out: Path, dropin: DropIn, entry_point: str) -> Path:
    """Write ``out/<dropin.package>/`` holding ``kernel.py`` (the candidate), its ``kernels.*`` dependencies and an
    ``__init__.py`` exporting `entry_point` (and ``patch_host()`` with a README.md when `dropin` names a host module).

    Returns:
        the package folder. Import with ``from <package> import <entry_point>``.

    Raises:
        ChiploreError: a dependency has no source file, or two dependencies share a file name.
    """
    sources = {"kernel": candidate.read_text(encoding="utf-8")}
    names: dict[str, str] = {}
    pending = list(_kernel_imports(sources["kernel"]))
    while pending:
        module = pending.pop()
        if module in names:
            continue
        short = module.rsplit(".", 1)[-1]
        if short in sources or short == "__init__":
            raise ChiploreError(f"drop-in: two modules named {short!r}")
        names[module] = short
        sources[short] = _module_file(module).read_text(encoding="utf-8")
        pending.extend(_kernel_imports(sources[short]))
    target = out / dropin.package
    target.mkdir(parents=True, exist_ok=True)
    def relative(match: re.Match) -> str:
        module, indent = match.group(2), match.group(1)
        return f"{indent}from .{names[module]} import " if module in names else f"{indent}from . import "

    for short, text in sources.items():
        atomic_write_text(target / f"{short}.py", _FROM.sub(relative, text))
    exported = [entry_point] + (["patch_host"] if dropin.host_module else [])
    init = (f'"""{dropin.summary}"""\n\n'
            f'from .kernel import {entry_point}\n\n__all__ = {exported!r}\n')
    if dropin.host_module:
        init += _PATCH.format(module=dropin.host_module, entry_point=entry_point)
        atomic_write_text(target / "README.md", _README.format(
            package=dropin.package, summary=dropin.summary, module=dropin.host_module, entry_point=entry_point,
            notes=dropin.notes))
    atomic_write_text(target / "__init__.py", init)
    return target
