"""Running an extend-attention implementation on a case and checking it against the fp32 reference."""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernels.extend_attention.spec import TASK, make_inputs, reference
from kernels.extend_attention.workspace import pooled
from kernels.task import Case


def check_impl(fn: Callable, case: Case, device: str, dtype: str | None = None, seed: int | None = None):
    """Run `fn` on fresh NaN-poisoned inputs of `case`; assert finite and within the dtype tolerance."""
    dtype = dtype or case.params["dtype"]
    args = make_inputs(case, seed, device, dtype)
    expected = reference(args)["o_extend"]
    result = fn(**args)
    assert result is args["o_extend"], "entry point must return o_extend"
    got = args["o_extend"].float()
    assert torch.isfinite(got).all(), f"{case.id}: non-finite output (unwritten rows or NaN)"
    tol = TASK.tolerances[dtype]
    err = (got - expected).abs()
    bound = tol.atol + tol.rtol * expected.abs()
    bad = (err > bound).nonzero()
    assert bad.numel() == 0, (f"{case.id} {dtype}: {bad.shape[0]} elements out of tolerance, first at "
                              f"{tuple(bad[0].tolist())}: got {got[tuple(bad[0])]:.4f} expected "
                              f"{expected[tuple(bad[0])]:.4f}")


def poison_prefix_workspace(args: dict) -> None:
    """Fill the pooled pre-gather buffers a call with `args` will use with NaN, so that a row attention reads before
    the call copies it shows as a non-finite output (otherwise an earlier call may have left the right rows there)."""
    for name, buf in (("prefix_k", args["k_buffer"]), ("prefix_v", args["v_buffer"])):
        numel = args["kv_indices"].shape[0] * buf.shape[1] * buf.shape[2]
        if numel:
            pooled(buf.device, buf.dtype, name, numel).fill_(float("nan"))


def on_poisoned_workspace(fn: Callable) -> Callable:
    """`fn` called after `poison_prefix_workspace` on its arguments."""
    def call(**args):
        poison_prefix_workspace(args)
        return fn(**args)
    return call
