"""Pieces shared by the baseline and the family: argument checks, reading a chip limit, the matrix-product tile.

The product is ``C[M, N] = A[M, K] @ B[N, K]^T`` (weights in the [N, K] layout of ``torch.nn.Linear``), float32
accumulation, output in the input dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernels.chip import ChipLimits, ChipLimitsUnset

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: Input dtype names of cases -> torch dtypes.
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

#: Largest (BLOCK_M, BLOCK_N, BLOCK_K, num_stages) for float32 inputs. Their dots are IEEE float32 (`dot`), which
#: Triton lowers to FMA loops instead of tensor-core MMAs: larger tiles add registers and compile time, not
#: throughput (the same cap as the extend-attention kernels' FLOAT32_TILE_CAP, whose offline sm_90 compiles took
#: 3-4 s at 32x32 tiles against 29-115 s at 64x128).
FLOAT32_TILE_CAP = (32, 32, 32, 2)


@dataclass(frozen=True)
class Problem:
    """Sizes of one call, from tensor metadata only: A [M, K], B [N, K], C [M, N], all of `dtype`."""

    m: int
    n: int
    k: int
    dtype: torch.dtype

    @property
    def elem(self) -> int:
        """Bytes per element of the inputs and output."""
        return self.dtype.itemsize


def check_inputs(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Problem:
    """Validate a ``splitk_gemm(a, b, c)`` call: a [M, K], b [N, K], c [M, N], one dtype, one device.

    Any strides are accepted (a transposed view included); c must not overlap a or b.

    Raises:
        ValueError: a tensor has the wrong rank, shape, dtype or device; the message names it.
    """
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"splitk_gemm: {name} must be a 2-D tensor, got {shape}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"splitk_gemm: {name} has dtype {t.dtype}; supported: {SUPPORTED_DTYPES}")
        if t.dtype != a.dtype:
            raise ValueError(f"splitk_gemm: {name} has dtype {t.dtype}, a has {a.dtype}")
        if t.device != a.device:
            raise ValueError(f"splitk_gemm: {name} is on {t.device}, a on {a.device}")
    m, k = a.shape
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"splitk_gemm: b has shape {tuple(b.shape)}, expected [N, K={k}] (weights in [N, K] layout)")
    if tuple(c.shape) != (m, n):
        raise ValueError(f"splitk_gemm: c has shape {tuple(c.shape)}, expected [M={m}, N={n}]")
    return Problem(m, n, k, a.dtype)


def require_limit(limits: ChipLimits | None, name: str) -> float:
    """``limits.<name>`` (a field of `kernels.chip.ChipLimits`, built from the chip profile, where every limit is
    known). The profile is the one source of chip limits: nothing is read from the device or assumed.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None (none given and none set for the process); the message names
            the limit the call needs.
    """
    if limits is None:
        raise ChipLimitsUnset(
            f"splitk_gemm: chip limit {name} is needed but no chip limits were given; pass limits=ChipLimits(...) "
            f"built from the chip profile, or set them for the process with kernels.chip.set_chip_limits")
    return getattr(limits, name)


def input_precision(dtype: torch.dtype) -> str:
    """`tl.dot` input precision: "ieee" for float32 (float32 means IEEE float32; Triton's GPU default for float32
    operands is tf32, a 10-bit mantissa), "tf32" otherwise (ignored by Triton for 16-bit operands)."""
    return "ieee" if dtype == torch.float32 else "tf32"


@triton.jit
def dot(a, b, acc, PRECISION: tl.constexpr):
    """``acc + a @ b`` accumulated in float32, at `PRECISION` ("ieee" for float32 operands)."""
    return tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=tl.float32)


@triton.jit
def tile_of(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(row block, column block) of output tile number `tile`, GROUP_M row blocks per group (L2 swizzle).

    Consecutive tiles walk GROUP_M row blocks down one column block before moving right, so programs running
    together share B tiles (and A tiles) in L2. Source: Triton's matrix multiplication tutorial, "L2 Cache
    Optimizations".
    """
    per_group = GROUP_M * tiles_n
    group = tile // per_group
    first_m = group * GROUP_M
    size_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % size_m
    pid_n = (tile % per_group) // size_m
    return pid_m, pid_n


