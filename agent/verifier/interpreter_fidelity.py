"""Make the Triton interpreter's dots round like a GPU's, so a CPU verification sees what the GPU would compute.

Triton's interpreter (``TRITON_INTERPRET=1``, triton/runtime/interpreter.py ``InterpreterBuilder.create_dot``, Triton
3.x) multiplies with numpy in float32 whatever ``input_precision`` says; on NVIDIA GPUs ``input_precision="tf32"``
-- the default of ``tl.dot`` for float32 operands -- rounds both operands to tf32 (10 explicit mantissa bits,
``cvt.rna.tf32.f32``: round to nearest, ties away from zero; PTX ISA, "cvt") before the tensor-core product. A
float32 candidate that leaves its dots at tf32 therefore passed the interpreter's float32 check and failed on the
GPU. `emulate_tf32_dots` rounds the operands of such dots the same way; every other precision is left as it is.
"""

from __future__ import annotations

import numpy as np

#: Low mantissa bits float32 has and tf32 drops (23 - 10).
_DROPPED_BITS = 13


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 array `x` rounded to tf32 (nearest, ties away from zero), as float32; NaN and inf unchanged.

    Adding half of the dropped range to the magnitude bits and clearing them rounds to nearest with ties away
    (a carry into the exponent is the correct rounding up to the next power of two).
    """
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    half = np.uint32(1 << (_DROPPED_BITS - 1))
    mask = np.uint32(~((1 << _DROPPED_BITS) - 1) & 0xFFFFFFFF)
    rounded = ((bits + half) & mask).view(np.float32)
    return np.where(np.isfinite(x), rounded, x).astype(np.float32)


def emulate_tf32_dots() -> None:
    """Wrap the interpreter's ``create_dot`` so tf32 dots of float32 operands round them to tf32 first (idempotent)."""
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original = builder.create_dot
    if getattr(original, "emulates_tf32", False):
        return

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if input_precision == ir.INPUT_PRECISION.TF32 and a.data.dtype == np.float32 and b.data.dtype == np.float32:
            a = interpreter.TensorHandle(round_to_tf32(a.data), a.dtype)
            b = interpreter.TensorHandle(round_to_tf32(b.data), b.dtype)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot.emulates_tf32 = True  # type: ignore[attr-defined]
    builder.create_dot = create_dot
