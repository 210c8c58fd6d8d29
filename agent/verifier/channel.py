"""The private channel between the verifier and its sandbox child: length-prefixed JSON headers, optionally
followed by the raw bytes of one tensor, over inherited pipe file descriptors.

Never pickle: the parent decodes only JSON and raw numbers, so a malicious child cannot run code in the parent.
The candidate's stdout/stderr go to a log file and are never parsed.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import torch

MAX_HEADER_BYTES = 1 << 22
MAX_TENSOR_BYTES = 16 << 30
DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
    "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class ChannelError(Exception):
    """The peer sent something that is not a well-formed message, or closed the channel mid-message."""


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_message(fd: int, header: dict[str, Any], tensor: torch.Tensor | None = None) -> None:
    """Send `header` (JSON-able dict) and, if given, the raw bytes of `tensor` (copied to the host)."""
    payload: memoryview | None = None
    if tensor is not None:
        t = tensor.detach().contiguous().cpu()
        header = {**header, "tensor": {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                                       "nbytes": t.numel() * t.element_size()}}
        if t.numel():
            payload = memoryview(t.reshape(-1).view(torch.uint8).numpy())
    raw = json.dumps(header).encode()
    _write_all(fd, struct.pack("<I", len(raw)) + raw)
    if payload is not None:
        _write_all(fd, payload)


class MessageReader:
    """Reads messages from a pipe; every size and dtype is validated before allocation."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "rb", buffering=0)

    def close(self) -> None:
        self._file.close()

    def _read_exact(self, n: int) -> bytearray | None:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._file.readinto(view[got:])
            if not k:
                if got == 0:
                    return None
                raise ChannelError(f"channel closed after {got} of {n} bytes")
            got += k
        return buf

    def read(self) -> tuple[dict[str, Any], torch.Tensor | None] | None:
        """Next ``(header, tensor or None)``, or None at a clean end of stream.

        Raises:
            ChannelError: oversized or malformed header, unknown dtype, size mismatch, truncated data.
        """
        head = self._read_exact(4)
        if head is None:
            return None
        (n,) = struct.unpack("<I", head)
        if n > MAX_HEADER_BYTES:
            raise ChannelError(f"header of {n} bytes exceeds {MAX_HEADER_BYTES}")
        raw = self._read_exact(n)
        if raw is None:
            raise ChannelError("channel closed before the header")
        try:
            header = json.loads(raw.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ChannelError(f"header is not JSON: {exc}") from exc
        if not isinstance(header, dict):
            raise ChannelError("header is not a JSON object")
        spec = header.get("tensor")
        return header, (self._read_tensor(spec) if spec is not None else None)

    def _read_tensor(self, spec: Any) -> torch.Tensor:
        try:
            dtype = DTYPES[spec["dtype"]]
            shape = [int(s) for s in spec["shape"]]
            nbytes = int(spec["nbytes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ChannelError(f"bad tensor description {spec!r}") from exc
        numel = 1
        for s in shape:
            if s < 0:
                raise ChannelError(f"negative dimension in {shape}")
            numel *= s
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if nbytes != numel * itemsize or nbytes > MAX_TENSOR_BYTES:
            raise ChannelError(f"tensor of shape {shape} {spec['dtype']} cannot have {nbytes} bytes")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        data = self._read_exact(nbytes)
        if data is None:
            raise ChannelError("channel closed before the tensor data")
        return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape)
