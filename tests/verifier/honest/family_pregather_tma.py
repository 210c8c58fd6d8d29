"""Honest candidate: the project's kernel family with the prefix pre-gathered into contiguous order and K/V tiles
loaded through tensor descriptors (TMA) where the chip and the tensors allow it, split-KV over the prefix into 2.

A family candidate file as the agent writes them (docs/ARCHITECTURE.md): import the family, fix a
`FamilyConfig`, define the entry point with the baseline's signature (SGLang 0.5.23's, all of it) and call
`run_family`.
"""

from kernels.extend_attention.family import FamilyConfig, run_family

CONFIG = FamilyConfig(block_m=32, block_n=32, num_warps=4, num_stages=2, num_splits=2, pack_gqa=False, pregather=True,
                     tma=True)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None, window_kv_offsets=None, xai_temperature_len=-1, lse_extend=None,
                         skip_prefix=False, skip_extend=False, page_size=1, score_mod=None, aux_tensors=None,
                         extend_seq_lens_cpu=None, identity_kv_indices=False):
    """Extend attention into `o_extend` with the family kernel at `CONFIG`."""
    return run_family(CONFIG, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                      kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                      sm_scale=sm_scale, logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
                      sliding_window_size=sliding_window_size, sinks=sinks, window_kv_offsets=window_kv_offsets,
                      xai_temperature_len=xai_temperature_len, lse_extend=lse_extend, skip_prefix=skip_prefix,
                      skip_extend=skip_extend, page_size=page_size, score_mod=score_mod, aux_tensors=aux_tensors,
                      extend_seq_lens_cpu=extend_seq_lens_cpu, identity_kv_indices=identity_kv_indices)
