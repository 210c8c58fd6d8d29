"""The optimized entry point: picks a `FamilyConfig` from the chip limits and the call's metadata.

The rules are written over quantities of the call (rows per sequence after GQA packing, head dims) and of the
chip (compute units, shared memory per block), never over benchmark case names; the numbers in them come from
H200 sweeps recorded in BENCHMARKS.md, 'Kernel sweeps' (benchmarks/sweep_extend_attention.py).

The chip limits are the process's (`kernels.chip.set_chip_limits` / `kernels.chip.chip_limits`), set by the
caller from the chip's profile: the verifier, ``chiplore bench`` and the benchmarks do; a code base that uses this
entry point as a drop-in sets them once before the first call. The signature stays SGLang's.
"""

from __future__ import annotations

from dataclasses import replace

from kernels.chip import ChipLimits, current_chip_limits
from kernels.extend_attention.common import Problem, check_inputs
from kernels.extend_attention.family import (
    AHEAD_DERIVED,
    FamilyConfig,
    auto_splits,
    extend_hint,
    resolve_call,
    run_family,
)
from kernels.extend_attention.mla_gluon import MLA_ROUTE
from kernels.extend_attention.prepared import ReplayCache, scalar_key, tensor_key
from kernels.extend_attention.splits import compute_bound
from kernels.extend_attention.workspace import is_pooled
from kernels.launch import Recording, current_device_and_stream


def class_config(prob: Problem) -> FamilyConfig:
    """The tuned configuration of a call's class, with the call-dependent knobs at their derived values
    (``num_splits=0``, ``gather_ahead=AHEAD_DERIVED``, ``ragged_tiles``; `family.resolve_call`): a function of the
    rows per sequence after GQA packing and the head dims only, so one configuration serves every call of a
    dispatch class whose calls take the same branch below (`run_family` fits the tiles to the chip).
    `choose_config` documents the rules."""
    rows_per_seq = max(1, prob.total_extend // max(1, prob.batch)) * prob.group
    big_d = prob.head_dim + prob.head_dim_v
    if not compute_bound(rows_per_seq):  # decode, speculative verify
        block_m = max(16, min(64, 1 << (rows_per_seq - 1).bit_length()))
        return FamilyConfig(block_m=block_m, block_n=128 if big_d <= 256 else 32, num_warps=4,
                            num_stages=2, num_splits=0, pack_gqa=True)
    if big_d > 512:  # MLA-like 576/512: the dedicated kernel where V is a view of K (run_family checks)
        return FamilyConfig(block_m=64, block_n=64, num_warps=8, num_stages=2, num_splits=0, pack_gqa=True,
                            gather_stages=3, pregather=True, tma=True, mla=MLA_ROUTE)
    if big_d > 256:  # 256/256, 192/128
        return FamilyConfig(block_m=64, block_n=64, num_warps=4, num_stages=3, num_splits=1, pack_gqa=False,
                            pregather=True, tma=True)
    if big_d <= 128:  # D <= 64: two 4-warp programs per SM
        return FamilyConfig(block_m=64, block_n=64, num_warps=4, num_stages=3, num_splits=0, pack_gqa=False,
                            pregather=True, tma=True)
    return FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=0, pack_gqa=True,
                        pregather=True, tma=True, gather_ahead=AHEAD_DERIVED, ahead_heads=1, ahead_sync=True,
                        ragged_tiles=64)


