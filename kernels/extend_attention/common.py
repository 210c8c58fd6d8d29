"""Pieces shared by the baseline and the optimized family: argument checks, head-dim tiling, stable tanh, the
float32-exact matrix product, and the chip limits (`kernels.chip`, re-exported for the task's kernel files)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernels.chip import ChipLimits, chip_limits_if_set, current_chip_limits  # noqa: F401 - re-exported

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@dataclass(frozen=True)
class Problem:
    """Sizes of one call, read from tensor metadata only (no device-to-host copy).

    Axes: total_extend = ΣE (q_extend.shape[0]), total_prefix = ΣP (kv_indices.shape[0]), batch = B.
    """

    batch: int
    total_extend: int
    total_prefix: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    dtype: torch.dtype

    @property
    def group(self) -> int:
        """GQA group size G = H_q / H_kv."""
        return self.num_q_heads // self.num_kv_heads


def head_dim_blocks(head_dim: int, head_dim_v: int) -> tuple[int, int, int]:
    """(BLOCK_D, BLOCK_DPE, BLOCK_DV): padded power-of-two tiles of the QK and V head dims.

    576 splits into 512 + 64 (MLA: latent + rope part), 288 into 256 + 32, 192 into 128 + 64; any other
    head dim is padded to the next power of two (13 -> 16, 80/96 -> 128) and masked.
    Source: SGLang ``extend_attention_fwd`` tiling (shared/reference/extend_attention.md).
    """
    split = {576: (512, 64), 288: (256, 32), 192: (128, 64)}
    block_d, block_dpe = split.get(head_dim, (max(16, triton.next_power_of_2(head_dim)), 0))
    return block_d, block_dpe, max(16, triton.next_power_of_2(head_dim_v))


def check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                 kv_indices, custom_mask, mask_indptr, sinks) -> Problem:
    """Validate shapes, dtypes and devices of an ``extend_attention_fwd`` call.

    Raises:
        ValueError: a tensor has the wrong rank, shape, dtype or device; the message names it.
    """
    tensors = {"q_extend": q_extend, "k_extend": k_extend, "v_extend": v_extend, "o_extend": o_extend,
               "k_buffer": k_buffer, "v_buffer": v_buffer}
    for name, t in tensors.items():
        if t.dim() != 3:
            raise ValueError(f"{name} must be 3-D [tokens, heads, head_dim], got shape {tuple(t.shape)}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{name} has dtype {t.dtype}; supported: {SUPPORTED_DTYPES}")
        if t.device != q_extend.device:
            raise ValueError(f"{name} is on {t.device}, q_extend on {q_extend.device}")
        if t.stride(-1) != 1:
            raise ValueError(f"{name} must be contiguous in its last (head_dim) axis")
    total_e, hq, d = q_extend.shape
    hkv, dv = k_extend.shape[1], v_extend.shape[2]
    if hq % hkv:
        raise ValueError(f"num_q_heads={hq} is not a multiple of num_kv_heads={hkv}")
    expect = {"k_extend": (total_e, hkv, d), "v_extend": (total_e, hkv, dv), "o_extend": (total_e, hq, dv)}
    for name, shape in expect.items():
        if tuple(tensors[name].shape) != shape:
            raise ValueError(f"{name} has shape {tuple(tensors[name].shape)}, expected {shape}")
    if k_buffer.shape[1:] != (hkv, d) or v_buffer.shape[1:] != (hkv, dv):
        raise ValueError(f"k_buffer/v_buffer shapes {tuple(k_buffer.shape)}/{tuple(v_buffer.shape)} do not match "
                         f"[slots, {hkv}, {d}]/[slots, {hkv}, {dv}]")
    for name, t in {"qo_indptr": qo_indptr, "kv_indptr": kv_indptr, "kv_indices": kv_indices}.items():
        if t.dim() != 1 or t.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be a 1-D int32/int64 tensor, got {t.dtype} {tuple(t.shape)}")
    if qo_indptr.shape != kv_indptr.shape:
        raise ValueError(f"qo_indptr {tuple(qo_indptr.shape)} and kv_indptr {tuple(kv_indptr.shape)} differ")
    if (custom_mask is None) != (mask_indptr is None):
        raise ValueError("custom_mask and mask_indptr must be given together")
    if sinks is not None and tuple(sinks.shape) != (hq,):
        raise ValueError(f"sinks must have shape [{hq}], got {tuple(sinks.shape)}")
    return Problem(qo_indptr.shape[0] - 1, total_e, kv_indices.shape[0], hq, hkv, d, dv, q_extend.dtype)


def v_is_view_of_k(k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether `v` ([rows, H, D_v]) is a view of `k`'s ([rows, H, D_qk]) first D_v columns (MLA's latent cache:
    ``v_buffer = k_buffer[..., :D_v]``): same storage start and strides, D_v <= D_qk."""
    return v.data_ptr() == k.data_ptr() and v.stride() == k.stride() and v.shape[2] <= k.shape[2]


