"""SGLang 0.5.23's arguments beyond the 2025 signature, for the baseline, the tuned entry point and family
configurations (interpreter on CPU): KV-cache scales, the natural-log LSE, skip_prefix / skip_extend, identity
indices, page_size, extend_seq_lens_cpu, and the refusals.

Expected values come from the float64 reference (`kernels.extend_attention.reference`) and from identities that do
not use it: scaling the prefix logits by k_scale is attending with k_buffer x k_scale, scaling the prefix P.V by
v_scale is attending with v_buffer x v_scale, and SGLang's DCP split (the prefix alone with its LSE, the extend alone
with its LSE, merged by LSE) is the whole attention.
"""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention import baseline, extend_attention_fwd
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.reference import reference_extend_attention
from kernels.extend_attention.spec import TASK, make_inputs

CONFIGS = {
    "split3-pack": FamilyConfig(block_m=16, block_n=16, num_splits=3, pack_gqa=True),
    "nosplit-nopack": FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=False),
    "tma-pregather-split2": FamilyConfig(block_m=16, block_n=16, num_splits=2, pack_gqa=True, pregather=True, tma=True),
}
IMPLS = {"baseline": baseline.extend_attention_fwd, "tuned": extend_attention_fwd}
IMPLS.update({name: (lambda c: lambda *a, **k: run_family(c, *a, **k))(cfg) for name, cfg in CONFIGS.items()})

REF_KEYS = ("q_extend", "k_extend", "v_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr", "kv_indices",
            "custom_mask", "is_causal", "mask_indptr", "sm_scale", "logit_cap", "skip_prefix_custom_mask",
            "sliding_window_size", "sinks")


def _ref(args: dict, **extra) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    return reference_extend_attention(**{k: args[k] for k in REF_KEYS}, compute_dtype=torch.float64, **extra)


def _close(got: torch.Tensor, expected: torch.Tensor, tol: float = 4e-3) -> None:
    got, expected = got.double(), expected.double()
    assert torch.isfinite(got).all(), "non-finite output"
    err = (got - expected).abs()
    assert bool((err <= tol + tol * expected.abs()).all()), f"max error {float(err.max()):.3g}"


def _lse_close(got: torch.Tensor, expected: torch.Tensor, atol: float = 1e-3) -> None:
    """-inf exactly where the reference has it; elsewhere within `atol` (the LSE is summed in float32 from logits of
    16-bit inputs, exact products: errors ~1e-6)."""
    empty = torch.isinf(expected)
    assert torch.equal(torch.isneginf(got), empty), "-inf rows differ"
    err = (got.double() - expected.double())[~empty].abs()
    assert bool((err <= atol).all()), f"max LSE error {float(err.max()):.3g}"


@pytest.mark.parametrize("case_id", ["gqa-4", "custom-mask", "logit-cap-huge", "sinks", "mla-576-512"])
def test_the_reference_scales_equal_scaled_cache_buffers(case_id):
    """k_scale / v_scale are the dequantization of the cache: the same as attending with the scaled buffers."""
    args = make_inputs(TASK.case(case_id), 3)
    scaled = {**args, "k_buffer": args["k_buffer"].double() * 0.37, "v_buffer": args["v_buffer"].double() * 1.9}
    if TASK.case(case_id).params["mla"]:  # V is K's first columns: one buffer, so only v_scale = k_scale can apply
        scaled["v_buffer"] = scaled["k_buffer"][..., : args["v_buffer"].shape[2]]
        expected = _ref(scaled)
        _close(_ref(args, k_scale=0.37, v_scale=0.37), expected, 1e-9)
        return
    _close(_ref(args, k_scale=0.37, v_scale=1.9), _ref(scaled), 1e-9)


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("case_id", ["kv-scales", "custom-mask", "logit-cap-huge", "sinks", "mla-576-512",
                                     "sliding-window"])
@pytest.mark.slow
def test_kv_scales_scale_the_prefix_stage_only(impl, case_id, device):
    args = make_inputs(TASK.case(case_id), 4, device)
    args.update(k_scale=0.45, v_scale=2.3)
    expected = _ref(args, k_scale=0.45, v_scale=2.3)
    IMPLS[impl](**args)
    _close(args["o_extend"], expected)


