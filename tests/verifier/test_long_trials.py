"""The covering trials of extend attention (kernels/extend_attention/long_trials.py): every pair of interface
features takes each of its value pairs in some long trial of every plan, each with a long prefix and a long
extend, at interpreter-friendly sizes on the CPU."""

from __future__ import annotations

import itertools
import random

import pytest

from kernels.covering import covering_rows
from kernels.extend_attention.long_trials import (
    COVERING_PREFIX_KEYS,
    EXTEND_TOKENS,
    FEATURES,
    WINDOW,
    complementary_pair,
    covering_trials,
    features,
)


@pytest.mark.parametrize("k", [1, 2, 3, 10, 11, 14, 15, 16, 35])
def test_covering_rows_cover_every_pair_of_columns(k):
    rows = covering_rows(k)
    assert all(len(r) == k for r in rows)
    for i, j in itertools.combinations(range(k), 2):
        assert {(r[i], r[j]) for r in rows} == set(itertools.product((False, True), repeat=2)), (k, i, j)
    assert len(covering_rows(15)) == 7 and len(covering_rows(10)) == 6 and len(covering_rows(16)) == 8


def test_covering_rows_refuse_no_columns():
    with pytest.raises(ValueError, match="at least one column"):
        covering_rows(0)


#: What each feature's rare value looks like in a case's params.
RARE = {
    "non-causal": lambda p: not p["is_causal"], "custom mask": lambda p: p["custom_mask"],
    "mask over prefix": lambda p: not p["skip_prefix_custom_mask"],
    "split head_dim_v": lambda p: p["head_dim_v"] != p["head_dim"], "float32": lambda p: p["dtype"] == "float32",
    "float16": lambda p: p["dtype"] == "float16", "wide heads": lambda p: p["head_dim"] > 32,
    "sm_scale passed": lambda p: p["sm_scale"] is not None,
    "kv scales": lambda p: p["k_scale"] != 1.0 and p["v_scale"] != 1.0,
    "gqa": lambda p: p["num_q_heads"] > p["num_kv_heads"], "logit cap": lambda p: p["logit_cap"] > 0,
    "sliding window": lambda p: p["sliding_window"] > 0, "sinks": lambda p: p["sinks"],
    "later sequence": lambda p: p["prefix_lens"].index(max(p["prefix_lens"])) > 0,
    "slack": lambda p: p["max_len_extend_slack"] > 0, "index tail": lambda p: p["kv_indices_tail"] > 0,
}


@pytest.mark.parametrize("small", [True, False], ids=["interpreter-sizes", "device-sizes"])
def test_every_pair_of_feature_values_meets_a_long_prefix_and_a_long_extend(small):
    assert set(RARE) == set(FEATURES)
    for seed in range(5):
        trials = covering_trials(random.Random(seed), small)
        assert len(trials) == 9 and all(label.startswith("long prefix and extend") for label, _ in trials)
        params = [case.params for _, case in trials]
        for p in params:
            assert COVERING_PREFIX_KEYS[small][0] <= max(p["prefix_lens"]) <= COVERING_PREFIX_KEYS[small][1]
            assert max(p["extend_lens"]) >= EXTEND_TOKENS[small][0] > 128
            if small:
                assert p["num_kv_heads"] == 1 and p["num_q_heads"] <= 2 and p["dtype"] in ("float16", "float32")
            if p["sliding_window"] > 0:  # wider than a cut: half the long prefix or more stays visible
                assert p["sliding_window"] >= max(p["prefix_lens"]) // 2
        for a, b in itertools.combinations(features(small), 2):
            seen = {(RARE[a](p), RARE[b](p)) for p in params}
            assert seen == set(itertools.product((False, True), repeat=2)), (seed, a, b, seen)
            # a cut that steps aside for a sliding window still meets both values of the pair with no window
            seen = {(RARE[a](p), RARE[b](p)) for p in params if p["sliding_window"] <= 0}
            if WINDOW not in (a, b):
                assert seen == set(itertools.product((False, True), repeat=2)), (seed, a, b, seen)


def test_a_gpu_plan_leaves_the_cpu_only_features_to_its_own_trials():
    assert "float32" not in features(False) and "wide heads" not in features(False) and "float16" in features(False)
    assert "float16" not in features(True)


@pytest.mark.parametrize("small", [True, False], ids=["interpreter-sizes", "device-sizes"])
def test_the_drawn_long_trial_never_narrows_its_prefix_with_a_window(small):
    from kernels.extend_attention.long_trials import DRAWN_PREFIX_KEYS, drawn_long_case

    for seed in range(40):
        p = drawn_long_case(random.Random(seed), small).params
        assert p["sliding_window"] <= 0 and DRAWN_PREFIX_KEYS[small][0] <= max(p["prefix_lens"])


def test_the_gpu_float32_pair_flips_every_feature_and_keeps_its_prefix_whole():
    names = [f for f in features(False) if f not in (WINDOW, "float16")]
    for seed in range(20):
        (_, a), (_, b) = complementary_pair(random.Random(seed), "float32", 64, (4500, 9000))
        for p in (a.params, b.params):
            assert p["dtype"] == "float32" and p["head_dim"] == 64 and p["sliding_window"] <= 0
            assert 4500 <= max(p["prefix_lens"]) <= 9000 and max(p["extend_lens"]) >= EXTEND_TOKENS[False][0]
        for name in names:  # a cut keyed on float32 and either value of any one feature meets one of the two
            assert RARE[name](a.params) != RARE[name](b.params), (seed, name)
