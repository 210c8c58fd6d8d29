"""Prefix pre-gather (`kernels.extend_attention.prefix_gather`) against torch indexing (interpreter on CPU)."""

from __future__ import annotations

import torch

from kernels.extend_attention.prefix_gather import gather_rows


def test_gathered_rows_equal_indexing_with_strided_source_and_odd_width(device):
    gen = torch.Generator().manual_seed(7)
    pool = torch.randn(50, 3, 40, generator=gen).to(device=device, dtype=torch.float16)
    src = pool[:, :, :13]  # a view: row stride 120, head stride 40, width 13 (MLA's V is such a view of K)
    idx = torch.randperm(50, generator=gen)[:37].to(device)
    got = gather_rows(src, idx, slot=1)
    assert got.is_contiguous() and got.shape == (37, 3, 13)
    assert torch.equal(got, src[idx])


def test_empty_prefix_gives_an_empty_buffer(device):
    src = torch.zeros(4, 2, 8, device=device)
    got = gather_rows(src, torch.zeros(0, dtype=torch.int64, device=device), slot=0)
    assert got.shape == (0, 2, 8)


def test_the_workspace_is_reused_for_calls_of_one_size_class(device):
    src = torch.arange(8 * 2 * 4, dtype=torch.float32, device=device).view(8, 2, 4)
    first = gather_rows(src, torch.tensor([3, 1, 2], device=device), slot=0)
    ptr = first.data_ptr()
    second = gather_rows(src, torch.tensor([0, 7], device=device), slot=0)
    assert second.data_ptr() == ptr and torch.equal(second, src[torch.tensor([0, 7], device=device)])
