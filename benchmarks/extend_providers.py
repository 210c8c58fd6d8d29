"""The extend-attention bench's providers: ours (baseline, tuned, or a kernel file such as a run's best candidate),
SGLang 0.5.23's own Triton kernel, torch flex_attention and FlashInfer, each turning the task's input sets into its
own call on the same tensors.

A provider's `setup(sets)` returns its prepared arguments per input set (work a serving engine does once, outside
the timed region: gathering K/V for flex and building its block mask; appending the extend K/V to the cache and
`plan()` for FlashInfer), `call(**prepared)` runs it and `output(prepared, result)` gives its answer as
[ΣE, H_q, D_v] for the check against the float32 reference. A provider that cannot run here raises `Unavailable`
with the reason.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kernels.extend_attention import baseline, extend_attention_fwd

#: FlashInfer's float workspace (its examples use 128 MiB).
FLASHINFER_WORKSPACE_BYTES = 128 << 20


class Unavailable(RuntimeError):
    """The provider cannot run in this process; the message says why."""


@dataclass
class Provider:
    """One provider of the bench (see the module docstring)."""

    name: str
    setup: Callable[[list[dict]], list[dict]]
    call: Callable[..., Any]
    output: Callable[[dict, Any], torch.Tensor]


def baseline_provider() -> Provider:
    """The SGLang-structured baseline, ``kernels.extend_attention.baseline``."""
    return Provider("baseline", lambda sets: sets, baseline.extend_attention_fwd, lambda a, _: a["o_extend"])


def tuned_provider() -> Provider:
    """The tuned entry point, ``kernels.extend_attention.extend_attention_fwd``."""
    return Provider("tuned", lambda sets: sets, extend_attention_fwd, lambda a, _: a["o_extend"])


def file_provider(name: str, path: str) -> Provider:
    """The ``extend_attention_fwd`` of a kernel file, e.g. a run's best candidate (``chiplore report`` writes it as
    ``extend_attention_best_v<N>.py``), imported under the module name `name`.

    Raises:
        Unavailable: the file does not exist or defines no ``extend_attention_fwd``.
    """
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_kernel_{name}", path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise Unavailable(f"kernel file {path!r} not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, "extend_attention_fwd", None)
    if fn is None:
        raise Unavailable(f"kernel file {path!r} defines no extend_attention_fwd")
    return Provider(name, lambda sets: sets, fn, lambda a, _: a["o_extend"])


def sglang_provider() -> Provider:
    """SGLang 0.5.23's ``extend_attention_fwd`` from ``.cache/sglang`` (`benchmarks.sglang_kernel`), called with the
    task's arguments (SGLang's own signature)."""
    from benchmarks.sglang_kernel import SGLangUnavailable, load

    try:
        fn = load().extend_attention_fwd
    except SGLangUnavailable as exc:
        raise Unavailable(str(exc)) from None
    return Provider("sglang", lambda sets: sets, fn, lambda a, _: a["o_extend"])


def _contiguous_kv(args: dict) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per sequence its prefix K/V (gathered through kv_indices) and its extend K/V, in sequence order."""
    qo, kv = args["qo_indptr"].tolist(), args["kv_indptr"].tolist()
    ks, vs = [], []
    for b in range(len(qo) - 1):
        slots = args["kv_indices"][kv[b]:kv[b + 1]]
        ks += [args["k_buffer"][slots], args["k_extend"][qo[b]:qo[b + 1]]]
        vs += [args["v_buffer"][slots], args["v_extend"][qo[b]:qo[b + 1]]]
    return ks, vs


def flex_inputs(args: dict, compiled: bool) -> dict:
    """Contiguous per-sequence K/V ([1, H_kv, Σ(P+E), D]), Q ([1, H_q, ΣE, D]) and a document-causal block mask."""
    from torch.nn.attention.flex_attention import create_block_mask

    qo, kv = args["qo_indptr"].tolist(), args["kv_indptr"].tolist()
    q_doc, q_pos, kv_doc, kv_pos = [], [], [], []
    for b in range(len(qo) - 1):
        e, p = qo[b + 1] - qo[b], kv[b + 1] - kv[b]
        q_doc += [b] * e
        q_pos += list(range(p, p + e))
        kv_doc += [b] * (p + e)
        kv_pos += list(range(p + e))
    ks, vs = _contiguous_kv(args)
    dev = args["q_extend"].device
    qd, qp, kd, kp = (torch.tensor(x, device=dev) for x in (q_doc, q_pos, kv_doc, kv_pos))

    def mask_mod(b, h, q_idx, kv_idx):
        return (qd[q_idx] == kd[kv_idx]) & (kp[kv_idx] <= qp[q_idx])

    block = 128 if compiled else 16
    block_mask = create_block_mask(mask_mod, None, None, len(q_doc), len(kv_doc), device=dev, BLOCK_SIZE=block)
    return {
        "query": args["q_extend"].transpose(0, 1).unsqueeze(0).contiguous(),
        "key": torch.cat(ks).transpose(0, 1).unsqueeze(0).contiguous(),
        "value": torch.cat(vs).transpose(0, 1).unsqueeze(0).contiguous(),
        "block_mask": block_mask,
        "scale": args["sm_scale"] if args["sm_scale"] is not None else 1.0 / math.sqrt(args["q_extend"].shape[2]),
    }


_FLEX: dict[bool, Callable] = {}


def flex_fn(compiled: bool) -> Callable:
    """flex_attention with GQA enabled, torch.compile'd on a GPU (compiled once per process), eager on the CPU."""
    if compiled not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention

        impl = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
        _FLEX[compiled] = lambda **kw: impl(**kw, enable_gqa=True)
    return _FLEX[compiled]


