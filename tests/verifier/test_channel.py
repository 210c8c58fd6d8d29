"""The private channel: tensors and headers round-trip bit-exactly; malformed input raises ChannelError."""

from __future__ import annotations

import os
import struct

import pytest
import torch

from agent.verifier.channel import ChannelError, MessageReader, write_message


@pytest.fixture()
def pipe():
    r, w = os.pipe()
    reader = MessageReader(r)
    yield reader, w
    reader.close()
    try:
        os.close(w)
    except OSError:
        pass


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool])
def test_tensor_round_trips_bit_exactly(pipe, dtype):
    reader, w = pipe
    t = (torch.randn(3, 5, 7) * 100).to(dtype)
    if dtype.is_floating_point:
        t[0, 0, 0] = float("nan")
    write_message(w, {"type": "trial", "id": 4}, t)
    head, got = reader.read()
    assert head["type"] == "trial" and head["id"] == 4 and head["tensor"]["shape"] == [3, 5, 7]
    assert got.dtype == dtype and got.shape == t.shape
    assert torch.equal(got.view(torch.uint8), t.view(torch.uint8))


def test_header_only_and_clean_end(pipe):
    reader, w = pipe
    write_message(w, {"type": "done"})
    write_message(w, {"type": "m", "k": "rb"}, torch.empty(0, 4))
    os.close(w)
    assert reader.read() == ({"type": "done"}, None)
    head, empty = reader.read()
    assert empty.shape == (0, 4)
    assert reader.read() is None


@pytest.mark.parametrize("raw, message", [
    (struct.pack("<I", 1 << 30), "exceeds"),
    (struct.pack("<I", 5) + b"nope!", "not JSON"),
    (struct.pack("<I", 2) + b"[]", "not a JSON object"),
])
def test_malformed_headers_raise(pipe, raw, message):
    reader, w = pipe
    os.write(w, raw)
    os.close(w)
    with pytest.raises(ChannelError, match=message):
        reader.read()


@pytest.mark.parametrize("spec, message", [
    ({"dtype": "float16", "shape": [4], "nbytes": 9}, "cannot have"),
    ({"dtype": "object", "shape": [1], "nbytes": 8}, "bad tensor description"),
    ({"dtype": "float32", "shape": [-1], "nbytes": 4}, "negative"),
])
def test_bad_tensor_descriptions_raise(pipe, spec, message):
    reader, w = pipe
    raw = f'{{"type": "trial", "tensor": {str(spec).replace(chr(39), chr(34))}}}'.encode()
    os.write(w, struct.pack("<I", len(raw)) + raw)
    os.close(w)
    with pytest.raises(ChannelError, match=message):
        reader.read()


def test_truncated_tensor_raises(pipe):
    reader, w = pipe
    raw = b'{"type": "trial", "tensor": {"dtype": "float32", "shape": [4], "nbytes": 16}}'
    os.write(w, struct.pack("<I", len(raw)) + raw + b"\x00" * 7)
    os.close(w)
    with pytest.raises(ChannelError, match="closed"):
        reader.read()
