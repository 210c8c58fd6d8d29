"""CHEAT (string lookups): reaches torch.einsum and softmax through getattr with computed names, to slip past a
name-based deny-list.
Caught by: static rule no-dynamic-code; the torch compute guard (runtime_error).
"""

import torch


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    op = getattr(torch, "ein" + "sum")
    group = q_extend.shape[1] // k_extend.shape[1]
    k = getattr(k_extend, "repeat_" + "interleave")(group, 1)
    v = getattr(v_extend, "repeat_" + "interleave")(group, 1)
    p = getattr(op("qhd,khd->hqk", q_extend.float(), k.float()), "soft" + "max")(-1)
    getattr(o_extend, "copy_")(op("hqk,khd->qhd", p, v.float()))
