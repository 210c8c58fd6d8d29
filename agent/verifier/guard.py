"""Child-side guards that are armed while candidate code runs (its import and every call).

Layers (each independent of the static rules):
- `ComputeGuard`: a torch function mode; any torch operation other than allocation, views and metadata raises
  when the code responsible for it is the candidate's (torch compute, the reference, host reads).
- an audit hook (PEP 578) and an ``__import__`` hook: file and network I/O, subprocesses, ctypes, gc, frame
  access, exec/compile and imports outside the allow-list raise.
- thread and stream creation hooks; a Triton launch counter that can also disable every launch (ablation).
- after each call: identity of timers, synchronize and harness functions, leftover threads, child processes,
  torch modes and the current stream.

"Responsible code" is the innermost Python frame that is not torch, the standard library or another
third-party package: Triton, the task's kernel modules and this harness are trusted; anything else (the
candidate file, code it compiled) is not. A violation is recorded before it is raised as `SandboxViolation`
(a BaseException, so ``except Exception`` in a candidate cannot swallow it).
"""

from __future__ import annotations

import _thread
import builtins
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from agent.verifier import policy


class SandboxViolation(BaseException):
    """Candidate code did something the sandbox forbids."""


@dataclass
class SandboxState:
    """Mutable state of the guards in this process (one child runs one candidate)."""

    active: bool = False
    in_hook: bool = False
    kernels_disabled: bool = False
    launches: int = 0
    violations: list[str] = field(default_factory=list)

    def violate(self, message: str) -> SandboxViolation:
        self.violations.append(message)
        return SandboxViolation(message)


STATE = SandboxState()


class FrameJudge:
    """Classifies source files as trusted, transparent (torch, stdlib, other packages) or untrusted."""

    def __init__(self, root: Path, untrusted_project_files: tuple[str, ...] = ("reference.py", "spec.py", "cases.py",
                                                                               "timing.py", "task.py")):
        import triton

        paths = sysconfig.get_paths()
        self._torch = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
        self._trusted = (os.path.dirname(os.path.realpath(triton.__file__)) + os.sep,
                         str((root / "agent" / "verifier").resolve()) + os.sep)
        self._kernels = str((root / "kernels").resolve()) + os.sep
        self._untrusted_names = untrusted_project_files
        site = {os.path.realpath(paths[k]) + os.sep for k in ("purelib", "platlib")}
        std = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")}
        self._transparent = tuple(sorted(site)) + tuple(sorted(std))
        self._cache: dict[str, str] = {}

    def kind(self, filename: str) -> str:
        """'trusted', 'transparent' or 'untrusted' for a code object's filename."""
        found = self._cache.get(filename)
        if found is None:
            found = self._classify(filename)
            self._cache[filename] = found
        return found

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
        """Innermost non-transparent frame from `frame` outwards and its kind ('trusted' if none)."""
        while frame is not None:
            kind = self.kind(frame.f_code.co_filename)
            if kind != "transparent":
                return frame, kind
            frame = frame.f_back
        return None, "trusted"


def where(frame: FrameType | None) -> str:
    """``file:line`` of a frame (basename only)."""
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _allowed_torch_functions() -> frozenset:
    t = torch.Tensor
    props = ("shape", "dtype", "device", "is_cuda", "is_cpu", "layout", "ndim", "requires_grad", "is_leaf",
             "is_sparse", "is_quantized", "is_meta", "grad_fn", "names", "T", "mT")
    methods = ("data_ptr", "stride", "size", "dim", "numel", "nelement", "element_size", "storage_offset",
               "is_contiguous", "__len__", "contiguous", "view", "view_as", "reshape", "reshape_as", "permute",
               "transpose", "t", "unsqueeze", "squeeze", "flatten", "unflatten", "expand", "expand_as", "narrow",
               "select", "unbind", "split", "chunk", "as_strided", "detach", "to", "float", "half", "bfloat16",
               "int", "long", "fill_", "zero_", "new_empty", "new_zeros", "new_full", "new_ones", "get_device",
               "is_floating_point", "type", "__hash__", "__format__", "__repr__", "__str__", "dim_order")
    funcs = (torch.empty, torch.empty_like, torch.empty_strided, torch.full, torch.full_like, torch.zeros,
             torch.zeros_like, torch.ones, torch.ones_like, torch.is_tensor, torch.get_default_dtype,
             torch.is_floating_point, torch.numel)
    out = set(funcs)
    out.update(getattr(t, p).__get__ for p in props if hasattr(t, p))
    out.update(getattr(t, m) for m in methods if hasattr(t, m))
    return frozenset(out)