def choose_config(prob: Problem, limits: ChipLimits, max_len_extend: int | None = None) -> FamilyConfig:
    """Family configuration for a call with sizes `prob` on a chip with `limits`: `class_config` resolved for the
    call (`family.resolve_call`, `max_len_extend` the caller's bound of the longest extend), and for a
    compute-bound call of D_qk + D_v <= 256 the split count of `family.auto_splits`.

    - Memory-bound (at most `splits.COMPUTE_BOUND_ROWS` query rows per sequence after GQA packing: decode,
      speculative verify): pack the G q heads of a KV head into one block so each K/V tile is read once, a small
      BLOCK_M, two stages, BLOCK_N 128, split-KV by the family's rule (``num_splits=0``, `splits.split_factor`).
    - Compute-bound (prefill, chunked prefill): the prefix is gathered once into contiguous order (`pregather`) so
      that, like the extend part, it is loaded through TMA tensor descriptors (`tma`). One sequence or a uniform
      batch: 128-row blocks, 8 warps, 3 stages, split-KV by `splits.split_factor` (at most 2 when compute-bound).
      A ragged batch (`max_len_extend`, the caller's host-side bound, over twice the mean extend length; used only
      as a hint, never for correctness; ``ragged_tiles=64``) and D <= 64: 64x64 tiles, 4 warps, two programs per
      SM (113 KB of shared memory, <= 255 registers x 128 threads), so one program's softmax runs while the
      other's dots do, and a short sequence pads at most 63 rows; D > 128: 64x64, 4 warps, one split.
    - MLA-like 576/512, many rows: the dedicated MLA kernel where V is a view of K (`mla.py`: on Hopper the
      Gluon kernel `mla_gluon.MLA_ROUTE` (``"gluon_ahead_rope_split"``: next scores issued ahead, P in the
      rope slot, P . V in two halves), elsewhere the Triton one; 64 x 64 tiles,
      pre-gathered prefix through TMA; the warp-specialized ``"gluon_ws"`` faults on the H200 and is not used),
      else 64-row tiles with the gather pipelined by the loop. Source: BENCHMARKS.md, 'MLA path' (H200: the Gluon
      kernel 1280 us (47.6 % of the floor) against 1472 us for the eager ``"gluon"`` kernel, 2436 us for the best
      Triton tiles and 2782 us for the generic family;
      benchmarks/sweep_mla.py compares the Gluon variants of `mla_gluon.GLUON_IMPLS` with it).
    One sequence or a uniform batch of several KV heads with a wave of programs per head: gather-ahead
    (``gather_ahead=AHEAD_DERIVED``, `family_ahead.gather_ahead_rows`; one head ahead, ordered by tickets): only
    KV head 0's prefix is copied first, the rest by the attention programs.
    `run_family` fits any of these to the chip's shared memory and uses descriptors only where `tma_plan` allows.
    Source: BENCHMARKS.md, 'Kernel sweeps' (H200, bf16): chunked prefill 3399 -> 2164 us with pre-gather + TMA,
    large heads 1760 -> 1270 us with 64x64 / 4 warps, ragged 1236 -> 1164 us and small heads 605 -> 572 us with
    64x64 / 4 warps; the uniform mixed batch, one-sequence prefill and chunked prefill are faster with 128x128:
    661 / 1182 / 2054 us against 666 / 1309 / 2122 us.
    """
    config = resolve_call(class_config(prob), prob, limits, max_len_extend)
    rows_per_seq = max(1, prob.total_extend // max(1, prob.batch)) * prob.group
    if compute_bound(rows_per_seq) and prob.head_dim + prob.head_dim_v <= 256:
        config = replace(config, num_splits=auto_splits(config, prob, limits))
    return config


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1, lse_extend=None, skip_prefix=False, skip_extend=False, page_size=1, score_mod=None,
    aux_tensors=None, extend_seq_lens_cpu=None, identity_kv_indices=False,
):
    """Optimized extend attention; SGLang 0.5.23's signature, semantics and errors as the baseline
    (`kernels.extend_attention.baseline.extend_attention_fwd`). Writes ``o_extend`` in place and returns it.

    Shapes: q_extend [ΣE, H_q, D_qk], k_extend/v_extend [ΣE, H_kv, D_qk/D_v], o_extend [ΣE, H_q, D_v],
    k_buffer/v_buffer [slots, H_kv, D_qk/D_v], qo_indptr/kv_indptr [B + 1], kv_indices [>= ΣP],
    lse_extend None or [ΣE, H_q]. k_scale / v_scale: host floats (prefix logits / prefix P.V). The configuration
    rules read ``max(extend_seq_lens_cpu)`` when given (SGLang's host list of E_b), else `max_len_extend`, as the
    hint of the longest extend; neither bounds the rows computed.

    The chip's limits are the process's (`kernels.chip.current_chip_limits`, see the module docstring). The first
    call of a signature (`call_key`: metadata, scalars, hint, limits, device, stream) checks, chooses and launches;
    the second does so inside a `kernels.launch.Recording`; later calls of that signature replay its launches
    (`prepared`), with no check, rule or allocation run again. No path copies a device value to the host.

    Raises:
        ValueError: inconsistent shapes, dtypes or devices. NotImplementedError: unsupported argument set.
        kernels.chip.ChipLimitsUnset: no chip limits set for the process.
    """
    tensors = (q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
               custom_mask, mask_indptr, sinks, window_kv_offsets, lse_extend)
    limits = current_chip_limits()
    bound = length_hint(extend_seq_lens_cpu, max_len_extend)
    key = None
    if xai_temperature_len == -1 and score_mod is None and aux_tensors is None:  # else: refused below
        key = call_key(tensors, (is_causal, sm_scale, logit_cap, skip_prefix_custom_mask, sliding_window_size,
                                 k_scale, v_scale, skip_prefix, skip_extend, page_size, identity_kv_indices, bound,
                                 None if extend_seq_lens_cpu is None else len(extend_seq_lens_cpu)), limits)
    if key is not None:
        device, stream = current_device_and_stream(q_extend.device.type)
        key = (device, stream, *key)
        replay = _REPLAYS.get(key)
        if replay is not None:
            replay(tensors, device, stream)
            return o_extend
    if key is not None and _REPLAYS.should_record(key):
        with Recording(tensors, is_pooled) as recording:
            _run(tensors, limits, bound, is_causal, max_len_extend, k_scale, v_scale, sm_scale, logit_cap,
                 skip_prefix_custom_mask, sliding_window_size, xai_temperature_len, skip_prefix, skip_extend,
                 page_size, score_mod, aux_tensors, extend_seq_lens_cpu, identity_kv_indices)
        replay = recording.replay()
        if replay is not None:
            _REPLAYS.put(key, limits, replay)
        else:
            _REPLAYS.refused(key)
    else:
        _run(tensors, limits, bound, is_causal, max_len_extend, k_scale, v_scale, sm_scale, logit_cap,
             skip_prefix_custom_mask, sliding_window_size, xai_temperature_len, skip_prefix, skip_extend, page_size,
             score_mod, aux_tensors, extend_seq_lens_cpu, identity_kv_indices)
    return o_extend


