"""Child-side guards that are armed while candidate code runs (its import and every call, checked or timed alike).

Layers (each independent of the static rules):
- `DispatchGuard`: a torch dispatch mode, the one compute guard for every candidate call. Any aten operation
  other than allocation, views and copies raises when the code responsible for it is the candidate's (torch
  compute, the reference, host reads such as ``.item()``). Torch keeps a dispatch mode on its stack while it parses
  arguments and calls Python back (``__index__``, ``__float__``, ``__len__`` ...), so torch calls made from such
  callbacks, at any depth, reach the guard too (a torch *function* mode is popped while it re-runs a call: a
  blind window this guard does not have).
- `refusals`: entry points that never reach the dispatcher (``numpy``, ``tolist``, storages, DLPack, printing)
  or that would switch the guard off (mode stacks, dispatch-key guards, kernel registration, signal handlers).
- an audit hook (PEP 578) and an ``__import__`` hook: file and network I/O, subprocesses, ctypes, gc, frame
  access, exec/compile and imports outside the allow-list raise.
- thread and stream creation hooks; a Triton launch counter that can also disable every launch (ablation).
- the garbage collector runs only inside armed windows (automatic collection is off in the child): finalizers
  of the candidate's objects run under the guards, never after them.
- after each call: identity of timers, synchronize and harness functions, leftover threads, child processes,
  torch modes and the current stream.

Who is responsible for an operation is decided by `judge.FrameJudge`. A violation is recorded before it is raised
as `SandboxViolation` (a BaseException, so ``except Exception`` in a candidate cannot swallow it).
"""

from __future__ import annotations

import _thread
import builtins
import gc
import os
import sys
import threading
from typing import Any
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from agent.verifier import policy, refusals
from agent.verifier.judge import (STATE, FrameJudge, SandboxState, SandboxViolation, in_import_machinery, where,
                                 where_called)
from kernels.task import TASK_MODULES

__all__ = ["STATE", "DispatchGuard", "FrameJudge", "Guards", "SandboxState", "SandboxViolation",
           "poison_free_memory", "where"]


def _allowed_aten_ops() -> frozenset:
    aten = torch.ops.aten
    names = ("empty", "empty_like", "empty_strided", "full", "full_like", "zeros", "zeros_like", "ones",
             "ones_like", "fill_", "zero_", "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute",
             "transpose", "t", "unsqueeze", "squeeze", "select", "slice", "narrow", "split", "split_with_sizes",
             "unbind", "detach", "alias", "clone", "_to_copy", "lift_fresh", "new_empty", "new_zeros", "new_full",
             "new_ones", "new_empty_strided", "unflatten", "flatten", "contiguous", "resolve_conj", "resolve_neg")
    return frozenset(getattr(aten, n) for n in names if hasattr(aten, n))


#: Aten operations that trusted code other than the harness runs inside a candidate's call, beyond the allocation,
#: views and metadata anyone may run: the Triton interpreter's argument staging (measured over the honest corpus on
#: the CPU: only these two). Compute is refused whoever asks: a frame-based judge cannot tell trusted code's own
#: work from a C-level callable (``map``, ``list.extend``) that trusted code calls on the candidate's behalf.
TRUSTED_DATA_MOVES = frozenset({torch.ops.aten.set_, torch.ops.aten.copy_})


