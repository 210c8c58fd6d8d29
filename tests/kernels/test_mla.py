"""The dedicated MLA kernel (`kernels.extend_attention.mla`) against the fp32 reference, under the Triton interpreter
at small sizes (fp16 and fp32; the interpreter's bf16 dot is wrong, bf16 runs in test_mla_gpu.py).

Shapes are absorbed MLA's: D_qk = latent + rope with V a view of K's latent columns, one KV head (two in one case);
576/512 as DeepSeek, and 192/128 (same structure, 128 + 64) where many lengths are swept.
"""

from __future__ import annotations

import math

import pytest
import torch

from kernels.extend_attention.cases import full_params
from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import ChipLimits, FamilyConfig, run_family
from kernels.extend_attention.mla import fit_mla, mla_applies, mla_smem_kb, mla_splits, run_mla
from kernels.extend_attention.reference import reference_extend_attention
from kernels.extend_attention.spec import TASK, make_inputs, reference
from kernels.task import Case
from tests.kernels.helpers import poison_prefix_workspace

LIMITS = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
SMALL = FamilyConfig(block_m=16, block_n=16, num_warps=4, num_stages=2, mla="triton")


def mla_case(case_id: str, extend, prefix, heads=4, kv_heads=1, dims=(192, 128), dtype="float16", **extra) -> Case:
    """An MLA-shaped case: V a view of K's first dims[1] columns, `heads` q heads on `kv_heads` KV heads."""
    params = full_params(dict(extend_lens=list(extend), prefix_lens=list(prefix), num_q_heads=heads,
                              num_kv_heads=kv_heads, head_dim=dims[0], head_dim_v=dims[1], mla=True,
                              dtype=dtype, **extra))
    return Case(case_id, params, 1000 + sum(map(ord, case_id)), "mla")


CASES = [
    mla_case("ragged-zeros", [5, 0, 7, 1, 13], [0, 9, 3, 20, 0]),
    mla_case("decode-long-prefix", [1, 1], [77, 300]),
    mla_case("odd-lengths", [13, 37], [123, 1]),
    mla_case("no-prefix", [23], [0]),
    mla_case("prefix-shorter-than-tile", [3], [2]),
    mla_case("non-causal", [7, 4], [5, 0], is_causal=False),
    mla_case("logit-cap-huge", [8], [16], logit_cap=30.0, q_scale=300.0),
    mla_case("sm-scale", [5], [7], sm_scale=0.3),
    mla_case("sinks", [6, 1], [10, 0], sinks=True),
    mla_case("group-7", [10, 3], [4, 31], heads=7),
    mla_case("two-kv-heads", [6, 17], [23, 5], heads=8, kv_heads=2),
    mla_case("32-heads-half-token-blocks", [3, 2], [9, 17], heads=32),
    mla_case("deepseek-576-512", [5, 3], [19, 8], dims=(576, 512)),
    mla_case("deepseek-576-512-16-heads", [2, 1], [21, 40], heads=16, dims=(576, 512)),
]
CONFIGS = {
    "pointers": SMALL,
    "pregather-tma": FamilyConfig(16, 16, 4, 2, pregather=True, tma=True, mla="triton"),
    "split3-gather": FamilyConfig(32, 16, 4, 2, num_splits=3, mla="triton"),
    "split2-pregather-tma-m16n32": FamilyConfig(16, 32, 4, 3, num_splits=2, pregather=True, tma=True, mla="triton"),
    "gluon-request": FamilyConfig(16, 16, 4, 2, mla="gluon"),  # off Hopper: the Triton kernel
    "gluon-ws-request": FamilyConfig(16, 16, 4, 2, mla="gluon_ws"),  # off Hopper: the Triton kernel
    "gluon-ahead-rope-request": FamilyConfig(16, 16, 4, 2, mla="gluon_ahead_rope"),  # off Hopper: the Triton kernel
}


def _check(got: torch.Tensor, expected: torch.Tensor, dtype: str, what: str) -> None:
    tol = TASK.tolerances[dtype]
    got = got.float()
    assert torch.isfinite(got).all(), f"{what}: non-finite output (unwritten rows or NaN)"
    err = (got - expected).abs()
    bad = (err > tol.atol + tol.rtol * expected.abs()).nonzero()
    assert bad.numel() == 0, (f"{what}: {bad.shape[0]} elements out of tolerance, max error {err.max():.3g} at "
                              f"{tuple(bad[0].tolist())}")


