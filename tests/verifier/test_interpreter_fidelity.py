"""The interpreter's tf32 dots round their float32 operands as a GPU's tensor cores do (10 mantissa bits, nearest,
ties away from zero); IEEE dots stay exact."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from agent.verifier.interpreter_fidelity import emulate_tf32_dots, round_to_tf32


def test_round_to_tf32_values():
    x = np.array([1 + 2.0 ** -12, 1 + 3 * 2.0 ** -12, 1 + 2.0 ** -11, -(1 + 2.0 ** -11), 2 - 2.0 ** -12,
                  np.inf, 3.0], dtype=np.float32)
    want = [1.0, 1 + 2.0 ** -10, 1 + 2.0 ** -10, -(1 + 2.0 ** -10), 2.0, np.inf, 3.0]
    assert round_to_tf32(x).tolist() == want
    assert np.isnan(round_to_tf32(np.array([np.nan], dtype=np.float32)))[0]


@triton.jit
def _dot_kernel(A, B, C, IEEE: tl.constexpr):
    i = tl.arange(0, 16)
    a = tl.load(A + i[:, None] * 16 + i[None, :])
    b = tl.load(B + i[:, None] * 16 + i[None, :])
    if IEEE:
        c = tl.dot(a, b, input_precision="ieee")
    else:
        c = tl.dot(a, b)  # Triton's default for float32: tf32
    tl.store(C + i[:, None] * 16 + i[None, :], c)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's dots (tests/conftest.py "
                    "sets TRITON_INTERPRET=1 without a GPU)")
def test_interpreter_tf32_dot_matches_rounded_operands(monkeypatch):
    from triton.runtime import interpreter

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", interpreter.InterpreterBuilder.create_dot)
    emulate_tf32_dots()
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, 16, generator=gen), torch.randn(16, 16, generator=gen)
    out = torch.empty(16, 16)
    _dot_kernel[(1,)](a, b, out, IEEE=False)
    ra, rb = (torch.from_numpy(round_to_tf32(t.numpy())) for t in (a, b))
    assert torch.allclose(out, ra @ rb, rtol=1e-6, atol=1e-5) and not torch.allclose(out, a @ b, rtol=1e-6, atol=1e-5)
    _dot_kernel[(1,)](a, b, out, IEEE=True)
    assert torch.allclose(out, a @ b, rtol=1e-6, atol=1e-5)
