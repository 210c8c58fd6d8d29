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


def test_a_dataclass_written_method_passes_responsibility_to_its_caller():
    """Gluon's compiler reprs its layout dataclasses; the generated ``__repr__`` (code from a string) calls
    ``id()`` through `dataclasses`. The frame responsible is the one that called the generated method."""
    import dataclasses

    seen = []

    class Probe:
        def __repr__(self):
            seen.append(sys._getframe(1))
            return "probe"

    @dataclasses.dataclass
    class Layout:
        inner: object

    def caller():
        return repr(Layout(Probe())), sys._getframe()

    text, caller_frame = caller()
    generated = seen[0]
    assert text == "test_a_dataclass_written_method_passes_responsibility_to_its_caller.<locals>.Layout(inner=probe)"
    assert generated.f_code.co_filename == "<string>" and generated.f_code.co_name == "__repr__"
    assert JUDGE.code_kind(generated.f_code) == "transparent"
    assert JUDGE.responsible(generated)[0] is caller_frame
