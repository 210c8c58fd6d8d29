"""Optimized extend-attention family: one parameterized implementation whose knobs are the patterns.

Knobs (`FamilyConfig`): tile sizes (BLOCK_M query rows x BLOCK_N keys), num_warps, num_stages (software
pipelining of the loads feeding the dots), num_splits (split-KV over the prefix; 0 = derive from the chip and
the call), pack_gqa (multi-query blocks: the G q heads of a KV head share each K/V tile), heavy_first (causal
row blocks in decreasing work order), fold_scale (softmax scale folded into the exp2 FMA), gather_stages
(loop-level pipelining of the prefix gather, kv_indices loads included; 0 = off) and pregather (copy the prefix
K/V rows into contiguous order first, `prefix_gather.py`, so the attention loop reads them like the extend keys)
and tma (contiguous K/V tiles loaded through Hopper tensor descriptors, see `FamilyConfig`), and gather_ahead /
ahead_heads / ahead_sync (with pregather: only the first `ahead_heads` KV heads' prefix is copied before attention;
the programs of KV head h copy head h + ahead_heads's, `gather_ahead` rows per key tile; `family_ahead.py`), and mla
(absorbed-MLA calls, 576/512 with V a view of K, run a dedicated kernel of `mla.py`: "triton" with the same tile,
stage, split, pregather and tma knobs, "gluon" / the "gluon_ahead*" variants (`mla_gluon.GLUON_VARIANTS`) /
"gluon_ws" the Hopper Gluon kernels (the Triton one elsewhere);
"off": the generic kernel below), and ragged_tiles (a ragged call runs square tiles of that size with 4 warps),
scores_ahead (the unmasked contiguous key tiles with the next tile's scores issued before the current softmax,
`family_pipelined.py`) and heads_inner (program order with heads fastest, so that the heaviest row blocks of all
heads are dispatched first, not those of head 0 only).
Two knobs take a value that is a function of the call, resolved by `resolve_call` from metadata and the caller's
host-side hint: ``num_splits=0`` (`auto_splits`) and ``gather_ahead=AHEAD_DERIVED`` (`family_ahead.gather_ahead_rows`),
so that one configuration per dispatch class can be right for every call of the class.
Every launch is free of host synchronization: sizes come from tensor metadata
(ΣE = q_extend.shape[0], B = qo_indptr.shape[0] - 1, and kv_indices.shape[0] as an upper bound on ΣP: a serving
engine's index buffer may run on past kv_indptr[B], into entries no kernel reads) and the split-KV partials live in a
preallocated workspace reused across calls of the same size class.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch
import triton
from triton.runtime.errors import OutOfResources
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.chip import ChipLimits, limits_or_current
from kernels.extend_attention.common import (
    FLOAT32_TILE_CAP,
    Problem,
    check_inputs,
    head_dim_blocks,
    mask_offsets,
    reject_unsupported,
    resolve_kv_scales,
    resolve_sm_scale,
)
from kernels.extend_attention.common import (
    chip_has_tma as _chip_has_tma,
)
from kernels.extend_attention.common import (
    describable_rows as _describable,
)
from kernels.extend_attention.common import (
    v_is_view_of_k as _v_is_view_of_k,
)
from kernels.extend_attention.dispatch import call_class  # noqa: F401 - family candidates import it from here
from kernels.extend_attention.family_ahead import gather_ahead_rows
from kernels.extend_attention.family_kernels import LOG2E, _family_fwd_kernel, _merge_kernel, merge_grid
from kernels.extend_attention.mla import MLA_IMPLS, mla_applies, run_mla
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.splits import split_factor
from kernels.extend_attention.workspace import get_workspace, pooled
from kernels.launch import launch as launch_kernel

#: ``gather_ahead`` value "derived": the rows per key tile of the gather-ahead rule (`family_ahead.gather_ahead_rows`)
#: for each call, 0 (off) where the rule says so.
AHEAD_DERIVED = -1


@dataclass(frozen=True)
class FamilyConfig:
    """Knob values of the family. ``num_splits=0`` derives the split count from the chip's `ChipLimits` and the
    call; ``gather_ahead=AHEAD_DERIVED`` the gather-ahead rows (`resolve_call`). ``ragged_tiles`` > 0: a ragged
    call (`is_ragged`) runs BLOCK_M = BLOCK_N = ragged_tiles with 4 warps, two programs per SM where a short
    sequence would pad a large row block (BENCHMARKS.md, 'Kernel sweeps': ragged 1236 -> 1164 us on the H200).

    ``tma`` is a request, like num_stages: the extend K/V tiles (and, with ``pregather``, the prefix K/V tiles)
    are loaded through host-side tensor descriptors (`triton.tools.tensor_descriptor.TensorDescriptor`, one 2-D
    [rows, H_kv * D] view per tensor, block [BLOCK_N, D], loaded at [first row of the tile, kv_head * D]) when
    all of these hold, and through pointers otherwise (`tma_plan` says which, per call):
      - the chip has TMA: NVIDIA compute capability >= 9.0 (Hopper and later; not ROCm), or the Triton
        interpreter (CPU tensors);
      - float16/bfloat16 inputs (float32 keeps the pointer path and its IEEE dots);
      - D_qk == D_v == BLOCK_D, a power of two in [16, 256] (no padded head dims, no MLA rope part; V is not a
        view of K) and BLOCK_N <= 256 (the TMA box limit);
      - per tensor: heads contiguous (head stride D, or one KV head), unit stride along D, base address and row
        stride multiples of 16 bytes. The pre-gathered prefix buffers always qualify; the prefix read in place
        through kv_indices never uses descriptors (a gather, not a box).
    Rows past a tile's sequence are masked by the key mask as on the pointer path: a descriptor box reads the
    next sequence's rows (finite inputs) or zeros past the tensor, never an unnamed cache slot.

    ``scores_ahead``: the unmasked full key tiles of contiguous rows (extend keys, pre-gathered prefix) run
    software-pipelined by one tile, tile t + 1's q @ k^T before tile t's softmax and P . V, so an asynchronous
    matrix unit can overlap them (FlashAttention-3's intra-warpgroup overlap; `family_pipelined.py`); 2: P . V
    one tile behind as well, so both dots run during a softmax (gather-ahead's prefix loop runs 1 then); masked
    tiles, gathered prefixes and the loop-pipelined gather keep the plain loop. ``heads_inner``: program
    index = row block x heads + head (heads fastest) instead of head-major, so that with ``heavy_first`` the longest
    row blocks of every head start in the first waves (list scheduling longest-first; the head-major order starts
    head 7's longest blocks last). Ignored under ``ahead_sync`` and per-head gather-ahead launches (their order is
    head-major by design).
    """

    block_m: int = 64
    block_n: int = 64
    num_warps: int = 4
    num_stages: int = 2
    num_splits: int = 0
    pack_gqa: bool = True
    heavy_first: bool = True
    fold_scale: bool = True
    gather_stages: int = 0
    pregather: bool = False
    tma: bool = False
    gather_ahead: int = 0
    ahead_heads: int = 1
    ahead_sync: bool = False
    mla: str = "off"
    ragged_tiles: int = 0
    scores_ahead: int = 0
    heads_inner: bool = False

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n"):
            value = getattr(self, name)
            if value < 16 or value & (value - 1):
                raise ValueError(f"FamilyConfig.{name}={value} must be a power of two >= 16")
        if (self.num_warps not in (1, 2, 4, 8, 16) or self.num_stages < 1 or not 0 <= self.num_splits <= 64
                or not 0 <= self.gather_stages <= 6
                or not (self.gather_ahead in (0, AHEAD_DERIVED) or 0 < self.gather_ahead <= 256
                        and not self.gather_ahead & (self.gather_ahead - 1))
                or not (self.ragged_tiles == 0 or 16 <= self.ragged_tiles <= 256
                        and not self.ragged_tiles & (self.ragged_tiles - 1))
                or not 1 <= self.ahead_heads <= 64 or self.mla not in MLA_IMPLS or self.scores_ahead not in (0, 1, 2)):
            raise ValueError(f"FamilyConfig out of range: {self}")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the knobs."""
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FamilyConfig:
        """Inverse of `to_dict`; unknown keys raise ValueError naming them."""
        unknown = set(data) - set(FamilyConfig.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown FamilyConfig knob(s): {sorted(unknown)}")
        return FamilyConfig(**data)


def extend_hint(max_len_extend: Any, extend_seq_lens_cpu: Any) -> int | None:
    """The caller's host-side bound of the longest extend: ``max(extend_seq_lens_cpu)`` when given (SGLang's host
    list of E_b), else `max_len_extend` (a host int), else None. A hint for configuration rules only: rows are
    located from qo_indptr on the device."""
    if extend_seq_lens_cpu is not None and len(extend_seq_lens_cpu):
        return int(max(extend_seq_lens_cpu))
    return int(max_len_extend) if max_len_extend is not None else None


def is_ragged(prob: Problem, hint: int | None) -> bool:
    """A ragged batch: the longest extend (`hint`, `extend_hint`) over twice the mean, max E x B > 2 ΣE."""
    return hint is not None and hint * prob.batch > 2 * prob.total_extend


def resolve_tiles(config: FamilyConfig, prob: Problem, hint: int | None) -> FamilyConfig:
    """`config` with ``ragged_tiles`` applied: BLOCK_M = BLOCK_N = ragged_tiles and 4 warps for a ragged call
    (`is_ragged`), the knob then 0; unchanged without it."""
    if not config.ragged_tiles:
        return config
    if is_ragged(prob, hint):
        return replace(config, block_m=config.ragged_tiles, block_n=config.ragged_tiles, num_warps=4, ragged_tiles=0)
    return replace(config, ragged_tiles=0)


def resolve_call(config: FamilyConfig, prob: Problem, limits: ChipLimits, hint: int | None) -> FamilyConfig:
    """`config` with its call-dependent values resolved for a call of sizes `prob` and extend bound `hint`
    (`extend_hint`): ``ragged_tiles`` applied to a ragged call (then 0), ``gather_ahead=AHEAD_DERIVED`` replaced by
    `family_ahead.gather_ahead_rows` on the resolved tiles and split count (``num_splits`` or `auto_splits`; the
    split count itself stays as given), and the gather-ahead sub-knobs (ahead_heads, ahead_sync) at their defaults
    where gather-ahead is off (they change nothing then). Metadata and host ints only; idempotent."""
    resolved = resolve_tiles(config, prob, hint)
    rows = resolved.gather_ahead
    if rows == AHEAD_DERIVED:
        splits = resolved.num_splits or auto_splits(resolved, prob, limits)
        rows_per_seq = max(1, prob.total_extend // max(1, prob.batch)) * prob.group
        rows = gather_ahead_rows(prob, rows_per_seq, splits, limits, hint, resolved.block_m, resolved.block_n)
    if rows == 0:
        off = (0, FamilyConfig.ahead_heads, FamilyConfig.ahead_sync)  # the class attributes are the defaults
        if (resolved.gather_ahead, resolved.ahead_heads, resolved.ahead_sync) == off:
            return resolved
        return replace(resolved, gather_ahead=0, ahead_heads=off[1], ahead_sync=off[2])
    return replace(resolved, gather_ahead=rows) if rows != resolved.gather_ahead else resolved


def launch_config(config: FamilyConfig, prob: Problem, limits: ChipLimits, v_is_k: bool,
                  hint: int | None) -> FamilyConfig:
    """The configuration `run_family` launches the generic kernel with for `config` (before any shrink on an
    `OutOfResources` refusal): `resolve_call`, `fit_to_chip`, then ``num_splits=0`` as `auto_splits`."""
    fitted = fit_to_chip(resolve_call(config, prob, limits, hint), prob, limits, v_is_k)
    return fitted if fitted.num_splits else replace(fitted, num_splits=auto_splits(fitted, prob, limits))


def smem_footprint_kb(config: FamilyConfig, prob: Problem, v_is_k: bool) -> float:
    """Shared memory of one program in KiB: num_stages K(+V) tiles plus the Q tile.

    elem * (num_stages * BLOCK_N * (BLOCK_D + BLOCK_DPE + BLOCK_DV [0 if V is a view of K])
            + BLOCK_M * (BLOCK_D + BLOCK_DPE)).
    """
    block_d, block_dpe, block_dv = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    elem = prob.dtype.itemsize
    kv = block_d + block_dpe + (0 if v_is_k else block_dv)
    return elem * (config.num_stages * config.block_n * kv + config.block_m * (block_d + block_dpe)) / 1024


def fit_to_chip(config: FamilyConfig, prob: Problem, limits: ChipLimits, v_is_k: bool) -> FamilyConfig:
    """Cap float32 tiles at `FLOAT32_TILE_CAP`; shrink num_stages, then BLOCK_N, then BLOCK_M until the footprint
    fits `smem_per_block_kb`; clamp num_warps to max_threads_per_block / warp_size."""
    warps = min(config.num_warps, max(1, limits.max_threads_per_block // limits.warp_size))
    config = replace(config, num_warps=warps)
    if prob.dtype == torch.float32:
        cap_m, cap_n, cap_stages = FLOAT32_TILE_CAP
        config = replace(config, block_m=min(config.block_m, cap_m), block_n=min(config.block_n, cap_n),
                         num_stages=min(config.num_stages, cap_stages))
    while smem_footprint_kb(config, prob, v_is_k) > limits.smem_per_block_kb:
        smaller = shrink_once(config, gather_first=False)  # the model does not count gather stages
        if smaller is None:
            break
        config = smaller
    return config


def shrink_once(config: FamilyConfig, gather_first: bool = True) -> FamilyConfig | None:
    """One step down in shared memory: one fewer gather stage (if `gather_first`), then load stage, then half
    BLOCK_N, then half BLOCK_M (None when nothing is left to shrink)."""
    if gather_first and config.gather_stages > 1:
        return replace(config, gather_stages=config.gather_stages - 1)
    if config.num_stages > 1:
        return replace(config, num_stages=config.num_stages - 1)
    if config.block_n > 16:
        return replace(config, block_n=config.block_n // 2)
    if config.block_m > 16:
        return replace(config, block_m=config.block_m // 2)
    return None


def pack_factor(config: FamilyConfig, prob: Problem) -> int:
    """Rows per token in a block: G when pack_gqa (q heads of one KV head together), else 1."""
    return prob.group if config.pack_gqa and prob.group > 1 else 1


def auto_splits(config: FamilyConfig, prob: Problem, limits: ChipLimits) -> int:
    """Split-KV factor of ``num_splits=0``: `splits.split_factor` for the launch's programs (row blocks
    ≈ B * cdiv(ΣE * pack / B, BLOCK_M), times the heads of the grid) on the chip's compute units. Metadata only."""
    if prob.total_prefix == 0 or prob.batch == 0:
        return 1
    pack = pack_factor(config, prob)
    heads = prob.num_kv_heads if pack > 1 else prob.num_q_heads
    rows_per_seq = max(1, prob.total_extend * pack // prob.batch)
    programs = prob.batch * math.ceil(rows_per_seq / config.block_m) * heads
    return split_factor(programs, limits.num_compute_units, prob.total_prefix // prob.batch,
                        max(1, prob.total_extend // prob.batch) * prob.group)


def ahead_applies(config: FamilyConfig, prob: Problem, contig: bool, v_is_k: bool, prefix_masked: bool) -> bool:
    """Whether `run_family` runs `config` with gather-ahead (`family_ahead.py`): ``gather_ahead`` > 0 with the
    prefix pre-gathered (`contig`), one split, no loop-pipelined gather, one program per KV head (pack GQA, or
    G = 1), more KV heads than ``ahead_heads``, no rope part, V not a view of K and no mask on prefix keys. Then
    the first ``ahead_heads`` KV heads' prefix is copied before attention and each program of KV head h copies a
    1/count slice of its sequence's prefix of head h + ahead_heads, under its tensor-core work instead of before
    it (mixed batch: a 135 us copy at the bandwidth ceiling; BENCHMARKS.md, 'Kernel sweeps')."""
    _, block_dpe, _ = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    one_per_kv_head = pack_factor(config, prob) > 1 or prob.group == 1
    return (config.gather_ahead > 0 and contig and config.num_splits == 1 and config.gather_stages == 0
            and one_per_kv_head and prob.num_kv_heads > config.ahead_heads and block_dpe == 0 and not v_is_k
            and not prefix_masked)


def ahead_launches(config: FamilyConfig, heads: int, ahead: bool) -> list[tuple[int, int, int]]:
    """(first head, heads, gather-ahead rows) per launch: one launch over all heads unless gather-ahead runs
    without ``ahead_sync``, then launches of ``ahead_heads`` heads in order, each copying the next launch's (the
    last copies nothing, but keeps the gather-ahead kernel: its partial last prefix tile is read from the cache,
    as the rows past a prefix may not be copied)."""
    if not ahead or config.ahead_sync:
        return [(0, heads, config.gather_ahead if ahead else 0)]
    step = config.ahead_heads
    return [(h, min(step, heads - h), config.gather_ahead) for h in range(0, heads, step)]


def _row_descriptor(t: torch.Tensor, width: int, block_n: int) -> TensorDescriptor:
    """2-D descriptor [rows, H * width] over `t` ([rows, H, width], `_describable`), block [block_n, width]."""
    return TensorDescriptor(t, [t.shape[0], t.shape[1] * width], [t.stride(0), 1], [block_n, width])


def _tma_allowed(config: FamilyConfig, dtype: torch.dtype, head_dim: int, head_dim_v: int, v_is_k: bool,
                 device: torch.device) -> bool:
    """The conditions of `FamilyConfig.tma` that do not depend on a tensor's layout."""
    block_d, block_dpe, block_dv = head_dim_blocks(head_dim, head_dim_v)
    return (config.tma and dtype in (torch.float16, torch.bfloat16) and block_dpe == 0 and not v_is_k
            and head_dim == block_d == head_dim_v == block_dv and block_d <= 256 and config.block_n <= 256
            and _chip_has_tma(device))


def _pregathers(config: FamilyConfig, total_prefix: int, k_buffer: torch.Tensor, v_buffer: torch.Tensor) -> bool:
    """Whether the prefix is copied into contiguous order first (`pregather` and a unit last stride)."""
    return config.pregather and total_prefix > 0 and k_buffer.stride(2) == 1 and v_buffer.stride(2) == 1


def tma_plan(config: FamilyConfig, q_extend: torch.Tensor, k_extend: torch.Tensor, v_extend: torch.Tensor,
             k_buffer: torch.Tensor, v_buffer: torch.Tensor, kv_indices: torch.Tensor, **_other) -> tuple[bool, bool]:
    """(extend, prefix): whether ``run_family(config, ...)`` with these arguments loads the extend K/V tiles and
    the prefix K/V tiles through tensor descriptors (the conditions in `FamilyConfig`). Metadata only."""
    v_is_k = _v_is_view_of_k(k_buffer, v_buffer) and _v_is_view_of_k(k_extend, v_extend)
    d, dv = q_extend.shape[2], v_extend.shape[2]
    if q_extend.shape[0] == 0 or not _tma_allowed(config, q_extend.dtype, d, dv, v_is_k, q_extend.device):
        return False, False
    extend = _describable(k_extend, d) and _describable(v_extend, dv)
    return extend, _pregathers(config, kv_indices.shape[0], k_buffer, v_buffer)


#: Configuration that launched, per (requested config, dtype, head-dim blocks, V-is-K, descriptor use (extend,
#: prefix), chip limits, device), after
#: shrinking on an OutOfResources refusal, so the refusal (raised while compiling, before anything runs) is paid once.
_KNOWN_FITS: dict[tuple[Any, ...], FamilyConfig] = {}


def run_family(
    config: FamilyConfig, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
    kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1, lse_extend=None, skip_prefix=False, skip_extend=False, page_size=1, score_mod=None,
    aux_tensors=None, extend_seq_lens_cpu=None, identity_kv_indices=False, limits: ChipLimits | None = None,
):
    """Extend attention with the family kernel at `config`; writes ``o_extend`` in place and returns it.

    Arguments, shapes and semantics as `kernels.extend_attention.baseline.extend_attention_fwd` (SGLang 0.5.23's
    signature); `max_len_extend` and `extend_seq_lens_cpu` are hints for the call-dependent knobs
    (`resolve_call`), never trusted for correctness (row blocks are located from qo_indptr on the device);
    `window_kv_offsets` as `common.mask_offsets`. The prefix-stage scores are scaled by ``k_scale`` with the
    softmax scale, and the prefix part of the accumulator by ``v_scale`` once, after the prefix tiles (the online
    softmax rescales the accumulator uniformly, so this equals scaling every prefix tile's P.V). With
    ``identity_kv_indices`` the buffers are read in place as the contiguous prefix (no pre-gather, no
    descriptors). `limits` (`kernels.chip.ChipLimits`; default: the process's chip limits,
    `kernels.chip.current_chip_limits`, never the device's) bounds tiles by shared memory and sizes split-KV. A
    configuration that Triton refuses for shared memory (`OutOfResources` at compile time, when the footprint
    model fell short)
    is shrunk by `shrink_once` and launched again; the first that compiles is remembered.

    Raises:
        ValueError: inconsistent shapes, dtypes or devices. NotImplementedError: unsupported argument set.
        kernels.chip.ChipLimitsUnset: no `limits` given and none set for the process.
    """
    reject_unsupported(xai_temperature_len=xai_temperature_len, score_mod=score_mod, aux_tensors=aux_tensors)
    prob = check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, mask_indptr, sinks, skip_extend, lse_extend, page_size,
                        extend_seq_lens_cpu)
    k_scale, v_scale = resolve_kv_scales(k_scale, v_scale)
    offsets = mask_offsets(window_kv_offsets, custom_mask, sliding_window_size, prob.batch)
    if prob.batch == 0 or prob.total_extend == 0:
        return o_extend
    limits = limits_or_current(limits)
    config = resolve_call(config, prob, limits, extend_hint(max_len_extend, extend_seq_lens_cpu))
    block_d, block_dpe, block_dv = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    v_is_k = (_v_is_view_of_k(k_buffer, v_buffer) and _v_is_view_of_k(k_extend, v_extend)
              and block_dv == block_d == prob.head_dim_v)
    identity, skip_prefix, skip_extend = bool(identity_kv_indices), bool(skip_prefix), bool(skip_extend)
    plain = lse_extend is None and not (identity or skip_prefix or skip_extend)  # what the MLA kernel implements
    if config.mla != "off" and plain and mla_applies(prob, v_is_k, custom_mask, sliding_window_size):
        return run_mla(config, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                       kv_indices, is_causal, sm_scale, logit_cap, sinks, k_scale, v_scale, limits)
    gathered = not identity and not skip_prefix and _pregathers(config, prob.total_prefix, k_buffer, v_buffer)
    contig = gathered or identity
    window = int(sliding_window_size) if sliding_window_size and sliding_window_size > 0 else -1
    prefix_masked = window > 0 or (custom_mask is not None and not skip_prefix_custom_mask)
    ahead = ahead_applies(config, prob, gathered, v_is_k, prefix_masked)
    k_src, v_src = k_buffer, v_buffer
    sync = ahead and config.ahead_sync  # work tickets and per-(sequence, head) copy counts, zeroed by the gather
    counters = pooled(q_extend.device, torch.int32, "ahead_counters", 1 + prob.batch * prob.num_kv_heads) if sync \
        else None
    if gathered:  # prefix rows in sequence order: row t of sequence b at kv_indptr[b] + t
        k_buffer, v_buffer = gather_prefix(k_buffer, v_buffer, kv_indices, v_is_k,
                                           first_heads=config.ahead_heads if ahead else None, zero=counters,
                                           bound=kv_indptr)
    tma = _tma_allowed(config, prob.dtype, prob.head_dim, prob.head_dim_v, v_is_k, q_extend.device)
    tma_ext = (tma and not skip_extend and _describable(k_extend, prob.head_dim)
               and _describable(v_extend, prob.head_dim_v))
    # identity: rows past kv_indptr[B] are the caller's and may hold anything (a box could read them)
    tma_prefix = (tma and gathered and _describable(k_buffer, prob.head_dim)
                  and _describable(v_buffer, prob.head_dim_v))
    fitted = fit_to_chip(config, prob, limits, v_is_k)
    fit_key = (config, prob.dtype, block_d, block_dpe, block_dv, v_is_k, tma_ext, tma_prefix, ahead, limits,
               q_extend.device)
    config = _KNOWN_FITS.get(fit_key, fitted)
    scale = resolve_sm_scale(sm_scale, prob.head_dim)
    use_mask = custom_mask is not None
    store_lse = lse_extend is not None
    dummy = qo_indptr

    def launch(config: FamilyConfig) -> tuple[int, torch.Tensor, torch.Tensor]:
        splits = config.num_splits or auto_splits(config, prob, limits)
        if skip_prefix:
            splits = 1
        pack = pack_factor(config, prob)
        heads = prob.num_kv_heads if pack > 1 else prob.num_q_heads
        row_blocks = triton.cdiv(prob.total_extend * pack, config.block_m) + prob.batch
        mid_o, mid_l = get_workspace(q_extend.device, splits, prob.total_extend, prob.num_q_heads, prob.head_dim_v)
        # host-side descriptors (block shape from this config's BLOCK_N); unused ones are a dummy pointer
        descs = [_row_descriptor(t, w, config.block_n) if use else dummy for t, w, use in (
            (k_extend, prob.head_dim, tma_ext), (v_extend, prob.head_dim_v, tma_ext),
            (k_buffer, prob.head_dim, tma_prefix), (v_buffer, prob.head_dim_v, tma_prefix))]
        launches = ahead_launches(config, heads, ahead)
        heads_inner = config.heads_inner and not sync and len(launches) == 1
        for head_base, grid_heads, ahead_rows in launches:
            flat = sync or heads_inner
            grid = (row_blocks * grid_heads, 1, splits) if flat else (row_blocks, grid_heads, splits)
            _launch_kernel(grid, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                           kv_indices, custom_mask if use_mask else dummy, mask_indptr if use_mask else dummy,
                           offsets if offsets is not None else dummy, sinks if sinks is not None else dummy,
                           mid_o, mid_l, descs, k_src, v_src,
                           counters if sync else dummy, lse_extend if store_lse else mid_l, (scale, k_scale, v_scale),
                           prob, (head_base, heads, row_blocks), config, dict(
                BLOCK_D=block_d, BLOCK_DPE=block_dpe, BLOCK_DV=block_dv, PACK=pack, NUM_SPLITS=splits, WINDOW=window,
                LOGIT_CAP=float(logit_cap or 0.0), IS_CAUSAL=bool(is_causal), USE_MASK=use_mask,
                SKIP_PREFIX_MASK=bool(skip_prefix_custom_mask), HAS_SINK=sinks is not None, V_IS_K=v_is_k,
                HEAVY_FIRST=config.heavy_first and bool(is_causal),
                FOLD_SCALE=config.fold_scale and not logit_cap and scale > 0 and scale * k_scale > 0,
                PREFIX_CONTIG=contig, TMA_EXT=tma_ext, TMA_PREFIX=tma_prefix, AHEAD_ROWS=ahead_rows,
                AHEAD_HEADS=config.ahead_heads,
                # the proxy fence orders TMA reads after the copies; sm_90+ only, needed only with TMA
                AHEAD_SYNC=sync, PROXY_FENCE=sync and tma_prefix and q_extend.is_cuda,
                V_SCALED=v_scale != 1.0, STORE_LSE=store_lse, SKIP_PREFIX=skip_prefix, SKIP_EXTEND=skip_extend,
                MASK_OFFSET=offsets is not None, SCORES_AHEAD=int(config.scores_ahead), HEADS_INNER=heads_inner))
        return splits, mid_o, mid_l

    while True:  # the footprint model can fall short of what Triton allocates: shrink and retry on the refusal
        try:
            splits, mid_o, mid_l = launch(config)
            break
        except OutOfResources:
            smaller = shrink_once(config)
            if smaller is None:
                raise
            config = smaller
    _KNOWN_FITS[fit_key] = config
    if splits > 1:
        lse_out = lse_extend if store_lse else mid_l
        launch_kernel(_merge_kernel, merge_grid(prob.total_extend, prob.num_q_heads),
            mid_o, mid_l, o_extend, lse_out, sinks if sinks is not None else dummy, prob.num_q_heads,
            mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), mid_l.stride(0), mid_l.stride(1),
            o_extend.stride(0), o_extend.stride(1), lse_out.stride(0) if store_lse else 0,
            lse_out.stride(1) if store_lse else 0, LV=prob.head_dim_v, BLOCK_DV=block_dv, NUM_SPLITS=splits,
            BLOCK_S=max(2, triton.next_power_of_2(splits)), HAS_SINK=sinks is not None, STORE_LSE=store_lse,
            num_warps=4 if block_dv <= 128 else 8,
        )
    return o_extend


def _launch_kernel(grid, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                   kv_indices, custom_mask, mask_indptr, mask_offsets, sinks, mid_o, mid_l, descs, k_src, v_src,
                   counters, lse,
                   scales: tuple[float, float, float], prob: Problem, heads: tuple[int, int, int],
                   config: FamilyConfig, flags: dict) -> None:
    """One `_family_fwd_kernel` launch over `grid`; scales = (sm_scale, k_scale, v_scale); heads = (first head, all
    heads, row blocks per head); `lse` is written only with STORE_LSE in `flags` (a dummy otherwise)."""
    scale, k_scale, v_scale = scales
    store_lse = flags["STORE_LSE"]
    launch_kernel(_family_fwd_kernel, grid,
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
        custom_mask, mask_indptr, mask_offsets, sinks, mid_o, mid_l, *descs, k_src, v_src, counters, lse,
        scale * LOG2E, scale, k_scale, v_scale, prob.batch, *heads, k_src.stride(0), k_src.stride(1),
        v_src.stride(0), v_src.stride(1),
        q_extend.stride(0), q_extend.stride(1), k_extend.stride(0), k_extend.stride(1),
        v_extend.stride(0), v_extend.stride(1), o_extend.stride(0), o_extend.stride(1),
        k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1),
        mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), mid_l.stride(0), mid_l.stride(1),
        lse.stride(0) if store_lse else 0, lse.stride(1) if store_lse else 0,
        LQ=prob.head_dim, LV=prob.head_dim_v, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        BLOCK_B=triton.next_power_of_2(prob.batch + 1), GROUP=prob.group, GATHER_STAGES=config.gather_stages,
        num_warps=config.num_warps, num_stages=config.num_stages, **flags,
    )