def _run(config: FamilyConfig, args: dict, k_scale: float = 1.0, v_scale: float = 1.0, limits=LIMITS):
    keys = ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr",
            "kv_indices", "is_causal", "sm_scale", "logit_cap", "sinks")
    return run_mla(config, *(args[k] for k in keys), k_scale, v_scale, limits)


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.slow
def test_mla_kernel_matches_reference_fp16(case, config):
    args = make_inputs(case, None, "cpu", "float16")
    expected = reference(args)["o_extend"]
    _check(_run(CONFIGS[config], args), expected, "float16", f"{case.id}/{config}")


@pytest.mark.parametrize("case", [CASES[0], CASES[11]], ids=[CASES[0].id, CASES[11].id])
def test_mla_kernel_matches_reference_fp32(case):
    args = make_inputs(case, None, "cpu", "float32")
    expected = reference(args)["o_extend"]
    _check(_run(CONFIGS["split2-pregather-tma-m16n32"], args), expected, "float32", case.id)


@pytest.mark.parametrize("config", ["pointers", "pregather-tma"])
def test_k_scale_and_v_scale_scale_only_the_prefix(config):
    """Prefix logits x sm_scale * k_scale and prefix P.V x v_scale (SGLang 0.5.23): the reference sees a prefix cache
    scaled by k_scale (keys) and v_scale (values), the extend keys unscaled."""
    case = CASES[0]
    args = make_inputs(case, None, "cpu", "float16")
    k_scale, v_scale = 0.37, 2.5
    dv = args["v_buffer"].shape[2]
    scaled = dict(args, k_buffer=args["k_buffer"].float() * k_scale,
                  v_buffer=args["k_buffer"][..., :dv].float() * v_scale)
    keys = ("q_extend", "k_extend", "v_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr", "kv_indices",
            "custom_mask", "is_causal", "mask_indptr", "sm_scale", "logit_cap", "skip_prefix_custom_mask",
            "sliding_window_size", "sinks")
    expected = reference_extend_attention(**{k: scaled[k] for k in keys})
    unscaled = reference(args)["o_extend"]
    assert (expected - unscaled).abs().max() > 0.05  # the scales change the answer
    _check(_run(CONFIGS[config], args, k_scale, v_scale), expected, "float16", f"scales/{config}")


@pytest.mark.parametrize("config", ["pointers", "pregather-tma", "split3-gather"])
def test_kv_indices_past_the_last_sequence_are_never_read(config):
    """A serving engine's preallocated kv_indices: entries past kv_indptr[B] point at NaN slots of the pool (and one
    far outside it). Neither the gather nor a key tile may touch them; the pre-gather workspace starts as NaN, so a
    TMA box past the last prefix row would show."""
    case = CASES[2]
    args = make_inputs(case, None, "cpu", "float16")
    used = torch.zeros(args["k_buffer"].shape[0], dtype=torch.bool)
    used[args["kv_indices"]] = True
    nan_slots = (~used).nonzero().flatten()
    assert torch.isnan(args["k_buffer"][nan_slots]).all()
    tail = torch.cat([nan_slots.repeat(3), torch.tensor([10**9])])
    expected = reference(args)["o_extend"]
    args["kv_indices"] = torch.cat([args["kv_indices"], tail])
    poison_prefix_workspace(args)
    _check(_run(CONFIGS[config], args), expected, "float16", f"garbage-tail/{config}")


def test_splits_beyond_the_prefix_tiles_merge_empty_partials_to_nothing():
    """More splits than prefix tiles: the empty partials are (0, -inf) and must not turn the merge into NaN."""
    case = mla_case("short-prefix-many-splits", [4, 3], [3, 0])
    args = make_inputs(case, None, "cpu", "float16")
    expected = reference(args)["o_extend"]
    _check(_run(FamilyConfig(16, 16, 4, 2, num_splits=6, mla="triton"), args), expected, "float16", case.id)