def _run(tensors: tuple, limits: ChipLimits, bound: int | None, is_causal, max_len_extend, k_scale, v_scale, sm_scale,
         logit_cap, skip_prefix_custom_mask, sliding_window_size, xai_temperature_len, skip_prefix, skip_extend,
         page_size, score_mod, aux_tensors, extend_seq_lens_cpu, identity_kv_indices) -> None:
    """The full host path of `extend_attention_fwd`: check, choose the configuration, `run_family`."""
    (q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
     mask_indptr, sinks, window_kv_offsets, lse_extend) = tensors
    prob = check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, mask_indptr, sinks, skip_extend, lse_extend, page_size,
                        extend_seq_lens_cpu)
    run_family(
        choose_config(prob, limits, bound), q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer,
        qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
        sm_scale=sm_scale, logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
        sliding_window_size=sliding_window_size, sinks=sinks, window_kv_offsets=window_kv_offsets,
        xai_temperature_len=xai_temperature_len, lse_extend=lse_extend, skip_prefix=skip_prefix,
        skip_extend=skip_extend, page_size=page_size, score_mod=score_mod, aux_tensors=aux_tensors,
        extend_seq_lens_cpu=extend_seq_lens_cpu, identity_kv_indices=identity_kv_indices, limits=limits,
    )


def length_hint(extend_seq_lens_cpu, max_len_extend) -> int | None:
    """The configuration rules' hint of the longest extend (`family.extend_hint`): ``max(extend_seq_lens_cpu)``
    (SGLang's host list of E_b) when given and non-empty, else ``int(max_len_extend)`` (a host int), else None.
    Never bounds the rows computed."""
    return extend_hint(max_len_extend, extend_seq_lens_cpu)


def call_key(tensors: tuple, scalars: tuple, limits: ChipLimits) -> tuple | None:
    """Signature of a call (`prepared` module docstring) without device and stream, or None when it is not cached
    (an argument neither a tensor nor None where a tensor goes, or one tensor passed twice). `tensors` in the order
    of `extend_attention_fwd`'s tensor arguments (q_extend first, k/v extend at 1/2, k/v buffers at 4/5)."""
    per_tensor = tensor_key(tensors)
    k_ext, v_ext, k_buf, v_buf = tensors[1], tensors[2], tensors[4], tensors[5]
    if per_tensor is None or k_ext is None or v_ext is None or k_buf is None or v_buf is None:
        return None
    views = (k_ext.data_ptr() == v_ext.data_ptr(), k_buf.data_ptr() == v_buf.data_ptr())
    return (id(limits), views, scalar_key(scalars), per_tensor)


#: Replays of the tuned entry point per call signature (`call_key` with device and stream).
_REPLAYS = ReplayCache()
