"""Library entry points that refuse candidate code while the guards are armed: the function-level layer beside the
dispatcher-level compute guard (`guard.DispatchGuard`).

The compute guard sees every aten operation, but some ways to get at tensor values or around the guard never reach
the dispatcher. Each entry point below is wrapped where it is defined and wherever a loaded module holds an alias
of it; the wrapper refuses when the guards are armed and the responsible frame (`judge.FrameJudge`) is the
candidate's, at any depth of callbacks (the wrappers are plain functions, not a torch mode that torch switches off
while it re-enters itself):

- host read-outs of tensor values outside the dispatcher: ``numpy``, ``tolist``, storages, DLPack, the CUDA array
  interface, and printing (``repr``/``str``/``format``, which torch runs with every dispatch mode switched off);
- switches that take the dispatch guard off or route around it: pushing/popping dispatch or function modes,
  dispatch-key include/exclude guards, the Python dispatcher, and registering kernels (a Python kernel would run
  inside the guard's own handler, where the mode is popped);
- installing signal handlers (a handler interrupts any bytecode, including the guard's handler).

`refuse_if_untrusted` and `install` are sealed (`agent.verifier.seal`): they and every wrapper `install` makes run on
a private copy of this module's globals, so rebinding a global here (``STATE``, ``where``, ``refuse_if_untrusted``
itself) changes nothing for them.
"""

from __future__ import annotations

import _signal
import ctypes
import gc
import signal
import sys
from collections.abc import Callable
from sys import _getframe
from typing import Any

import torch

from agent.verifier import seal
from agent.verifier.judge import STATE, FrameJudge, where

#: ``torch._C.TensorBase`` methods that read tensor values to the host without an aten operation.
TENSORBASE_READOUTS = ("numpy", "tolist", "untyped_storage")

#: Of those, what the Triton interpreter itself calls while staging a launch (measured over the honest corpus).
INTERPRETER_READOUTS = frozenset({"untyped_storage"})

#: ``torch.Tensor`` methods (Python) that read values to the host or print them with the dispatcher switched off.
TENSOR_READOUTS = ("__repr__", "__str__", "__format__", "__array__", "__dlpack__", "__reduce_ex__", "storage")

#: ``torch._C`` entry points that switch the dispatch guard off, route around it or register kernels under it.
DISPATCH_SWITCHES = (
    "_DisableTorchDispatch", "_ExcludeDispatchKeyGuard", "ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard",
    "_ForceDispatchKeyGuard", "_SetExcludeDispatchKeyGuard", "_RestorePythonTLSSnapshot",
    "_AutoDispatchBelowAutograd", "_AutoDispatchBelowADInplaceOrView", "_DisablePythonDispatcher",
    "_EnablePythonDispatcher", "_EnablePreDispatch", "_dispatch_tls_set_dispatch_key_excluded",
    "_dispatch_tls_set_dispatch_key_included", "_pop_torch_dispatch_stack", "_push_on_torch_dispatch_stack",
    "_set_dispatch_mode", "_unset_dispatch_mode", "_pop_torch_function_stack", "_push_on_torch_function_stack",
    "_dispatch_library", "_dispatch_call_boxed", "_to_dlpack", "_to_dlpack_versioned",
)

#: Storage constructors and methods that open, create or map files or shared memory in C++ (no audit event, no
#: aten operation): with a file-backed storage handed to a kernel, a candidate could write any file (red team,
#: session 4: a Triton store into ``UntypedStorage.from_file``). On ``StorageBase``, ``UntypedStorage`` and
#: ``TypedStorage``, wherever defined; ``torch.from_file`` as well.
STORAGE_FILE_OPENERS = (
    "from_file", "_new_shared_filename_cpu", "_new_using_filename_cpu", "_new_shared_fd_cpu", "_new_using_fd_cpu",
    "_share_filename_cpu_", "_share_fd_cpu_", "_new_shared", "_new_shared_cuda", "_share_cuda_",
)

#: torch entry points that write files from C++ (no audit event: ``torch.save`` with a str path opens it in
#: ``PyTorchFileWriter``; a ``FileStore`` creates its file): red team, session 5, a candidate with the static stage
#: off wrote ``/dev/shm`` and the shared Triton cache through ``torch.save`` and passed. (module, attribute) pairs,
#: wrapped where defined and at every module-level alias.
TORCH_FILE_WRITERS = (
    ("torch.serialization", "save"), ("torch", "save"), ("torch.jit", "save"), ("torch.jit._serialization", "save"),
    ("torch._C", "PyTorchFileWriter"), ("torch._C", "_save_jit_module"), ("torch._C", "_save_mobile_module"),
    ("torch.distributed", "FileStore"), ("torch._C._distributed_c10d", "FileStore"),
)

