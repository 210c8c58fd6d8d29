"""Triton kernels that measure a chip (``chiplore profile probe``): they run on any backend Triton targets.

Each launcher returns what it ran (a tensor to check, or Triton's compiled kernel); timing and the conclusions
drawn from it are `hardware_profiles.probe`'s. Under the Triton interpreter (``TRITON_INTERPRET=1``) every kernel
computes the same values at small sizes, so their correctness is unit-tested on the CPU (never their timing).

- `spin`: each program runs a fixed number of dependent FMA steps on BLOCK independent lanes (num_warps 32: one
  program fills an SM's schedulers, so two on one SM take about twice as long): time against the number of programs
  is a staircase whose steps fall at multiples of the compute units (`hardware_profiles.probe.analysis`).
  Value per lane after n steps of ``x <- a x + b`` from x0: ``a^n x0 + b (1 - a^n) / (1 - a)``.
- `copy`: a streaming copy, the achievable device-memory bandwidth over a buffer many times the L2.
- `matmul`: a dense C = A @ B with tl.dot (fp32 accumulation), the achievable tensor-core throughput.
- `staged_dot`: a K-loop of tl.dot with ``num_stages`` software-pipelined loads: its shared memory grows with the
  tiles and stages, the rungs of the compile-and-launch ladder for the shared memory per program.
- `empty`: a launch that does nothing, the host-side cost of one launch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

#: FMA coefficients of `spin`: |a| < 1 keeps every lane finite for any step count.
SPIN_A, SPIN_B = 0.999, 0.001


@triton.jit
def _spin_kernel(out_ptr, steps, a, b, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = offs.to(tl.float32) * (1.0 / BLOCK) + pid.to(tl.float32)
    for _ in range(steps):  # a dependent chain per lane; BLOCK / threads independent chains per thread
        x = x * a + b
    tl.store(out_ptr + pid * BLOCK + offs, x)


def spin(programs: int, steps: int, block: int = 8192, num_warps: int = 32, out: torch.Tensor | None = None,
         device: str | torch.device = "cuda") -> torch.Tensor:
    """Launch `programs` programs of `steps` FMA steps on `block` lanes each; returns out [programs, block] fp32
    (``out`` reused when given and large enough)."""
    if out is None or out.numel() < programs * block:
        out = torch.empty(programs * block, dtype=torch.float32, device=device)
    _spin_kernel[(programs,)](out, steps, SPIN_A, SPIN_B, BLOCK=block, num_warps=num_warps)
    return out[:programs * block].view(programs, block)


def spin_expected(programs: int, steps: int, block: int) -> torch.Tensor:
    """What `spin` computes, in float64 (closed form of the affine recurrence, see the module docstring)."""
    x0 = torch.arange(block, dtype=torch.float64) / block + torch.arange(programs, dtype=torch.float64)[:, None]
    an = SPIN_A ** steps
    return an * x0 + SPIN_B * (1 - an) / (1 - SPIN_A)


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def copy(src: torch.Tensor, dst: torch.Tensor, block: int = 4096, num_warps: int = 8) -> torch.Tensor:
    """dst[:] = src[:] for flat contiguous tensors of one dtype and size; returns dst."""
    if src.shape != dst.shape or src.dtype != dst.dtype or not (src.is_contiguous() and dst.is_contiguous()):
        raise ValueError("copy: src and dst must be contiguous tensors of one shape and dtype")
    n = src.numel()
    _copy_kernel[(triton.cdiv(n, block),)](src, dst, n, BLOCK=block, num_warps=num_warps)
    return dst


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   EVEN: tl.constexpr):
    pid = tl.program_id(0)
    grid_m, grid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n  # grouped order: GROUP_M row blocks share each B column block in L2
    group = pid // per_group
    first_m = group * GROUP_M
    rows = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:  # every tile whole: no masks
            acc += tl.dot(tl.load(a), tl.load(b))
        else:
            mask_k = offs_k < K - k
            acc += tl.dot(tl.load(a, mask=(offs_m[:, None] < M) & mask_k[None, :], other=0.0),
                          tl.load(b, mask=mask_k[:, None] & (offs_n[None, :] < N), other=0.0))
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    c = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, block_m: int = 128, block_n: int = 128,
           block_k: int = 64, num_warps: int = 8, num_stages: int = 3, group_m: int = 8):
    """c = a @ b (a [M, K], b [K, N], c [M, N]; fp16/bf16 inputs, fp32 accumulation); returns Triton's compiled
    kernel (``.metadata.shared`` in bytes).

    Raises:
        ValueError: shapes that do not chain. triton.runtime.errors.OutOfResources: tiles over the chip's limits.
    """
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or tuple(c.shape) != (m, n):
        raise ValueError(f"matmul: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(c.shape)} do not chain")
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    even = m % block_m == 0 and n % block_n == 0 and k % block_k == 0
    return _matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                                c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                                EVEN=even, num_warps=num_warps, num_stages=num_stages)


def staged_dot(block: int, block_k: int, num_stages: int, num_warps: int = 4, device: str | torch.device = "cuda"):
    """One `matmul` program of a [block, block_k x 2 x num_stages] by [.., block] product (enough K steps for every
    pipeline stage): the ladder rung of `block`, `block_k`, `num_stages`. Returns (compiled kernel, c, a, b) so
    the caller can check c = a @ b.

    Raises:
        triton.runtime.errors.OutOfResources: the rung needs more shared memory than the chip gives a program.
    """
    k = block_k * 2 * max(1, num_stages)
    a = torch.randn(block, k, device=device).to(torch.float16)
    b = torch.randn(k, block, device=device).to(torch.float16)
    c = torch.empty(block, block, device=device, dtype=torch.float16)
    kernel = matmul(a, b, c, block, block, block_k, num_warps=num_warps, num_stages=num_stages, group_m=1)
    return kernel, c, a, b


@triton.jit
def _empty_kernel(x_ptr):
    pass


@triton.jit
def _threads_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs)


def empty(x: torch.Tensor) -> None:
    """One launch of a kernel that does nothing (the argument keeps Triton's launch path the usual one)."""
    _empty_kernel[(1,)](x)


def threads(num_warps: int, warp_size: int = 32, device: str | torch.device = "cuda"):
    """One program of `num_warps` warps writing its lane index to num_warps x warp_size slots; returns
    (compiled kernel, out) (out[i] == i when it ran).

    Raises:
        triton.runtime.errors.OutOfResources: more threads than a program may have on the chip.
    """
    block = num_warps * warp_size
    out = torch.full((block,), -1, dtype=torch.int32, device=device)
    kernel = _threads_kernel[(1,)](out, BLOCK=block, num_warps=num_warps)
    return kernel, out
