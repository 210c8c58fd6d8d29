"""The entry-point signature a candidate must have: the baseline's, read from the baseline module when it
imports, else the SGLang signature of shared/reference/extend_attention.md ("Interface") with the two trailing
arguments of SGLang 0.5 that the baseline also takes."""

from __future__ import annotations

import importlib
import inspect

from kernels.task import TaskSpec

_EMPTY = inspect.Parameter.empty

#: SGLang ``extend_attention_fwd`` (shared/reference/extend_attention.md, "Interface").
SGLANG_EXTEND_ATTENTION: tuple[tuple[str, object], ...] = (
    ("q_extend", _EMPTY), ("k_extend", _EMPTY), ("v_extend", _EMPTY), ("o_extend", _EMPTY),
    ("k_buffer", _EMPTY), ("v_buffer", _EMPTY), ("qo_indptr", _EMPTY), ("kv_indptr", _EMPTY),
    ("kv_indices", _EMPTY), ("custom_mask", _EMPTY), ("is_causal", _EMPTY), ("mask_indptr", _EMPTY),
    ("max_len_extend", _EMPTY), ("sm_scale", None), ("logit_cap", 0.0), ("skip_prefix_custom_mask", True),
    ("sliding_window_size", -1), ("sinks", None), ("window_kv_offsets", None), ("xai_temperature_len", -1),
)

_FALLBACK = {"extend_attention_fwd": SGLANG_EXTEND_ATTENTION}


def expected_parameters(task: TaskSpec) -> tuple[tuple[str, object], ...] | None:
    """``(name, default)`` pairs of the task's baseline entry point (``inspect.Parameter.empty`` = required),
    or the documented fallback when the baseline module is not importable; None when neither exists."""
    try:
        fn = getattr(importlib.import_module(task.baseline_module), task.entry_point)
    except (ImportError, AttributeError):
        return _FALLBACK.get(task.entry_point)
    return tuple((p.name, p.default) for p in inspect.signature(fn).parameters.values())