def _lanes(case_ids: list[str]) -> list:
    """(case_id, impl) pairs; GQA-4 through the split family configurations (over ~1.5 s each on a quiet 2-core
    machine under the interpreter) runs in the full suite only."""
    return [pytest.param(c, i, id=f"{c}-{i}", marks=[pytest.mark.slow] if (c, i) in SLOW else [])
            for i in sorted(IMPLS) for c in case_ids]


SLOW = {("gqa-4", "split3-pack"), ("gqa-4", "tma-pregather-split2")}


@pytest.mark.parametrize("case_id, impl", _lanes(["gqa-4", "sinks", "custom-mask", "zero-lengths", "window-and-mask"]))
def test_lse_extend_is_the_natural_log_denominator(impl, case_id, device):
    args = make_inputs(TASK.case(case_id), 5, device)
    lse = torch.full(args["o_extend"].shape[:2], 123.0, dtype=torch.float32, device=device)
    expected_out, expected_lse = _ref(args, return_lse=True)
    IMPLS[impl](**args, lse_extend=lse)
    _close(args["o_extend"], expected_out)
    _lse_close(lse, expected_lse)


@pytest.mark.parametrize("case_id, impl", _lanes(["gqa-4", "zero-lengths", "kv-scales"]))
def test_the_dcp_split_merged_by_lse_is_the_whole_attention(impl, case_id, device):
    """SGLang's DCP backend: the prefix alone (skip_extend, k_extend = k[:0]) and the extend alone (skip_prefix,
    empty prefix buffers), each with its LSE, merged as triton_backend.py merges them."""
    case = TASK.case(case_id)
    args = make_inputs(case, 6, device)
    full = _ref(args, k_scale=args["k_scale"], v_scale=args["v_scale"])
    tokens, heads = args["o_extend"].shape[:2]
    o_pre = torch.zeros(args["o_extend"].shape, dtype=torch.float32, device=device)
    o_ext = torch.zeros_like(o_pre)
    lse_pre = torch.full((tokens, heads), float("-inf"), device=device)
    lse_ext = torch.full_like(lse_pre, float("-inf"))
    pre_args = {**args, "k_extend": args["k_extend"][:0], "v_extend": args["v_extend"][:0], "o_extend": o_pre,
                "is_causal": False}
    IMPLS[impl](**pre_args, lse_extend=lse_pre, skip_extend=True)
    empty = torch.zeros_like(args["kv_indptr"])
    ext_args = {**args, "k_buffer": args["k_buffer"][:0], "v_buffer": args["v_buffer"][:0], "kv_indptr": empty,
                "kv_indices": args["kv_indices"][:0], "o_extend": o_ext}
    IMPLS[impl](**ext_args, lse_extend=lse_ext, skip_prefix=True)
    lse = torch.logaddexp(lse_pre, lse_ext)
    w_pre = torch.exp(lse_pre - lse).nan_to_num(0.0, 0.0, 0.0)[..., None]
    w_ext = torch.exp(lse_ext - lse).nan_to_num(0.0, 0.0, 0.0)[..., None]
    _close(o_pre * w_pre + o_ext * w_ext, full)


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.slow
def test_identity_kv_indices_read_the_buffer_as_the_packed_prefix(impl, device):
    """SGLang's fused-prefix call: the prefix rows packed back to back, kv_indices not read (here: garbage). The
    dense buffer runs on past ΣP into NaN rows."""
    args = make_inputs(TASK.case("gqa-4"), 7, device)
    expected = _ref(args)
    total_p = args["kv_indices"].shape[0]
    pad = torch.full((40, *args["k_buffer"].shape[1:]), float("nan"), dtype=args["k_buffer"].dtype, device=device)
    dense_k = torch.cat([args["k_buffer"][args["kv_indices"]], pad])
    dense_v = torch.cat([args["v_buffer"][args["kv_indices"]], pad])
    garbage = torch.full((total_p,), 10**12, dtype=torch.int64, device=device)
    IMPLS[impl](**{**args, "k_buffer": dense_k, "v_buffer": dense_v, "kv_indices": garbage},
                identity_kv_indices=True)
    _close(args["o_extend"], expected)


