"""FrameJudge on code without a file: Triton's exec-built argument binder is trusted, look-alikes are not.

Triton builds one binder per JIT function with ``exec`` (``triton.runtime.jit.create_function_from_signature``); on a
GPU its specialization of Gluon arguments calls ``id()``, which the sandbox audits. The binder here is Triton's real
one, built from a real JIT function's parameters; only its ``specialize_impl`` entry is swapped for a probe that
records the binder's frame, so the test judges the frame the audit hook would see.
"""

from __future__ import annotations

import inspect
import sys
import types
from pathlib import Path

import triton.language as tl
from triton.runtime import jit as triton_jit

from agent.verifier.judge import FrameJudge

ROOT = Path(__file__).resolve().parents[2]
JUDGE = FrameJudge(ROOT)


def _scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


#: The JIT function object Triton makes on a GPU (TRITON_INTERPRET=1 would make an interpreted one instead).
SCALE = triton_jit.JITFunction(_scale)


def _binder():
    return triton_jit.create_function_from_signature(inspect.signature(_scale), SCALE.params, None)


def _binder_frame(binder) -> types.FrameType:
    seen = []

    def probe(*args, **kwargs):
        seen.append(sys._getframe(1))
        return ("i32", None)

    binder.__globals__["specialize_impl"] = probe
    binder(object(), 3, BLOCK=4)
    assert seen, "the binder did not specialize its arguments"
    return seen[0]


def test_tritons_own_binder_frame_is_trusted():
    frame = _binder_frame(_binder())
    assert frame.f_code.co_name == "dynamic_func" and frame.f_code.co_filename == "<string>"
    assert JUDGE.responsible(frame) == (frame, "trusted")


def test_a_look_alike_binder_is_untrusted():
    """Same name, same filename, a JITCallable in its globals that is not Triton's."""
    namespace = {"JITCallable": type("JITCallable", (), {}), "specialize_impl": None}
    source = "def dynamic_func(x, n, **options):\n    return specialize_impl(x)\n"
    exec(compile(source, "<string>", "exec"), namespace)
    frame = _binder_frame(namespace["dynamic_func"])
    assert frame.f_code.co_name == "dynamic_func"
    assert JUDGE.responsible(frame)[1] == "untrusted"


def test_tritons_binder_code_under_other_globals_is_untrusted():
    """The binder's code object rebound to globals of the caller's choosing is judged by those globals."""
    binder = _binder()
    rebound = types.FunctionType(binder.__code__, dict(binder.__globals__, JITCallable=object))
    frame = _binder_frame(rebound)
    assert frame.f_code is binder.__code__
    assert JUDGE.responsible(frame)[1] == "untrusted"


def test_code_from_a_string_is_untrusted():
    namespace: dict = {}
    exec(compile("import sys\ndef f():\n    return sys._getframe()\n", "<string>", "exec"), namespace)
    frame = namespace["f"]()
    assert JUDGE.responsible(frame)[1] == "untrusted"


def _generated_frames(call, name: str) -> list[types.FrameType]:
    """The frames of dataclass-generated methods called `name` that `call()` runs, judged while they run."""
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == "<string>" and frame.f_code.co_name == name:
            seen.append((frame, JUDGE.frame_kind(frame), JUDGE.responsible(frame)))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def test_a_dataclass_written_method_passes_responsibility_to_its_caller():
    """Gluon's compiler reprs its layout dataclasses; the generated ``__repr__`` (code from a string) calls
    ``id()`` through `dataclasses`. On clean values the generated method is transparent: the frame responsible is
    the one that called it."""
    from kernels.extend_attention.family import FamilyConfig

    config = FamilyConfig(block_m=32, block_n=16)
    caller = []

    def reprs():
        caller.append(sys._getframe())
        return repr(config)

    [(frame, kind, (responsible, _))] = _generated_frames(reprs, "__repr__")
    assert frame.f_code.co_qualname == "__create_fn__.<locals>.__repr__"
    assert JUDGE.code_kind(frame.f_code) == "untrusted" and kind == "transparent"
    assert responsible is caller[0]


def test_a_dataclass_method_on_a_subclass_with_a_c_level_post_init_is_untrusted():
    """A subclass of a trusted dataclass whose ``__post_init__`` is a C-level callable: the generated ``__init__``
    that `dataclasses.replace` (called by trusted kernel code) runs would call it with no frame of its own, under
    the kernel's name. The generated frame is untrusted then, so it is responsible itself."""
    import functools

    from kernels.extend_attention.family import FamilyConfig, resolve_tiles

    sink: list = []

    class Config(FamilyConfig):
        pass

    config = Config(ragged_tiles=16)
    Config.__post_init__ = staticmethod(functools.partial(sink.extend, [1]))
    [(frame, kind, (responsible, who))] = _generated_frames(lambda: resolve_tiles(config, None, None), "__init__")
    assert sink == [1] and kind == "untrusted" and responsible is frame and who == "untrusted"
    honest = FamilyConfig(ragged_tiles=16)
    [(_, kind, (responsible, who))] = _generated_frames(lambda: resolve_tiles(honest, None, None), "__init__")
    assert kind == "transparent" and who == "trusted"
    assert responsible.f_code.co_filename.endswith("kernels/extend_attention/family.py")


def test_dataclass_field_values_with_c_level_special_methods_are_not_clean():
    """Field values reach the generated ``__repr__``/``__eq__``/``__hash__`` (``hash(tuple_of_fields)`` calls the
    value's ``__hash__``): a value whose class binds a builtin to a special method is not clean; ints, strings,
    nested tuples and the trusted dataclasses are."""
    from kernels.extend_attention.family import FamilyConfig

    class Sneaky(int):
        __hash__ = len  # noqa: PLW1641 -- the builtin a generated __hash__ would call

    class Ordinary(int):
        pass

    assert JUDGE.clean_value(FamilyConfig(block_m=32)) and JUDGE.clean_value((1, "a", (2.0, None), [3]))
    assert not JUDGE.clean_value(((Sneaky(3),),)) and JUDGE.clean_value(Ordinary(1))
    assert not JUDGE.clean_value(FamilyConfig.__new__(type("Sub", (FamilyConfig,), {"__repr__": id})))
    assert not JUDGE.clean_value(((((1,),),),))  # deeper than the judge looks


def test_every_dataclass_that_triton_and_the_kernels_define_is_clean():
    """Generality: the classes the generated methods honestly run on (Triton's and Gluon's dataclasses, the task
    kernels' configurations) pass `FrameJudge.clean_class`, so their methods stay transparent."""
    import dataclasses
    import importlib
    import pkgutil

    import kernels
    import triton

    found = []
    for package in (triton, kernels):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if any(part in info.name for part in ("backends.", "_C", "reference")):
                continue
            try:
                module = importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 -- modules that need a GPU toolchain or a missing extra
                continue
            found += [v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)
                      and v.__module__ == module.__name__]
    assert len(found) >= 20, len(found)
    dirty = [f"{c.__module__}.{c.__qualname__}" for c in found if not JUDGE.clean_class(c)]
    assert not dirty, dirty
