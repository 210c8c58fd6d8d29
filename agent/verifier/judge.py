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

import dataclasses
import functools
import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType, FunctionType, GetSetDescriptorType, MemberDescriptorType

import torch

from agent.verifier import seal

#: ``Py_TPFLAGS_HEAPTYPE``: set on classes made at run time (class statements, ``type(...)``), whose attributes can
#: be rebound; types defined in C (int, tuple, torch.dtype) lack it and are immutable (source: CPython Include/object.h).
_HEAPTYPE = 1 << 9

#: The attributes the methods `dataclasses` generates look up on an instance or its class (besides its fields): the
#: hooks ``__init__`` calls, the special methods repr/eq/order/hash call on fields, the attribute and construction
#: hooks (``dataclasses.replace`` calls ``obj.__class__(**changes)``). Source: Lib/dataclasses.py, CPython 3.11-3.13.
GENERATED_REACH = ("__post_init__", "__setattr__", "__delattr__", "__getattribute__", "__getattr__", "__repr__",
                   "__str__", "__format__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
                   "__class__", "__new__", "__init__", "__call__", "__get__", "__set__", "__index__", "__len__",
                   "__iter__", "__bool__")

#: Builtin containers `FrameJudge.clean_value` looks into.
_CONTAINERS = (tuple, list, dict, set, frozenset)

#: Descriptors a class gets from `type` itself (``__dict__``, ``__weakref__``, slots).
_DESCRIPTORS = (GetSetDescriptorType, MemberDescriptorType)

#: Code filenames of the import machinery (its frames sit between an import statement and the module it loads).
IMPORT_MACHINERY = ("<frozen importlib._bootstrap", "<frozen importlib._bootstrap_external")


class SandboxViolation(BaseException):
    """Candidate code did something the sandbox forbids (a BaseException: ``except Exception`` cannot hide it)."""


