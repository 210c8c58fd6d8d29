"""Who is responsible for what runs in the sandbox child: the shared sandbox state, the violation type, and the
classification of Python frames as trusted, transparent or untrusted.

"Responsible code" is the innermost Python frame that is not transparent (torch, the standard library, other
third-party packages): Triton, the task's kernel modules and this harness are trusted; anything else (the
candidate file, code it compiled) is not. Frames are classified by their code object's filename (a module's
``__file__`` is writable by the module, a code object's filename is not) and the result is cached per code object,
so judging a frame is one dictionary lookup. One kind of code without a file is Triton's own: the argument binder
each ``@triton.jit`` function builds with ``exec`` (``triton.runtime.jit.create_function_from_signature``: a
function ``dynamic_func`` whose globals are Triton's namespace, holding ``triton.runtime.jit.JITCallable``). Its frames
are trusted, judged per frame by their globals (a code object can be rebound to other globals; the globals dict
of a frame cannot be chosen by code that may not call ``exec``). Reading ``frame.f_code`` raises an audit event; the guards set
`SandboxState.in_guard` while they judge, so the audit hook returns at once for those.
"""

from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType

import torch

#: Code filenames of the import machinery (its frames sit between an import statement and the module it loads).
IMPORT_MACHINERY = ("<frozen importlib._bootstrap", "<frozen importlib._bootstrap_external")


class SandboxViolation(BaseException):
    """Candidate code did something the sandbox forbids (a BaseException: ``except Exception`` cannot hide it)."""


@dataclass
class SandboxState:
    """Mutable state of the guards in this process (one child runs one candidate).

    Attributes:
        active: candidate code may run (set by `Guards.armed`; the guards also treat a non-empty torch dispatch
            mode stack as armed, so flipping this flag off does not switch them off).
        in_guard: the guards' own code is running (the audit hook ignores the events it raises).
        boundary: while the guards run the garbage collector, the collecting frame: code that finalizers run is
            judged as if called from there, i.e. the candidate's unless trusted code is in between.
        kernels_disabled / launches: kernel ablation switch and launch counter.
        violations: every refusal, recorded before it is raised.
    """

    active: bool = False
    in_guard: bool = False
    boundary: FrameType | None = None
    kernels_disabled: bool = False
    launches: int = 0
    violations: list[str] = field(default_factory=list)

    def violate(self, message: str) -> SandboxViolation:
        self.violations.append(message)
        return SandboxViolation(message)

    def armed(self) -> bool:
        """Whether candidate code may be running: the flag, or the guard's dispatch mode still on the stack."""
        return self.active or torch._C._len_torch_dispatch_stack() > 0


STATE = SandboxState()