class DispatchGuard(TorchDispatchMode):
    """The compute guard, at the dispatcher: metadata queries (shape, stride, data_ptr) never reach it, so a
    launcher pays only for the few real aten ops it runs; any compute op (cuBLAS, attention, elementwise), a host
    read (``_local_scalar_dense``) or a copy to another device raises when untrusted code asked for it. Tensor
    subclasses with their own ``__torch_dispatch__`` are refused outright: torch would run their Python code with
    this mode popped."""

    ALLOWED = _allowed_aten_ops()

    def __init__(self, judge: FrameJudge):
        super().__init__()
        self.judge = judge

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if types:
            names = ", ".join(sorted({getattr(t, "__name__", "?") for t in types}))
            raise STATE.violate(f"forbidden torch operation {func} on a tensor subclass ({names}) while the "
                                "candidate ran (its __torch_dispatch__ would run with the guard popped)")
        packet = func.overloadpacket
        if packet in self.ALLOWED and STATE.boundary is None and not _changes_device(packet, args, kwargs):
            return func(*args, **kwargs)
        STATE.in_guard = True
        try:
            frame, kind = self.judge.responsible(sys._getframe(1))
        finally:
            STATE.in_guard = False
        if kind != "untrusted" and (packet in TRUSTED_DATA_MOVES or self.judge.is_harness(frame)):
            return func(*args, **kwargs)
        if kind != "untrusted":
            raise STATE.violate(f"forbidden torch operation {func} at {where(frame)} while the candidate ran: "
                                "code the verifier trusts (Triton, the task's kernels) only moves data for a "
                                "candidate; a callback it runs (a launch hook, map, a C-level callable) computes "
                                "for the candidate")
        raise STATE.violate(f"forbidden torch operation {func} at {where(frame)} while the candidate ran (only "
                            "allocation, views and metadata are allowed outside Triton kernels)")


def _changes_device(packet, args: tuple, kwargs: dict) -> bool:
    if packet is not torch.ops.aten._to_copy or not args or not isinstance(args[0], torch.Tensor):
        return False
    target = kwargs.get("device")
    return target is not None and torch.device(target) != args[0].device


