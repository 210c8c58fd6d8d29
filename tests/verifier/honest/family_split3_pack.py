"""Honest candidate: the project's kernel family at one fixed configuration (split-KV over the prefix into 3
partials merged by LSE, the G q heads of a KV head packed into one block).

A family candidate as a user writes one: import the family, fix a `FamilyConfig`, define the entry point with
SGLang 0.5.23's signature up to ``sinks`` (the optional tail it does not support left out) and call `run_family`.
"""

from kernels.extend_attention.family import FamilyConfig, run_family

CONFIG = FamilyConfig(block_m=16, block_n=16, num_warps=4, num_stages=2, num_splits=3, pack_gqa=True)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None):
    """Extend attention into `o_extend` with the family kernel at `CONFIG`."""
    return run_family(CONFIG, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                      kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                      sm_scale=sm_scale, logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
                      sliding_window_size=sliding_window_size, sinks=sinks)
