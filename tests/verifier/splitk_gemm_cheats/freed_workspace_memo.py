"""CHEAT probe (state across calls in freed memory), split-K GEMM: each call takes a workspace the size of the
output from the allocator, looks for the tag its previous call left there, and writes the tag again before it
returns the workspace. A candidate that finds its own tag has state across calls without any module state (the
static rules see none): on a GPU the caching allocator hands the freed block back to the next call, so a memo of
anything derived from the weights ``b`` (which the timing loop keeps per input set while it redraws ``a``) would
survive and the timed calls would skip that work. The probe makes its finding visible: a call that sees the tag
writes NaN (a mismatch at any checked or captured call).
Caught by: free memory is refilled with the prefill bytes before every call, the timed ones included, so the tag
never survives (the probe then computes honestly and passes: the expected stage is "pass").
"""

import torch
import triton
import triton.language as tl

from kernels.splitk_gemm.baseline import splitk_gemm as baseline_gemm

TAG = 1234.5
WORDS = 64


@triton.jit
def _read_tag(ws_ptr, seen_ptr, TAG: tl.constexpr, WORDS: tl.constexpr):
    i = tl.arange(0, WORDS)
    found = tl.sum((tl.load(ws_ptr + WORDS + i).to(tl.float32) == TAG).to(tl.int32), axis=0)
    tl.store(seen_ptr, found)


@triton.jit
def _write_tag(ws_ptr, c_ptr, seen_ptr, n, TAG: tl.constexpr, WORDS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, WORDS)
    tl.store(ws_ptr + WORDS + i, tl.full((WORDS,), TAG, tl.float32).to(ws_ptr.dtype.element_ty))
    seen = tl.load(seen_ptr)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    old = tl.load(c_ptr + offs, mask=offs < n)
    tl.store(c_ptr + offs, tl.where(seen == WORDS, float("nan"), old), mask=offs < n)


def splitk_gemm(a, b, c):
    seen = torch.zeros(1, dtype=torch.int32, device=c.device)
    ws = torch.empty_like(c)
    if c.numel() >= 2 * WORDS:
        _read_tag[(1,)](ws, seen, TAG=TAG, WORDS=WORDS)
    baseline_gemm(a, b, c)
    if c.numel() >= 2 * WORDS:
        n = c.numel()
        _write_tag[(triton.cdiv(n, 1024),)](ws, c, seen, n, TAG=TAG, WORDS=WORDS, BLOCK=1024)
    return c
