"""Task spec: roofline arithmetic against the reference document and the reference against a naive loop."""

from __future__ import annotations

import math

import pytest
import torch

from kernels.extend_attention.spec import TASK, bytes_moved, flops, make_inputs, reference, visible_pairs
from kernels.task import load_task

# Floors (µs) at 989 TFLOP/s and 4.8 TB/s from shared/reference/extend_attention.md, "Benchmark cases".
DOC_FLOORS_US = {"prefill": 556, "chunked-prefill": 1146, "mixed-batch": 287, "spec-verify": 225, "decode": 449,
                 "ragged": 564, "small-heads": 208, "large-heads": 625, "mla": 609}


@pytest.mark.parametrize("case_id", sorted(DOC_FLOORS_US))
def test_roofline_floor_matches_reference_document(case_id):
    case = TASK.case(case_id)
    floor = max(flops(case) / 989e12, bytes_moved(case) / 4.8e12) * 1e6
    assert floor == pytest.approx(DOC_FLOORS_US[case_id], abs=1.0)


def test_window_pairs_counted_by_brute_force():
    case = TASK.case("sliding-window")
    p = case.params
    total = 0
    for e, pre in zip(p["extend_lens"], p["prefix_lens"]):
        for i in range(e):
            total += sum(1 for j in range(pre + e) if (j < pre or j - pre <= i) and j >= pre + i - p["sliding_window"])
    assert visible_pairs(case) == total


def _naive(args, b, i, h):
    """Output row (sequence b, extend row i, q head h) by a scalar loop over keys (independent of reference())."""
    q = args["q_extend"].double()
    qo, kvp = args["qo_indptr"].tolist(), args["kv_indptr"].tolist()
    group = q.shape[1] // args["k_extend"].shape[1]
    kvh = h // group
    pre = kvp[b + 1] - kvp[b]
    keys, vals = [], []
    for j in range(pre):
        slot = int(args["kv_indices"][kvp[b] + j])
        keys.append(args["k_buffer"][slot, kvh].double())
        vals.append(args["v_buffer"][slot, kvh].double())
    for j in range(i + 1):
        keys.append(args["k_extend"][qo[b] + j, kvh].double())
        vals.append(args["v_extend"][qo[b] + j, kvh].double())
    scale = 1 / math.sqrt(q.shape[2])
    logits = torch.stack([q[qo[b] + i, h] @ k * scale for k in keys])
    w = torch.softmax(logits, 0)
    return sum(wi * v for wi, v in zip(w, vals))


@pytest.mark.parametrize("case_id", ["gqa-7", "zero-lengths"])
def test_reference_matches_naive_loop(case_id):
    case = TASK.case(case_id)
    args = make_inputs(case, 3, "cpu", "float32")
    out = reference(args)["o_extend"]
    qo = args["qo_indptr"].tolist()
    for b in range(len(qo) - 1):
        for i in range(qo[b + 1] - qo[b]):
            for h in (0, args["q_extend"].shape[1] - 1):
                torch.testing.assert_close(out[qo[b] + i, h].double(), _naive(args, b, i, h), atol=1e-5, rtol=1e-5)


def test_inputs_are_deterministic_in_seed_and_poison_unused_slots():
    case = TASK.case("gqa-4")
    a, b, c = make_inputs(case, 1), make_inputs(case, 1), make_inputs(case, 2)
    assert torch.equal(a["q_extend"], b["q_extend"]) and not torch.equal(a["q_extend"], c["q_extend"])
    used = torch.zeros(a["k_buffer"].shape[0], dtype=torch.bool)
    used[a["kv_indices"]] = True
    assert torch.isnan(a["k_buffer"][~used]).all() and not torch.isnan(a["k_buffer"][used]).any()
    assert torch.isnan(a["o_extend"]).all()


def test_unknown_task_and_case_name_the_known_ones():
    with pytest.raises(KeyError, match="extend_attention"):
        load_task("matmul")
    with pytest.raises(KeyError, match="decode"):
        TASK.case("nope")


