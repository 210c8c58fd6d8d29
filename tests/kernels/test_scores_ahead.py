"""The family's scores-ahead key loop (`FamilyConfig.scores_ahead`, `family_pipelined.py`) and heads-fastest
program order (`FamilyConfig.heads_inner`) under the Triton interpreter: outputs against the float32 reference
(`spec.reference`) on float16 and float32 calls with several unmasked key tiles per row block, in the extend keys and
the pre-gathered prefix, with and without descriptors, GQA packing, windows, masks, caps and sinks."""

from __future__ import annotations

import random

import pytest

from kernels.extend_attention.cases import full_params, random_case
from kernels.extend_attention.family import AHEAD_DERIVED, FamilyConfig, run_family
from kernels.extend_attention.spec import TASK
from kernels.task import Case
from tests.kernels.helpers import check_impl, on_poisoned_workspace

#: 16 x 16 tiles: the 70-token sequence has up to 4 unmasked extend tiles per row block, the 50-key prefix 3 full
#: tiles and a partial one, so the loop's prologue, steady state and epilogue all run.
SMALL_TILES = dict(block_m=16, block_n=16, num_warps=4, num_stages=2, num_splits=1)


def _case(case_id: str, dtype: str, **extra) -> Case:
    params = dict(extend_lens=[70, 33, 1], prefix_lens=[50, 0, 37], num_q_heads=4, num_kv_heads=2, head_dim=32,
                  dtype=dtype, **extra)
    return Case(case_id, full_params(params), 7, "scores-ahead")


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("knobs", [
    dict(scores_ahead=1, pregather=True, tma=True),
    dict(scores_ahead=1, pregather=True, pack_gqa=False),
    dict(scores_ahead=1),  # prefix gathered through kv_indices: the plain loop there, scores ahead in the extend
    dict(scores_ahead=1, pregather=True, tma=True, heads_inner=True),
    dict(heads_inner=True, pack_gqa=False),
    dict(scores_ahead=1, pregather=True, num_splits=2),  # two prefix splits: each split's own range
    dict(scores_ahead=2, pregather=True, tma=True),
    dict(scores_ahead=2, pregather=True, pack_gqa=False, heads_inner=True),
    dict(scores_ahead=2, num_splits=2),
], ids=["tma", "no-pack", "gathered", "tma-heads-inner", "heads-inner", "two-splits", "pv-behind-tma",
        "pv-behind-no-pack", "pv-behind-two-splits"])
@pytest.mark.slow
def test_matches_reference(knobs, dtype, device):
    config = FamilyConfig(**{**SMALL_TILES, **knobs})
    check_impl(lambda **a: run_family(config, **a), _case("scores-ahead", dtype), device)


@pytest.mark.parametrize("extra", [dict(sliding_window=20), dict(logit_cap=20.0), dict(sinks=True),
                                   dict(custom_mask=True), dict(is_causal=False), dict(k_scale=0.5, v_scale=1.7)],
                         ids=["window", "logit-cap", "sinks", "custom-mask", "non-causal", "kv-scales"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.slow
def test_features_with_scores_ahead(extra, depth, device):
    config = FamilyConfig(**SMALL_TILES, scores_ahead=depth, pregather=True, tma=True, heads_inner=True)
    check_impl(lambda **a: run_family(config, **a), _case("scores-ahead-feature", "float16", **extra), device)


@pytest.mark.parametrize("case_id", ["zero-lengths", "gqa-7", "head-dim-80", "qk192-v128", "mla-576-512",
                                     "indices-tail"])
@pytest.mark.parametrize("depth", [1, 2])
def test_edge_cases(case_id, depth, device):
    config = FamilyConfig(block_m=16, block_n=16, scores_ahead=depth, heads_inner=True, pregather=True, tma=True)
    check_impl(lambda **a: run_family(config, **a), TASK.case(case_id), device)


@pytest.mark.parametrize("knobs", [dict(gather_ahead=4), dict(gather_ahead=2, ahead_heads=2, ahead_sync=True),
                                   dict(gather_ahead=4, ahead_sync=True, heads_inner=True),
                                   dict(gather_ahead=4, ahead_sync=True, scores_ahead=2)],
                         ids=["launch-per-head", "sync-two-ahead", "sync-heads-inner-ignored", "sync-depth-2"])
@pytest.mark.slow
def test_gather_ahead_with_scores_ahead_copies_every_row_it_reads(knobs, device):
    """The scores-ahead prefix loop inside gather-ahead (`family_ahead.ahead_prefix`) still copies one chunk per
    tile: on NaN-poisoned pre-gather buffers a row read before its copy shows as a non-finite output."""
    params = full_params(dict(extend_lens=[5, 0, 21, 1], prefix_lens=[3, 9, 40, 17], num_q_heads=8, num_kv_heads=4,
                              head_dim=32, dtype="float16"))
    config = FamilyConfig(**{**dict(block_m=16, block_n=16, num_splits=1, pack_gqa=True, pregather=True, tma=True,
                                    scores_ahead=1), **knobs})
    check_impl(on_poisoned_workspace(lambda **a: run_family(config, **a)), Case("ahead", params, 7, "edge"), device)


#: Sweep 9's scores-ahead configurations at their real tile sizes (wgmma on Hopper), for the GPU tests below.
GPU_CONFIGS = [
    FamilyConfig(128, 128, 8, 2, 0, True, pregather=True, tma=True, gather_ahead=AHEAD_DERIVED, ahead_sync=True,
                 scores_ahead=1, heads_inner=True),
    FamilyConfig(128, 64, 8, 3, 0, True, pregather=True, tma=True, gather_ahead=AHEAD_DERIVED, ahead_sync=True,
                 scores_ahead=1),
    FamilyConfig(64, 64, 4, 3, 0, False, pregather=True, tma=True, scores_ahead=1, heads_inner=True),
    FamilyConfig(128, 64, 8, 3, 0, True, pregather=True, tma=True, scores_ahead=2, heads_inner=True),
    FamilyConfig(64, 64, 4, 3, 0, False, pregather=True, tma=True, scores_ahead=2, heads_inner=True),
]
GPU_EDGE_CASES = ["gqa-4", "gqa-7", "head-dim-80", "sliding-window", "custom-mask", "sinks", "logit-cap-huge",
                  "non-causal", "kv-scales", "indices-tail", "fp32-inputs"]


@pytest.mark.gpu
@pytest.mark.parametrize("config", GPU_CONFIGS, ids=["128x128-ahead-sync", "128x64-ahead-sync", "64x64",
                                                     "128x64-pv-behind", "64x64-pv-behind"])
@pytest.mark.parametrize("case_id", GPU_EDGE_CASES + [f"random-{seed}" for seed in range(4)])
def test_gpu_scores_ahead_matches_reference(case_id, config):
    """bfloat16 (float32 for fp32-inputs) on a GPU: edge cases and GPU-sized random draws (`cases.random_case`),
    pre-gather buffers NaN-poisoned first."""
    if case_id.startswith("random-"):
        case, dtype = random_case(random.Random(int(case_id[7:]) + 2000), small=False), "bfloat16"
    else:
        case = TASK.case(case_id)
        dtype = "float32" if case.params["dtype"] == "float32" else "bfloat16"
    check_impl(on_poisoned_workspace(lambda **a: run_family(config, **a)), case, "cuda", dtype=dtype)
