"""The named variables pattern formulas may read: chip profile, case and diagnosis, plus helper functions.

Profile variables are the scalar and feature fields of `HardwareProfile` (``num_compute_units``,
``smem_per_block_kb``, ..., ``tensor_memory_accelerator`` (a bool); ``None`` when the profile does not know them),
``peak_tflops_<dtype>`` for every dtype of `PEAK_DTYPES`, and three derived ones for the case's dtype:
``peak_flops`` (FLOP/s), ``peak_bw`` (bytes/s) and ``ridge`` (FLOP/byte; `hardware_profiles.peaks`).

Case variables: ``flops``, ``bytes`` and ``intensity`` of every task (its spec's compulsory FLOPs and bytes), plus
the task's own (`kernels.task.FormulaVariables`, e.g. kernels/extend_attention/variables.py). Diagnosis variables
(`DIAGNOSIS_VARIABLES`) hold the measured state of the current kernel when the agent passes one, else ``None``.
Functions: `GENERIC_FUNCTIONS` plus the task's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from hardware_profiles.peaks import dtype_peak_flops, ridge_flop_per_byte
from hardware_profiles.schema import PEAK_DTYPES, PROFILE_FIELDS, HardwareProfile
from kernels.task import Case, TaskSpec, load_task

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

#: Case variables every task has (`TaskSpec.flops`, `TaskSpec.bytes`).
COMMON_CASE_VARIABLES: dict[str, str] = {
    "flops": "compulsory FLOPs of the case (task spec flops(case))",
    "bytes": "compulsory device-memory bytes of the case (task spec bytes(case))",
    "intensity": "arithmetic intensity flops / bytes, FLOP/byte",
}

#: Helper functions of every task's formulas.
GENERIC_FUNCTIONS: dict[str, str] = {
    "split_time": "split_time(programs, units, resident_min, resident_max, splits, merge_fraction, tiles, fill): "
                  "modeled time of a split launch (split-KV, split-K) relative to the ideal stream (wave "
                  "quantization averaged over the plausible residency, pipeline fill, partial-merge traffic)",
}


def _spec(task: TaskSpec | str) -> TaskSpec:
    return task if isinstance(task, TaskSpec) else load_task(task)


def known_variables(task: TaskSpec | str) -> dict[str, str]:
    """Every variable name a formula for `task` may read, with its description (rule outputs excluded).

    Raises:
        KeyError: unknown task name (from `kernels.task.load_task`).
    """
    spec = _spec(task)
    own = dict(spec.variables.variables) if spec.variables else {}
    return {**PROFILE_VARIABLES, **COMMON_CASE_VARIABLES, **own, **DIAGNOSIS_VARIABLES}


def function_names(task: TaskSpec | str) -> set[str]:
    """Names of the helper functions a formula for `task` may call (besides knowledge.formula's built-ins).

    Raises:
        KeyError: unknown task name.
    """
    spec = _spec(task)
    return set(GENERIC_FUNCTIONS) | (set(spec.variables.functions) if spec.variables else set())


def profile_variables(profile: HardwareProfile, dtype: str) -> dict[str, float | bool | None]:
    """Profile variables of `profile` for input dtype name `dtype` (``bfloat16``, ``float16``, ``float32``).

    Unknown facts are ``None``; ``peak_flops``/``ridge`` are ``None`` when no peak of the dtype is known.

    Raises:
        ValueError: `dtype` has no peak mapping (`hardware_profiles.peaks.PEAK_KEYS`).
    """
    out: dict[str, float | bool | None] = {name: profile.get(name) for name in PROFILE_FIELDS}
    for d in PEAK_DTYPES:
        out[f"peak_tflops_{d}"] = profile.peak_flops(d) / 1e12 if profile.peak_flops(d) is not None else None
    out.update(peak_flops=dtype_peak_flops(profile, dtype), peak_bw=profile.peak_bytes_per_s(),
               ridge=ridge_flop_per_byte(profile, dtype))
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


def case_variables(task: TaskSpec | str, case: Case) -> dict[str, Any]:
    """Case variables of `case` for `task`: `COMMON_CASE_VARIABLES` and the task's own.

    Raises:
        KeyError: unknown task name. ValueError: invalid case parameters (from the task).
    """
    spec = _spec(task)
    fl, by = float(spec.flops(case)), float(spec.bytes(case))
    common = {"flops": fl, "bytes": by, "intensity": fl / by if by else 0.0}
    return {**common, **(spec.variables.values(case) if spec.variables else {})}


def case_functions(task: TaskSpec | str, case: Case) -> dict[str, Callable[..., Any]]:
    """`GENERIC_FUNCTIONS` and the task's helper functions bound to `case`.

    Raises:
        KeyError: unknown task name.
    """
    spec = _spec(task)
    return {"split_time": split_time, **(spec.variables.bind(case) if spec.variables else {})}


def split_time(programs: float, units: float, resident_min: float, resident_max: float, splits: float,
               merge_fraction: float, tiles: float, fill: float) -> float:
    """Modeled time of streaming the split axis (a prefix, a reduction) in `splits` splits, relative to a perfectly
    balanced stream.

    - Wave quantization: for `resident` programs per compute unit, ``slots = units * resident`` and the factor is
      ``ceil(w) / w`` with ``w = programs * splits / slots`` (the last wave runs partly empty). The compiled
      kernel's residency is not known before compiling, so the factor is averaged over every resident count from
      `resident_min` (the estimated footprint) to `resident_max` (a footprint of one pipeline stage).
    - Pipeline fill: each program leaves about `fill` tile times unhidden (its first loads), out of the
      ``tiles / splits`` tiles it streams: factor ``1 + fill * splits / tiles``.
    - Merge: ``splits * merge_fraction`` for writing and re-reading fp32 partial results (splits > 1).

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
