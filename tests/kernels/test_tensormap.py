"""Tensor maps kept per buffer (kernels/tensormap.py): the cache key names everything an encoding depends on, a new
buffer at the same shape gets its own encoding, the cache is bounded; `prepare_launcher` takes Triton 3.6's CUDA
launcher apart into the same final arguments as Triton's own wrapper, and declines launchers it does not know.
CPU: descriptors over CPU tensors, Triton's launcher classes built without compiling their C module (nothing is
launched); tests/kernels/test_replay_gpu.py counts the encodings of replayed calls on a GPU."""

from __future__ import annotations

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels import tensormap
from kernels.tensormap import TensorMapCache, meta_key, prepare_launcher

META = {"swizzle": 3, "elem_size": 2, "elem_type": 5, "block_size": [64, 64], "fp4_padded": False}


def _encoded_address(desc, meta):
    """An encoding whose value is what a tensor map encodes: address, shape, strides, box (independent of the
    cache)."""
    return [("map", desc.base.data_ptr(), tuple(desc.block_shape)), *desc.shape, *desc.strides]


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, desc, meta):
        self.calls += 1
        return _encoded_address(desc, meta)


def _desc(t: torch.Tensor, block=(64, 64)) -> TensorDescriptor:
    return TensorDescriptor(t, list(t.shape), list(t.stride()), list(block))


def test_same_buffer_is_encoded_once_and_a_new_buffer_again():
    cache, encode = TensorMapCache(), Counting()
    buf = torch.zeros(256, 128, dtype=torch.float16)
    first = cache.expanded(_desc(buf), META, meta_key(META), encode)
    again = cache.expanded(_desc(buf), META, meta_key(META), encode)  # a new descriptor object over the same buffer
    assert encode.calls == 1 and again is first and cache.encodes == 1
    other = torch.zeros(256, 128, dtype=torch.float16)  # same shape, strides and dtype: another address
    rebuilt = cache.expanded(_desc(other), META, meta_key(META), encode)
    assert encode.calls == 2 and rebuilt[0] == ("map", other.data_ptr(), (64, 64)) != first[0]


@pytest.mark.parametrize("change", ["block", "strides", "dtype", "meta", "padding"])
def test_key_separates_what_the_encoding_depends_on(change):
    cache, encode = TensorMapCache(), Counting()
    buf = torch.zeros(256, 128, dtype=torch.float16)
    cache.expanded(_desc(buf), META, meta_key(META), encode)
    desc, meta = _desc(buf), META
    if change == "block":
        desc = _desc(buf, (32, 64))
    elif change == "strides":  # the same address seen as [128, 256] rows of twice the stride
        view = buf.view(128, 256)
        desc = TensorDescriptor(view, [128, 128], [256, 1], [64, 64])
    elif change == "dtype":
        desc = _desc(buf.view(torch.bfloat16))
    elif change == "meta":
        meta = {**META, "swizzle": 2}
    else:
        desc = TensorDescriptor(buf, [256, 128], [128, 1], [64, 64], padding="nan")
    cache.expanded(desc, meta, meta_key(meta), encode)
    assert encode.calls == 2 and len(cache) == 2


def test_cache_is_bounded_and_drops_the_oldest():
    cache, encode = TensorMapCache(max_entries=3), Counting()
    bufs = [torch.zeros(64, 64, dtype=torch.float16) for _ in range(5)]
    for buf in bufs:
        cache.expanded(_desc(buf), META, meta_key(META), encode)
    assert len(cache) == 3 and encode.calls == 5
    cache.expanded(_desc(bufs[-1]), META, meta_key(META), encode)  # newest: kept
    assert encode.calls == 5
    cache.expanded(_desc(bufs[0]), META, meta_key(META), encode)  # oldest: dropped, encoded again
    assert encode.calls == 6 and len(cache) == 3


def test_meta_key_is_hashable_and_order_free():
    assert meta_key(None) is None
    assert meta_key(META) == meta_key(dict(reversed(list(META.items()))))
    hash(meta_key(META))


