"""GPU suite against SGLang 0.5.23's own kernel (bf16, H200): our tuned entry point, the baseline and the report's
drop-in, called the ways SGLang calls ``extend_attention_fwd``, give SGLang's output, on the 9 bench cases, the edge
cases and the inputs of SGLang's three extend unit tests.

SGLang's kernel comes from ``.cache/sglang`` (``python benchmarks/sglang_kernel.py --fetch``, carried to the GPU
machine). Its unit test file (``test/registered/attention/test_triton_attention_kernels.py``) is in neither the 0.5.23
wheel nor an sdist (PyPI has no sdist of 0.5.23), so the last three tests rebuild its three extend tests' inputs and
calls here: ``test_extend_attention`` (B = 19 sequences of up to N_CTX / 2 prefix and extend tokens, 12/4 heads, head
dims 256, 128, 96, 80, 13, ``max_len_extend, 1.0, 1.0`` positionally, then again with an all-visible-prefix causal
custom mask), ``test_extend_attention_sliding_window`` (64/8 heads, D = 128, windows -1 and 127, k_scale / v_scale
by keyword) and ``test_extend_attention_compact_grid`` (4 ragged sequences, every argument by keyword with
``extend_seq_lens_cpu``). Each output is checked against the float32 reference and against SGLang's.
"""

from __future__ import annotations

import pytest
import torch

from benchmarks.sglang_kernel import SGLangUnavailable, load
from kernels.extend_attention.cases import BENCH_CASES, TEST_CASES
from kernels.extend_attention.reference import reference_extend_attention
from kernels.extend_attention.spec import make_inputs, reference
from tests.kernels.helpers import assert_close_to_reference
from tests.kernels.sglang_calls import CALL_STYLES, entry_points, fresh

pytestmark = pytest.mark.gpu
IMPLS = ("tuned", "baseline", "dropin")
DEVICE = "cuda"

_SGLANG: list = []
_DONE: dict[tuple, tuple] = {}


def sglang():
    if not _SGLANG:
        try:
            _SGLANG.append(load())
        except SGLangUnavailable as exc:
            pytest.skip(str(exc))
    return _SGLANG[0]


def _theirs_and_reference(key: tuple, args: dict, style: str) -> tuple[torch.Tensor, torch.Tensor]:
    """SGLang's output for `args` called in `style`, and the float32 reference; computed once per key."""
    if key not in _DONE:
        theirs = fresh(args)
        CALL_STYLES[style](sglang().extend_attention_fwd, theirs)
        _DONE.clear()  # one case at a time holds GPU memory
        _DONE[key] = (theirs["o_extend"], reference(args)["o_extend"])
    return _DONE[key]


def _check(impl: str, style: str, args: dict, key: tuple, dtype: str) -> None:
    theirs, expected = _theirs_and_reference(key, args, style)
    ours = fresh(args)
    CALL_STYLES[style](entry_points()[impl], ours)
    assert_close_to_reference(theirs, expected, dtype, "sglang")
    assert_close_to_reference(ours["o_extend"], expected, dtype, impl)
    assert_close_to_reference(ours["o_extend"], theirs.float(), dtype, f"{impl} vs sglang")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", BENCH_CASES, ids=[c.id for c in BENCH_CASES])
def test_bench_cases_give_sglangs_output(case, impl):
    args = make_inputs(case, 77, DEVICE)
    _check(impl, "backend", args, ("bench", case.id), "bfloat16")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("style", sorted(CALL_STYLES))
@pytest.mark.parametrize("case", TEST_CASES, ids=[c.id for c in TEST_CASES])
def test_edge_cases_give_sglangs_output(case, impl, style):
    args = make_inputs(case, 78, DEVICE, "bfloat16")
    _check(impl, style, args, ("edge", case.id, style), "bfloat16")


