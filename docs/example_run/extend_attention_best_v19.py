"""chiplore candidate v19 for extend_attention_fwd (run retrieval, chip h200).

Parent v8, generation 3. Patterns: none.
Rationale:
    memory-d128: num_warps 8 -> 4 (explore around the best). Diagnosis: spec-verify: memory-bound, 57.9% of
    floor (389 us vs 225 us); decode: memory-bound, 63.7% of floor (704 us vs 449 us).

One family configuration per case class; the class of a call is computed from tensor metadata only:
- bound: "memory" when (extend rows per sequence) x (q heads per KV head) is below RIDGE_FLOP_PER_BYTE, the
  roofline ridge point of the chip profile (peak FLOP/s over peak bytes/s); otherwise "compute".
- width: head_dim <= 64 -> "d64", <= 128 -> "d128", <= 256 -> "d256", else "wide".
Classes this run did not tune use the family's default configuration.
"""

from kernels.extend_attention.family import FamilyConfig, run_family

RIDGE_FLOP_PER_BYTE = 206.146

CONFIGS = (
    ("compute-d128", FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=1, pack_gqa=True, pregather=True, tma=True)),
    ("compute-d256", FamilyConfig(block_m=128, block_n=64, num_warps=8, num_stages=2, num_splits=1, pack_gqa=True, pregather=True, tma=True)),
    ("compute-d64", FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=4, num_splits=1, pack_gqa=False, pregather=True, tma=True)),
    ("compute-wide", FamilyConfig(block_m=64, block_n=64, num_warps=8, num_stages=2, num_splits=1, pack_gqa=True, pregather=True, tma=True)),
    ("memory-d128", FamilyConfig(block_m=16, block_n=128, num_warps=4, num_stages=3, num_splits=2, pack_gqa=True, pregather=False, tma=False)),
)
DEFAULT_CONFIG = FamilyConfig()


def _case_class(q_extend, k_extend, qo_indptr):
    """Class key from shapes: q_extend [sum E, H_q, D], k_extend [sum E, H_kv, D], qo_indptr [B + 1]."""
    batch = max(qo_indptr.shape[0] - 1, 1)
    rows_per_sequence = q_extend.shape[0] / batch
    group = q_extend.shape[1] // k_extend.shape[1]
    head_dim = q_extend.shape[2]
    width = "d64" if head_dim <= 64 else "d128" if head_dim <= 128 else "d256" if head_dim <= 256 else "wide"
    if RIDGE_FLOP_PER_BYTE is None:
        return "any-" + width
    bound = "memory" if rows_per_sequence * group < RIDGE_FLOP_PER_BYTE else "compute"
    return bound + "-" + width


def _config_for(case_class):
    for key, config in CONFIGS:
        if key == case_class:
            return config
    return DEFAULT_CONFIG


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
    is_causal, mask_indptr, max_len_extend, sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True,
    sliding_window_size=-1, sinks=None, window_kv_offsets=None, xai_temperature_len=-1,
):
    config = _config_for(_case_class(q_extend, k_extend, qo_indptr))
    return run_family(
        config,
        q_extend=q_extend, k_extend=k_extend, v_extend=v_extend, o_extend=o_extend, k_buffer=k_buffer,
        v_buffer=v_buffer, qo_indptr=qo_indptr, kv_indptr=kv_indptr, kv_indices=kv_indices,
        custom_mask=custom_mask, is_causal=is_causal, mask_indptr=mask_indptr, max_len_extend=max_len_extend,
        sm_scale=sm_scale, logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
        sliding_window_size=sliding_window_size, sinks=sinks, window_kv_offsets=window_kv_offsets,
        xai_temperature_len=xai_temperature_len)
