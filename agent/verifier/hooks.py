"""The guards' hooks, sealed: the compute guard's dispatch handler, the audit, import and thread hooks, the CUDA
stream and Triton launch patches (what each refuses: `agent.verifier.guard`).

These functions never run as written here: `sealed_hooks` rebuilds them on a private copy of this module's globals
that binds the judge, the task's kernel package and the original import and thread functions
(`agent.verifier.seal.private_namespace`), and `guard.Guards` installs those copies, each an opaque C callable. So no
object a candidate can reach (the mode on torch's stack, ``builtins.__import__``, a patched launcher or stream
constructor) leads to the judge or to a global whose rebinding would change a decision; the judge itself is sealed
(`judge.FrameJudge`). Every name a hook calls is a global of this module (``_getframe``, ``import_allowed``,
``refuse_if_untrusted``), never an attribute looked up on a module at call time.
"""

from __future__ import annotations

import _thread
import builtins
import os
from sys import _getframe
from types import FrameType, ModuleType
from typing import Any

import torch

from agent.verifier import seal
from agent.verifier.judge import STATE, FrameJudge, in_import_machinery, where, where_called
from agent.verifier.policy import import_allowed
from agent.verifier.refusals import refuse_if_untrusted


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


#: The aten operations anyone may run while the candidate runs: allocation, views and copies.
ALLOWED_OPS = _allowed_aten_ops()

#: What the hooks consult, bound only in the private namespaces `sealed_hooks` makes: the judge, the task's kernel
#: package, the original import and thread functions. The values here are placeholders no installed hook reads, so
#: nothing a candidate can reach names the real ones.
JUDGE: FrameJudge | None = None
FAMILY = ""
ORIGINAL_IMPORT = builtins.__import__
ORIGINAL_START = _thread.start_new_thread


def _dispatch(self, func, types, args=(), kwargs=None):
    """``__torch_dispatch__`` of the guards' mode (`guard.DispatchGuard.sealed`): allocation, views and copies
    pass; any other aten operation raises unless trusted code asked for it (see `guard.DispatchGuard`)."""
    if kwargs is None:
        kwargs = {}
    if types:
        names = ", ".join(sorted({getattr(t, "__name__", "?") for t in types}))
        raise STATE.violate(f"forbidden torch operation {func} on a tensor subclass ({names}) while the "
                            "candidate ran (its __torch_dispatch__ would run with the guard popped)")
    packet = func.overloadpacket
    if packet in ALLOWED_OPS and STATE.boundary is None and not _changes_device(packet, args, kwargs):
        return func(*args, **kwargs)
    STATE.in_guard = True
    try:
        frame, kind = JUDGE.responsible(_getframe(1))
    finally:
        STATE.in_guard = False
    if kind != "untrusted" and (packet in TRUSTED_DATA_MOVES or JUDGE.is_harness(frame)):
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


def _patch_launchers() -> None:
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

        setattr(cls, name, seal.opaque(run, name))


def _patch_streams() -> None:
    """Creating streams or graphs, or switching the current stream, is refused to candidate code (whatever
    of these this torch version has is patched)."""
    from torch.cuda import graphs, streams

    for owner in (getattr(streams, "Stream", None), getattr(streams, "ExternalStream", None),
                  getattr(graphs, "CUDAGraph", None)):
        original_new = owner.__dict__.get("__new__") if owner is not None else None
        if original_new is None:
            continue

        def guarded_new(cls, *args, _original=original_new, _name=owner.__name__, **kwargs):
            _refuse_if_untrusted(f"creates a torch.cuda.{_name} (side stream or graph)")
            return _original(cls, *args, **kwargs)

        owner.__new__ = staticmethod(seal.opaque(guarded_new, "__new__"))  # type: ignore[method-assign]
    for name in ("set_stream", "_set_stream_by_id"):
        original = getattr(torch.cuda, name, None)
        if original is None:
            continue

        def guarded(*args, _original=original, _name=name, **kwargs):
            _refuse_if_untrusted(f"torch.cuda.{_name} switches streams")
            return _original(*args, **kwargs)

        setattr(torch.cuda, name, seal.opaque(guarded, name))


def _refuse_if_untrusted(what: str) -> None:
    refuse_if_untrusted(JUDGE, f"sandbox: {what}", _getframe(2), trusted_may=True)


