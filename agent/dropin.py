"""The best kernel as a self-contained package to drop into SGLang (or any code base).

A candidate imports the task's kernel modules (`kernels.extend_attention.family`, `.baseline`, ...). `write_dropin`
copies the candidate and every ``kernels.*`` module it needs, transitively, into one package folder and rewrites
those imports as relative ones, so the package needs only torch and triton. `kernels/` imports nothing else of
chiplore (DESIGN.md layering), which is what makes this possible.

The candidate has SGLang 0.5.23's signature (the baseline's), so SGLang's Triton attention backend can call the
package's ``extend_attention_fwd`` unchanged. ``TritonAttnBackend.__init__``
(``srt/layers/attention/triton_backend.py``) imports the function from `SGLANG_MODULE` when the backend is built;
the package's ``patch_sglang()`` replaces it there (the one-line patch of its README).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from core.atomic_io import atomic_write_text
from core.errors import ChiploreError

PACKAGE = "chiplore_extend_attention"
#: Where SGLang 0.5.23's Triton backend imports extend_attention_fwd from (``TritonAttnBackend.__init__``).
SGLANG_MODULE = "sglang.kernels.ops.attention.extend_attention"

_INIT = '''"""Extend attention tuned by chiplore; needs torch and triton only. SGLang 0.5.23's signature (README.md)."""

import importlib

from .kernel import {entry_point}

__all__ = ["{entry_point}", "patch_sglang"]


def patch_sglang():
    """Make SGLang's Triton attention backend call this kernel: replace ``{module}.{entry_point}``, which
    ``TritonAttnBackend.__init__`` imports when a backend is built. Call it before the backend is built, in every
    process that builds one (SGLang's scheduler processes). Returns the function it replaced."""
    module = importlib.import_module("{module}")
    replaced = module.{entry_point}
    module.{entry_point} = {entry_point}
    return replaced
'''

_README = """# {package}

Extend attention tuned by chiplore, with SGLang 0.5.23's signature: `{entry_point}(q_extend, k_extend, v_extend,
o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr,
max_len_extend, k_scale, v_scale, sm_scale=None, ...)`, writing `o_extend` in place. Needs torch and triton.

SGLang's Triton backend (`python/sglang/srt/layers/attention/triton_backend.py`, `TritonAttnBackend.__init__`) does

```python
from {module} import (..., {entry_point}, ...)
self.{entry_point} = torch.compiler.disable({entry_point})
```

With this folder on `PYTHONPATH`, one line makes it use this kernel, run before the backend is built in each
process that builds one (e.g. at the top of the scheduler's entry point):

```python
import {package}; {package}.patch_sglang()
```

or, in `triton_backend.py` itself, one line after that import: `from {package} import {entry_point}`.
"""
_FROM = re.compile(r"^(\s*)from\s+(kernels(?:\.\w+)+)\s+import\s", re.MULTILINE)


def _kernel_imports(source: str) -> set[str]:
    """Names of ``kernels.*`` modules imported by `source` (``from kernels.x.y import ...``)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernels.") and not node.level:
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


def write_dropin(candidate: Path, out: Path, package: str = PACKAGE, entry_point: str = "extend_attention_fwd"
                 ) -> Path:
    """Write ``out/<package>/`` holding ``kernel.py`` (the candidate), its ``kernels.*`` dependencies, an
    ``__init__.py`` exporting the entry point and ``patch_sglang()``, and a README.md with the SGLang patch.

    Returns:
        the package folder. Import with ``from <package> import extend_attention_fwd``.

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
    target = out / package
    target.mkdir(parents=True, exist_ok=True)
    def relative(match: re.Match) -> str:
        return f"{match.group(1)}from .{names[match.group(2)]} import "

    for short, text in sources.items():
        atomic_write_text(target / f"{short}.py", _FROM.sub(relative, text))
    atomic_write_text(target / "__init__.py", _INIT.format(entry_point=entry_point, module=SGLANG_MODULE))
    atomic_write_text(target / "README.md", _README.format(package=package, entry_point=entry_point,
                                                           module=SGLANG_MODULE))
    return target