class FrameJudge:
    """Classifies frames as trusted, transparent (torch, stdlib, other packages) or untrusted."""

    def __init__(self, root: Path, untrusted_project_files: tuple[str, ...] = ("reference.py", "spec.py", "cases.py",
                                                                               "timing.py", "task.py")):
        import triton

        paths = sysconfig.get_paths()
        self._torch = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
        self._trusted = (os.path.dirname(os.path.realpath(triton.__file__)) + os.sep,
                         str((root / "agent" / "verifier").resolve()) + os.sep)
        self._kernels = str((root / "kernels").resolve()) + os.sep
        self._harness = str((root / "agent" / "verifier").resolve()) + os.sep
        self._untrusted_names = untrusted_project_files
        site = {os.path.realpath(paths[k]) + os.sep for k in ("purelib", "platlib")}
        std = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")}
        self._transparent = tuple(sorted(site)) + tuple(sorted(std))
        self._cache: dict[str, str] = {}
        self._by_code: dict[CodeType, str] = {}
        self._harness_code: dict[CodeType, bool] = {}
        self._jit_callable = _triton_jit_callable()

    def kind(self, filename: str) -> str:
        """'trusted', 'transparent' or 'untrusted' for a module or code filename."""
        found = self._cache.get(filename)
        if found is None:
            found = self._classify(filename)
            self._cache[filename] = found
        return found

    def is_harness(self, frame: FrameType | None) -> bool:
        """Whether `frame` is the verifier's own code (agent/verifier), as opposed to other trusted code (Triton,
        the task's kernels), which runs on the candidate's behalf and may be handed the candidate's callbacks."""
        if frame is None:
            return False
        found = self._harness_code.get(frame.f_code)
        if found is None:
            filename = frame.f_code.co_filename
            path = os.path.realpath(filename) if filename and not filename.startswith("<") else filename
            found = self._harness_code[frame.f_code] = path.startswith(self._harness)
        return found

    def code_kind(self, code: CodeType) -> str:
        """Kind of one code object (cached per code object). The methods `dataclasses` generates (``__init__``,
        ``__repr__``, ``__eq__``, ...; code named ``__create_fn__.<locals>.NAME`` in ``<string>``, source:
        Lib/dataclasses.py ``_create_fn``, CPython 3.10-3.12) are 'transparent' like the module that wrote them:
        whoever called them is responsible (a candidate cannot write ``<string>`` code itself: exec and compile
        are refused)."""
        found = self._by_code.get(code)
        if found is None:
            found = self._by_code[code] = ("transparent" if is_dataclass_method(code) else
                                           self.kind(code.co_filename))
        return found

    def is_triton_binder(self, frame: FrameType) -> bool:
        """Whether `frame` runs Triton's exec-built argument binder (``dynamic_func`` in Triton's namespace, whose
        ``JITCallable`` is the installed Triton's class; source: triton/runtime/jit.py,
        ``create_function_from_signature``, Triton 3.x)."""
        code = frame.f_code
        return (code.co_name == "dynamic_func" and code.co_filename == "<string>"
                and self._jit_callable is not None and frame.f_globals.get("JITCallable") is self._jit_callable)

    def _classify(self, filename: str) -> str:
        if filename.startswith("<frozen"):
            return "transparent"
        path = os.path.realpath(filename) if filename and not filename.startswith("<") else filename
        if path.startswith(self._torch):
            return "transparent"
        if path.startswith(self._trusted):
            return "trusted"
        if path.startswith(self._kernels):
            return "untrusted" if os.path.basename(path) in self._untrusted_names else "trusted"
        if path.startswith(self._transparent):
            return "transparent"
        return "untrusted"

    def responsible(self, frame: FrameType | None) -> tuple[FrameType | None, str]:
        """Innermost non-transparent frame from `frame` outwards and its kind ('trusted' if none). Reaching
        `STATE.boundary` (the guards' garbage collection) first makes the collector's caller responsible:
        'untrusted'."""
        boundary = STATE.boundary
        while frame is not None:
            if frame is boundary:
                return frame, "untrusted"
            kind = self.code_kind(frame.f_code)
            if kind == "untrusted" and self.is_triton_binder(frame):
                kind = "trusted"
            if kind != "transparent":
                return frame, kind
            frame = frame.f_back
        return None, "trusted"


def _triton_jit_callable() -> type | None:
    """Triton's ``JITCallable`` class (None where this Triton has none)."""
    from triton.runtime import jit

    return getattr(jit, "JITCallable", None)


def where(frame: FrameType | None) -> str:
    """``file:line`` of a frame (basename only)."""
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def is_dataclass_method(code: CodeType) -> bool:
    """Whether `code` is a method written by `dataclasses` (exec'd as ``__create_fn__.<locals>.NAME``)."""
    return code.co_filename == "<string>" and code.co_qualname.startswith("__create_fn__.<locals>.")


def where_called(frame: FrameType | None, callers: int = 3) -> str:
    """``file:line in function`` of a frame and of up to `callers` frames it was called from, innermost first
    (basenames only), e.g. ``<string>:3 in dynamic_func, from jit.py:720 in run``."""
    parts = []
    while frame is not None and len(parts) <= callers:
        parts.append(f"{where(frame)} in {frame.f_code.co_name}")
        frame = frame.f_back
    return ", from ".join(parts) if parts else "?"


def in_import_machinery(frame: FrameType) -> bool:
    """Whether `frame` belongs to importlib's bootstrap (the frames between an import and the module loaded)."""
    return frame.f_code.co_filename.startswith(IMPORT_MACHINERY)
