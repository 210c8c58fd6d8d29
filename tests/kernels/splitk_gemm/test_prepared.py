"""Replayed calls (`prepared.PreparedCall`): a call signature is checked and planned once, and any call whose
metadata differs (shape, strides, dtype, alignment) is checked and planned anew, so bad input still fails with
its one-line error after warm calls, and every replay computes the right product."""

from __future__ import annotations

import functools

import pytest
import torch

from kernels.launch import DirectLaunch
from kernels.splitk_gemm import family, splitk_gemm, tuned, workspace
from kernels.splitk_gemm.config import FamilyConfig
from kernels.splitk_gemm.family import run_family
from kernels.splitk_gemm.family_kernels import _reduce_kernel
from kernels.splitk_gemm.prepared import call_key
from kernels.splitk_gemm.spec import TASK, make_inputs, reference
from tests.kernels.splitk_gemm.helpers import SMALL_CHIP, check_impl

CASE = TASK.case("long-k-33x96x300")
TUNED = functools.partial(splitk_gemm, limits=SMALL_CHIP)


def _args(device, **params):
    return make_inputs(CASE if not params else type(CASE)("t", {**CASE.params, **params}, 5), 7, device)


def test_warm_calls_replay_and_compute_each_call(device):
    """Three calls of one signature on fresh inputs: one PreparedCall, each output right."""
    before = len(tuned._PREPARED)
    for seed in range(3):
        check_impl(TUNED, CASE, device, seed=seed)
    assert len(tuned._PREPARED) - before <= 1


@pytest.mark.parametrize("bad", ["c_shape", "b_k", "dtype", "rank"])
def test_bad_input_after_warm_calls_still_fails_with_its_error(bad, device):
    check_impl(TUNED, CASE, device)
    args = _args(device)
    a, b, c = args["a"], args["b"], args["c"]
    if bad == "c_shape":
        c = c[:, :-1]
    elif bad == "b_k":
        b = b[:, :-1]
    elif bad == "dtype":
        c = c.float()
    else:
        a = a[None]
    with pytest.raises(ValueError, match="splitk_gemm: "):
        splitk_gemm(a, b, c, limits=SMALL_CHIP)


def test_other_strides_and_alignment_are_other_signatures(device):
    """A transposed view of A, or C one element into its buffer (2-byte aligned), is a signature of its own, and
    its result is right (the first call's compiled kernel may assume unit strides and 16-byte alignment)."""
    args = _args(device)
    a_t = args["a"].T.contiguous().T
    wide = torch.full((args["c"].shape[0] * args["c"].shape[1] + 1,), float("nan"), dtype=args["c"].dtype,
                      device=device)
    c_off = wide[1:].view(args["c"].shape)
    keys = {call_key(args["a"], args["b"], args["c"]), call_key(a_t, args["b"], args["c"]),
            call_key(args["a"], args["b"], c_off)}
    assert len(keys) == 3
    expected = reference(args)["c"]
    for a, c in ((args["a"], args["c"]), (a_t, args["c"]), (args["a"], c_off)):
        out = splitk_gemm(a, args["b"], c, limits=SMALL_CHIP)
        assert torch.allclose(out.float(), expected, atol=2e-3, rtol=2e-3)


@pytest.mark.slow
def test_a_replay_takes_the_pool_buffers_again_after_the_pool_grew(device, monkeypatch):
    """A PreparedCall holding partials fetches them again once a larger call replaced the pooled buffer, so the
    replaced one can be freed. The pool starts empty here (earlier tests' larger partials would leave nothing for
    the larger call to replace)."""
    monkeypatch.setattr(workspace, "_POOL", {})
    config = FamilyConfig(block_m=16, block_n=16, block_k=16, split_k=3)
    run = functools.partial(run_family, config, limits=SMALL_CHIP)
    check_impl(run, CASE, device)
    args = _args(device)
    prepared = family._PREPARED[(config, SMALL_CHIP, call_key(args["a"], args["b"], args["c"]))]
    first = prepared._held[2]
    check_impl(run, type(CASE)("big", {"m": 48, "n": 200, "k": 300, "dtype": "float16"}, 1), device)
    check_impl(run, CASE, device)
    pooled = workspace.partials(torch.device(device), 1, prepared._held[0])
    assert pooled is not first and prepared._held[2] is pooled


def test_direct_launch_names_parameters_it_cannot_fill():
    with pytest.raises(ValueError, match="neither positional nor in meta"):
        DirectLaunch(_reduce_kernel, (1,), dict(SPLIT_K=2), 6)


@pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines keep compiled kernels (test_splitk_gemm_gpu.py)")
def test_the_interpreter_keeps_no_compiled_kernel(device):
    """Under the interpreter no CompiledKernel comes back: every launch goes through Triton's own run."""
    check_impl(TUNED, CASE, device)
    check_impl(TUNED, CASE, device)
    assert all(not p.main._compiled for p in tuned._PREPARED.values())
