"""The named variables pattern formulas may read: chip profile, case, and diagnosis, plus the task's helpers.

Profile variables are the scalar and feature fields of `HardwareProfile` (``num_compute_units``,
``smem_per_block_kb``, ..., ``tensor_memory_accelerator`` (a bool); ``None`` when the profile does not know them),
``peak_tflops_<dtype>`` for every dtype of `PEAK_DTYPES`, and three derived ones for the case's dtype:
``peak_flops`` (FLOP/s), ``peak_bw`` (bytes/s) and ``ridge`` (FLOP/byte, peak_flops / peak_bw; Williams et al.,
"Roofline", CACM 2009).

Case variables come from the task (`CASE_VARIABLES[task]`); for ``extend_attention`` they are listed in
`EXTEND_ATTENTION_VARIABLES` with their meaning and unit. Diagnosis variables (`DIAGNOSIS_VARIABLES`) hold the
measured state of the current kernel when the agent passes one, else ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from hardware_profiles.schema import PEAK_DTYPES, PROFILE_FIELDS, HardwareProfile
from kernels.task import Case

#: Profile dtype key used for the peak FLOP/s of an input dtype (fp32 GEMMs on tensor-core GPUs run as tf32
#: when allowed; the fp32 peak is the fallback).
PEAK_KEYS: dict[str, tuple[str, ...]] = {
    "bfloat16": ("bf16",), "float16": ("fp16",), "float32": ("tf32", "fp32"), "float64": ("fp64",),
}

DERIVED_PROFILE_VARIABLES: dict[str, str] = {
    "peak_flops": "dense peak FLOP/s of the chip for the case's dtype",
    "peak_bw": "peak device-memory bandwidth, bytes/s (mem_bw_gbps * 1e9)",
    "ridge": "ridge point peak_flops / peak_bw, FLOP/byte",
}

PROFILE_VARIABLES: dict[str, str] = {
    **{name: f"profile field {name} ({unit})" for name, unit in PROFILE_FIELDS.items()},
    **{f"peak_tflops_{d}": f"profile peak_tflops.{d} (TFLOP/s)" for d in PEAK_DTYPES},
    **DERIVED_PROFILE_VARIABLES,
}

DIAGNOSIS_VARIABLES: dict[str, str] = {
    "diag_time_us": "measured time of the current kernel on this case, microseconds",
    "diag_roofline_fraction": "floor_us / time_us of the current kernel (1.0 = at the roofline floor)",
    "diag_host_overhead_us": "measured host-side time per call (allocations, device-to-host syncs), microseconds",
    "diag_programs": "programs the current kernel launches for this case",
}

EXTEND_ATTENTION_VARIABLES: dict[str, str] = {
    "B": "sequences in the batch",
    "E_max": "longest extend (new tokens) of a sequence", "E_min": "shortest extend",
    "E_mean": "mean extend length", "E_total": "sum of extend lengths (ΣE)",
    "P_max": "longest prefix (cached tokens) of a sequence", "P_min": "shortest prefix",
    "P_mean": "mean prefix length", "P_total": "sum of prefix lengths (ΣP)",
    "H_q": "query heads", "H_kv": "key/value heads", "G": "GQA group size H_q / H_kv",
    "D_qk": "query/key head dim", "D_v": "value head dim",
    "D_qk_tile": "query/key head dim as the kernel loads it (next power of two; 192 = 128+64, 576 = 512+64)",
    "D_v_tile": "value head dim as the kernel loads it",
    "D_kv_tile": "K/V columns loaded per key (D_qk_tile + D_v_tile; D_qk_tile for MLA, where V is a view of K)",
    "elem": "bytes per element of the case's dtype",
    "mla": "1 if V is a view of K (MLA), else 0", "causal": "1 if causal in the extend part",
    "window": "sliding window size (<= 0: none)",
    "flops": "compulsory FLOPs of the case (task spec flops(case))",
    "bytes": "compulsory device-memory bytes of the case (task spec bytes(case))",
    "intensity": "arithmetic intensity flops / bytes, FLOP/byte",
    "prefix_kv_bytes": "bytes of the prefix's K and V rows in the cache, P_total x (H_kv x (D_qk + D_v), or D_qk "
                       "for MLA) x elem: what one pre-gather pass reads (and writes again)",
    "max_offset_elems": "largest element offset into q/o or the KV pool (int32 overflows at 2**31)",
}

#: Case variables and helper functions per task name.
CASE_VARIABLES: dict[str, dict[str, str]] = {"extend_attention": EXTEND_ATTENTION_VARIABLES}

#: Helper functions formulas may call per task (names only; bound to the case by `case_functions`).
TASK_FUNCTIONS: dict[str, dict[str, str]] = {
    "extend_attention": {
        "seq_tiles": "seq_tiles(rows_per_token, block_m): Σ_b cdiv(E_b * rows_per_token, block_m), the query "
                     "tiles of the batch",
        "split_time": "split_time(programs, units, resident_min, resident_max, splits, merge_fraction, tiles, "
                      "fill): modeled time of a split-KV launch relative to the ideal stream (wave quantization "
                      "averaged over the plausible residency, pipeline fill, partial-merge traffic)",
        "best_split": "best_split(programs, units, resident_min, resident_max, max_splits, merge_fraction, tiles, "
                      "fill): power-of-two split count <= max_splits with the smallest split_time (ties: fewer)",
    },
}


def known_variables(task: str) -> dict[str, str]:
    """Every variable name a formula for `task` may read, with its description (rule outputs excluded).

    Raises:
        KeyError: `task` has no case variables.
    """
    if task not in CASE_VARIABLES:
        raise KeyError(f"no case variables for task {task!r}; known: {sorted(CASE_VARIABLES)}")
    return {**PROFILE_VARIABLES, **CASE_VARIABLES[task], **DIAGNOSIS_VARIABLES}


def profile_variables(profile: HardwareProfile, dtype: str) -> dict[str, float | bool | None]:
    """Profile variables of `profile` for input dtype name `dtype` (``bfloat16``, ``float16``, ``float32``).

    Unknown facts are ``None``; ``peak_flops``/``ridge`` are ``None`` when no peak of the dtype is known.
    """
    out: dict[str, float | bool | None] = {name: profile.get(name) for name in PROFILE_FIELDS}
    for d in PEAK_DTYPES:
        out[f"peak_tflops_{d}"] = profile.peak_flops(d) / 1e12 if profile.peak_flops(d) is not None else None
    peak = next((profile.peak_flops(k) for k in PEAK_KEYS.get(dtype, ()) if profile.peak_flops(k)), None)
    bw = profile.peak_bytes_per_s()
    out.update(peak_flops=peak, peak_bw=bw, ridge=peak / bw if peak and bw else None)
    return out


def diagnosis_variables(diagnosis: Any) -> dict[str, float | None]:
    """Diagnosis variables from a mapping or an object with attributes ``time_us``, ``roofline_fraction``,
    ``host_overhead_us``, ``programs`` (any may be missing: ``None``)."""
    def read(name: str) -> float | None:
        if diagnosis is None:
            return None
        value = diagnosis.get(name) if isinstance(diagnosis, Mapping) else getattr(diagnosis, name, None)
        return None if value is None else float(value)

    return {f"diag_{n}": read(n) for n in ("time_us", "roofline_fraction", "host_overhead_us", "programs")}


def padded_head_dim(d: int) -> int:
    """Head-dim width a Triton attention kernel loads: the next power of two (at least 16, the smallest `tl.dot`
    size), except dims above 128 that are a power of two plus a smaller one (192 = 128+64, 288 = 256+32,
    576 = 512+64), loaded as two pieces.

    Source: shared/reference/extend_attention.md ("80, 96 -> 128; 13 -> 16; 576 is split 512+64 and 192 into
    128+64"), as in SGLang's extend_attention.py.
    """
    if d <= 16:
        return 16
    big = 1 << (d.bit_length() - 1)
    rest = d - big
    if rest == 0 or (d > 128 and rest & (rest - 1) == 0):
        return d
    return big << 1


def extend_attention_variables(case: Case) -> dict[str, Any]:
    """Case variables of an extend-attention case (see `EXTEND_ATTENTION_VARIABLES`).

    ``prefix_kv_bytes = P_total * kv_token * elem`` with ``kv_token = H_kv * (D_qk + D_v)`` elements, or ``D_qk``
    for MLA (V is a view of K, and `prefix_gather.gather_prefix` copies K alone): the prefix part of the task
    spec's compulsory bytes (`kernels.extend_attention.spec.bytes_moved`), without the kv_indices.

    Raises:
        ValueError: the case parameters are invalid (from `full_params`).
    """
    from kernels.extend_attention.cases import full_params
    from kernels.extend_attention.spec import POOL_FACTOR, bytes_moved, flops

    p = full_params(dict(case.params))
    ext, pre = list(p["extend_lens"]), list(p["prefix_lens"])
    hq, hkv, d, dv = p["num_q_heads"], p["num_kv_heads"], p["head_dim"], p["head_dim_v"]
    elem = {"bfloat16": 2, "float16": 2, "float32": 4}[p["dtype"]]
    d_tile, dv_tile = padded_head_dim(d), padded_head_dim(dv)
    fl, by = flops(case), bytes_moved(case)
    slots = int(sum(pre) * POOL_FACTOR) + 3
    kv_token = d if p["mla"] else hkv * (d + dv)  # elements per token, as spec.bytes_moved counts them
    return {
        "B": len(ext), "E_max": max(ext), "E_min": min(ext), "E_mean": sum(ext) / len(ext), "E_total": sum(ext),
        "P_max": max(pre), "P_min": min(pre), "P_mean": sum(pre) / len(pre), "P_total": sum(pre),
        "H_q": hq, "H_kv": hkv, "G": hq // hkv, "D_qk": d, "D_v": dv, "D_qk_tile": d_tile, "D_v_tile": dv_tile,
        "D_kv_tile": d_tile if p["mla"] else d_tile + dv_tile, "elem": elem, "mla": int(bool(p["mla"])),
        "causal": int(bool(p["is_causal"])), "window": p["sliding_window"], "flops": fl, "bytes": by,
        "intensity": fl / by if by else 0.0, "prefix_kv_bytes": sum(pre) * kv_token * elem,
        "max_offset_elems": max(sum(ext) * hq * max(d, dv), slots * hkv * d),
    }


def split_time(programs: float, units: float, resident_min: float, resident_max: float, splits: float,
               merge_fraction: float, tiles: float, fill: float) -> float:
    """Modeled time of streaming the prefix with `splits` KV splits, relative to a perfectly balanced stream.

    - Wave quantization: for `resident` programs per compute unit, ``slots = units * resident`` and the factor is
      ``ceil(w) / w`` with ``w = programs * splits / slots`` (the last wave runs partly empty). The compiled
      kernel's residency is not known before compiling, so the factor is averaged over every resident count from
      `resident_min` (the estimated footprint) to `resident_max` (a footprint of one pipeline stage).
    - Pipeline fill: each program leaves about `fill` K/V tile times unhidden (its first loads), out of the
      ``tiles / splits`` tiles it streams: factor ``1 + fill * splits / tiles``.
    - Merge: ``splits * merge_fraction`` for writing and re-reading fp32 partial outputs and LSE (splits > 1).

    Sources: FlashAttention-2 ``num_splits_heuristic`` (wave efficiency n_waves / ceil(n_waves)); Flash-Decoding
    (Dao et al., 2023) for the partial-output merge.

    Raises:
        ValueError: programs, units, tiles <= 0, resident_min < 1, resident_max < resident_min or splits < 1.
    """
    lo, hi = int(resident_min), int(resident_max)
    if programs <= 0 or units <= 0 or tiles <= 0 or lo < 1 or hi < lo or splits < 1:
        raise ValueError(f"split_time needs programs, units, tiles > 0, 1 <= resident_min <= resident_max, "
                         f"splits >= 1 (got {programs}, {units}, {tiles}, {resident_min}, {resident_max}, {splits})")
    quant = 0.0
    for resident in range(lo, hi + 1):
        waves = programs * splits / (units * resident)
        quant += math.ceil(waves) / waves
    merge = splits * merge_fraction if splits > 1 else 0.0
    return quant / (hi - lo + 1) * (1.0 + fill * splits / tiles) + merge


def best_split(programs: float, units: float, resident_min: float, resident_max: float, max_splits: float,
               merge_fraction: float, tiles: float, fill: float) -> int:
    """The power of two s <= max_splits minimizing `split_time` (ties go to fewer splits); 1 if max_splits < 2."""
    def t(s: int) -> float:
        return split_time(programs, units, resident_min, resident_max, s, merge_fraction, tiles, fill)

    best, best_time = 1, t(1)
    s = 2
    while s <= max_splits:
        if t(s) < best_time - 1e-12:
            best, best_time = s, t(s)
        s *= 2
    return best


def case_functions(task: str, case: Case) -> dict[str, Callable[..., Any]]:
    """Helper functions of `task` bound to `case` (see `TASK_FUNCTIONS`)."""
    if task != "extend_attention":
        return {}
    from kernels.extend_attention.cases import full_params

    ext = list(full_params(dict(case.params))["extend_lens"])

    def seq_tiles(rows_per_token: float, block_m: float) -> int:
        if block_m <= 0:
            raise ValueError("block_m must be > 0")
        return sum(-(-int(e * rows_per_token) // int(block_m)) for e in ext)

    return {"seq_tiles": seq_tiles, "split_time": split_time, "best_split": best_split}


def case_variables(task: str, case: Case) -> dict[str, Any]:
    """Case variables of `case` for `task`.

    Raises:
        KeyError: `task` has no case variables.
    """
    if task == "extend_attention":
        return extend_attention_variables(case)
    raise KeyError(f"no case variables for task {task!r}; known: {sorted(CASE_VARIABLES)}")


def case_dtype(task: str, case: Case) -> str:
    """Input dtype name of `case` (``bfloat16`` when the case does not say)."""
    return str(dict(case.params).get("dtype", "bfloat16"))
