"""The host side of an extend-attention call, recorded once per call signature and replayed on later calls.

A call's signature (`call_key`) is everything its launches depend on besides the data: the tensors' shapes, strides,
dtypes, devices and 16-byte alignment (the one property of a pointer Triton specializes on), whether V is a view of
K (same start address), the scalar arguments with their types, the host-side length hint, the chip limits, the device
and the stream. The first call of a signature runs the entry point's full host path (checks, configuration rules,
workspaces, descriptors) inside a `kernels.launch.Recording`; later calls replay its launches (`kernels.launch.Replay`:
the compiled kernels bound to their grids and constexprs, the call's tensors put in their argument positions, the
extend K/V descriptors rebuilt over them). Nothing on either path reads a device value on the host.

A signature is recorded on its second call (the first only marks it seen), so a caller whose shapes change on every
call (a serving engine's batches) runs the plain host path at its old cost, and repeated shapes (CUDA-graph-free
decode steps of one batch size and context bucket, benchmarks) replay from the third call on. The cache holds at most
`MAX_ENTRIES` signatures (the oldest is dropped first).
"""

from __future__ import annotations

from typing import Any

from kernels.launch import Replay

#: Signatures kept per cache (a dict in insertion order; the oldest entry is dropped past this).
MAX_ENTRIES = 1024


def tensor_key(tensors: tuple) -> tuple | None:
    """Per tensor (None stays None): shape, strides, dtype, device, 16-byte alignment of its address; None when an
    entry lacks tensor metadata (the entry point's checks then raise on the plain path), or one object is passed
    twice (the recording locates arguments by position, so aliased arguments are not cached)."""
    try:
        parts = tuple(None if t is None else (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0)
                      for t in tensors)
    except (AttributeError, TypeError):
        return None
    ids = [id(t) for t in tensors if t is not None]
    return parts if len(set(ids)) == len(ids) else None


def scalar_key(values: tuple) -> tuple:
    """`values` with their types (1, 1.0 and True are equal in Python but not to the checks of the entry point)."""
    return tuple(zip(map(type, values), values))


class ReplayCache:
    """Replays per signature key, at most `MAX_ENTRIES`; an entry also holds the chip limits object whose id is in
    its key, so that id is not reused while the entry lives."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[Any, Replay]] = {}
        self._seen: dict[tuple, bool] = {}  # signature -> seen once (True) or recorded, not replayable (False)

    def should_record(self, key: tuple) -> bool:
        """Whether a call of signature `key` (not replayable yet) records: on the second call of a signature, so a
        caller whose shapes change on every call keeps the plain path's cost (no recording, no replay kept); never
        again after a recording that was not replayable (`refused`)."""
        seen = self._seen.get(key)
        if seen is not None:
            return seen
        if len(self._seen) >= MAX_ENTRIES:
            self._seen.pop(next(iter(self._seen)))
        self._seen[key] = True
        return False

    def refused(self, key: tuple) -> None:
        """Mark signature `key` as not replayable: its calls keep the plain path."""
        self._seen[key] = False

    def get(self, key: tuple) -> Replay | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[1]

    def put(self, key: tuple, limits: Any, replay: Replay) -> None:
        self._seen.pop(key, None)
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (limits, replay)

    def clear(self) -> None:
        self._entries.clear()
        self._seen.clear()

    def __len__(self) -> int:
        return len(self._entries)
