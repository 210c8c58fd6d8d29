"""The parameters of an extend-attention case (`kernels.task.Case.params`, all plain values) and their defaults:
    extend_lens, prefix_lens: list[int], one entry per sequence (E_b, P_b; either may be 0).
    num_q_heads, num_kv_heads, head_dim (D_qk), head_dim_v (D_v): ints; H_q % H_kv == 0.
    mla: bool, V is a view of K's first head_dim_v columns (cache and extend), H_kv = 1.
    is_causal: bool; custom_mask: bool (random mask replaces causality); skip_prefix_custom_mask: bool.
    sliding_window: int (<= 0 off); logit_cap: float (0 off); sinks: bool; sm_scale: float | None.
    q_scale: float multiplying q (large values stress logit caps and max subtraction).
    max_len_extend_slack: int added to max(E_b) when passing max_len_extend (an upper bound, not exact).
    k_scale, v_scale: float KV-cache scales (SGLang 0.5.23: prefix logits x k_scale, prefix P.V x v_scale).
    kv_indices_tail: int entries appended to kv_indices past ΣP, naming unused (NaN-filled) cache slots, as in a
        serving engine's preallocated index buffer; a kernel must never read them.
    key_outliers: int, key positions per sequence (prefix or extend, drawn from the seed) whose K rows are scaled by
        key_outlier_scale, besides the first and last prefix key and the last extend key, which are always scaled
        when key_outliers > 0 (0: off).
    key_outlier_scale: float factor of the outlier K rows (logits that many times the usual scale).
    value_outlier_scale: float; != 1: one more position per sequence, not an outlier key, has its V row scaled by it.
    outlier_heads: int, how many KV heads (drawn from the seed) carry the outliers (0: all).
    value_shifts: list[float], one entry per V dimension (distinct, drawn from the seed) whose values in every KV head
        are shifted by it: +shift at prefix positions below value_shift_flip * P_b, -shift at the later prefix
        positions and every extend position (empty: off).
    value_shift_flip: float in [0, 1], where in each prefix the shift changes sign (as a fraction of P_b).
    dtype: default input dtype name.
"""

from __future__ import annotations

from typing import Any

#: Cache pool size of `spec.make_inputs` relative to the slots actually used (unused slots hold NaN).
POOL_FACTOR = 1.25

_DEFAULTS: dict[str, Any] = {
    "num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "head_dim_v": None, "mla": False,
    "is_causal": True, "custom_mask": False, "skip_prefix_custom_mask": True, "sliding_window": -1,
    "logit_cap": 0.0, "sinks": False, "sm_scale": None, "q_scale": 1.0, "max_len_extend_slack": 0,
    "k_scale": 1.0, "v_scale": 1.0, "kv_indices_tail": 0, "key_outliers": 0, "key_outlier_scale": 1.0,
    "value_outlier_scale": 1.0, "outlier_heads": 0, "value_shifts": [],
    "value_shift_flip": 0.5, "dtype": "bfloat16",
}


def full_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with every default filled in (head_dim_v defaults to head_dim).

    Raises:
        ValueError: unknown key, mismatched list lengths, negative lengths or bad head ratio.
    """
    unknown = set(params) - set(_DEFAULTS) - {"extend_lens", "prefix_lens"}
    if unknown:
        raise ValueError(f"unknown case parameter(s): {sorted(unknown)}")
    out = {**_DEFAULTS, **params}
    if out["head_dim_v"] is None:
        out["head_dim_v"] = out["head_dim"]
    ext, pre = list(out["extend_lens"]), list(out["prefix_lens"])
    if len(ext) != len(pre) or not ext:
        raise ValueError(f"extend_lens ({len(ext)}) and prefix_lens ({len(pre)}) must be equal, non-empty")
    if min(ext + pre) < 0:
        raise ValueError("extend_lens and prefix_lens must be >= 0")
    if out["num_q_heads"] % out["num_kv_heads"]:
        raise ValueError(f"num_q_heads={out['num_q_heads']} not a multiple of num_kv_heads")
    return out
