"""Pieces shared by the baseline and the optimized family: argument checks, head-dim tiling, stable tanh, the
float32-exact matrix product, and the chip limits (`kernels.chip`, re-exported for the task's kernel files)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernels.chip import ChipLimits, chip_limits_if_set, current_chip_limits  # noqa: F401 - re-exported

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: Input dtype names of the task's cases (``Case.params["dtype"]``) and their torch dtypes.
DTYPES: dict[str, torch.dtype] = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True)
class Problem:
    """Sizes of one call, read from tensor metadata only (no device-to-host copy).

    Axes: total_extend = ΣE (q_extend.shape[0]), batch = B. total_prefix is kv_indices.shape[0], an upper bound on
    ΣP = kv_indptr[B] (serving engines hand over preallocated index buffers whose tail is undefined): it sizes
    workspaces and steers heuristics, and no kernel reads an index or a row past kv_indptr[B].
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
                 kv_indices, custom_mask, mask_indptr, sinks, skip_extend: bool = False, lse_extend=None,
                 page_size: int = 1, extend_seq_lens_cpu=None) -> Problem:
    """Validate shapes, dtypes and devices of an ``extend_attention_fwd`` call.

    ``skip_extend`` allows k_extend/v_extend with 0 rows (SGLang passes ``k[:0]`` when only the prefix stage runs).
    ``lse_extend``: None or [ΣE, H_q] floating point. ``page_size``: an int >= 1 (see `check_page_size`).
    ``extend_seq_lens_cpu``: None or B host ints.

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
    for name in ("k_extend", "v_extend", "k_buffer", "v_buffer"):
        if tensors[name].dtype != q_extend.dtype:
            raise ValueError(f"{name} has dtype {tensors[name].dtype}, q_extend {q_extend.dtype}: inputs share one "
                             "dtype (FP8 KV caches are not supported)")
    total_e, hq, d = q_extend.shape
    hkv, dv = k_extend.shape[1], v_extend.shape[2]
    if hq % hkv:
        raise ValueError(f"num_q_heads={hq} is not a multiple of num_kv_heads={hkv}")
    rows = 0 if skip_extend and k_extend.shape[0] == 0 else total_e
    expect = {"k_extend": (rows, hkv, d), "v_extend": (rows, hkv, dv), "o_extend": (total_e, hq, dv)}
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
    if lse_extend is not None and (tuple(lse_extend.shape) != (total_e, hq) or not lse_extend.is_floating_point()
                                   or lse_extend.device != q_extend.device):
        raise ValueError(f"lse_extend must be a floating-point [{total_e}, {hq}] tensor on {q_extend.device}, got "
                         f"{lse_extend.dtype} {tuple(lse_extend.shape)} on {lse_extend.device}")
    check_page_size(page_size)
    batch = qo_indptr.shape[0] - 1
    if extend_seq_lens_cpu is not None and len(extend_seq_lens_cpu) != batch:
        raise ValueError(f"extend_seq_lens_cpu has {len(extend_seq_lens_cpu)} entries for a batch of {batch}")
    return Problem(batch, total_e, kv_indices.shape[0], hq, hkv, d, dv, q_extend.dtype)


def check_page_size(page_size) -> None:
    """``page_size`` must be an int >= 1. With 3-D [slots, H, D] buffers the kernels address prefix token t at slot
    ``kv_indices[t]`` for every page size: SGLang 0.5.23 (``kernels/ops/attention/extend_attention.py``) splits the
    slot into page ``slot // page_size`` and offset ``slot % page_size`` with page stride ``page_size * stride(0)``
    and token stride ``stride(0)`` (``_extract_kv_strides``, which accepts 3-D buffers only), which is the same
    address ``slot * stride(0)``.

    Raises:
        ValueError: `page_size` is not an int >= 1.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be an int >= 1, got {page_size!r}")


#: SGLang 0.5.23 keyword arguments that no kernel of this package implements, with the default that means "off".
UNSUPPORTED_DEFAULTS = {"xai_temperature_len": -1, "score_mod": None, "aux_tensors": None}


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
    """Raise NotImplementedError naming the first argument of `UNSUPPORTED_DEFAULTS` set to another value."""
    for name, value in kwargs.items():
        default = UNSUPPORTED_DEFAULTS[name]
        if (value is not None) if default is None else (value != default):
            raise NotImplementedError(f"extend_attention_fwd: argument {name}={value!r} is not supported")


def mask_offsets(window_kv_offsets, custom_mask, sliding_window_size, batch: int):
    """`window_kv_offsets` when the kernels read it, else None. SGLang 0.5.23 reads it only with a custom mask and a
    sliding window (W > 0): sequence b's mask is then row-major [E_b, off_b + P_b + E_b] at mask_indptr[b] and its
    first off_b columns are skipped (``_fwd_kernel``: row stride cur_seq_len + window_kv_offset, column
    window_kv_offset + key position). Without a mask or a window it is ignored, as there.

    Raises:
        ValueError: offsets that are not a 1-D int32/int64 tensor of at least `batch` entries on the mask's device.
    """
    if window_kv_offsets is None or custom_mask is None or not (sliding_window_size and sliding_window_size > 0):
        return None
    t = window_kv_offsets
    if (not isinstance(t, torch.Tensor) or t.dim() != 1 or t.dtype not in (torch.int32, torch.int64)
            or t.shape[0] < batch or t.device != custom_mask.device):
        raise ValueError(f"window_kv_offsets must be a 1-D int32/int64 tensor of >= {batch} entries on "
                         f"{custom_mask.device}, got {getattr(t, 'dtype', type(t).__name__)} "
                         f"{tuple(getattr(t, 'shape', ()))}")
    return t


def resolve_kv_scales(k_scale, v_scale) -> tuple[float, float]:
    """(k_scale, v_scale) as floats: SGLang's FP8 KV-cache dequantization scales, host numbers (its Triton backend
    passes ``layer.k_scale_float`` or 1.0). The prefix-stage logits are multiplied by ``sm_scale * k_scale`` and
    the prefix-stage P.V contribution by ``v_scale``; the extend stage is not scaled (SGLang 0.5.23,
    ``_fwd_kernel`` of ``kernels/ops/attention/extend_attention.py``; shared/reference/extend_attention.md).

    Raises:
        ValueError: a scale that is not a finite host number (a tensor would need a device-to-host copy).
    """
    out = []
    for name, value in (("k_scale", k_scale), ("v_scale", v_scale)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite Python number (the FP8 dequantization scale), got {value!r}")
        out.append(float(value))
    return out[0], out[1]


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
#: tiles alike (H200: its 128x64 float32 tiles at head dim 64 took 19-22 s of a 30 s verification;
#: BENCHMARKS.md, 'Verifier').
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