def test_float32_tolerance_is_ieee_float32_on_the_cpu_and_the_gpu():
    tol = TASK.tolerances["float32"]
    assert TASK.tolerance("float32") == TASK.tolerance("float32", interpreter=True) == tol
    # float16 rounding of float32 inputs (relative 2^-11 = 4.9e-4), and tf32's (the same 10-bit mantissa), are far
    # outside the bound; it is over twice the worst honest IEEE float32 error measured (4.4e-5, spec.py)
    assert 2.0 ** -11 > 4 * tol.rtol
    assert tol.atol == tol.rtol > 2 * 4.4e-5
    assert TASK.tolerance("float16", interpreter=True) == TASK.tolerances["float16"]
    with pytest.raises(KeyError):
        TASK.tolerance("int8")


def test_outlier_case_scales_chosen_key_and_value_rows_in_some_heads_only():
    from kernels.task import Case

    plain = {"extend_lens": [6, 4], "prefix_lens": [9, 0], "num_q_heads": 6, "num_kv_heads": 3, "head_dim": 16,
             "dtype": "float32"}
    outliers = {**plain, "key_outliers": 2, "key_outlier_scale": 32.0, "value_outlier_scale": 48.0,
                "outlier_heads": 2}
    a = make_inputs(Case("plain", TASK.case("gqa-4").params | plain, 7, "edge"))
    b = make_inputs(Case("outliers", TASK.case("gqa-4").params | outliers, 7, "edge"))
    assert torch.equal(a["q_extend"], b["q_extend"]) and torch.equal(a["kv_indices"], b["kv_indices"])
    slots = a["kv_indices"].tolist()
    for name, factor in (("k", 32.0), ("v", 48.0)):
        # rows (prefix positions 0..8 of sequence 0 through kv_indices, then the 10 extend rows) x kv heads
        rows_a = torch.cat([a[f"{name}_buffer"][slots], a[f"{name}_extend"]])
        rows_b = torch.cat([b[f"{name}_buffer"][slots], b[f"{name}_extend"]])
        scaled = ~torch.isclose(rows_a, rows_b).all(-1)
        assert torch.allclose(rows_b[scaled], factor * rows_a[scaled])
        heads = scaled.any(0)
        assert int(heads.sum()) == 2  # two of the three KV heads; the third keeps unit-scale rows
        assert torch.equal(scaled[:, heads].all(1), scaled[:, heads].any(1))  # a position is scaled in both heads
        positions = scaled.any(1).nonzero().flatten().tolist()
        if name == "k":  # sequence 0: prefix keys 0..8, extend 9..14; sequence 1 (no prefix): extend rows 15..18
            assert {0, 8, 14, 18} <= set(positions) and len(positions) <= 4 + 2 * 2
        else:  # one value row per sequence, never at an outlier key
            assert len([i for i in positions if i < 15]) == 1 and len([i for i in positions if i >= 15]) == 1
    key_positions = set((~torch.isclose(torch.cat([a["k_buffer"][slots], a["k_extend"]]),
                                        torch.cat([b["k_buffer"][slots], b["k_extend"]])).all(-1)).any(1)
                        .nonzero().flatten().tolist())
    assert not key_positions & set(positions)


def test_shifted_values_add_the_shift_to_chosen_v_dims_and_flip_its_sign_inside_each_prefix():
    from kernels.task import Case

    plain = {"extend_lens": [3, 2], "prefix_lens": [10, 4], "num_q_heads": 4, "num_kv_heads": 2, "head_dim": 16,
             "dtype": "float32"}
    shifted = {**plain, "value_shifts": [25.0, -40.0], "value_shift_flip": 0.45}
    a = make_inputs(Case("plain", TASK.case("gqa-4").params | plain, 11, "edge"))
    b = make_inputs(Case("shifted", TASK.case("gqa-4").params | shifted, 11, "edge"))
    for name in ("q_extend", "k_extend", "k_buffer", "kv_indices"):
        assert torch.equal(a[name].isnan(), b[name].isnan()) and torch.equal(a[name].nan_to_num(), b[name].nan_to_num())
    slots = a["kv_indices"].tolist()
    diff = torch.cat([b["v_buffer"][slots] - a["v_buffer"][slots], b["v_extend"] - a["v_extend"]])  # [14 + 5, 2, 16]
    dims = diff.abs().amax((0, 1)).nonzero().flatten()
    assert len(dims) == 2
    shift = diff[0, 0, dims]  # the first prefix key: +shift, in the drawn order of the dims
    assert sorted(shift.tolist()) == [-40.0, 25.0]
    # sequence 0: prefix positions 0..3 (< 0.45 * 10) get +shift, 4..9 -shift; sequence 1: 0 (< 0.45 * 4) +shift,
    # 1..3 -shift; every extend row -shift; in both KV heads
    signs = [1.0] * 4 + [-1.0] * 6 + [1.0] + [-1.0] * 3 + [-1.0] * 5
    expected = torch.zeros_like(diff)
    expected[:, :, dims] = torch.tensor(signs)[:, None, None] * shift
    assert torch.allclose(diff, expected, atol=1e-5)
    unused = torch.ones(b["v_buffer"].shape[0], dtype=torch.bool)
    unused[a["kv_indices"]] = False
    assert b["v_buffer"][unused].isnan().all()