@dataclass
class SandboxState:
    """Mutable state of the guards in this process (one child runs one candidate). Its fields are plain Python
    state a candidate can write: none of them can switch a guard off or make a refusal pass (see each); its methods
    are sealed (`seal.seal_class`).

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
        return self.active or _dispatch_stack_depth() > 0


#: torch's dispatch-mode stack depth, bound once: the sealed `SandboxState.armed` never looks it up on ``torch._C``.
_dispatch_stack_depth = torch._C._len_torch_dispatch_stack


STATE = SandboxState()


class FrameJudge(tuple):
    """Classifies frames as trusted, transparent (torch, stdlib, other packages) or untrusted.

    Sealed (`agent.verifier.seal`): a judge is a tuple (no instance attributes to rebind or shadow) of two
    `seal.sealed_cache` memos (filename -> kind, filename -> harness or not; their entries cannot be written from
    Python) and Triton's ``JITCallable``; the class is immutable and its methods run on a private copy of this
    module's globals. A candidate that reaches the judge (through the dispatch guard, ``builtins.__import__``, a
    patched torch function) can call it, never change what it answers.
    """

    __slots__ = ()

    def __new__(cls, root: Path, untrusted_project_files: tuple[str, ...] = (
            "reference.py", "spec.py", "cases.py", "long_trials.py", "covering.py", "timing.py", "task.py")):
        import triton

        paths = sysconfig.get_paths()
        verifier, kernels = root / "agent" / "verifier", root / "kernels"
        prefixes = (_spellings(os.path.dirname(torch.__file__)),
                    _spellings(os.path.dirname(triton.__file__)) + _spellings(verifier),
                    _spellings(kernels), tuple(untrusted_project_files),
                    tuple(sorted({p for k in ("purelib", "platlib", "stdlib", "platstdlib")
                                  for p in _spellings(paths[k])})))
        harness = _spellings(verifier)
        return tuple.__new__(cls, (seal.sealed_cache(functools.partial(_classify, prefixes)),
                                   seal.sealed_cache(functools.partial(_under, harness)), _triton_jit_callable()))

    def kind(self, filename: str) -> str:
        """'trusted', 'transparent' or 'untrusted' for a module or code filename (memoized per filename)."""
        return self[0](filename)

    def is_harness(self, frame: FrameType | None) -> bool:
        """Whether `frame` is the verifier's own code (agent/verifier), as opposed to other trusted code (Triton,
        the task's kernels), which runs on the candidate's behalf and may be handed the candidate's callbacks."""
        return frame is not None and self[1](frame.f_code.co_filename)

    def code_kind(self, code: CodeType) -> str:
        """Kind of one code object: the kind of its filename. A method `dataclasses` generated
        (`is_dataclass_method`, file ``<string>``) is 'untrusted' here: what it does depends on the instance it runs
        on, so only `frame_kind` can lift it to 'transparent'."""
        return self[0](code.co_filename)

    def frame_kind(self, frame: FrameType) -> str:
        """Kind of one frame: `code_kind`, except that a method `dataclasses` generated (``__init__``, ``__repr__``,
        ``__eq__``, ...; code named ``__create_fn__.<locals>.NAME`` in ``<string>``, source: Lib/dataclasses.py
        ``_create_fn``, CPython 3.10-3.12) is 'transparent' like the module that wrote it -- whoever called it is
        responsible -- when every argument it runs on is `clean_value` (Gluon's compiler reprs its layout
        dataclasses, whose repr calls ``id()``). On an instance of a class with a C-level callable in it (a
        subclass whose ``__post_init__`` is ``functools.partial(list.extend, map(open, ...))``), or on field values
        whose special methods are such callables, the generated code would call them with no Python frame of
        their own, and trusted code that calls the method (``dataclasses.replace`` in a kernel) would be held
        responsible for them: the frame is 'untrusted' then. Callers hold `SandboxState.in_guard` (``f_locals``
        raises an audit event)."""
        code = frame.f_code
        kind = self.code_kind(code)
        if kind != "untrusted" or not is_dataclass_method(code):
            return kind
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        values = frame.f_locals
        clean = all(self.clean_value(values.get(n)) for n in names)
        return "transparent" if clean else "untrusted"

    def clean_value(self, value: object, depth: int = 3) -> bool:
        """Whether the special methods the generated dataclass methods call on `value` (repr, eq, hash, order,
        ``__post_init__``, ``__setattr__``) are all written in Python by trusted code, or belong to a type defined in
        C (int, str, tuple, torch.dtype, ...): recursively through builtin containers and dataclass fields, `depth`
        levels deep (deeper means not clean). Looks attributes up in the classes' own dictionaries, so that no code
        of the value's runs while the judge judges."""
        cls = type(value)
        if not _flags(cls) & _HEAPTYPE:
            if cls in _CONTAINERS:
                if depth <= 0 or len(value) > 256:  # type: ignore[arg-type]
                    return False
                items = value.items() if cls is dict else value  # type: ignore[attr-defined]
                return all(self.clean_value(i, depth - 1) for i in items)
            return True
        if depth <= 0 or not self.clean_class(cls):
            return False
        fields = _lookup(cls, "__dataclass_fields__")
        if not isinstance(fields, dict):
            return True
        for name in fields:
            slot = _lookup(cls, name) if type(name) is str else None
            if type(slot) is MemberDescriptorType:
                try:
                    field_value = slot.__get__(value, cls)
                except AttributeError:
                    continue
            else:
                state = _lookup(cls, "__dict__")
                try:
                    namespace = state.__get__(value, cls) if type(state) is GetSetDescriptorType else {}
                except TypeError:  # a descriptor of another type under that name
                    return False
                field_value = namespace.get(name) if type(namespace) is dict else None
            if not self.clean_value(field_value, depth - 1):
                return False
        return True

    def clean_class(self, cls: type) -> bool:
        """Whether every attribute that the generated dataclass methods can reach on an instance of `cls`
        (`GENERATED_REACH` and its dataclass fields, looked up along ``__mro__``) is data, a descriptor of the type
        itself, or a Python function that is not library code (the candidate's own functions are judged in their
        own frames), possibly wrapped in staticmethod/classmethod/property: never a C-level callable or a library
        function standing in for a special method. The metaclass must be `type` or clean itself."""
        meta = type(cls)
        if meta is not type and not (issubclass(meta, type) and self.clean_class(meta)):
            return False
        fields = _lookup(cls, "__dataclass_fields__")
        names = GENERATED_REACH + (tuple(n for n in fields if type(n) is str) if isinstance(fields, dict) else ())
        return all(self._clean_lookup(cls, name) for name in names)

    def _clean_lookup(self, cls: type, name: str) -> bool:
        """Whether `name`, looked up along ``cls.__mro__``, is absent, defined by a type written in C (immutable),
        or a clean attribute of a class made in Python."""
        for klass in type.__getattribute__(cls, "__mro__"):
            namespace = type.__getattribute__(klass, "__dict__")
            if name in namespace:
                return not _flags(klass) & _HEAPTYPE or self._clean_attribute(namespace[name])
        return True

    def _clean_attribute(self, value: object) -> bool:
        kind = type(value)
        if kind in (staticmethod, classmethod):
            return self._clean_attribute(value.__func__)  # type: ignore[attr-defined]
        if kind is property:
            return all(f is None or self._clean_attribute(f)
                       for f in (value.fget, value.fset, value.fdel))  # type: ignore[attr-defined]
        if kind is FunctionType:
            code = value.__code__  # type: ignore[attr-defined]
            return is_dataclass_method(code) or _is_repr_guard(code) or self.code_kind(code) != "transparent"
        if kind in _DESCRIPTORS or kind in _dataclass_records():
            return True
        return not callable(value) and _lookup(kind, "__get__") is None  # data: never looked up as a method

    def is_triton_binder(self, frame: FrameType) -> bool:
        """Whether `frame` runs Triton's exec-built argument binder (``dynamic_func`` in Triton's namespace, whose
        ``JITCallable`` is the installed Triton's class; source: triton/runtime/jit.py,
        ``create_function_from_signature``, Triton 3.x)."""
        code = frame.f_code
        return (code.co_name == "dynamic_func" and code.co_filename == "<string>"
                and self[2] is not None and frame.f_globals.get("JITCallable") is self[2])

    def responsible(self, frame: FrameType | None) -> tuple[FrameType | None, str]:
        """Innermost non-transparent frame from `frame` outwards and its kind ('trusted' if none). Reaching
        `STATE.boundary` (the guards' garbage collection) first makes the collector's caller responsible:
        'untrusted'."""
        boundary = STATE.boundary
        while frame is not None:
            if frame is boundary:
                return frame, "untrusted"
            kind = self.frame_kind(frame)
            if kind == "untrusted" and self.is_triton_binder(frame):
                kind = "trusted"
            if kind != "transparent":
                return frame, kind
            frame = frame.f_back
        return None, "trusted"