#: Triton's file-cache writers: Triton (trusted, so its own opens pass the audit hook) calls them while compiling a
#: kernel the candidate launched; a candidate calling them itself writes any file it names (red team, session 4:
#: a file planted in the Triton cache every child shares, or, without Landlock, anywhere). Refused when the code
#: that calls them is the candidate's; Triton's compiler is trusted and may.
TRITON_CACHE_WRITERS = ("put", "put_group")

#: Signal functions that install a handler or arm a timer that calls one.
SIGNAL_INSTALLERS = ("signal", "setitimer", "alarm", "set_wakeup_fd")


def refuse_if_untrusted(judge: FrameJudge, what: str, frame: Any, trusted_may: bool = False) -> None:
    """Raise `SandboxViolation` when the guards are armed and the code responsible for `frame` is untrusted, or is
    trusted code other than the verifier's own (Triton, the task's kernels) and `trusted_may` is False: such code
    may be running a C-level callable the candidate handed it (``map(Tensor.tolist, ...)`` in a launch hook)."""
    if not STATE.armed():  # never skipped on `SandboxState.in_guard`: the guards' judging calls none of these
        return
    previous, STATE.in_guard = STATE.in_guard, True
    try:
        responsible, kind = judge.responsible(frame)
    finally:
        STATE.in_guard = previous
    if kind == "untrusted" or not (trusted_may or judge.is_harness(responsible)):
        raise STATE.violate(f"{what} at {where(responsible)} while the candidate ran")


def _refusing(original: Callable, what: str, judge: FrameJudge, trusted_may: bool = False) -> Callable:
    """A wrapper of `original` that refuses first; opaque (`seal.opaque`): no Python path leads from it to the
    judge, the original or the flags it closes over."""
    def refusing(*args: Any, **kwargs: Any) -> Any:
        refuse_if_untrusted(judge, what, _getframe(1), trusted_may)
        return original(*args, **kwargs)

    wrapper = seal.opaque(refusing, getattr(original, "__name__", "refusing"))
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper


