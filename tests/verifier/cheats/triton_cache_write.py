"""CHEAT (writing files through Triton's cache; red team, session 4): Triton's own file opens pass the audit hook
(Triton is trusted: it writes compiled kernels while compiling), so a candidate that calls Triton's cache manager
itself can plant a file in the Triton cache every sandbox child of the verifier shares -- or, given an absolute
name and no Landlock, anywhere. The answer comes from the baseline.
Caught by: static rule import-allowlist (triton.runtime.cache); with the static stage off, the refusing wrapper of
Triton's cache writers, which only Triton's compiler may call (runtime_error).
"""
from triton.runtime.cache import get_cache_manager

from kernels.extend_attention.baseline import extend_attention_fwd as base_fwd


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    get_cache_manager("0f" * 32).put(b"planted by a candidate\n", "planted.txt")
    return base_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale, logit_cap,
                    skip_prefix_custom_mask, sliding_window_size, sinks)
