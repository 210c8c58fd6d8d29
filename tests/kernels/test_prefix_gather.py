"""Prefix pre-gather (`kernels.extend_attention.prefix_gather`) against torch indexing (interpreter on CPU)."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.workspace import pooled


def test_k_and_v_rows_equal_indexing_with_strided_sources_and_odd_widths(device):
    """Row/head strides padded (views of wider pools), widths 400 and 13, 37 tokens: several programs, a partial
    last one, and a K row wider than one column chunk (3 heads x 400 > BLOCK_C = 1024)."""
    gen = torch.Generator().manual_seed(7)
    k_pool = torch.randn(50, 3, 410, generator=gen).to(device=device, dtype=torch.float16)
    v_pool = torch.randn(50, 4, 40, generator=gen).to(device=device, dtype=torch.float16)
    k_src, v_src = k_pool[:, :, :400], v_pool[:, 1:, :13]
    idx = torch.randperm(50, generator=gen)[:37].to(device)
    k_got, v_got = gather_prefix(k_src, v_src, idx)
    assert k_got.is_contiguous() and k_got.shape == (37, 3, 400) and v_got.shape == (37, 3, 13)
    assert torch.equal(k_got, k_src[idx]) and torch.equal(v_got, v_src[idx])


def test_v_as_a_view_of_k_is_copied_once(device):
    pool = torch.randn(20, 1, 24, device=device)
    idx = torch.tensor([5, 0, 19, 7], device=device)
    k_got, v_got = gather_prefix(pool, pool[:, :, :16], idx, v_is_k=True)
    assert v_got.data_ptr() == k_got.data_ptr() and torch.equal(k_got, pool[idx])


def test_empty_prefix_gives_empty_buffers(device):
    src = torch.zeros(4, 2, 8, device=device)
    k_got, v_got = gather_prefix(src, src, torch.zeros(0, dtype=torch.int64, device=device))
    assert k_got.shape == (0, 2, 8) and v_got.shape == (0, 2, 8)


def test_the_workspace_is_reused_for_calls_of_one_size_class(device):
    src = torch.arange(8 * 2 * 4, dtype=torch.float32, device=device).view(8, 2, 4)
    first, _ = gather_prefix(src, src, torch.tensor([3, 1, 2], device=device))
    idx = torch.tensor([0, 7], device=device)
    second, _ = gather_prefix(src, src, idx)
    assert second.data_ptr() == first.data_ptr() and torch.equal(second, src[idx])


def test_a_non_unit_last_stride_is_refused_by_name():
    src = torch.zeros(4, 2, 8)
    with pytest.raises(ValueError, match="v_buffer: pre-gather needs unit stride"):
        gather_prefix(src, src.transpose(1, 2), torch.tensor([0]))



def test_first_heads_copies_only_the_leading_kv_heads(device):
    src = torch.randn(30, 4, 8, device=device)
    idx = torch.tensor([7, 3, 29, 0, 11], device=device)
    k_got, _ = gather_prefix(src, src, idx)  # size the pooled buffer, then poison it
    k_got.fill_(float("nan"))
    k_got, v_got = gather_prefix(src, src, idx, first_heads=2)
    assert torch.equal(k_got[:, :2], src[idx, :2]) and torch.equal(v_got[:, :2], src[idx, :2])
    assert torch.isnan(k_got[:, 2:]).all()


@pytest.mark.parametrize("first_heads", [0, 5])
def test_first_heads_out_of_range_is_refused_by_name(first_heads):
    src = torch.zeros(4, 4, 8)
    with pytest.raises(ValueError, match="first_heads"):
        gather_prefix(src, src, torch.tensor([0]), first_heads=first_heads)


def test_zero_is_cleared_in_the_same_launch(device):
    src = torch.randn(10, 2, 8, device=device)
    counters = torch.full((1300,), 7, dtype=torch.int32, device=device)  # more than one zeroing block
    gather_prefix(src, src, torch.tensor([4, 2], device=device), first_heads=1, zero=counters)
    assert int(counters.abs().sum()) == 0


def test_a_bound_stops_the_copy_at_kv_indptr_b_and_zeroes_the_rest(device):
    """kv_indices longer than ΣP (a serving engine's preallocated buffer): entries past the device bound are never
    read (one points far outside the pool) and their rows of the copy are zeros, whatever the workspace held."""
    pool = torch.randn(30, 1, 24, device=device)
    idx = torch.tensor([4, 9, 2, 11, 10**9, 7], device=device)
    pooled(pool.device, pool.dtype, "prefix_k", idx.numel() * 24).fill_(float("nan"))  # a poisoned workspace
    got, _ = gather_prefix(pool, pool, idx, v_is_k=True, bound=torch.tensor([4], device=device, dtype=torch.int32))
    assert torch.equal(got[:4], pool[idx[:4]])
    assert torch.equal(got[4:], torch.zeros(2, 1, 24, device=device))
