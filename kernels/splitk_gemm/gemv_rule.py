"""The GEMV mode's tile rule: weight tile, warps and stages of a one-row weight stream (``FamilyConfig.gemv``).

A GEMV program streams a [BLOCK_N, BLOCK_K] weight tile per K-iteration through Triton's software pipeliner
(STAGES - 1 tiles in flight, `common.gemv_tile`) and keeps a float32 accumulator of one element per row and
loaded weight element, summed over K once after the loop. The rule ranks the candidates by:

1. vector width: each thread's share of the tile is whole `VECTOR_BYTES` loads along K (the widest per-thread
   global load; CUDA C++ Best Practices Guide, "Coalesced access to global memory"), and a tile row spans whole
   128-byte lines;
2. registers: accumulator elements per thread, rows x BLOCK_N x BLOCK_K / (num_warps x warp_size), at most
   `ACC_PER_THREAD`; the accumulator, the loaded 16-bit weights and their float32 conversions are the live set,
   so registers grow with it (sm_90 offline compile of the one-row kernel, scripts/compile_report_splitk.py:
   32 elements -> 80-86 registers, 64 -> 122-128, 128 -> 222);
3. bytes in flight per compute unit: resident programs x (STAGES - 1) x weight-tile bytes against the Little's
   law need, bandwidth x loaded memory latency / compute units (`in_flight_need`; CUDA C++ Best Practices Guide,
   "Hiding register dependencies" / Little's law as in Volkov, "Better performance at lower occupancy", GTC 2010);
   STAGES is the fewest that meet the need, within the shared memory per block and `schedule.MAX_STAGES`;
4. then the larger tile (fewer programs, split partials and loop trips), then fewer accumulator elements per
   thread; ties keep the order of `TILES` and `WARPS`.
The split count is the family's rule (split_k = 0: `schedule.auto_split_k`), the splits summed by the tile's last
program (fused_reduce).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kernels.chip import ChipLimits
from kernels.splitk_gemm.common import Problem, require_limit
from kernels.splitk_gemm.config import FamilyConfig, gemv_rows, smem_footprint_kb
from kernels.splitk_gemm.schedule import MAX_STAGES, program_count

#: Loaded device-memory latency (s) for the bytes-in-flight need: the loaded HBM round trip the family's schedule
#: model was fitted with (`schedule.IN_FLIGHT_BYTES`: 96 KiB per unit = 4.8 TB/s / 132 units x ~2.5 us on H200).
LOADED_LATENCY_S = 2.5e-6
#: Widest per-thread global load, bytes (128-bit vector loads; CUDA C++ Programming Guide, "Device memory accesses").
VECTOR_BYTES = 16
#: A cache line / coalescing segment, bytes (CUDA C++ Best Practices Guide, "Coalesced access to global memory").
LINE_BYTES = 128
#: Most float32 accumulator elements per thread (rule item 1): ~86 registers per thread at sm_90, so a compute
#: unit's 65536 32-bit registers (sm_80 / sm_90, CUDA C++ Programming Guide, compute capabilities table) hold two
#: resident 8-warp programs where the grid has more programs than units.
ACC_PER_THREAD = 32
#: (BLOCK_N, BLOCK_K) weight tiles the rule compares (the family's searched block_n / block_k values, space.KNOBS).
TILES = ((128, 64), (64, 128), (32, 256), (128, 128), (256, 64), (64, 64), (64, 256), (256, 128), (32, 64))
#: Warps per program the rule compares (more warps: fewer accumulator elements per thread).
WARPS = (8, 4)


@dataclass(frozen=True)
class GemvChoice:
    """One candidate of the rule: its configuration and the quantities it was ranked by.

    Attributes:
        config: the GEMV-mode `FamilyConfig` (block_m = the call's GEMV rows, split_k 0, fused_reduce).
        acc_per_thread: float32 accumulator elements per thread.
        in_flight_bytes: bytes per compute unit in flight (resident programs x (stages - 1) x tile bytes).
        need_bytes: the Little's law need per compute unit (`in_flight_need`).
        vector_ok: the thread's share is whole `VECTOR_BYTES` loads and a tile row whole `LINE_BYTES` lines.
    """

    config: FamilyConfig
    acc_per_thread: float
    in_flight_bytes: float
    need_bytes: float
    vector_ok: bool

    def rank_key(self) -> tuple:
        """Sort key of the module docstring's order (smaller first)."""
        c = self.config
        return (not self.vector_ok, self.acc_per_thread > ACC_PER_THREAD,
                -min(1.0, self.in_flight_bytes / self.need_bytes), -c.block_n * c.block_k, self.acc_per_thread)


def in_flight_need(bandwidth: float, units: int, latency_s: float = LOADED_LATENCY_S) -> float:
    """Bytes each compute unit must have in flight to draw its share of `bandwidth` (bytes/s): bandwidth x
    `latency_s` / `units` (Little's law). E.g. H200: 4.8e12 x 2.5e-6 / 132 = 90.9 KB."""
    return bandwidth * latency_s / units


def gemv_choices(prob: Problem, limits: ChipLimits, bandwidth: float,
                 latency_s: float = LOADED_LATENCY_S) -> list[GemvChoice]:
    """Every candidate of `TILES` x `WARPS` that fits `limits` (threads, shared memory at 2 stages) for the call
    `prob` (A [M, K] @ B [N, K]^T), best first by `GemvChoice.rank_key`; `bandwidth` in bytes/s.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    units = int(require_limit(limits, "num_compute_units"))
    smem_kb = float(require_limit(limits, "smem_per_block_kb"))
    warp = int(require_limit(limits, "warp_size"))
    threads_max = int(require_limit(limits, "max_threads_per_block"))
    need = in_flight_need(bandwidth, units, latency_s)
    rows = gemv_rows(16, prob.m)
    vec = max(1, VECTOR_BYTES // prob.elem)
    out = []
    for block_n, block_k in TILES:
        for warps in WARPS:
            threads = warps * warp
            if threads > threads_max:
                continue
            base = FamilyConfig(block_m=rows, block_n=block_n, block_k=block_k, num_warps=warps, gemv=True,
                                split_k=0, fused_reduce=True, num_stages=2)
            per_stage_kb = smem_footprint_kb(replace(base, num_stages=1), prob.dtype)
            if 2 * per_stage_kb > smem_kb:
                continue
            tile_bytes = block_n * block_k * prob.elem
            stages = max(2, min(1 + math.ceil(need / tile_bytes), int(smem_kb // per_stage_kb), MAX_STAGES))
            config = replace(base, num_stages=stages)
            programs = program_count(config, prob, limits)
            resident = max(1, min(math.ceil(programs / units), int(smem_kb // smem_footprint_kb(config, prob.dtype))))
            acc = rows * block_n * block_k / threads
            vector_ok = acc >= vec and acc % vec == 0 and block_k * prob.elem >= LINE_BYTES
            out.append(GemvChoice(config, acc, resident * (stages - 1) * tile_bytes, need, vector_ok))
    return sorted(out, key=GemvChoice.rank_key)


def choose_gemv_config(prob: Problem, limits: ChipLimits, bandwidth: float,
                       latency_s: float = LOADED_LATENCY_S) -> FamilyConfig:
    """The first of `gemv_choices` (module docstring), as the GEMV pattern proposes it.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
        ValueError: no candidate fits the chip.
    """
    choices = gemv_choices(prob, limits, bandwidth, latency_s)
    if not choices:
        raise ValueError(f"gemv rule: no GEMV tile fits the chip limits {limits}")
    return choices[0].config