def test_run_family_routes_mla_calls_with_the_knob_and_keeps_the_generic_kernel_otherwise():
    case = CASES[11]
    args = make_inputs(case, None, "cpu", "float16")
    expected = reference(args)["o_extend"]
    for config in (SMALL, FamilyConfig(16, 16, 4, 2)):
        args["o_extend"].fill_(float("nan"))
        _check(run_family(config, **args, limits=LIMITS), expected, "float16", f"run_family mla={config.mla}")


def test_mla_applies_only_to_mla_shapes_without_mask_or_window():
    prob = Problem(2, 8, 27, 16, 1, 576, 512, torch.bfloat16)
    assert mla_applies(prob, True, None, -1)
    assert not mla_applies(prob, False, None, -1)  # V not a view of K
    assert not mla_applies(prob, True, torch.ones(3), -1)
    assert not mla_applies(prob, True, None, 8)
    assert not mla_applies(Problem(2, 8, 27, 16, 1, 128, 128, torch.bfloat16), True, None, -1)
    assert not mla_applies(Problem(2, 8, 27, 16, 1, 576, 256, torch.bfloat16), True, None, -1)


def test_a_non_mla_call_to_run_mla_is_refused():
    case = full_params(dict(extend_lens=[3], prefix_lens=[4], num_q_heads=2, num_kv_heads=1, head_dim=32,
                            dtype="float16"))
    args = make_inputs(Case("plain", case, 3), None, "cpu")
    with pytest.raises(ValueError, match="V a view of K"):
        _run(SMALL, args)


BENCH = Problem(4, 2048, 32768, 16, 1, 576, 512, torch.bfloat16)


def test_fit_keeps_the_bench_tiles_on_hopper_and_shrinks_them_for_a_smaller_chip():
    fitted = fit_mla(FamilyConfig(64, 32, 8, 3, mla="triton"), BENCH, LIMITS)
    assert (fitted.block_m, fitted.block_n, fitted.num_warps, fitted.num_stages) == (64, 32, 8, 3)
    assert mla_smem_kb(64, 32, 3, BENCH) <= 227
    small_chip = ChipLimits(num_compute_units=36, smem_per_block_kb=99.0, warp_size=32, max_threads_per_block=1024)
    fitted = fit_mla(FamilyConfig(64, 64, 8, 3, mla="triton"), BENCH, small_chip)
    assert mla_smem_kb(fitted.block_m, fitted.block_n, fitted.num_stages, BENCH) <= 99.0
    assert fitted.num_warps * 32 * 128 >= fitted.block_m * 512  # accumulator <= 128 registers per thread
    with pytest.raises(ValueError, match="no tile fits"):
        fit_mla(FamilyConfig(64, 64, 8, 3, mla="triton"), BENCH, ChipLimits(132, 8.0, 32, 1024))


def test_fit_raises_warps_so_the_accumulator_fits_the_registers():
    fitted = fit_mla(FamilyConfig(64, 64, 4, 2, mla="triton"), BENCH, LIMITS)
    assert fitted.num_warps == 8
    assert fit_mla(FamilyConfig(128, 32, 4, 2, mla="triton"), BENCH, LIMITS).num_warps == 16


@pytest.mark.parametrize(("batch", "extend", "units", "expected"), [
    (4, 512, 132, 1),   # bench: 512 programs, 3.9 waves
    (1, 64, 132, 8),    # one sequence, 16 programs: 8 splits make one wave of 128
    (64, 1, 132, 2),    # decode batch: 64 programs, 2 splits make one wave of 128
])
def test_split_count_comes_from_the_compute_units(batch, extend, units, expected):
    prob = Problem(batch, batch * extend, batch * 8192, 16, 1, 576, 512, torch.bfloat16)
    limits = ChipLimits(units, 227.0, 32, 1024)
    splits = mla_splits(prob, 64, limits)
    programs = batch * math.ceil(extend * 16 / 64)
    cost = {s: math.ceil(programs * s / units) / s for s in range(1, 17)}
    assert cost[splits] <= 1.05 * min(cost.values())
    assert splits == expected
    assert mla_splits(prob, 64, ChipLimits(2 * units, 227.0, 32, 1024)) >= splits  # more units, no fewer splits