def sglang_test_inputs(batch: int, n_ctx: int, heads_q: int, heads_kv: int, head_dim: int, seed: int = 42,
                       prefix=None, extend=None) -> dict:
    """The layout of SGLang's extend unit tests: per sequence its prefix then its extend tokens in one contiguous
    stretch of the KV buffer (values N(0.1, 0.2)), the extend K/V copied out of it, prefix/extend lengths drawn
    in [1, n_ctx / 2) unless given, int32 indices."""
    dev, dt = DEVICE, torch.bfloat16 if DEVICE == "cuda" else torch.float16
    gen = torch.Generator(device=dev).manual_seed(seed)
    p = torch.tensor(prefix, device=dev) if prefix else torch.randint(1, n_ctx // 2, (batch,), generator=gen,
                                                                         device=dev)
    e = torch.tensor(extend, device=dev) if extend else torch.randint(1, n_ctx // 2, (batch,), generator=gen,
                                                                         device=dev)
    total = p + e
    start = torch.cumsum(total, 0) - total
    kv_indptr = torch.zeros(batch + 1, dtype=torch.int32, device=dev)
    kv_indptr[1:] = torch.cumsum(p, 0)
    qo_indptr = torch.zeros(batch + 1, dtype=torch.int32, device=dev)
    qo_indptr[1:] = torch.cumsum(e, 0)
    kv_indices = torch.cat([torch.arange(int(s), int(s) + int(n), device=dev) for s, n in zip(start, p)]).int()
    ext_rows = torch.cat([torch.arange(int(s + n), int(s + t), device=dev) for s, n, t in zip(start, p, total)])

    def normal(*shape):
        return (torch.randn(*shape, generator=gen, device=dev) * 0.2 + 0.1).to(dt)

    k_buffer, v_buffer = normal(int(total.sum()), heads_kv, head_dim), normal(int(total.sum()), heads_kv, head_dim)
    tokens = int(e.sum())
    return {"q_extend": normal(tokens, heads_q, head_dim), "k_extend": k_buffer[ext_rows].contiguous(),
            "v_extend": v_buffer[ext_rows].contiguous(),
            "o_extend": torch.full((tokens, heads_q, head_dim), float("nan"), dtype=dt, device=dev),
            "k_buffer": k_buffer, "v_buffer": v_buffer, "qo_indptr": qo_indptr, "kv_indptr": kv_indptr,
            "kv_indices": kv_indices, "custom_mask": None, "is_causal": True, "mask_indptr": None,
            "max_len_extend": int(e.max()), "k_scale": 1.0, "v_scale": 1.0}


def _all_visible_prefix_causal_mask(args: dict) -> tuple[torch.Tensor, torch.Tensor]:
    qo, kv = args["qo_indptr"].tolist(), args["kv_indptr"].tolist()
    parts, ptr = [], [0]
    for b in range(len(qo) - 1):
        e, p = qo[b + 1] - qo[b], kv[b + 1] - kv[b]
        causal = torch.ones(e, e, dtype=torch.bool, device=DEVICE).tril()
        parts.append(torch.cat([torch.ones(e, p, dtype=torch.bool, device=DEVICE), causal], 1).flatten())
        ptr.append(ptr[-1] + parts[-1].numel())
    return torch.cat(parts), torch.tensor(ptr, dtype=torch.int64, device=DEVICE)


def _reference(args: dict, **extra) -> torch.Tensor:
    keys = ("q_extend", "k_extend", "v_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr", "kv_indices",
            "custom_mask", "is_causal", "mask_indptr")
    return reference_extend_attention(**{k: args[k] for k in keys}, **extra)


def _same_as_sglang(impl: str, call, args: dict, expected: torch.Tensor) -> None:
    theirs, ours = fresh(args), fresh(args)
    call(sglang().extend_attention_fwd, theirs)
    call(entry_points()[impl], ours)
    assert_close_to_reference(theirs["o_extend"], expected, "bfloat16", "sglang")
    assert_close_to_reference(ours["o_extend"], expected, "bfloat16", impl)
    assert_close_to_reference(ours["o_extend"], theirs["o_extend"].float(), "bfloat16", f"{impl} vs sglang")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("head_dim", [256, 128, 96, 80, 13])
def test_sglangs_test_extend_attention(head_dim, impl):
    args = sglang_test_inputs(19, 12331, 12, 4, head_dim)
    expected = _reference(args)
    _same_as_sglang(impl, CALL_STYLES["positional"], args, expected)  # ..., max_len_extend, 1.0, 1.0
    args["custom_mask"], args["mask_indptr"] = _all_visible_prefix_causal_mask(args)
    _same_as_sglang(impl, CALL_STYLES["positional"], args, expected)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("window", [-1, 127])
def test_sglangs_test_extend_attention_sliding_window(window, impl):
    args = {**sglang_test_inputs(19, 12331, 64, 8, 128), "sliding_window_size": window}

    def call(fn, a):  # k_scale / v_scale and the window by keyword
        return fn(**a)

    _same_as_sglang(impl, call, args, _reference(args, sliding_window_size=window))


@pytest.mark.parametrize("impl", IMPLS)
def test_sglangs_test_extend_attention_compact_grid(impl):
    args = sglang_test_inputs(4, 0, 8, 2, 64, prefix=[8, 16, 32, 64], extend=[1, 7, 13, 129])
    _same_as_sglang(impl, CALL_STYLES["keyword"], args, _reference(args))