@pytest.mark.parametrize("small", [True, False], ids=["interpreter-plan", "device-plan"])
def test_shifted_values_draw_has_a_long_prefix_and_a_few_large_shifts(small):
    import random

    from kernels.extend_attention.cases import (
        SHIFTED_VALUE_PREFIX_KEYS,
        VALUE_SHIFT_DIMS,
        VALUE_SHIFT_FLIP,
        VALUE_SHIFTS,
        shifted_values_case,
    )

    rng = random.Random(5)
    signs = set()
    for _ in range(20):
        p = shifted_values_case(rng, small).params
        assert p["dtype"] == ("float16" if small else "bfloat16") and p["q_scale"] == 1.0
        assert p["sliding_window"] == -1 and not p["custom_mask"] and not p["mla"]
        low, high = SHIFTED_VALUE_PREFIX_KEYS[small]
        assert low <= p["prefix_lens"][0] <= high and p["prefix_lens"][1] == 0
        assert 1 <= p["extend_lens"][1] <= 3 and p["extend_lens"][0] <= (16 if small else 256)
        assert len(p["value_shifts"]) == VALUE_SHIFT_DIMS < p["head_dim_v"]
        assert all(VALUE_SHIFTS[0] <= abs(x) <= VALUE_SHIFTS[1] for x in p["value_shifts"])
        assert VALUE_SHIFT_FLIP[0] <= p["value_shift_flip"] <= VALUE_SHIFT_FLIP[1]
        signs |= {x > 0 for x in p["value_shifts"]}
        if small:
            assert (p["num_q_heads"], p["num_kv_heads"], p["head_dim"]) == (2, 1, 16)
    assert signs == {True, False}


@pytest.mark.parametrize("small", [True, False], ids=["interpreter-plan", "device-plan"])
def test_outlier_keys_draw_keeps_q_at_unit_scale_and_some_kv_heads_plain(small):
    import random

    from kernels.extend_attention.cases import (
        KEY_OUTLIER_SCALES,
        KEY_OUTLIERS,
        VALUE_OUTLIER_SCALES,
        outlier_keys_case,
    )

    rng = random.Random(3)
    for _ in range(20):
        p = outlier_keys_case(rng, small).params
        assert p["dtype"] == ("float16" if small else "bfloat16") and p["q_scale"] == 1.0
        assert p["logit_cap"] == 0.0 and p["sliding_window"] == -1 and not p["custom_mask"] and p["is_causal"]
        assert KEY_OUTLIERS[0] <= p["key_outliers"] <= KEY_OUTLIERS[1]
        assert KEY_OUTLIER_SCALES[0] <= p["key_outlier_scale"] <= KEY_OUTLIER_SCALES[1]
        assert VALUE_OUTLIER_SCALES[0] <= p["value_outlier_scale"] <= VALUE_OUTLIER_SCALES[1]
        assert 1 <= p["outlier_heads"] < p["num_kv_heads"] or p["num_kv_heads"] == p["outlier_heads"] == 1
        assert p["prefix_lens"][0] >= (16 if small else 256) and len(p["extend_lens"]) in (2, 3)
