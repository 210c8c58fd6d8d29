"""Preallocated float32 partials and tile counters, reused across calls (no allocation on the hot path).

One buffer per (device, stream, name, dtype, zeroed); it grows to the next power-of-two size class when a call needs
more and is otherwise reused as is, so steady-state calls allocate nothing and never synchronize with the host.
Two kinds:
- stale (``zeroed=False``): every element a call reads was written earlier in the same call (split partials).
- zeroed (``zeroed=True``): allocated as zeros, and every kernel that uses it leaves what it touched at zero
  again (tile arrival counters, the atomic accumulator), so the next call finds zeros without a memset.
Calls on one stream are ordered, so sharing a buffer between them is safe.
"""

from __future__ import annotations

import torch

_POOL: dict[tuple, torch.Tensor] = {}


def _stream_id(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def size_class(n: int) -> int:
    """Smallest power of two >= max(n, 1)."""
    return 1 << max(0, (max(1, n) - 1).bit_length())


def pooled(device: torch.device, dtype: torch.dtype, name: str, numel: int, zeroed: bool = False) -> torch.Tensor:
    """A flat view of the first `numel` elements of reusable buffer `name` of (device, current stream, dtype).

    `zeroed` buffers start as zeros and must be left at zero by their users (module docstring).
    """
    key = (device.type, device.index, _stream_id(device), name, dtype, zeroed)
    buf = _POOL.get(key)
    if buf is None or buf.numel() < numel:
        alloc = torch.zeros if zeroed else torch.empty
        buf = alloc(size_class(numel), dtype=dtype, device=device)
        _POOL[key] = buf
    return buf[:numel]


def partials(device: torch.device, numel: int) -> torch.Tensor:
    """Stale float32 buffer of split partials (written before read within a call)."""
    return pooled(device, torch.float32, "splitk_partials", numel)


def accumulator(device: torch.device, numel: int) -> torch.Tensor:
    """Zeroed float32 accumulator of the atomic reduction (each tile's last program zeroes it after use)."""
    return pooled(device, torch.float32, "splitk_atomic_acc", numel, zeroed=True)


def tile_counters(device: torch.device, numel: int) -> torch.Tensor:
    """Zeroed int32 arrival counters, one per output tile (the tile's last program resets its counter)."""
    return pooled(device, torch.int32, "splitk_tile_counters", max(1, numel), zeroed=True)
