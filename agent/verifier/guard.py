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

Every layer is sealed (`agent.verifier.seal`): the hooks and the dispatch guard's handler (`agent.verifier.hooks`)
run on a private copy of their module's globals that binds the judge, installed as opaque C callables, so no object
the candidate can reach (the mode on torch's stack, ``builtins.__import__``, a patched torch function) holds the
judge, or a global or attribute whose rebinding would change a decision.
"""

from __future__ import annotations

import _thread
import builtins
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from agent.verifier import refusals, seal
from agent.verifier.hooks import ALLOWED_OPS, sealed_hooks
from agent.verifier.judge import STATE, FrameJudge, SandboxState, SandboxViolation, where
from kernels.task import TASK_MODULES

__all__ = ["STATE", "DispatchGuard", "FrameJudge", "Guards", "SandboxState", "SandboxViolation",
           "poison_free_memory", "where"]


class DispatchGuard(TorchDispatchMode):
    """The compute guard, at the dispatcher: metadata queries (shape, stride, data_ptr) never reach it, so a
    launcher pays only for the few real aten ops it runs; any compute op (cuBLAS, attention, elementwise), a host
    read (``_local_scalar_dense``) or a copy to another device raises when untrusted code asked for it. Tensor
    subclasses with their own ``__torch_dispatch__`` are refused outright: torch would run their Python code with
    this mode popped.

    The mode the guards push is a sealed subclass (`Guards` makes one per judge): its ``__torch_dispatch__`` is a
    read-only data descriptor (an instance attribute cannot shadow it), the class is immutable, and the handler
    reads the judge from a private namespace, so the mode a candidate finds on torch's stack holds no state of the
    judge's and nothing it could rebind. The handler is `hooks._dispatch`."""

    ALLOWED = ALLOWED_OPS

    @classmethod
    def sealed(cls, namespace: dict[str, Any]) -> type[DispatchGuard]:
        """A sealed subclass whose ``__torch_dispatch__`` is `hooks._dispatch` as rebuilt in `namespace`
        (`hooks.sealed_hooks`), wrapped as torch wraps every mode's handler (``torch._disable_dynamo``) and hidden."""
        handler = namespace["_dispatch"]
        if cls._should_skip_dynamo():
            handler = seal.opaque(torch._disable_dynamo(handler, recursive=True), "__torch_dispatch__")
        subclass = type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                               "__doc__": cls.__doc__})
        subclass.__torch_dispatch__ = seal.BoundSlot((handler,))
        return seal.seal_class(subclass, namespace)


class Guards:
    """Installs every layer once per child process; `armed()` switches them on around candidate code.

    Every hook (audit, import, thread, stream, launch) and the dispatch guard's handler is sealed
    (`agent.verifier.seal`): built from this module's functions on a private copy of its globals that binds the
    judge, the kernel package and the original import and thread functions, and exposed only as opaque C callables.
    The judge they consult is sealed itself (`judge.FrameJudge`); nothing the candidate can reach holds it writably."""

    def __init__(self, judge: FrameJudge, package: str, device: torch.device, compute_guard: bool = True):
        self.judge = judge  # for the harness; no hook reads it from here
        self.family = package
        self.device = device
        self.compute_guard = compute_guard
        self._sealed = sealed_hooks(judge, package)
        self._mode_class = DispatchGuard.sealed(self._sealed)
        self._warm_up()
        self._install()
        self._identities = self._snapshot()

    def _warm_up(self) -> None:
        """Enter the mode once before any hook is installed: the first use imports torch._dynamo lazily, which
        must not happen inside a candidate's armed window."""
        import torch._dynamo  # noqa: F401

        with self._mode_class():
            torch.empty(4, device=self.device)[1:3].view(2).fill_(0)

    # -- installation -------------------------------------------------------------------------------------
    def _install(self) -> None:
        """Install every hook. Automatic garbage collection is switched off for the rest of this process: the
        guards collect at the end of each armed window instead (see `armed`)."""
        sealed = self._sealed
        self.refused = refusals.install(self.judge, compute=self.compute_guard)
        sys.addaudithook(sealed["_audit"])
        builtins.__import__ = sealed["_import"]
        _thread.start_new_thread = sealed["_start_thread"]
        threading._start_new_thread = sealed["_start_thread"]  # type: ignore[attr-defined]
        sealed["_patch_launchers"]()
        if self.device.type == "cuda":
            sealed["_patch_streams"]()
        gc.disable()

    def _patch_streams(self) -> None:
        """The CUDA-only layer (`_patch_streams`), sealed like the others."""
        self._sealed["_patch_streams"]()

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
        mode = self._mode_class() if self.compute_guard else None
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
                        if isinstance(value, type) and value.__module__ == name:  # and the classes' own members
                            snap.update((f"{name}.{key}.{attr}", member) for attr, member in vars(value).items()
                                        if not attr.startswith("__"))
        return snap

    def tampered(self) -> list[str]:
        """Watched objects that no longer resolve to the object seen before any candidate code ran: the timers and
        library entry points in `_WATCHED`, and every global of the harness modules and every member of their
        classes (the checks after a call run such code: `Guards` itself is sealed, so this check cannot be
        rebound)."""
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


def _seal_guards() -> None:
    """Seal `Guards` (`seal.seal_class`): its after-call checks run on a private copy of this module's globals and
    no method of it can be rebound."""
    seal.seal_class(Guards, seal.private_namespace(globals()))


_seal_guards()