def chip_has_tma(device: torch.device) -> bool:
    """Whether descriptor loads can run on `device`: the interpreter (CPU tensors), or an NVIDIA GPU of compute
    capability >= 9.0. The query is Triton's own target query (the call Triton makes itself on each kernel's first
    launch on a device, the target it compiles for); it is only reached when ``tma`` is requested."""
    if device.type != "cuda":
        return True
    if torch.version.hip is not None:
        return False
    target = triton.runtime.driver.active.get_current_target()
    return target.backend == "cuda" and target.arch >= 90


def describable_rows(t: torch.Tensor, width: int) -> bool:
    """Whether [rows, H, width] tensor `t` is a valid 2-D TMA view [rows, H * width] with strides [stride(0), 1]:
    heads contiguous, unit last stride, 16-byte aligned base and row stride, rows not overlapping."""
    elem = t.dtype.itemsize
    heads = t.shape[1]
    return (t.shape[0] > 0 and t.stride(2) == 1 and (heads == 1 or t.stride(1) == width)
            and t.stride(0) >= heads * width and t.stride(0) * elem % 16 == 0 and t.data_ptr() % 16 == 0)


def reject_unsupported(**kwargs) -> None:
    """Raise NotImplementedError naming the first argument set to a value this kernel does not support."""
    defaults = {"window_kv_offsets": None, "xai_temperature_len": -1}
    for name, value in kwargs.items():
        default = defaults[name]
        if (value is not None) if default is None else (value != default):
            raise NotImplementedError(f"extend_attention_fwd: argument {name}={value!r} is not supported")


def resolve_sm_scale(sm_scale: float | None, head_dim: int) -> float:
    """`sm_scale`, or 1/sqrt(head_dim_qk) when None."""
    return 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)


@triton.jit
def stable_tanh(x):
    """tanh(x) = sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|}); finite for any finite x (no exp overflow)."""
    e = tl.exp2(-2.8853900817779268 * tl.abs(x))  # 2*log2(e)
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


#: Largest (BLOCK_M, BLOCK_N, num_stages) for float32 inputs. Their dots are IEEE float32 (`common.dot`), which
#: Triton lowers to FMA loops rather than tensor-core MMAs: bigger tiles add registers, not throughput, and their
#: compile time explodes -- offline sm_90 compiles of the family kernel (tests/kernels/test_tma_compile.py's
#: method, 2-core VM): head dim 64 with 64x128 tiles 29 s, head dim 128 115 s; with 32x32 tiles 3-4 s at any head
#: dim. The verifier compiles a float32 trial for every candidate; the baseline caps its float32
#: tiles alike (H200: its 128x64 float32 tiles at head dim 64 took 19-22 s of a 30 s verification, session 5).
FLOAT32_TILE_CAP = (32, 32, 2)


@triton.jit
def dot(a, b, acc=None):
    """``tl.dot(a, b, acc)``, in IEEE float32 when the operands are float32 and at Triton's default otherwise.

    A float32 call is computed in float32: Triton's default for float32 operands on GPUs is tf32 (10-bit mantissa,
    float16's), a precision downgrade the verifier rejects (kernels/extend_attention/spec.py, TOLERANCES). The
    dtype test is static (a Python bool at compile time), so float16/bfloat16 dots compile exactly as before.
    """
    if a.dtype == tl.float32:
        return tl.dot(a, b, acc, input_precision="ieee")
    else:
        return tl.dot(a, b, acc)
