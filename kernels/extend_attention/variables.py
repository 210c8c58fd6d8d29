"""Case variables and helper functions of extend attention for pattern formulas (the spec's
`kernels.task.FormulaVariables`; `case` is a `kernels.task.Case`).

The catalog's formulas (kernels/extend_attention/catalog.yaml) read these next to the chip profile's and the
diagnosis' variables and the compulsory ``flops``, ``bytes`` and ``intensity`` every task has (knowledge.variables).
Head-dim tiles are the kernel's own (`common.head_dim_blocks`) and the split factor is the family's own rule
(`splits.split_factor`), so the knowledge side budgets exactly what the kernel runs; the measured configuration of a
case's class is the tuned entry point's own rule (`tuned.class_config`, with its derived values), so a pattern that
proposes it proposes exactly what the tuned entry point runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernels.extend_attention.common import head_dim_blocks
from kernels.extend_attention.family_space import case_shape
from kernels.extend_attention.params import POOL_FACTOR, full_params
from kernels.extend_attention.splits import split_factor
from kernels.extend_attention.tuned import class_config

#: Knobs of the tuned class configuration that formulas read, as ``tuned_<knob>()``.
TUNED_KNOBS = ("block_m", "block_n", "num_warps", "num_stages", "num_splits", "pack_gqa", "heavy_first",
               "fold_scale", "gather_stages", "gather_ahead", "ahead_heads", "ahead_sync", "ragged_tiles", "mla")

#: Elements' bytes per input dtype name.
ELEMENT_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

VARIABLES: dict[str, str] = {
    "B": "sequences in the batch",
    "E_max": "longest extend (new tokens) of a sequence", "E_min": "shortest extend",
    "E_mean": "mean extend length", "E_total": "sum of extend lengths (ΣE)",
    "P_max": "longest prefix (cached tokens) of a sequence", "P_min": "shortest prefix",
    "P_mean": "mean prefix length", "P_total": "sum of prefix lengths (ΣP)",
    "H_q": "query heads", "H_kv": "key/value heads", "G": "GQA group size H_q / H_kv",
    "D_qk": "query/key head dim", "D_v": "value head dim",
    "D_qk_tile": "query/key head dim as the kernel loads it (common.head_dim_blocks: next power of two, at least "
                 "16; 192 = 128+64, 288 = 256+32, 576 = 512+64)",
    "D_v_tile": "value head dim as the kernel loads it (next power of two, at least 16)",
    "D_kv_tile": "K/V columns loaded per key (D_qk_tile + D_v_tile; D_qk_tile for MLA, where V is a view of K)",
    "elem": "bytes per element of the case's dtype",
    "mla": "1 if V is a view of K (MLA), else 0", "causal": "1 if causal in the extend part",
    "window": "sliding window size (<= 0: none)",
    "prefix_kv_bytes": "bytes of the prefix's K and V rows in the cache, P_total x (H_kv x (D_qk + D_v), or D_qk "
                       "for MLA) x elem: what one pre-gather pass reads (and writes again)",
    "max_offset_elems": "largest element offset into q/o or the KV pool (int32 overflows at 2**31)",
}

FUNCTIONS: dict[str, str] = {
    "seq_tiles": "seq_tiles(rows_per_token, block_m): Σ_b cdiv(E_b * rows_per_token, block_m), the query tiles of "
                 "the batch",
    "split_factor": "split_factor(programs, units): the family's split-KV factor (splits.split_factor) for a "
                    "launch of `programs` programs on `units` compute units, from the case's mean prefix and its "
                    "query rows per sequence (E_mean x G)",
    **{f"tuned_{knob}": f"tuned_{knob}(): {knob} of the configuration the tuned entry point runs for the case's "
       f"class (tuned.class_config; derived values as the family resolves them per call: num_splits 0, "
       f"gather_ahead -1)" for knob in TUNED_KNOBS},
}


def case_values(case: Any) -> dict[str, Any]:
    """Values of `VARIABLES` for `case`.

    ``prefix_kv_bytes = P_total * kv_token * elem`` with ``kv_token = H_kv * (D_qk + D_v)`` elements, or ``D_qk``
    for MLA (V is a view of K, and `prefix_gather.gather_prefix` copies K alone): the prefix part of the task
    spec's compulsory bytes (`spec.bytes_moved`), without the kv_indices. ``max_offset_elems`` counts the KV pool
    of `spec.make_inputs` (`params.POOL_FACTOR` times the prefix slots).

    Raises:
        ValueError: the case parameters are invalid (from `full_params`).
    """
    p = full_params(dict(case.params))
    ext, pre = list(p["extend_lens"]), list(p["prefix_lens"])
    hq, hkv, d, dv = p["num_q_heads"], p["num_kv_heads"], p["head_dim"], p["head_dim_v"]
    elem = ELEMENT_BYTES[p["dtype"]]
    block_d, block_dpe, block_dv = head_dim_blocks(d, dv)
    d_tile = block_d + block_dpe
    slots = int(sum(pre) * POOL_FACTOR) + 3
    kv_token = d if p["mla"] else hkv * (d + dv)  # elements per token, as spec.bytes_moved counts them
    return {
        "B": len(ext), "E_max": max(ext), "E_min": min(ext), "E_mean": sum(ext) / len(ext), "E_total": sum(ext),
        "P_max": max(pre), "P_min": min(pre), "P_mean": sum(pre) / len(pre), "P_total": sum(pre),
        "H_q": hq, "H_kv": hkv, "G": hq // hkv, "D_qk": d, "D_v": dv, "D_qk_tile": d_tile, "D_v_tile": block_dv,
        "D_kv_tile": d_tile if p["mla"] else d_tile + block_dv, "elem": elem, "mla": int(bool(p["mla"])),
        "causal": int(bool(p["is_causal"])), "window": p["sliding_window"],
        "prefix_kv_bytes": sum(pre) * kv_token * elem,
        "max_offset_elems": max(sum(ext) * hq * max(d, dv), slots * hkv * d),
    }


def bind_functions(case: Any) -> dict[str, Callable[..., Any]]:
    """`FUNCTIONS` bound to `case`.

    Raises:
        ValueError: the case parameters are invalid (from `full_params`).
    """
    p = full_params(dict(case.params))
    ext, pre = list(p["extend_lens"]), list(p["prefix_lens"])
    rows_per_sequence = max(1, sum(ext) // len(ext)) * (p["num_q_heads"] // p["num_kv_heads"])

    def seq_tiles(rows_per_token: float, block_m: float) -> int:
        if block_m <= 0:
            raise ValueError("seq_tiles: block_m must be > 0")
        return sum(-(-int(e * rows_per_token) // int(block_m)) for e in ext)

    def splits(programs: float, units: float) -> int:
        return split_factor(int(programs), int(units), sum(pre) // len(pre), rows_per_sequence)

    tuned = class_config(case_shape(case).problem())
    out: dict[str, Callable[..., Any]] = {
        f"tuned_{knob}": (lambda _k=knob: getattr(tuned, _k)) for knob in TUNED_KNOBS}
    return {"seq_tiles": seq_tiles, "split_factor": splits, **out}
