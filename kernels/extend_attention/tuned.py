"""The optimized entry point: picks a `FamilyConfig` from the chip limits and the call's metadata.

The rules are written over quantities of the call (rows per sequence after GQA packing, head dims) and of the
chip (compute units, shared memory per block), never over benchmark case names; the numbers in them come from
the H200 sweep recorded in BENCHMARKS.md (benchmarks/sweep_extend_attention.py).

The chip limits are the process's (`kernels.chip.set_chip_limits` / `kernels.chip.chip_limits`), set by the
caller from the chip's profile: the verifier, ``chiplore bench`` and the benchmarks do; a code base that uses this
entry point as a drop-in sets them once before the first call. The signature stays SGLang's.
"""

from __future__ import annotations

from kernels.chip import ChipLimits, current_chip_limits
from kernels.extend_attention.common import Problem, check_inputs
from kernels.extend_attention.family import FamilyConfig, run_family


def choose_config(prob: Problem, limits: ChipLimits, max_len_extend: int | None = None) -> FamilyConfig:
    """Family configuration for a call with sizes `prob` on a chip with `limits`.

    - Few rows per sequence (decode, speculative verify): pack the G q heads of a KV head into one block so
      each K/V tile is read once, a small BLOCK_M, deep pipelining, split-KV sized to fill the compute units
      (memory-bound: intensity ≈ G*E FLOP/byte).
    - Many rows (prefill, chunked prefill; compute-bound): the prefix is gathered once into contiguous order
      (`pregather`) so that, like the extend part, it is loaded through TMA tensor descriptors (`tma`).
      One sequence or a uniform batch: 128-row blocks, 8 warps, 3 stages, split-KV over the prefix when the grid
      is small (`prefix_splits`). A ragged batch (`max_len_extend`, the caller's host-side bound, over twice the
      mean extend length; used only as a hint, never for correctness) and D <= 64: 64x64 tiles, 4 warps, two
      programs per SM (113 KB of shared memory, <= 255 registers x 128 threads), so one program's softmax runs
      while the other's dots do, and a short sequence pads at most 63 rows; D > 128: 64x64, 4 warps.
    - MLA-like 576/512, many rows: the dedicated MLA kernel where V is a view of K (`mla.py`: on Hopper the
      Gluon kernel ``mla="gluon"`` with eager rescale, elsewhere the Triton one; 64 x 64 tiles, pre-gathered
      prefix through TMA; the warp-specialized ``"gluon_ws"`` faults on the H200 and is not used), else 64-row tiles with the gather pipelined by the loop. Source: the H200 MLA sweep
      (BENCHMARKS.md "MLA path (issue 20)": the Gluon kernel 1494 us against 2436 us for the best Triton tiles and
      2782 us for the generic family; benchmarks/sweep_mla.py compares the warp-specialized variants with it).
    One sequence or a uniform batch of several KV heads with a wave of programs per head: gather-ahead
    (`gather_ahead_knobs`): only KV head 0's prefix is copied first, the rest by the attention programs.
    `run_family` fits any of these to the chip's shared memory and uses descriptors only where `tma_plan` allows.
    Source of the numbers: H200 sweeps 4 and 7 (2026-11-30, BENCHMARKS.md "H200 GPU session 4" and "session 6";
    e.g. chunked-prefill 3399 -> 2164 us with pre-gather + TMA, large-heads 1760 -> 1270 us with 64x64 / 4 warps,
    ragged 1236 -> 1164 us and small-heads 605 -> 572 us with 64x64 / 4 warps; the uniform mixed batch and
    one-sequence prefill and chunked prefill are faster with 128x128: 661 / 1182 / 2054 us against 666 / 1309 /
    2122 us).
    """
    rows_per_seq = max(1, prob.total_extend // max(1, prob.batch)) * prob.group
    big_d = prob.head_dim + prob.head_dim_v
    if rows_per_seq <= 64:  # memory-bound: decode, speculative verify (sweeps 1-3: BLOCK_N 128, 2 stages)
        block_m = max(16, min(64, 1 << (rows_per_seq - 1).bit_length()))
        return FamilyConfig(block_m=block_m, block_n=128 if big_d <= 256 else 32, num_warps=4,
                            num_stages=2, num_splits=0, pack_gqa=True)
    if big_d > 512:  # MLA-like 576/512: the dedicated kernel where V is a view of K (run_family checks)
        return FamilyConfig(block_m=64, block_n=64, num_warps=8, num_stages=2, num_splits=0, pack_gqa=True,
                            gather_stages=3, pregather=True, tma=True, mla="gluon")
    if big_d > 256:  # 256/256, 192/128
        return FamilyConfig(block_m=64, block_n=64, num_warps=4, num_stages=3, num_splits=1, pack_gqa=False,
                            pregather=True, tma=True)
    ragged = max_len_extend is not None and max_len_extend * prob.batch > 2 * prob.total_extend
    if big_d <= 128 or ragged:  # D <= 64, or a ragged batch: two 4-warp programs per SM
        return FamilyConfig(block_m=64, block_n=64, num_warps=4, num_stages=3,
                            num_splits=prefix_splits(prob, rows_per_seq, 64, limits), pack_gqa=big_d > 128,
                            pregather=True, tma=True)
    splits = prefix_splits(prob, rows_per_seq, 128, limits)
    return FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=splits, pack_gqa=True,
                        pregather=True, tma=True,
                        **gather_ahead_knobs(prob, rows_per_seq, splits, limits, max_len_extend))