def _start_thread(function, args, kwargs=None):
    _refuse_if_untrusted("starts a thread")
    return ORIGINAL_START(function, args, kwargs or {})


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if not STATE.armed():  # never skipped on `SandboxState.in_guard` (a cached module raises no audit event)
        return ORIGINAL_IMPORT(name, globals, locals, fromlist, level)
    previous, STATE.in_guard = STATE.in_guard, True
    try:
        caller = _getframe(1)
        machinery = False
        while caller is not None and in_import_machinery(caller):
            caller, machinery = caller.f_back, True
        candidate = not machinery and caller is not None and JUDGE.frame_kind(caller) == "untrusted"
    finally:
        STATE.in_guard = previous
    if not candidate:
        return ORIGINAL_IMPORT(name, globals, locals, fromlist, level)
    items = tuple(fromlist or ())
    if type(name) is not str or type(level) is not int or any(type(i) is not str for i in items):
        raise STATE.violate(f"sandbox: import with a non-str name or a non-int level at {where(caller)}")
    library = name.split(".")[0] in ("torch", "triton")
    if level or not (library or import_allowed(name, FAMILY)):
        raise STATE.violate(f"sandbox: import of {name!r} at {where(caller)}")
    module = ORIGINAL_IMPORT(name, globals, locals, items, level)
    for item in items:
        value = getattr(module, item, None)
        if isinstance(value, ModuleType) and value.__name__.split(".")[0] not in ("torch", "triton") \
                and not import_allowed(value.__name__, FAMILY):
            raise STATE.violate(f"sandbox: from {name} import {item} (module {value.__name__}) at "
                                f"{where(caller)}")
    return module


def _audit(event: str, args: tuple) -> None:
    """The audit hook. Fast path: events raised while nothing is armed, and the frame reads the guards make
    themselves while they judge (`SandboxState.in_guard` with a `GUARD_EVENTS` event), return at once;
    otherwise the responsible frame is found from the event's immediate caller outwards (one cached lookup when
    that caller is trusted or the candidate). The flag is plain Python state a candidate can reach, so it never
    waves through an event the guards do not raise themselves (a file, an import, exec, a socket, ctypes)."""
    if not STATE.armed() or (STATE.in_guard and event in GUARD_EVENTS):
        return
    previous, STATE.in_guard = STATE.in_guard, True
    try:
        frame = _getframe(1)
        responsible, kind = JUDGE.responsible(frame)
        allowed = kind != "untrusted" or _audit_allowed(event, args, frame, responsible)
    finally:
        STATE.in_guard = previous
    if not allowed:
        raise STATE.violate(f"sandbox: {event}({_describe(args)}) at {where_called(responsible)}")


def _audit_allowed(event: str, args: tuple, frame: FrameType, responsible: FrameType | None) -> bool:
    """Events the import machinery raises while loading an allowed module pass (except writes); candidate
    code itself may only trigger imports of allowed or library modules."""
    if _inside_import(frame, responsible):
        return event != "open" or _read_only_open(args)
    if event == "import" and args and type(args[0]) is str:
        name = args[0]
        return name.split(".")[0] in ("torch", "triton") or import_allowed(name, FAMILY)
    return False


#: The audit events the guards raise themselves while judging a frame (reading ``sys._getframe``, ``f_code``,
#: ``f_back``, ``f_globals``, ``f_locals``): the only ones `SandboxState.in_guard` lets through unjudged.
GUARD_EVENTS = frozenset({"object.__getattr__", "sys._getframe"})


def _read_only_open(args: tuple) -> bool:
    """Audit ``open`` arguments (path, mode, flags): True only for a read without create/truncate."""
    mode = args[1] if len(args) > 1 else "r"
    flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
    if type(mode) is str:
        return not set(mode) & set("wax+")
    return not flags & _WRITE_FLAGS


#: ``open`` flags that write, create or truncate (bound once: no hook looks them up on ``os``).
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _inside_import(frame: FrameType | None, stop: FrameType | None) -> bool:
    while frame is not None and frame is not stop:
        if in_import_machinery(frame):
            return True
        frame = frame.f_back
    return False


def sealed_hooks(judge: FrameJudge, package: str) -> dict[str, Any]:
    """This module's functions rebuilt on a private namespace binding `judge` and `package` (the task's kernel
    package, for the import allow-list), keyed by name: ``_dispatch``, ``_audit``, ``_import``, ``_start_thread``,
    ``_patch_launchers``, ``_patch_streams``. The originals of ``builtins.__import__`` and
    ``_thread.start_new_thread`` are bound as they are now (call before installing the hooks)."""
    return seal.private_namespace(globals(), JUDGE=judge, FAMILY=package, ORIGINAL_IMPORT=builtins.__import__,
                                  ORIGINAL_START=_thread.start_new_thread)