@triton.jit
def load_weights(ptrs, mask, EVICT_FIRST: tl.constexpr):
    """Masked load of a weight tile (0 where not `mask`); `EVICT_FIRST`: with the ``evict_first`` L2 eviction
    policy, so the once-read weight stream is the first evicted and A, partials and counters stay in L2 (PTX ISA,
    ``ld`` eviction priority ``evict_first``: "data that is unlikely to be reused"); effective on register loads
    only, not on the ``cp.async`` copies Triton 3.6 makes of pipelined loads (``FamilyConfig.evict_weights``)."""
    if EVICT_FIRST:
        return tl.load(ptrs, mask=mask, other=0.0, eviction_policy="evict_first")
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def mac_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo, it_hi,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr,
             EVICT_B: tl.constexpr = False):
    """float32 [BLOCK_M, BLOCK_N] sum over K-iterations [it_lo, it_hi) (columns it * BLOCK_K ...) of
    A[rows, k] @ B[cols, k]^T for the tile (pid_m, pid_n).

    Rows past M and columns past N are read modulo M / N (valid addresses, results discarded by the caller's
    store mask); columns of K past K are masked to zero. Row offsets are 64-bit (N * K may pass 2**31). `EVICT_B`:
    B is loaded evict-first (`load_weights`).
    """
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = it_lo * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + offs_k[None, :].to(tl.int64) * stride_ak
    b_ptrs = b_ptr + cols.to(tl.int64)[None, :] * stride_bn + offs_k[:, None].to(tl.int64) * stride_bk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for it in range(it_lo, it_hi):
        k_left = K - it * BLOCK_K
        a = tl.load(a_ptrs, mask=tl.arange(0, BLOCK_K)[None, :] < k_left, other=0.0)
        b = load_weights(b_ptrs, tl.arange(0, BLOCK_K)[:, None] < k_left, EVICT_B)
        acc = dot(a, b, acc, PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


#: Most products (BLOCK_M x BLOCK_N x BLOCK_K) a GEMV program accumulates element-wise before summing over K:
#: 8192 float32 values are 64 registers per thread at 4 warps (of 255), leaving room for the loaded tiles.
GEMV_WIDE_ACC_ELEMS = 8192
_GEMV_WIDE_ACC_ELEMS = tl.constexpr(GEMV_WIDE_ACC_ELEMS)


@triton.jit
def gemv_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo, it_hi,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr,
              EVICT_B: tl.constexpr = False):
    """`mac_tile` without ``tl.dot``: float32 [BLOCK_M, BLOCK_N] sum over K-iterations [it_lo, it_hi) of
    A[rows, k] * B[cols, k], on the vector units.

    The weight tile is loaded as [BLOCK_N, BLOCK_K] with K innermost (the [N, K] layout's contiguous axis, so each
    thread loads consecutive K elements in wide vectors), once per K-iteration for all BLOCK_M rows. While
    BLOCK_M x BLOCK_N x BLOCK_K is at most `GEMV_WIDE_ACC_ELEMS`: a float32 accumulator of products ([BLOCK_N,
    BLOCK_K] for one row, [BLOCK_M, BLOCK_N, BLOCK_K] for several), summed over K once after the loop (no
    cross-thread reduction inside it); otherwise the broadcast product [BLOCK_M, BLOCK_N, BLOCK_K] summed over K
    every iteration (a larger accumulator would take more registers than a thread has). Same
    masking, 64-bit offsets and `EVICT_B` as `mac_tile`. The K loop is a ``tl.range`` of STAGES stages: Triton's software
    pipeliner then stages the loads through shared memory (cp.async, STAGES - 1 tiles in flight), which it does
    on its own only for loads that feed ``tl.dot`` (a plain ``range`` keeps one tile in registers: 512 B of
    shared memory at sm_90, offline compile). Source: the structure of memory-bound matrix-vector kernels (one pass
    over the weights, each weight element multiplied by every row in registers; Williams et al., "Roofline", CACM
    2009, for why such a kernel's time is its bytes over the bandwidth).
    """
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = it_lo * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + offs_k[None, :].to(tl.int64) * stride_ak
    b_ptrs = b_ptr + cols.to(tl.int64)[:, None] * stride_bn + offs_k[None, :].to(tl.int64) * stride_bk
    if BLOCK_M == 1 and BLOCK_N * BLOCK_K <= _GEMV_WIDE_ACC_ELEMS:
        wide = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
        for it in tl.range(it_lo, it_hi, num_stages=STAGES):
            k_ok = (tl.arange(0, BLOCK_K) < K - it * BLOCK_K)[None, :]
            a = tl.load(a_ptrs, mask=k_ok, other=0.0).to(tl.float32)
            b = load_weights(b_ptrs, k_ok, EVICT_B).to(tl.float32)
            wide += b * a
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        acc = tl.reshape(tl.sum(wide, axis=1), (BLOCK_M, BLOCK_N))
    elif BLOCK_M * BLOCK_N * BLOCK_K <= _GEMV_WIDE_ACC_ELEMS:
        # several rows, one weight tile for all of them: the products accumulated element-wise, summed over K once
        wide_rows = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
        for it in tl.range(it_lo, it_hi, num_stages=STAGES):
            k_ok = (tl.arange(0, BLOCK_K) < K - it * BLOCK_K)[None, :]
            a = tl.load(a_ptrs, mask=k_ok, other=0.0).to(tl.float32)
            b = load_weights(b_ptrs, k_ok, EVICT_B).to(tl.float32)
            wide_rows += a[:, None, :] * b[None, :, :]
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        acc = tl.sum(wide_rows, axis=2)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for it in tl.range(it_lo, it_hi, num_stages=STAGES):
            k_ok = (tl.arange(0, BLOCK_K) < K - it * BLOCK_K)[None, :]
            a = tl.load(a_ptrs, mask=k_ok, other=0.0).to(tl.float32)
            b = load_weights(b_ptrs, k_ok, EVICT_B).to(tl.float32)
            acc += tl.sum(a[:, None, :] * b[None, :, :], axis=2)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def tile_product(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo, it_hi,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr,
                 GEMV: tl.constexpr, STAGES: tl.constexpr, EVICT_B: tl.constexpr = False):
    """`gemv_tile` (STAGES pipeline stages) when GEMV, else `mac_tile` (its stages are the launch's num_stages);
    same arguments, same float32 [BLOCK_M, BLOCK_N] result; `EVICT_B`: weights loaded evict-first."""
    if GEMV:
        acc = gemv_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo,
                        it_hi, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, EVICT_B)
    else:
        acc = mac_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo,
                       it_hi, BLOCK_M, BLOCK_N, BLOCK_K, PRECISION, EVICT_B)
    return acc


@triton.jit
def store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    """Store float32 tile `acc` of (pid_m, pid_n) into C in C's dtype, masked to [M, N]."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols.to(tl.int64)[None, :] * stride_cn
    tl.store(ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))