@pytest.mark.parametrize("impl", ["baseline", "tuned"])
def test_page_size_keeps_the_slot_addressing_and_extend_seq_lens_cpu_is_a_hint(impl, device):
    args = make_inputs(TASK.case("gqa-4"), 8, device)
    IMPLS[impl](**args)
    first = args["o_extend"].clone()
    lens = (args["qo_indptr"][1:] - args["qo_indptr"][:-1]).tolist()
    IMPLS[impl](**args, page_size=16, extend_seq_lens_cpu=lens)
    assert torch.equal(args["o_extend"], first)


@pytest.mark.parametrize("impl", ["baseline", "tuned"])
def test_a_positional_call_as_sglangs_tests_make_it(impl, device):
    """``extend_attention_fwd(q, k, v, o, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, True,
    mask_indptr, max_len_extend, 1.0, 1.0)``: the two numbers are k_scale and v_scale, not sm_scale and logit_cap."""
    args = make_inputs(TASK.case("gqa-4"), 9, device)
    names = ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr",
             "kv_indices", "custom_mask", "is_causal", "mask_indptr", "max_len_extend")
    IMPLS[impl](*(args[n] for n in names), 1.0, 1.0)
    _close(args["o_extend"], _ref(args))


@pytest.mark.parametrize("fn", [baseline.extend_attention_fwd, extend_attention_fwd])
@pytest.mark.parametrize("arg, value, error, message", [
    ("page_size", 0, ValueError, "page_size"),
    ("k_scale", torch.ones(1), ValueError, "k_scale"),
    ("extend_seq_lens_cpu", [1, 2, 3], ValueError, "extend_seq_lens_cpu"),
    ("lse_extend", torch.zeros(2, 2), ValueError, "lse_extend"),
    ("score_mod", lambda *a: a[0], NotImplementedError, "score_mod"),
    ("aux_tensors", [torch.zeros(1)], NotImplementedError, "aux_tensors"),
])
def test_bad_or_unsupported_sglang_arguments_name_themselves(fn, arg, value, error, message, device):
    args = make_inputs(TASK.case("shorter-than-tile"), 0, device)
    args[arg] = value
    with pytest.raises(error, match=message):
        fn(**args)


def _with_mask_offsets(args: dict, offsets: list[int]) -> tuple[dict, torch.Tensor]:
    """`args` with each sequence's custom mask widened by offsets[b] leading columns of random bits, as SGLang lays
    out a mask with window_kv_offsets, and those offsets as a tensor."""
    gen = torch.Generator().manual_seed(11)
    qo, kv, ptr = args["qo_indptr"].tolist(), args["kv_indptr"].tolist(), args["mask_indptr"].tolist()
    parts, new_ptr = [], [0]
    for b, off in enumerate(offsets):
        e, keys = qo[b + 1] - qo[b], kv[b + 1] - kv[b] + qo[b + 1] - qo[b]
        rows = args["custom_mask"][ptr[b]:ptr[b] + e * keys].view(e, keys).cpu()
        junk = torch.rand(e, off, generator=gen) < 0.5
        parts.append(torch.cat([junk, rows], 1).flatten())
        new_ptr.append(new_ptr[-1] + parts[-1].numel())
    device = args["custom_mask"].device
    wide = {**args, "custom_mask": torch.cat(parts).to(device),
            "mask_indptr": torch.tensor(new_ptr, dtype=torch.int64, device=device)}
    return wide, torch.tensor(offsets, dtype=torch.int32, device=device)


def test_the_reference_skips_the_offset_columns_of_a_mask():
    args = make_inputs(TASK.case("window-and-mask"), 12)
    wide, offsets = _with_mask_offsets(args, [5, 2])
    _close(_ref(wide, window_kv_offsets=offsets), _ref(args), 1e-12)


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_window_kv_offsets_skip_the_leading_mask_columns(impl, device):
    args = make_inputs(TASK.case("window-and-mask"), 12, device)
    wide, offsets = _with_mask_offsets(args, [5, 2])
    IMPLS[impl](**wide, window_kv_offsets=offsets)
    _close(wide["o_extend"], _ref(args))


@pytest.mark.parametrize("impl", ["baseline", "tuned"])
def test_window_kv_offsets_without_a_mask_and_a_window_are_ignored_as_in_sglang(impl, device):
    args = make_inputs(TASK.case("gqa-4"), 12, device)
    IMPLS[impl](**args, window_kv_offsets=torch.full((2,), 7, dtype=torch.int32, device=device))
    _close(args["o_extend"], _ref(args))
