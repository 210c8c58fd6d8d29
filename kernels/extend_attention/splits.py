"""The split-KV factor of an extend-attention call, for the two kinds of kernel the task has: `split_factor` for the
family kernel, which runs several programs per compute unit (the family's ``num_splits=0``, the tuned entry point and
the catalog's split rule, formula function ``split_factor`` in `variables.py`, all use it), and `wave_split_factor`
for the MLA kernel, which runs one program per compute unit (`mla.fit_mla`), so its last wave's fill decides.

Split-KV cuts each sequence's prefix into ``splits`` chunks streamed by separate programs, whose partial outputs and
log-sum-exp a second kernel merges (Flash-Decoding, Dao et al. 2023). The rule:

    splits = min(ceil(SPLIT_WAVES * compute units / programs), mean prefix // MIN_SPLIT_KEYS, cap)

with cap = `MAX_SPLITS`, or `MAX_COMPUTE_BOUND_SPLITS` for a compute-bound call (more than `COMPUTE_BOUND_ROWS`
query rows per sequence after GQA packing), and 1 without a prefix. Source: BENCHMARKS.md, 'Kernel sweeps' (H200,
bf16): decode and speculative verify run fastest with split-KV 2-4 (sweep 3), chunked prefill (512 programs on 132
SMs) 2168 -> 2060 us with 2 splits, while the mixed batch (1024 programs, about 8 per SM) slows from 659.8 us (its
best) to 807 us with 2.
"""

from __future__ import annotations

import math

#: A launch is split until it has about this many programs per compute unit.
SPLIT_WAVES = 4
#: Fewest prefix keys one split streams (two 128-key tiles).
MIN_SPLIT_KEYS = 256
#: Most splits of a memory-bound call.
MAX_SPLITS = 32
#: Most splits of a compute-bound call: each split adds a pass over fp32 partial outputs [splits, ΣE, H_q, D_v].
MAX_COMPUTE_BOUND_SPLITS = 2
#: Query rows per sequence (extend tokens x GQA group) above which a call is compute-bound; at or below it the
#: tuned entry point packs the GQA heads into small row blocks (decode, speculative verify).
COMPUTE_BOUND_ROWS = 64


#: One-program-per-unit kernels: splits within this fraction of the least modeled time count as equal (fewest wins).
WAVE_TOLERANCE = 0.05
#: Fewest prefix keys one split of the MLA kernel streams.
MLA_MIN_SPLIT_KEYS = 512


def compute_bound(rows_per_sequence: float) -> bool:
    """Whether a call with `rows_per_sequence` query rows per sequence (ΣE / B x G) is compute-bound."""
    return rows_per_sequence > COMPUTE_BOUND_ROWS


def split_factor(programs: int, compute_units: int, mean_prefix: float, rows_per_sequence: float) -> int:
    """Split-KV factor (module docstring) of a launch of `programs` programs (row blocks x heads, one split) on
    `compute_units` units, for sequences of `mean_prefix` prefix keys and `rows_per_sequence` query rows on average.

    Raises:
        ValueError: `compute_units` < 1.
    """
    if compute_units < 1:
        raise ValueError(f"split_factor: compute_units must be >= 1, got {compute_units}")
    if mean_prefix <= 0 or programs <= 0:
        return 1
    want = math.ceil(SPLIT_WAVES * compute_units / programs)
    by_length = max(1, int(mean_prefix) // MIN_SPLIT_KEYS)
    cap = MAX_COMPUTE_BOUND_SPLITS if compute_bound(rows_per_sequence) else MAX_SPLITS
    return int(max(1, min(want, by_length, cap)))


def wave_split_factor(programs: int, compute_units: int, mean_prefix: float, max_splits: int = MAX_SPLITS,
                      min_keys: int = MLA_MIN_SPLIT_KEYS) -> int:
    """Split-KV factor (module docstring) of a one-program-per-unit launch of `programs` programs on `compute_units`
    units, for sequences of `mean_prefix` prefix keys on average; at most `max_splits`, each split >= `min_keys`.

    Raises:
        ValueError: `compute_units` < 1.
    """
    if compute_units < 1:
        raise ValueError(f"wave_split_factor: compute_units must be >= 1, got {compute_units}")
    if mean_prefix <= 0 or programs <= 0:
        return 1
    top = max(1, min(max_splits, int(mean_prefix) // min_keys))
    cost = {s: math.ceil(programs * s / compute_units) / s for s in range(1, top + 1)}
    best = min(cost.values())
    return min(s for s, c in cost.items() if c <= (1 + WAVE_TOLERANCE) * best)
