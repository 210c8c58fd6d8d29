"""Encoded TMA tensor maps kept per buffer, and Triton's CUDA launcher called with them (`TensorMapCache`,
`prepare_launcher`, `PreparedLauncher`).

A kernel that takes host-side tensor descriptors (`triton.tools.tensor_descriptor.TensorDescriptor`, Gluon's
`TensorDescriptor`) gets, on every launch, a CUDA tensor map per descriptor: Triton's launcher wrapper
(``wrap_handle_tensordesc`` in ``triton/backends/nvidia/driver.py``, Triton 3.6) calls ``make_tensordesc_arg``, which
calls ``fill_tma_descriptor`` (a new ``PyCUtensorMap`` object and ``cuTensorMapEncodeTiled``) and expands the
descriptor into (tensor map, shape..., strides...). The map is a pure function of what it encodes: the base
address, shape, strides, element type, box (block shape), swizzle and out-of-bounds fill, the last four from the
compiled kernel's ``tensordesc_meta``. So it is encoded once per (address, shape, strides, dtype, block, padding,
meta) and reused: a later call over the same buffer reuses it; a call over another buffer (another address, same
shape) gets its own; a freed buffer whose address comes back with the same shape and strides gets a map equal to a
fresh encoding. A cached map holds no reference to the tensor.

`PreparedLauncher` does what Triton 3.6's ``CudaLauncher.__call__`` and its wrapper do for a kernel without global or
profile scratch, with the tensor maps from the cache and CUDA tensors passed as their device addresses (the C
launcher then skips ``data_ptr()`` and ``cuPointerGetAttribute`` per pointer; any other tensor goes to it as is, and
it refuses one it cannot reach as before). `prepare_launcher` returns None for any launcher it does
not recognize (another Triton release, another backend, the interpreter), and the caller keeps Triton's own path.
Source: ``triton/backends/nvidia/driver.py`` of Triton 3.6.0 (``_BASE_ARGS_FORMAT = "iiiKKppOOOOOO"``,
``make_tensordesc_arg(arg, metadata)``, ``wrap_handle_tensordesc``'s ``inner(*args)`` over ``launcher``,
``tensordesc_indices`` and ``tensordesc_meta``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

#: Encoded descriptors kept (a dict in insertion order; the oldest is dropped past this). A replayed call uses a
#: handful (the family kernel 4, the Gluon MLA kernel 6); the bound covers many buffers and shape classes.
MAX_ENTRIES = 4096

#: Leading launcher arguments before the kernel's own in Triton 3.6 (grid x/y/z, stream, function, cooperative,
#: PDL, global scratch, profile scratch, packed metadata, launch metadata, enter hook, exit hook).
BASE_ARGS = 13


def meta_key(meta: dict | None) -> tuple | None:
    """A hashable form of one descriptor's ``tensordesc_meta`` entry (lists as tuples), or None."""
    if meta is None:
        return None
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in meta.items()))


class TensorMapCache:
    """Expanded launcher arguments (tensor map, shape..., strides...) per encoded descriptor, at most `MAX_ENTRIES`.

    Attributes:
        encodes: how many encodings ran (cache misses); a replayed call over buffers seen before adds none.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: dict[tuple, tuple] = {}
        self.encodes = 0

    @staticmethod
    def key(desc: Any, mkey: tuple | None) -> tuple:
        """(address, device index, dtype, shape, strides, block shape, padding, meta key) of `desc` (a descriptor
        with ``base``, ``shape``, ``strides``, ``block_shape``, ``padding``) under the compiled kernel's meta `mkey`."""
        base = desc.base
        return (base.data_ptr(), base.get_device(), base.dtype, tuple(desc.shape), tuple(desc.strides),
                tuple(desc.block_shape), getattr(desc, "padding", None), mkey)

    def expanded(self, desc: Any, meta: dict | None, mkey: tuple | None,
                 encode: Callable[[Any, dict | None], list]) -> tuple:
        """The launcher arguments of `desc`: ``encode(desc, meta)`` (Triton's ``make_tensordesc_arg``) the first
        time its key is seen, the kept result after."""
        key = self.key(desc, mkey)
        hit = self._entries.get(key)
        if hit is not None:
            return hit
        value = tuple(encode(desc, meta))
        self.encodes += 1
        if len(self._entries) >= self.max_entries:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = value
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: The process's tensor maps (`PreparedLauncher` uses it).
TENSOR_MAPS = TensorMapCache()