def _set_type_attribute(cls: type, name: str, value: object) -> None:
    """Set an attribute of an immutable extension type (``torch._C.TensorBase``): write its type dictionary and
    invalidate CPython's method cache (PyType_Modified), so that every lookup -- ``t.numpy()``,
    ``TensorBase.numpy(t)``, ``super(Tensor, t).numpy()`` -- finds `value`."""
    namespace = gc.get_referents(cls.__dict__)[0]
    namespace[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def _replace_aliases(replacements: dict[int, tuple[object, object]]) -> None:
    """Point every module-level alias of an original (``from torch._C import _to_dlpack``) at its wrapper."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            found = replacements.get(id(value))
            if found is not None and found[0] is value:
                namespace[key] = found[1]


def install(judge: FrameJudge, compute: bool = True) -> list[str]:
    """Wrap every entry point listed above (`compute` False: only the signal installers -- the verifier's
    ``compute_guard=False`` option switches the torch-side layer off as a whole); returns the dotted names
    wrapped (what this torch version has)."""
    done: list[str] = []
    aliases: dict[int, tuple[object, object]] = {}
    if compute:
        _install_torch(judge, done, aliases)
    _install_triton_cache(judge, done)
    for module, names in ((_signal, SIGNAL_INSTALLERS), (signal, ("signal",))):
        for name in names:
            original = getattr(module, name, None)
            if original is not None:
                wrapper = _refusing(original, f"sandbox: signal.{name} installs a signal handler", judge)
                setattr(module, name, wrapper)
                aliases[id(original)] = (original, wrapper)
                done.append(f"{module.__name__}.{name}")
    _replace_aliases(aliases)
    return done


def _install_torch(judge: FrameJudge, done: list[str], aliases: dict[int, tuple[object, object]]) -> None:
    base = torch._C.TensorBase
    for name in TENSORBASE_READOUTS:
        original = base.__dict__.get(name)
        if original is not None:
            _set_type_attribute(base, name, _refusing(original, f"forbidden torch operation Tensor.{name} (a host "
                                                                f"read-out of tensor values)", judge,
                                                      trusted_may=name in INTERPRETER_READOUTS))
            done.append(f"torch._C.TensorBase.{name}")
    for name in TENSOR_READOUTS:
        original = torch.Tensor.__dict__.get(name)
        if original is not None:
            setattr(torch.Tensor, name, _refusing(original, f"forbidden torch operation Tensor.{name} (a host "
                                                            "read-out of tensor values)", judge))
            done.append(f"torch.Tensor.{name}")
    _install_storage_openers(judge, done, aliases)
    _install_file_writers(judge, done, aliases)
    interface = torch.Tensor.__dict__.get("__cuda_array_interface__")
    if isinstance(interface, property) and interface.fget is not None:
        torch.Tensor.__cuda_array_interface__ = property(_refusing(  # type: ignore[attr-defined]
            interface.fget, "forbidden torch operation Tensor.__cuda_array_interface__ (a host read-out)", judge))
        done.append("torch.Tensor.__cuda_array_interface__")
    for name in DISPATCH_SWITCHES:
        original = getattr(torch._C, name, None)
        if original is not None:
            wrapper = _refusing(original, f"sandbox: torch._C.{name} switches the torch guard off or goes around "
                                          "it", judge)
            setattr(torch._C, name, wrapper)
            aliases[id(original)] = (original, wrapper)
            done.append(f"torch._C.{name}")


def _wrapped_member(member: object, what: str, judge: FrameJudge) -> object | None:
    """`member` of a class dictionary (a static/class method or a method) with a refusing wrapper inside."""
    if isinstance(member, staticmethod):
        return staticmethod(_refusing(member.__func__, what, judge))
    if isinstance(member, classmethod):
        return classmethod(_refusing(member.__func__, what, judge))
    if type(member).__name__ == "classmethod_descriptor":
        bind = member.__get__  # type: ignore[attr-defined]
        return classmethod(_refusing(lambda cls, *a, **k: bind(None, cls)(*a, **k), what, judge))
    if callable(member):
        return _refusing(member, what, judge)
    return None


def _install_storage_openers(judge: FrameJudge, done: list[str], aliases: dict[int, tuple[object, object]]) -> None:
    for cls in (torch._C.StorageBase, torch.UntypedStorage, torch.TypedStorage):
        for name in STORAGE_FILE_OPENERS:
            member = cls.__dict__.get(name)
            what = (f"forbidden torch operation {cls.__name__}.{name} (opens or maps a file or shared memory "
                    "outside the audit hook)")
            wrapper = _wrapped_member(member, what, judge) if member is not None else None
            if wrapper is None:
                continue
            if cls is torch._C.StorageBase:
                _set_type_attribute(cls, name, wrapper)
            else:
                setattr(cls, name, wrapper)
            done.append(f"{cls.__module__}.{cls.__name__}.{name}")
    original = getattr(torch, "from_file", None)
    if original is not None:  # torch._C._VariableFunctions' attributes are read-only: its alias in torch is wrapped
        wrapper = _refusing(original, "forbidden torch operation torch.from_file (opens a file outside the audit "
                                      "hook)", judge)
        torch.from_file = wrapper
        aliases[id(original)] = (original, wrapper)
        done.append("torch.from_file")


def _install_file_writers(judge: FrameJudge, done: list[str], aliases: dict[int, tuple[object, object]]) -> None:
    for module_name, name in TORCH_FILE_WRITERS:
        module = sys.modules.get(module_name)
        original = getattr(module, name, None) if module is not None else None
        if original is None:
            continue
        found = aliases.get(id(original))  # torch.save is torch.serialization.save: one wrapper for both names
        wrapper = found[1] if found else _refusing(original, f"forbidden torch operation {module_name}.{name} (writes "
                                                             "a file outside the audit hook)", judge)
        try:
            setattr(module, name, wrapper)
        except (AttributeError, TypeError):
            continue
        aliases[id(original)] = (original, wrapper)
        done.append(f"{module_name}.{name}")


def _install_triton_cache(judge: FrameJudge, done: list[str]) -> None:
    from triton.runtime import cache

    for cls in {cache.FileCacheManager, *cache.FileCacheManager.__subclasses__()}:
        for name in TRITON_CACHE_WRITERS:
            original = cls.__dict__.get(name)
            if original is not None:
                setattr(cls, name, _refusing(original, f"sandbox: {cls.__name__}.{name} writes into Triton's cache "
                                                       "(only Triton's compiler may)", judge, trusted_may=True))
                done.append(f"triton.runtime.cache.{cls.__name__}.{name}")


def _seal_module() -> None:
    """Rebind `refuse_if_untrusted` and `install` to their sealed copies (`seal.private_namespace`)."""
    namespace = seal.private_namespace(globals())
    globals().update(refuse_if_untrusted=namespace["refuse_if_untrusted"], install=namespace["install"])


_seal_module()
