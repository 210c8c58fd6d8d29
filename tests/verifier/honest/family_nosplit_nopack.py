"""Honest candidate: the project's kernel family at one fixed configuration (one pass, one q head per block,
row blocks in launch order).

A family candidate as a user writes one: import the family, fix a `FamilyConfig`, define the entry point with the
required parameters of SGLang 0.5.23's signature and ``**kwargs`` for the optional ones, and call `run_family`.
"""

from kernels.extend_attention.family import FamilyConfig, run_family

CONFIG = FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=False, heavy_first=False)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, **kwargs):
    """Extend attention into `o_extend` with the family kernel at `CONFIG`."""
    return run_family(CONFIG, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                      kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, **kwargs)
