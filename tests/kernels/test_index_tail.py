"""kv_indices longer than ΣP whose tail names NaN-filled cache slots, as a serving engine's preallocated index buffer
does: no entry point may let those slots reach the output (issue 16: the tuned kernel wrote NaN for the whole last
sequence on the H200, bf16, while the baseline was right).

The cause was the prefix pre-gather of the generic family: it copied every kv_indices entry, tail included, and the
tensor-descriptor box of the last sequence's last prefix tile read the copied NaN rows past ΣP; their probability is
0, and 0 x NaN is NaN in P @ V. The fix bounds the gather by kv_indptr[B] (`prefix_gather.gather_prefix(bound=)`:
entries past it are not read, their rows are zeros). Under the interpreter the forced pre-gather + TMA configuration
below fails without it (the 6 rows of the last sequence are NaN).
"""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention import baseline, extend_attention_fwd
from kernels.extend_attention.family import FamilyConfig, run_family, tma_plan
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.reference import reference_extend_attention
from tests.kernels.helpers import assert_close_to_reference, serving_engine_inputs

#: The held-back GPU case of issue 16.
GPU_CASE = dict(extend_lens=[30, 200, 1, 64], prefix_lens=[700, 1, 300, 1500], num_q_heads=16, num_kv_heads=4,
                head_dim=128)
#: The same layout at interpreter size: the last prefix (45 keys) ends inside a 64-key tile.
CPU_CASE = dict(extend_lens=[3, 20, 1, 6], prefix_lens=[70, 1, 30, 45], num_q_heads=4, num_kv_heads=2, head_dim=32)

#: What `tuned.choose_config` runs for a ragged batch (64x64 tiles, prefix pre-gathered, descriptor loads).
PREGATHER_TMA = FamilyConfig(block_m=64, block_n=64, num_warps=4, num_stages=3, num_splits=1, pack_gqa=False,
                             pregather=True, tma=True)

REFERENCE_KEYS = ("q_extend", "k_extend", "v_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr", "kv_indices",
                  "custom_mask", "is_causal", "mask_indptr")


def _expected(args: dict) -> torch.Tensor:
    return reference_extend_attention(**{k: args[k] for k in REFERENCE_KEYS})


def test_the_layout_is_a_serving_engines():
    args = serving_engine_inputs(**CPU_CASE, dtype=torch.float16, device="cpu", tail=64)
    total_p = int(args["kv_indptr"][-1])
    prefix, tail = args["kv_indices"][:total_p], args["kv_indices"][total_p:]
    slots = args["k_buffer"].shape[0]
    assert slots == 4 * total_p and tail.numel() == 64
    assert {0, slots - 1} <= set(prefix.tolist()) and prefix.unique().numel() == total_p
    assert not bool((prefix.diff() > 0).all()), "slots must not be monotonic"
    assert torch.isnan(args["k_buffer"][tail]).all() and torch.isfinite(args["k_buffer"][prefix]).all()


def test_the_forced_configuration_loads_the_pre_gathered_prefix_through_descriptors():
    args = serving_engine_inputs(**CPU_CASE, dtype=torch.float16, device="cpu")
    assert tma_plan(PREGATHER_TMA, **args) == (True, True)


@pytest.mark.parametrize("impl", ["pregather-tma", "baseline", "tuned"])
def test_a_nan_tail_never_reaches_the_output(impl, device):
    if device != "cpu":
        pytest.skip("the GPU runs the full-size case below")
    fns = {"pregather-tma": lambda **a: run_family(PREGATHER_TMA, **a), "baseline": baseline.extend_attention_fwd,
           "tuned": extend_attention_fwd}
    args = serving_engine_inputs(**CPU_CASE, dtype=torch.float16, device=device, seed=3)
    fns[impl](**args)
    assert_close_to_reference(args["o_extend"], _expected(args), "float16", impl)


def test_the_gather_never_reads_indices_past_the_prefix_and_zeroes_the_rows_after_it(device):
    src = torch.randn(40, 2, 16, device=device)
    kv_indptr = torch.tensor([0, 7, 12], dtype=torch.int32, device=device)
    idx = torch.randperm(40, device=device)[:12]
    tail = torch.full((70,), 10**12, dtype=torch.int64, device=device)  # no such slot
    k_got, v_got = gather_prefix(src, src, torch.cat([idx, tail]), bound=kv_indptr[-1:])
    assert torch.equal(k_got[:12], src[idx]) and torch.equal(v_got[:12], src[idx])
    assert bool((k_got[12:] == 0).all()) and bool((v_got[12:] == 0).all())


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["tuned", "baseline", "pregather-tma"])
@pytest.mark.parametrize("tail", [0, 4096])
def test_the_issue_case_on_the_gpu(impl, tail):
    from tests.kernels.sglang_calls import dropin_entry_point

    fns = {"pregather-tma": lambda **a: run_family(PREGATHER_TMA, **a), "baseline": baseline.extend_attention_fwd,
           "tuned": extend_attention_fwd}
    args = serving_engine_inputs(**GPU_CASE, dtype=torch.bfloat16, device="cuda", seed=16, tail=tail)
    expected = _expected(args)
    fns[impl](**args)
    assert_close_to_reference(args["o_extend"], expected, "bfloat16", f"{impl}, tail {tail}")
    if impl == "tuned":  # the report's drop-in runs the same rules
        args["o_extend"].fill_(float("nan"))
        dropin_entry_point()(**args)
        assert_close_to_reference(args["o_extend"], expected, "bfloat16", f"drop-in, tail {tail}")
