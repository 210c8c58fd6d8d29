"""The ways SGLang 0.5.23 calls ``extend_attention_fwd``, and the entry points that must accept them: the tuned one,
the baseline and the report's drop-in package (a family candidate rendered by the agent, written by
`agent.dropin.write_dropin`, imported from its folder).

Call styles (SGLang 0.5.23: the unit tests of ``test/registered/attention/test_triton_attention_kernels.py`` and
``srt/layers/attention/triton_backend.py``):
- ``positional``: ``(q, k, v, o, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal,
  mask_indptr, max_len_extend, 1.0, 1.0)``, then the features by keyword;
- ``keyword``: every argument by name, ``k_scale=..., v_scale=..., extend_seq_lens_cpu=[...]``;
- ``backend``: ``TritonAttnBackend.forward_extend``'s call: positional through ``sm_scale`` (``k_descale, v_descale,
  layer.scaling``), then ``logit_cap, sliding_window_size, sinks, window_kv_offsets, xai_temperature_len=-1,
  page_size, score_mod=None, aux_tensors=None, extend_seq_lens_cpu`` (and ``skip_prefix_custom_mask`` where a case
  sets it to False, which the backend itself never does).
Every style passes ``window_kv_offsets`` (zeros) where SGLang's kernel needs it: a custom mask with a window.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernels.extend_attention import baseline, extend_attention_fwd

REQUIRED = ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr",
            "kv_indices", "custom_mask", "is_causal", "mask_indptr", "max_len_extend")
FEATURES = ("logit_cap", "skip_prefix_custom_mask", "sliding_window_size", "sinks")


def _seq_lens(args: dict[str, Any]) -> list[int]:
    qo = args["qo_indptr"].tolist()
    return [qo[i + 1] - qo[i] for i in range(len(qo) - 1)]


def _offsets(args: dict[str, Any]) -> dict[str, Any]:
    """``window_kv_offsets`` (zeros) where SGLang's kernel reads it: a custom mask with a sliding window (it loads
    the offsets unconditionally there, and its backend always passes them then)."""
    if args.get("custom_mask") is None or args.get("sliding_window_size", -1) <= 0:
        return {}
    batch = args["qo_indptr"].shape[0] - 1
    return {"window_kv_offsets": torch.zeros(batch, dtype=torch.int32, device=args["qo_indptr"].device)}


def positional(fn: Callable, args: dict[str, Any]) -> Any:
    return fn(*(args[n] for n in REQUIRED), args["k_scale"], args["v_scale"], sm_scale=args.get("sm_scale"),
              **{n: args[n] for n in FEATURES if n in args}, **_offsets(args))


def keyword(fn: Callable, args: dict[str, Any]) -> Any:
    return fn(**args, extend_seq_lens_cpu=_seq_lens(args), **_offsets(args))


def backend(fn: Callable, args: dict[str, Any]) -> Any:
    scale = args.get("sm_scale")
    if scale is None:
        scale = args["q_extend"].shape[-1] ** -0.5  # layer.scaling
    extra = {} if args.get("skip_prefix_custom_mask", True) else {"skip_prefix_custom_mask": False}
    return fn(*(args[n] for n in REQUIRED), args["k_scale"], args["v_scale"], scale,
              logit_cap=args.get("logit_cap", 0.0), sliding_window_size=args.get("sliding_window_size", -1),
              sinks=args.get("sinks"), window_kv_offsets=_offsets(args).get("window_kv_offsets"),
              xai_temperature_len=-1, page_size=1, score_mod=None, aux_tensors=None,
              extend_seq_lens_cpu=_seq_lens(args), **extra)


CALL_STYLES: dict[str, Callable[[Callable, dict[str, Any]], Any]] = {
    "positional": positional, "keyword": keyword, "backend": backend}

#: The drop-in's table: packed GQA with split-KV for the memory-bound classes, the pre-gathered prefix through
#: descriptors for the compute-bound ones (knob names of kernels/extend_attention/spec.py KNOBS).
DROPIN_TABLE = {
    "memory": dict(block_m=16, block_n=64, num_warps=4, num_stages=2, num_splits=0, pack_gqa=True, pregather=False,
                   tma=False),
    "compute": dict(block_m=64, block_n=64, num_warps=4, num_stages=2, num_splits=1, pack_gqa=True, pregather=True,
                    tma=True),
}


@functools.lru_cache(maxsize=1)
def dropin_entry_point() -> Callable:
    """``extend_attention_fwd`` of a drop-in package written as `chiplore report` writes it, from a family candidate
    rendered by the agent (`FamilySpace.render`, the H200 profile) with `DROPIN_TABLE`; imported from its folder."""
    from agent.dropin import write_dropin
    from agent.family_space import FamilySpace
    from hardware_profiles import load_profile
    from kernels.extend_attention.spec import TASK

    space = FamilySpace(TASK, load_profile("h200"), list(TASK.bench_cases))
    table = {key: DROPIN_TABLE[key.split("-")[0]] for key in space.full_table({})}
    source = space.render(table, inspect.signature(baseline.extend_attention_fwd),
                          {"id": "v1", "parent_id": "v0", "generation": 1, "patterns": [], "rationale": "",
                           "run_id": "sglang-tests", "chip": "h200"})
    folder = Path(tempfile.mkdtemp(prefix="chiplore-dropin-"))
    candidate = folder / "kernel_v1.py"
    candidate.write_text(source)
    write_dropin(candidate, folder / "dropin", TASK.dropin, TASK.entry_point)
    sys.path.insert(0, str(folder / "dropin"))
    return importlib.import_module(TASK.dropin.package).extend_attention_fwd


def entry_points() -> dict[str, Callable]:
    """name -> entry point: the tuned one, the baseline, the report's drop-in."""
    return {"tuned": extend_attention_fwd, "baseline": baseline.extend_attention_fwd, "dropin": dropin_entry_point()}


def fresh(args: dict[str, Any]) -> dict[str, Any]:
    """`args` with a new NaN-filled o_extend (inputs shared)."""
    return {**args, "o_extend": torch.full_like(args["o_extend"], float("nan"))}