def test_prepare_declines_launchers_it_does_not_know():
    class NotTriton:
        @staticmethod
        def run(*args):
            return None

    assert prepare_launcher(NotTriton()) is None
    driver = pytest.importorskip("triton.backends.nvidia.driver")
    if getattr(driver, "_BASE_ARGS_FORMAT_LEN", None) == tensormap.BASE_ARGS:
        pytest.skip("this Triton's launcher is the one prepare_launcher knows (checked below)")
    launcher = object.__new__(driver.CudaLauncher)  # another release's launcher: not taken apart
    launcher.__dict__.update(global_scratch_size=0, profile_scratch_size=0, launch=lambda *a: None,
                             launch_cooperative_grid=False, launch_pdl=False)

    class Compiled:
        run = launcher

    assert prepare_launcher(Compiled()) is None


def check_same_final_arguments_as_triton(monkeypatch=None) -> None:
    """Triton 3.6's `CudaLauncher.__call__` + `wrap_handle_tensordesc` and `PreparedLauncher` hand the C launcher
    the same arguments: one descriptor with a tensor map (meta), one decomposed (no meta), CUDA-less tensors kept as
    tensors, constexprs in place. `make_tensordesc_arg` is replaced by an encoding that needs no driver."""
    from triton.backends.nvidia import driver

    seen: list[tuple] = []
    signature = {0: "*fp16", 1: "tensordesc<fp16[64, 64]>", 2: "i32", 3: "tensordesc<fp16[64, 64]>",
                 4: "constexpr"}
    metas = [META, None]
    original = driver.make_tensordesc_arg
    driver.make_tensordesc_arg = lambda arg, meta: (_encoded_address(arg, meta) if meta is not None
                                                    else original(arg, None))
    try:
        launcher = object.__new__(driver.CudaLauncher)
        launcher.__dict__.update(
            num_ctas=1, launch=driver.wrap_handle_tensordesc(lambda *a: seen.append(a), signature, metas),
            global_scratch_size=0, global_scratch_align=1, profile_scratch_size=0, profile_scratch_align=1,
            launch_cooperative_grid=False, launch_pdl=True)

        class Compiled:
            run = launcher

        q, k, v = (torch.zeros(128, 64, dtype=torch.float16) for _ in range(3))
        args = (q, _desc(k), 7, _desc(v), 64)
        launcher(2, 3, 1, 99, 1234, ("meta",), None, None, None, *args)
        prepared = prepare_launcher(Compiled())
        assert prepared is not None and set(prepared.descs) == {1, 3}
        prepared((2, 3, 1), 99, 1234, ("meta",), args[:4], args[4:])  # constexpr tail apart, as DirectLaunch
        prepared((2, 3, 1), 99, 1234, ("meta",), args)  # all in `args`, the tensor map from the cache
        prepared((2, 3, 1), 99, 1234, ("meta",), args[:2], args[2:])  # a descriptor in the tail
    finally:
        driver.make_tensordesc_arg = original
    triton_args, ours, *ours_again = seen
    assert len(ours) == len(triton_args) == tensormap.BASE_ARGS + 1 + 5 + 1 + 10 + 1  # map+shape+strides; decomposed

    def comparable(values):
        return [("tensor", v.data_ptr()) if isinstance(v, torch.Tensor) else v for v in values]

    assert all(comparable(c) == comparable(triton_args) for c in (ours, *ours_again))
    assert len(ours_again) == 2 and ours_again[0][14] is ours[14]  # the kept map object


def test_prepared_launcher_matches_tritons_wrapper():
    driver = pytest.importorskip("triton.backends.nvidia.driver")
    if getattr(driver, "_BASE_ARGS_FORMAT_LEN", None) != tensormap.BASE_ARGS:
        pytest.skip("Triton 3.6's launcher layout only (the GPU machine's release)")
    check_same_final_arguments_as_triton()