_GETITEM = torch.Tensor.__getitem__


def _basic_index(index: object) -> bool:
    """int / slice / None / Ellipsis (or a tuple of them): a view, not a gather."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, slice):
            if any(isinstance(x, torch.Tensor) for x in (item.start, item.stop, item.step)):
                return False
        elif not (item is None or item is Ellipsis or type(item) is int or type(item) is bool):
            return False
    return True


class ComputeGuard(TorchFunctionMode):
    """Torch function mode: allocation, views and metadata pass; any other op raises if untrusted code asked."""

    ALLOWED = _allowed_torch_functions()

    def __init__(self, judge: FrameJudge):
        super().__init__()
        self.judge = judge

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.ALLOWED or (func is _GETITEM and len(args) == 2 and _basic_index(args[1])):
            return func(*args, **kwargs)
        frame, kind = self.judge.responsible(sys._getframe(1))
        if kind != "untrusted":
            return func(*args, **kwargs)
        name = torch.overrides.resolve_name(func) or getattr(func, "__name__", repr(func))
        raise STATE.violate(f"forbidden torch operation {name} at {where(frame)} while the candidate ran (only "
                            "allocation, views and metadata are allowed outside Triton kernels)")


def _allowed_aten_ops() -> frozenset:
    aten = torch.ops.aten
    names = ("empty", "empty_like", "empty_strided", "full", "full_like", "zeros", "zeros_like", "ones",
             "ones_like", "fill_", "zero_", "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute",
             "transpose", "t", "unsqueeze", "squeeze", "select", "slice", "narrow", "split", "split_with_sizes",
             "unbind", "detach", "alias", "clone", "_to_copy", "lift_fresh", "new_empty", "new_zeros", "new_full",
             "new_ones", "new_empty_strided", "unflatten", "flatten", "contiguous", "resolve_conj", "resolve_neg")
    return frozenset(getattr(aten, n) for n in names if hasattr(aten, n))


class DispatchGuard(TorchDispatchMode):
    """The timed-call variant of `ComputeGuard`, at the dispatcher: metadata queries (shape, stride, data_ptr)
    never reach it, so a launcher pays only for the few real aten ops it runs; any compute op (cuBLAS,
    attention, elementwise) or a copy to another device raises when untrusted code asked for it."""

    ALLOWED = _allowed_aten_ops()

    def __init__(self, judge: FrameJudge):
        super().__init__()
        self.judge = judge

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        if packet in self.ALLOWED and not _changes_device(packet, args, kwargs):
            return func(*args, **kwargs)
        frame, kind = self.judge.responsible(sys._getframe(1))
        if kind != "untrusted":
            return func(*args, **kwargs)
        raise STATE.violate(f"forbidden torch operation {func} at {where(frame)} while the candidate ran (only "
                            "allocation, views and metadata are allowed outside Triton kernels)")


def _changes_device(packet, args: tuple, kwargs: dict) -> bool:
    if packet is not torch.ops.aten._to_copy or not args or not isinstance(args[0], torch.Tensor):
        return False
    target = kwargs.get("device")
    return target is not None and torch.device(target) != args[0].device


class Guards:
    """Installs every layer once per child process; `armed()` switches them on around candidate code."""

    def __init__(self, judge: FrameJudge, package: str, device: torch.device, compute_guard: bool = True):
        self.judge = judge
        self.family = package
        self.device = device
        self.compute_guard = compute_guard
        self._orig_import = builtins.__import__
        self._orig_start = _thread.start_new_thread
        self._warm_up()
        self._install()
        self._identities = self._snapshot()

    def _warm_up(self) -> None:
        """Enter both modes once before any hook is installed: the first use imports torch._dynamo lazily,
        which must not happen inside a candidate's armed window."""
        import torch._dynamo  # noqa: F401

        for mode in (ComputeGuard(self.judge), DispatchGuard(self.judge)):
            with mode:
                torch.empty(4, device=self.device)[1:3].view(2).fill_(0)

    # -- installation -------------------------------------------------------------------------------------
    def _install(self) -> None:
        sys.addaudithook(self._audit)
        builtins.__import__ = self._import
        _thread.start_new_thread = self._start_thread
        threading._start_new_thread = self._start_thread  # type: ignore[attr-defined]
        self._patch_launchers()
        if self.device.type == "cuda":
            self._patch_streams()

    def _patch_launchers(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        for cls in (JITFunction, InterpretedFunction):
            original = cls.run

            def run(self_, *args, _original=original, **kwargs):
                if not kwargs.get("warmup", False) and STATE.active:
                    STATE.launches += 1
                    if STATE.kernels_disabled:
                        return None
                return _original(self_, *args, **kwargs)

            cls.run = run

    def _patch_streams(self) -> None:
        """Creating streams or graphs, or switching the current stream, is refused to candidate code (whatever
        of these this torch version has is patched)."""
        from torch.cuda import graphs, streams

        for owner in (getattr(streams, "Stream", None), getattr(streams, "ExternalStream", None),
                      getattr(graphs, "CUDAGraph", None)):
            original_new = owner.__dict__.get("__new__") if owner is not None else None
            if original_new is None:
                continue

            def guarded_new(cls, *args, _original=original_new, _name=owner.__name__, **kwargs):
                self._refuse_if_untrusted(f"creates a torch.cuda.{_name} (side stream or graph)")
                return _original(cls, *args, **kwargs)

            owner.__new__ = staticmethod(guarded_new)  # type: ignore[method-assign]
        for name in ("set_stream", "_set_stream_by_id"):
            original = getattr(torch.cuda, name, None)
            if original is None:
                continue

            def guarded(*args, _original=original, _name=name, **kwargs):
                self._refuse_if_untrusted(f"torch.cuda.{_name} switches streams")
                return _original(*args, **kwargs)

            setattr(torch.cuda, name, guarded)

    # -- hooks -------------------------------------------------------------------------------------------
    def _refuse_if_untrusted(self, what: str) -> None:
        if not STATE.active:
            return
        frame, kind = self.judge.responsible(sys._getframe(2))
        if kind == "untrusted":
            raise STATE.violate(f"sandbox: {what} at {where(frame)}")

    def _start_thread(self, function, args, kwargs=None):
        self._refuse_if_untrusted("starts a thread")
        return self._orig_start(function, args, kwargs or {})

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if not STATE.active:
            return self._orig_import(name, globals, locals, fromlist, level)
        caller = sys._getframe(1)
        machinery = False
        while caller is not None and caller.f_code.co_filename.startswith("<frozen importlib"):
            caller, machinery = caller.f_back, True
        if machinery or caller is None or self.judge.kind(caller.f_code.co_filename) != "untrusted":
            return self._orig_import(name, globals, locals, fromlist, level)
        library = name.split(".")[0] in ("torch", "triton")
        if level or not (library or policy.import_allowed(name, self.family)):
            raise STATE.violate(f"sandbox: import of {name!r} at {where(caller)}")
        module = self._orig_import(name, globals, locals, fromlist, level)
        for item in fromlist or ():
            value = getattr(module, item, None)
            if isinstance(value, ModuleType) and value.__name__.split(".")[0] not in ("torch", "triton") \
                    and not policy.import_allowed(value.__name__, self.family):
                raise STATE.violate(f"sandbox: from {name} import {item} (module {value.__name__}) at "
                                    f"{where(caller)}")
        return module

    def _audit(self, event: str, args: tuple) -> None:
        if not STATE.active or STATE.in_hook:
            return
        STATE.in_hook = True
        try:
            frame = sys._getframe(1)
            responsible, kind = self.judge.responsible(frame)
            if kind != "untrusted" or self._audit_allowed(event, args, frame, responsible):
                return
            detail = ", ".join(repr(a)[:80] for a in args[:2])
            raise STATE.violate(f"sandbox: {event}({detail}) at {where(responsible)}")
        finally:
            STATE.in_hook = False

    def _audit_allowed(self, event: str, args: tuple, frame: FrameType, responsible: FrameType | None) -> bool:
        """Events the import machinery raises while loading an allowed module pass (except writes); candidate
        code itself may only trigger imports of allowed or library modules."""
        if _inside_import(frame, responsible):
            return event != "open" or _read_only_open(args)
        if event == "import":
            name = str(args[0])
            return name.split(".")[0] in ("torch", "triton") or policy.import_allowed(name, self.family)
        return False

    # -- arming ------------------------------------------------------------------------------------------
    @contextmanager
    def armed(self, disable_kernels: bool = False, timed: bool = False) -> Iterator[None]:
        """Arm every guard around candidate code; `disable_kernels` makes every Triton launch a no-op; `timed`
        uses the dispatcher-level compute guard (cheap enough to sit inside a timed region)."""
        STATE.kernels_disabled = disable_kernels
        mode = None
        if self.compute_guard:
            mode = DispatchGuard(self.judge) if timed else ComputeGuard(self.judge)
        STATE.active = True
        try:
            if mode is None:
                yield
            else:
                with mode:
                    yield
        finally:
            STATE.active = False
            STATE.kernels_disabled = False

    # -- after-call checks -------------------------------------------------------------------------------
    _WATCHED = (
        "time.perf_counter", "time.perf_counter_ns", "time.time", "time.monotonic", "time.sleep",
        "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time",
        "torch.cuda.Event.synchronize", "torch.cuda.current_stream", "torch.cuda.Stream", "torch.empty",
        "torch.empty_like", "torch.full", "torch.randn", "torch.equal", "torch.Generator", "torch.Tensor.fill_",
        "torch.Tensor.clone", "torch.Tensor.copy_", "torch.Tensor.view", "torch.Tensor.numpy", "torch.Tensor.cpu",
        "torch.Tensor.to", "torch.Tensor.sum", "torch.Tensor.__eq__", "os.write", "os.read", "json.dumps",
        "json.loads", "builtins.__import__", "builtins.open", "threading._start_new_thread",
        "_thread.start_new_thread", "triton.runtime.jit.JITFunction.run",
        "triton.runtime.interpreter.InterpretedFunction.run", "sys.audit", "sys.settrace", "sys.setprofile",
        "torch.cuda.set_stream", "torch.cuda._set_stream_by_id",
    )
    _HARNESS_MODULES = ("agent.verifier", "kernels.task", "kernels.timing", "kernels.extend_attention.spec")

    def _snapshot(self) -> dict[str, object]:
        import importlib

        snap: dict[str, object] = {}
        for dotted in self._WATCHED:
            parts = dotted.split(".")
            try:
                obj: object = importlib.import_module(parts[0])
                for p in parts[1:]:
                    obj = getattr(obj, p)
            except (ImportError, AttributeError):
                continue
            snap[dotted] = obj
        for name, mod in list(sys.modules.items()):
            if mod is not None and name.startswith(self._HARNESS_MODULES):
                for key, value in vars(mod).items():
                    if not key.startswith("__"):
                        snap[f"{name}.{key}"] = value
        return snap

    def tampered(self) -> list[str]:
        """Watched objects that no longer resolve to the object seen before any candidate code ran."""
        now = self._snapshot()
        return sorted(k for k, v in self._identities.items() if now.get(k) is not v)

    def after_call(self, threads_before: set[threading.Thread], stream_before: object) -> list[str]:
        """Problems left behind by a call: tampering, threads, child processes, modes, stream, tracing."""
        problems = [f"replaced {name} (timer, synchronize or harness function)" for name in self.tampered()]
        leftover = [t.name for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        if leftover:
            problems.append(f"left background thread(s) running after returning: {leftover}")
        children = _child_processes()
        if children:
            problems.append(f"left child process(es) {children}")
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        if torch.overrides._get_current_function_mode_stack() or _get_current_dispatch_mode_stack():
            problems.append("left a torch function/dispatch mode active")
        if sys.gettrace() is not None or sys.getprofile() is not None:
            problems.append("installed a trace or profile function")
        if self.device.type == "cuda" and torch.cuda.current_stream() != stream_before:
            problems.append("changed the current CUDA stream")
        return problems


def _read_only_open(args: tuple) -> bool:
    """Audit ``open`` arguments (path, mode, flags): True only for a read without create/truncate."""
    mode = args[1] if len(args) > 1 else "r"
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    if isinstance(mode, str):
        return not set(mode) & set("wax+")
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    return not flags & writes


def _inside_import(frame: FrameType | None, stop: FrameType | None) -> bool:
    while frame is not None and frame is not stop:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _child_processes() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[1].decode() == me:
            found.append(int(entry))
    return found


def poison_free_memory(device: torch.device, like_nbytes: int) -> None:
    """Fill memory the allocator holds free with 0xFF bytes (NaN in fp16, bf16 and fp32) so a candidate that
    reads an unwritten ``torch.empty`` block sees NaN, never a stale answer.

    CUDA: every inactive block of the caching allocator is allocated at its exact size, filled and released.
    CPU: eight blocks the size of the output are filled and freed (malloc hands recently freed chunks back first).
    """
    if device.type == "cuda":
        sizes = [b["size"] for seg in torch.cuda.memory_snapshot() for b in seg["blocks"]
                 if b["state"] == "inactive"]
        held = [torch.empty(s, dtype=torch.uint8, device=device).fill_(255) for s in sorted(sizes)[::-1][:512]]
    else:
        held = [torch.empty(max(1, like_nbytes), dtype=torch.uint8).fill_(255) for _ in range(8)]
    del held