#: Gather-ahead rows per 128-key tile measured on the H200 (16: the mixed batch's 4096-key prefix over 8 row
#: blocks); fewer rows per tile leave part of a slice to the copy after the loop, more cost issue slots in it.
AHEAD_ROWS_RANGE = (8, 16)


def gather_ahead_knobs(prob: Problem, rows_per_seq: int, splits: int, limits: ChipLimits,
                       max_len_extend: int | None, block: int = 128) -> dict:
    """Gather-ahead knobs (`family_ahead.py`) for a compute-bound 128x128 call, or {} to keep the whole pre-gather.

    On when the call has a prefix, one split, several KV heads, equal extend lengths (`max_len_extend` x B == ΣE:
    a sequence with fewer row blocks would copy a larger slice, mostly after its loop, and the next head's programs
    of that sequence wait for it; the host-side hint only steers this choice), a slice of its prefix per row block that
    `AHEAD_ROWS_RANGE` rows per key tile copy inside the loop (rows = BLOCK_N / row blocks per sequence), and at least
    0.9 x compute units programs per KV head, so the programs of head h (which wait for head h - 1's copies) start
    about a wave after those of head h - 1. One head ahead, ordered by tickets in one launch.
    Source: H200 session 7 (2026-11-30, BENCHMARKS.md): mixed batch 665 -> 637 us (ticket order; the cost breakdown:
    the one-head pre-gather 22 us against 136 us for all heads, the copy inside the loop ~35-50 us, two heads ahead
    650 us, 32 rows per tile 703 us).
    """
    blocks_per_seq = -(-rows_per_seq // block)
    rows = block // blocks_per_seq if blocks_per_seq else 0
    programs_per_head = prob.batch * blocks_per_seq
    uniform = max_len_extend is not None and max_len_extend * prob.batch == prob.total_extend
    if (not uniform or prob.total_prefix == 0 or splits != 1 or prob.num_kv_heads < 2
            or block % max(1, blocks_per_seq)
            or not AHEAD_ROWS_RANGE[0] <= rows <= AHEAD_ROWS_RANGE[1]
            or programs_per_head * 10 < 9 * limits.num_compute_units):
        return {}
    return {"gather_ahead": rows, "ahead_heads": 1, "ahead_sync": True}


#: Fewer programs than this many per compute unit leave the chip under-filled in the tail of a compute-bound
#: launch (one 128x128 / 8-warp program per SM on the H200).
SPLIT_BELOW_PROGRAMS_PER_UNIT = 4


def prefix_splits(prob: Problem, rows_per_seq: int, block_m: int, limits: ChipLimits) -> int:
    """Split-KV factor over the prefix of a compute-bound call: 2 when it has a prefix and its packed row blocks
    (B x H_kv x cdiv(rows per sequence, BLOCK_M)) number fewer than `SPLIT_BELOW_PROGRAMS_PER_UNIT` per compute
    unit, else 1. Source: H200 sweep 5 (2026-11-30, BENCHMARKS.md): chunked prefill (512 programs on 132 SMs)
    2168 -> 2060 us with two splits; mixed batch (1024 programs) 665 -> 807 us, so larger grids keep one."""
    programs = prob.batch * prob.num_kv_heads * -(-rows_per_seq // block_m)
    few = programs < SPLIT_BELOW_PROGRAMS_PER_UNIT * limits.num_compute_units
    return 2 if prob.total_prefix > 0 and few else 1


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    """Optimized extend attention; same signature, semantics and errors as the baseline
    (`kernels.extend_attention.baseline.extend_attention_fwd`). Writes ``o_extend`` in place and returns it.

    Shapes: q_extend [ΣE, H_q, D_qk], k_extend/v_extend [ΣE, H_kv, D_qk/D_v], o_extend [ΣE, H_q, D_v],
    k_buffer/v_buffer [slots, H_kv, D_qk/D_v], qo_indptr/kv_indptr [B + 1], kv_indices [ΣP].

    The chip's limits are the process's (`kernels.chip.current_chip_limits`, see the module docstring).

    Raises:
        ValueError: inconsistent shapes, dtypes or devices. NotImplementedError: unsupported argument set.
        kernels.chip.ChipLimitsUnset: no chip limits set for the process.
    """
    prob = check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, mask_indptr, sinks)
    limits = current_chip_limits()
    bound = int(max_len_extend) if max_len_extend is not None else None  # a host int (a hint; rows come from qo_indptr)
    return run_family(
        choose_config(prob, limits, bound), q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr,
        kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, sm_scale=sm_scale,
        logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
        sliding_window_size=sliding_window_size, sinks=sinks, window_kv_offsets=window_kv_offsets,
        xai_temperature_len=xai_temperature_len, limits=limits,
    )