def flex_provider(compiled: bool = True) -> Provider:
    """torch flex_attention on K/V gathered into contiguous order, with a prebuilt block mask (both setup)."""
    return Provider("flex_attention", lambda sets: [flex_inputs(s, compiled) for s in sets], flex_fn(compiled),
                    lambda _, out: out[0].transpose(0, 1))


def _import_flashinfer():
    path = os.environ.get("CHIPLORE_FLASHINFER_PATH")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    if not torch.cuda.is_available():
        raise Unavailable("FlashInfer needs a CUDA GPU")
    try:
        import flashinfer
    except Exception as exc:  # noqa: BLE001 - an optional peer: any import failure is its reason to skip
        raise Unavailable(f"flashinfer is not importable ({type(exc).__name__}: {str(exc)[:200]}); "
                          "CHIPLORE_FLASHINFER_PATH names its install folder") from None
    return flashinfer


def _pages(args: dict, slots: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(kv_indptr, page indices, kv lengths) with pages of one token: each sequence's prefix slots, then its extend
    tokens at the slots `slots` + their row (where the setup appends them to the cache)."""
    qo, kv = args["qo_indptr"].long().tolist(), args["kv_indptr"].long().tolist()
    dev = args["q_extend"].device
    pages, lens = [], []
    for b in range(len(qo) - 1):
        pages += [args["kv_indices"][kv[b]:kv[b + 1]], torch.arange(slots + qo[b], slots + qo[b + 1], device=dev)]
        lens.append(kv[b + 1] - kv[b] + qo[b + 1] - qo[b])
    kv_len = torch.tensor(lens, dtype=torch.int32, device=dev)
    indptr = torch.zeros(len(lens) + 1, dtype=torch.int32, device=dev)
    indptr[1:] = torch.cumsum(kv_len, 0)
    return indptr, torch.cat(pages).int(), kv_len


def _scale(args: dict) -> float:
    return args["sm_scale"] if args["sm_scale"] is not None else args["q_extend"].shape[2] ** -0.5


def _flashinfer_mha(fi, args: dict) -> dict:
    q = args["q_extend"]
    slots = args["k_buffer"].shape[0]
    k_cache = torch.cat([args["k_buffer"], args["k_extend"]]).unsqueeze(1)  # NHD pages of one token
    v_cache = torch.cat([args["v_buffer"], args["v_extend"]]).unsqueeze(1)
    indptr, pages, kv_len = _pages(args, slots)
    wrapper = fi.BatchPrefillWithPagedKVCacheWrapper(
        torch.empty(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device=q.device), "NHD", backend="auto")
    wrapper.plan(args["qo_indptr"].int(), indptr, pages, torch.ones_like(kv_len), q.shape[1],
                 args["k_extend"].shape[1], q.shape[2], 1, head_dim_vo=args["v_extend"].shape[2], causal=True,
                 sm_scale=_scale(args), q_data_type=q.dtype, kv_data_type=q.dtype)
    return {"run": lambda: wrapper.run(q, (k_cache, v_cache), out=args["o_extend"]), "o_extend": args["o_extend"]}


def _flashinfer_mla(fi, args: dict) -> dict:
    from flashinfer.mla import BatchMLAPagedAttentionWrapper

    q, dv = args["q_extend"], args["v_extend"].shape[2]
    slots = args["k_buffer"].shape[0]
    cache = torch.cat([args["k_buffer"][:, 0], args["k_extend"][:, 0]])
    indptr, pages, kv_len = _pages(args, slots)
    wrapper = BatchMLAPagedAttentionWrapper(
        torch.empty(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device=q.device), backend="auto")
    wrapper.plan(args["qo_indptr"].int(), indptr, pages, kv_len, q.shape[1], dv, q.shape[2] - dv, 1, True,
                 _scale(args), q.dtype, q.dtype)
    q_nope, q_pe = q[..., :dv].contiguous(), q[..., dv:].contiguous()
    ckv, kpe = cache[:, :dv].contiguous().unsqueeze(1), cache[:, dv:].contiguous().unsqueeze(1)
    return {"run": lambda: wrapper.run(q_nope, q_pe, ckv, kpe, out=args["o_extend"]), "o_extend": args["o_extend"]}


def flashinfer_provider() -> Provider:
    """FlashInfer: ``BatchPrefillWithPagedKVCacheWrapper`` (pages of one token, ``backend="auto"``), or
    ``BatchMLAPagedAttentionWrapper`` when V is a view of K's first columns (MLA); the extend K/V are appended to
    a copy of the cache and ``plan()`` runs in setup. Only causal calls without window, mask, cap or sinks."""
    fi = _import_flashinfer()

    def setup(sets: list[dict]) -> list[dict]:
        a = sets[0]
        if (a["custom_mask"] is not None or not a["is_causal"] or a["sliding_window_size"] > 0 or a["logit_cap"]
                or a["sinks"] is not None or (a["k_scale"], a["v_scale"]) != (1.0, 1.0)):
            raise Unavailable("the bench's FlashInfer call covers causal attention without masks, caps or sinks")
        mla = a["v_buffer"].data_ptr() == a["k_buffer"].data_ptr()
        return [(_flashinfer_mla if mla else _flashinfer_mha)(fi, s) for s in sets]

    return Provider("flashinfer", setup, lambda run, o_extend: run(), lambda a, _: a["o_extend"])


PROVIDERS: dict[str, Callable[[], Provider]] = {
    "baseline": baseline_provider, "tuned": tuned_provider, "sglang": sglang_provider, "flex_attention": flex_provider,
    "flashinfer": flashinfer_provider}