def _describe(args: tuple) -> str:
    """Audit-event arguments for a message, without calling any method of an object the candidate made."""
    out = []
    for a in args[:2]:
        out.append(repr(a)[:80] if type(a) in (str, bytes, int, float, bool, type(None)) else type(a).__name__)
    return ", ".join(out)


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
        """Enter the mode once before any hook is installed: the first use imports torch._dynamo lazily, which
        must not happen inside a candidate's armed window."""
        import torch._dynamo  # noqa: F401

        with DispatchGuard(self.judge):
            torch.empty(4, device=self.device)[1:3].view(2).fill_(0)

    # -- installation -------------------------------------------------------------------------------------
    def _install(self) -> None:
        """Install every hook. Automatic garbage collection is switched off for the rest of this process: the
        guards collect at the end of each armed window instead (see `armed`)."""
        self.refused = refusals.install(self.judge, compute=self.compute_guard)
        sys.addaudithook(self._audit)
        builtins.__import__ = self._import
        _thread.start_new_thread = self._start_thread
        threading._start_new_thread = self._start_thread  # type: ignore[attr-defined]
        self._patch_launchers()
        if self.device.type == "cuda":
            self._patch_streams()
        gc.disable()

    def _patch_launchers(self) -> None:
        """Count, refuse (pre-run hooks) or disable every Triton launch: through `JITFunction.run`, the
        interpreter's, and `kernels.launch.DirectLaunch.launch_compiled` (a compiled kernel launched directly)."""
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        from kernels.launch import DirectLaunch

        for cls, name in ((JITFunction, "run"), (InterpretedFunction, "run"), (DirectLaunch, "launch_compiled")):
            original = getattr(cls, name)

            def run(self_, *args, _original=original, **kwargs):
                if STATE.active and (getattr(self_, "pre_run_hooks", None) or getattr(getattr(
                        self_, "fn", None), "pre_run_hooks", None)):
                    raise STATE.violate("a Triton kernel was launched with pre-run hooks while the candidate ran "
                                        "(callbacks Triton would run on the candidate's behalf)")
                if not kwargs.get("warmup", False) and STATE.active:
                    STATE.launches += 1
                    if STATE.kernels_disabled:
                        return None
                return _original(self_, *args, **kwargs)

            setattr(cls, name, run)

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
        refusals.refuse_if_untrusted(self.judge, f"sandbox: {what}", sys._getframe(2), trusted_may=True)

    def _start_thread(self, function, args, kwargs=None):
        self._refuse_if_untrusted("starts a thread")
        return self._orig_start(function, args, kwargs or {})

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if not STATE.armed():  # never skipped on `SandboxState.in_guard` (a cached module raises no audit event)
            return self._orig_import(name, globals, locals, fromlist, level)
        previous, STATE.in_guard = STATE.in_guard, True
        try:
            caller = sys._getframe(1)
            machinery = False
            while caller is not None and in_import_machinery(caller):
                caller, machinery = caller.f_back, True
            candidate = not machinery and caller is not None and self.judge.frame_kind(caller) == "untrusted"
        finally:
            STATE.in_guard = previous
        if not candidate:
            return self._orig_import(name, globals, locals, fromlist, level)
        items = tuple(fromlist or ())
        if type(name) is not str or type(level) is not int or any(type(i) is not str for i in items):
            raise STATE.violate(f"sandbox: import with a non-str name or a non-int level at {where(caller)}")
        library = name.split(".")[0] in ("torch", "triton")
        if level or not (library or policy.import_allowed(name, self.family)):
            raise STATE.violate(f"sandbox: import of {name!r} at {where(caller)}")
        module = self._orig_import(name, globals, locals, items, level)
        for item in items:
            value = getattr(module, item, None)
            if isinstance(value, ModuleType) and value.__name__.split(".")[0] not in ("torch", "triton") \
                    and not policy.import_allowed(value.__name__, self.family):
                raise STATE.violate(f"sandbox: from {name} import {item} (module {value.__name__}) at "
                                    f"{where(caller)}")
        return module

    def _audit(self, event: str, args: tuple) -> None:
        """The audit hook. Fast path: events raised while nothing is armed, and the frame reads the guards make
        themselves while they judge (`SandboxState.in_guard` with a `GUARD_EVENTS` event), return at once;
        otherwise the responsible frame is found from the event's immediate caller outwards (one cached lookup when
        that caller is trusted or the candidate). The flag is plain Python state a candidate can reach, so it never
        waves through an event the guards do not raise themselves (a file, an import, exec, a socket, ctypes)."""
        if not STATE.armed() or (STATE.in_guard and event in GUARD_EVENTS):
            return
        previous, STATE.in_guard = STATE.in_guard, True
        try:
            frame = sys._getframe(1)
            responsible, kind = self.judge.responsible(frame)
            allowed = kind != "untrusted" or self._audit_allowed(event, args, frame, responsible)
        finally:
            STATE.in_guard = previous
        if not allowed:
            raise STATE.violate(f"sandbox: {event}({_describe(args)}) at {where_called(responsible)}")

    def _audit_allowed(self, event: str, args: tuple, frame: FrameType, responsible: FrameType | None) -> bool:
        """Events the import machinery raises while loading an allowed module pass (except writes); candidate
        code itself may only trigger imports of allowed or library modules."""
        if _inside_import(frame, responsible):
            return event != "open" or _read_only_open(args)
        if event == "import" and args and type(args[0]) is str:
            name = args[0]
            return name.split(".")[0] in ("torch", "triton") or policy.import_allowed(name, self.family)
        return False

    # -- arming ------------------------------------------------------------------------------------------
    @contextmanager
    def armed(self, disable_kernels: bool = False) -> Iterator[None]:
        """Arm every guard around candidate code -- one mechanism for its import, checked and timed calls, so
        that a candidate cannot tell them apart; `disable_kernels` makes every Triton launch a no-op (ablation).

        Before disarming, still under the guards: the garbage the window left is collected, so the finalizers
        of the candidate's objects run now, guarded, and never later in unguarded harness code; then the
        window is checked: the compute guard must still be the active dispatch mode and automatic garbage
        collection still off (violations are recorded in `STATE`)."""
        STATE.kernels_disabled = disable_kernels
        mode = DispatchGuard(self.judge) if self.compute_guard else None
        STATE.active, STATE.in_guard = True, False
        try:
            if mode is None:
                try:
                    yield
                finally:
                    self._close_window(None)
            else:
                with mode:
                    try:
                        yield
                    finally:
                        self._close_window(mode)
        finally:
            STATE.active = False
            STATE.kernels_disabled = False

    def _close_window(self, mode: DispatchGuard | None) -> None:
        STATE.boundary = sys._getframe(0)
        try:
            gc.collect(0)
        except SandboxViolation:
            pass  # recorded in STATE.violations
        finally:
            STATE.boundary = None
        if mode is not None and _get_current_dispatch_mode() is not mode:
            STATE.violate("sandbox: the torch compute guard was not the active dispatch mode when the candidate "
                          "returned (a mode pushed or popped by the candidate)")
        if gc.isenabled():
            gc.disable()
            STATE.violate("sandbox: automatic garbage collection was switched back on (finalizers would run "
                          "after the guards are off)")

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
        "triton.runtime.interpreter.InterpretedFunction.run", "kernels.launch.DirectLaunch.launch_compiled",
        "sys.audit", "sys.settrace", "sys.setprofile",
        "torch.cuda.set_stream", "torch.cuda._set_stream_by_id",
        "triton.compiler.compiler.CompiledKernel._init_handles",  # a virtual chip's shared-memory cap lives there
    )
    #: Modules whose globals a candidate must not change: the verifier, the task contract, the timing helper and
    #: every registered task's spec (its inputs, reference and tolerances).
    _HARNESS_MODULES = ("agent.verifier", "kernels.task", "kernels.timing", *TASK_MODULES.values())

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