class PreparedLauncher:
    """Triton 3.6's launch of one compiled kernel (`prepare_launcher`), with cached tensor maps.

    Attributes:
        raw: the C launcher (``mod.launch``). descs: {kernel argument position: (its tensordesc_meta entry, meta key)}.
        encode: the driver module's ``make_tensordesc_arg``. cooperative, pdl: the launcher's flags.
    """

    def __init__(self, raw: Callable, descs: dict[int, tuple[dict | None, tuple | None]], encode: Callable,
                 cooperative: bool, pdl: bool) -> None:
        self.raw, self.descs, self.encode = raw, descs, encode
        self.cooperative, self.pdl = cooperative, pdl
        self._last_first = sorted(descs.items(), reverse=True)  # replaced from the end: earlier positions stay valid

    def __call__(self, grid: tuple[int, int, int], stream: int, function: int, packed_metadata: Any,
                 args: tuple, tail: tuple = ()) -> None:
        """Launch over `grid` on `stream` with the kernel's arguments: `args` then `tail` (e.g. the constexprs,
        passed as they are unless a descriptor is among them)."""
        if self._last_first and self._last_first[0][0] >= len(args):  # a descriptor among the tail's
            args, tail = (*args, *tail), ()
        kernel_args = [a.data_ptr() if type(a) is torch.Tensor and a.is_cuda else a for a in args]
        for pos, (meta, mkey) in self._last_first:
            if meta is None:  # decomposed descriptor (no TMA): base tensor, shape, strides, as Triton passes them
                kernel_args[pos:pos + 1] = self.encode(args[pos], None)
            else:
                kernel_args[pos:pos + 1] = TENSOR_MAPS.expanded(args[pos], meta, mkey, self.encode)
        self.raw(grid[0], grid[1], grid[2], stream, function, self.cooperative, self.pdl, None, None,
                 packed_metadata, None, None, None, *kernel_args, *tail)


def prepare_launcher(compiled: Any) -> PreparedLauncher | None:
    """The `PreparedLauncher` of a compiled kernel whose launcher is Triton 3.6's ``CudaLauncher`` without global or
    profile scratch, else None (keep ``compiled.run``)."""
    run = getattr(compiled, "run", None)
    module = sys.modules.get(type(run).__module__)
    if (type(run).__name__ != "CudaLauncher" or module is None
            or getattr(module, "_BASE_ARGS_FORMAT_LEN", None) != BASE_ARGS
            or getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1)):
        return None
    launch, encode = getattr(run, "launch", None), getattr(module, "make_tensordesc_arg", None)
    if launch is None or encode is None or encode.__code__.co_argcount != 2:
        return None
    closure = _closure_vars(launch)
    if closure is None:  # the C launcher itself: no descriptor arguments
        descs: dict[int, tuple] = {}
        raw = launch
    elif {"launcher", "tensordesc_indices", "tensordesc_meta"} <= closure.keys():
        raw, indices, metas = closure["launcher"], closure["tensordesc_indices"], closure["tensordesc_meta"]
        if len(metas) != len(indices):
            return None
        descs = {pos: (meta, meta_key(meta)) for pos, meta in zip(sorted(indices), metas)}
    else:
        return None
    return PreparedLauncher(raw, descs, encode, run.launch_cooperative_grid, run.launch_pdl)


def _closure_vars(fn: Any) -> dict[str, Any] | None:
    """A Python function's closure variables by name; None for a builtin (the C launcher)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    cells = fn.__closure__ or ()
    return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells)}
