"""Sealing the sandbox child's judging code against the candidate it judges.

In the child, the candidate shares the interpreter with the guards, and every Python object is reachable from any
other one (the dispatch mode on torch's stack, ``builtins.__import__``, closures of patched torch functions, module
dictionaries through ``sys.modules``). What Python lets any code change without an audit event: instance and class
attributes of classes made in Python, module globals, dict and list contents, closure cells. What it does not: the
items of a tuple, the attributes of a type flagged immutable, a function's code and defaults (audited), and the
state of C objects that expose none. Sealed code keeps everything its decisions rest on in the second kind:

- `opaque(fn)`: a C callable (``functools._lru_cache_wrapper`` with no cache and no ``__wrapped__``) that calls
  `fn` and exposes no reference to it, its globals or its closure;
- `private_namespace(globals())`: a copy of a module's globals (and of builtins) for sealed functions, in which the
  module's own functions are rebuilt on that copy and made opaque: rebinding a module global or a builtin later
  changes nothing for them, and no Python path leads to the copy;
- `seal_class(cls, namespace)`: the class's functions rebuilt on `namespace` and made opaque, then the class flagged
  ``Py_TPFLAGS_IMMUTABLETYPE`` (what CPython sets on its own static types: setting or deleting a class attribute,
  or assigning an instance's ``__class__``, raises TypeError). A class whose instances have a ``__dict__`` gets
  `BoundSlot` data descriptors for its methods, so that an instance attribute cannot shadow them.

Source: CPython 3.10-3.13, Include/object.h (``Py_TPFLAGS_IMMUTABLETYPE``, ``tp_flags``), Objects/typeobject.c
(``type_setattro``, ``object_set_class``), Modules/_functoolsmodule.c (``uncached_lru_cache_wrapper``), and the
audit events table of the Python documentation (``object.__setattr__`` on ``__code__`` and ``__defaults__``).
"""

from __future__ import annotations

import _functools
import builtins
import ctypes
import functools
from collections.abc import Callable
from types import FunctionType, MethodType
from typing import Any

#: ``Py_TPFLAGS_IMMUTABLETYPE`` (CPython Include/object.h, 3.10+).
IMMUTABLE_TYPE = 1 << 8

#: Key under which a private namespace keeps the module globals it copies (to tell that module's functions apart).
_ORIGIN = "__sealed_origin__"

#: Index of ``tp_flags`` among the pointer-sized words of a ``PyTypeObject`` (ob_refcnt, ob_type, ob_size, tp_name,
#: tp_basicsize, tp_itemsize, 15 slots from tp_dealloc to tp_as_buffer, then tp_flags; CPython 3.10-3.13).
_TP_FLAGS_WORD = 21


class SealError(RuntimeError):
    """The running interpreter's type layout is not the one `seal_class` knows (it refuses to guess)."""


def opaque(fn: Callable, name: str | None = None) -> Callable:
    """A C-level callable that calls `fn` with its arguments and keeps no Python-visible reference to it (binds as
    a method like a function does). Only its cosmetic ``__name__``/``__qualname__``/``__doc__`` can be changed."""
    wrapper = _functools._lru_cache_wrapper(fn, 0, False, functools._CacheInfo)
    wrapper.__name__ = name or getattr(fn, "__name__", "sealed")
    wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    return wrapper


def sealed_cache(fn: Callable) -> Callable:
    """An unbounded memo of `fn` (one hashable argument) whose entries no Python code can write or read out: only
    ``cache_clear`` is reachable, which costs time, never a wrong answer."""
    return _functools._lru_cache_wrapper(fn, None, False, functools._CacheInfo)


def rebuilt(fn: FunctionType, namespace: dict[str, Any]) -> FunctionType:
    """`fn` with `namespace` as its globals (same code, defaults and closure)."""
    new = FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__qualname__ = fn.__qualname__
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    new.__doc__ = fn.__doc__
    return new


def private_namespace(module_globals: dict[str, Any], **names: Any) -> dict[str, Any]:
    """A private copy of a module's globals plus `names`, with a private copy of builtins, in which every function
    defined in that module is rebuilt on the copy and made `opaque`. Hand it to `seal_class` or read sealed
    functions out of it; never bind it to a module global (that would make it reachable)."""
    private = dict(module_globals)
    private["__builtins__"] = dict(vars(builtins))
    private[_ORIGIN] = module_globals
    private.update(names)
    for key, value in list(private.items()):
        if type(value) is FunctionType and value.__globals__ is module_globals:
            private[key] = opaque(rebuilt(value, private))
    return private


def seal_class(cls: type, namespace: dict[str, Any]) -> type:
    """Rebuild the functions of `cls`'s own dictionary that its module defined on `namespace` (functions another
    module wrote, e.g. ``dataclasses``' repr guard, keep their globals), make every one opaque (data descriptors, see
    `BoundSlot`, where instances of `cls` have a ``__dict__``), then flag `cls` immutable. Returns `cls`.

    Raises:
        SealError: the interpreter's ``PyTypeObject`` layout differs (``tp_flags`` not where CPython keeps it)."""
    shadowable = "__dict__" in dir(cls)
    origin = namespace[_ORIGIN]

    def sealed(fn: FunctionType) -> Callable:
        return opaque(rebuilt(fn, namespace) if fn.__globals__ is origin else fn)

    for name, value in list(vars(cls).items()):
        if type(value) is FunctionType:
            setattr(cls, name, BoundSlot((sealed(value),)) if shadowable else sealed(value))
        elif type(value) in (staticmethod, classmethod) and type(value.__func__) is FunctionType:
            setattr(cls, name, type(value)(sealed(value.__func__)))
    _set_immutable(cls)
    return cls


def _set_immutable(cls: type) -> None:
    word = ctypes.sizeof(ctypes.c_void_p)
    flags = ctypes.c_ulong.from_address(id(cls) + _TP_FLAGS_WORD * word)
    if flags.value != type.__getattribute__(cls, "__flags__"):
        raise SealError(f"cannot seal {cls.__qualname__}: tp_flags is not at word {_TP_FLAGS_WORD} of the type object "
                        "in this interpreter")
    flags.value |= IMMUTABLE_TYPE
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    if not type.__getattribute__(cls, "__flags__") & IMMUTABLE_TYPE:
        raise SealError(f"cannot seal {cls.__qualname__}: the immutable-type flag did not stick")


class BoundSlot(tuple):
    """A read-only data descriptor holding one callable: ``instance.name`` is that callable bound to the instance
    (a method object, as torch requires of ``__torch_dispatch__``); an instance attribute of the same name can be
    neither set nor, written into ``__dict__`` directly, found first."""

    __slots__ = ()

    def __get__(self, instance: object, owner: type | None = None) -> Callable:
        return self[0] if instance is None else MethodType(self[0], instance)

    def __set__(self, instance: object, value: object) -> None:
        raise AttributeError("a sealed method of the verifier cannot be replaced")

    def __delete__(self, instance: object) -> None:
        raise AttributeError("a sealed method of the verifier cannot be deleted")


seal_class(BoundSlot, private_namespace(globals()))