#: The audit events the guards raise themselves while judging a frame (reading ``sys._getframe``, ``f_code``,
#: ``f_back``, ``f_globals``, ``f_locals``): the only ones `SandboxState.in_guard` lets through unjudged.
GUARD_EVENTS = frozenset({"object.__getattr__", "sys._getframe"})


def _read_only_open(args: tuple) -> bool:
    """Audit ``open`` arguments (path, mode, flags): True only for a read without create/truncate."""
    mode = args[1] if len(args) > 1 else "r"
    flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
    if type(mode) is str:
        return not set(mode) & set("wax+")
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    return not flags & writes


def _inside_import(frame: FrameType | None, stop: FrameType | None) -> bool:
    while frame is not None and frame is not stop:
        if in_import_machinery(frame):
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


#: The CUDA caching allocator's small-pool bound: requests of at most 1 MiB come from 2 MiB "small" segments, larger
#: ones from "large" segments (source: c10/cuda/CUDACachingAllocator.cpp, kSmallSize and kSmallBuffer).
_SMALL_REQUEST = 1 << 20


def _refill_requests(snapshot: list[dict[str, Any]]) -> list[int]:
    """Allocation sizes (bytes) that take back every inactive block of a `torch.cuda.memory_snapshot()`: a large
    segment's block at its exact size, a small segment's block in requests of at most 1 MiB (asked at its whole
    size, a 2 MiB block would be served from a new large segment and stay unfilled)."""
    requests = []
    for seg in snapshot:
        small = seg.get("segment_type") == "small"
        for block in seg["blocks"]:
            if block["state"] != "inactive":
                continue
            size = block["size"]
            if small:
                whole, rest = divmod(size, _SMALL_REQUEST)
                requests += [_SMALL_REQUEST] * whole + ([rest] if rest else [])
            else:
                requests.append(size)
    return requests


def poison_free_memory(device: torch.device, like_nbytes: int, prefill: str = "nan", seed: int = 0) -> None:
    """Fill memory the allocator holds free so a candidate that reads an unwritten ``torch.empty`` block never sees
    a stale answer, with the bytes of the trial's output prefill (`plan.Prefill`), so that what unwritten memory
    holds does not tell a check from real use either: "nan" 0xFF bytes (NaN in fp16, bf16 and fp32), "zeros" 0x00,
    "noise" random bytes below 0x40 from a generator seeded with `seed` (finite in fp16, bf16 and fp32: the high
    byte of every element is < 0x40, so its exponent is below the all-ones NaN/inf pattern).

    CUDA: every inactive block of the caching allocator is allocated at its exact size, filled and released.
    CPU: eight blocks the size of the output are filled and freed (malloc hands recently freed chunks back first).
    """
    gen = torch.Generator(device=device).manual_seed(seed) if prefill == "noise" else None

    def filled(block: torch.Tensor) -> torch.Tensor:
        if gen is not None:
            return block.random_(0, 0x40, generator=gen)
        return block.fill_(255 if prefill == "nan" else 0)

    if device.type == "cuda":
        requests = sorted(_refill_requests(torch.cuda.memory_snapshot()), reverse=True)[:4096]
        held = [filled(torch.empty(s, dtype=torch.uint8, device=device)) for s in requests]
    else:
        held = [filled(torch.empty(max(1, like_nbytes), dtype=torch.uint8)) for _ in range(8)]
    del held