def _spellings(directory: str | Path) -> tuple[str, ...]:
    """The ways a code filename under `directory` can start: its absolute and its resolved path, with a trailing
    separator (import paths are absolute in the child; code under a symlinked directory keeps the spelling the
    import system used)."""
    return tuple(sorted({os.path.abspath(directory) + os.sep, os.path.realpath(directory) + os.sep}))


def _classify(prefixes: tuple, filename: str) -> str:
    """Kind of a code filename from `FrameJudge`'s prefixes: string operations only, so that what no Python code can
    rebind (str's methods) decides it. A relative path, or one with ``.`` or ``..`` components, is 'untrusted'."""
    torch_dirs, trusted_dirs, kernel_dirs, untrusted_names, transparent_dirs = prefixes
    if filename.startswith("<frozen"):
        return "transparent"
    if not filename.startswith("/") or "/../" in filename or "/./" in filename:
        return "untrusted"
    if filename.startswith(torch_dirs):
        return "transparent"
    if filename.startswith(trusted_dirs):
        return "trusted"
    if filename.startswith(kernel_dirs):
        return "untrusted" if filename.rpartition("/")[2] in untrusted_names else "trusted"
    if filename.startswith(transparent_dirs):
        return "transparent"
    return "untrusted"


def _under(directories: tuple[str, ...], filename: str) -> bool:
    """Whether the code filename lies under one of `directories` (same rules as `_classify`)."""
    return filename.startswith(directories) and "/../" not in filename and "/./" not in filename


def _triton_jit_callable() -> type | None:
    """Triton's ``JITCallable`` class (None where this Triton has none)."""
    from triton.runtime import jit

    return getattr(jit, "JITCallable", None)


def _flags(cls: type) -> int:
    """``cls.__flags__`` read through `type` itself (a metaclass's ``__getattribute__`` never runs)."""
    return type.__getattribute__(cls, "__flags__")


def _lookup(cls: type, name: str) -> object:
    """`name` in the dictionary of the first class of ``cls.__mro__`` that defines it, else None (no descriptor
    runs, no metaclass hook)."""
    for klass in type.__getattribute__(cls, "__mro__"):
        namespace = type.__getattribute__(klass, "__dict__")
        if name in namespace:
            return namespace[name]
    return None


def _is_repr_guard(code: CodeType) -> bool:
    """Whether `code` is the recursion guard `dataclasses` wraps a generated ``__repr__`` in (3.11:
    ``dataclasses._recursive_repr``; 3.12+: ``reprlib.recursive_repr``), which calls only the function it wraps."""
    name = code.co_filename.rpartition("/")[2]
    return (name == "dataclasses.py" and code.co_qualname == "_recursive_repr.<locals>.wrapper") or (
        name == "reprlib.py" and code.co_qualname == "recursive_repr.<locals>.decorating_function.<locals>.wrapper")


def _dataclass_records() -> tuple[type, ...]:
    """The classes of the records `dataclasses` keeps on a dataclass (``__dataclass_fields__`` values,
    ``__dataclass_params__``)."""
    return tuple(t for t in (dataclasses.Field, getattr(dataclasses, "_DataclassParams", None)) if t is not None)


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


def _seal_module() -> None:
    """Seal `SandboxState` and `FrameJudge` on one private copy of this module's globals (`agent.verifier.seal`)."""
    namespace = seal.private_namespace(globals())
    seal.seal_class(SandboxState, namespace)
    seal.seal_class(FrameJudge, namespace)


_seal_module()
