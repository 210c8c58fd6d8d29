"""The probe's kernels compute what they claim (Triton interpreter on the CPU, real launches on a GPU); their
timings are the probe's business and are never checked here."""

from __future__ import annotations

import pytest
import torch

from hardware_profiles.probe import kernels as probe


@pytest.fixture(scope="module")
def dev(device):
    return device


@pytest.mark.parametrize("programs, steps, block", [(3, 7, 64), (1, 0, 16), (5, 40, 128)])
def test_spin_computes_the_closed_form_of_its_recurrence(dev, programs, steps, block):
    out = probe.spin(programs, steps, block=block, num_warps=1, device=dev)
    expected = probe.spin_expected(programs, steps, block)
    torch.testing.assert_close(out.cpu().double(), expected, atol=1e-5 * (1 + steps), rtol=1e-5)


@pytest.mark.parametrize("n, block", [(1000, 256), (4096, 4096), (13, 16)])
def test_copy_copies_every_element_and_nothing_past_the_end(dev, n, block):
    src = torch.randn(n + 5, device=dev)
    dst = torch.full((n + 5,), float("nan"), device=dev)
    probe.copy(src[:n], dst[:n], block=block, num_warps=4)
    assert torch.equal(dst[:n], src[:n]) and torch.isnan(dst[n:]).all()


def test_copy_rejects_mismatched_tensors(dev):
    with pytest.raises(ValueError, match="one shape and dtype"):
        probe.copy(torch.zeros(4, device=dev), torch.zeros(5, device=dev))


@pytest.mark.parametrize("m, n, k", [(32, 48, 40), (16, 16, 16), (33, 17, 70)])
def test_matmul_matches_a_float64_product(dev, m, n, k):
    a = torch.randn(m, k, device=dev).half()
    b = torch.randn(k, n, device=dev).half()
    c = torch.empty(m, n, device=dev, dtype=torch.float16)
    probe.matmul(a, b, c, block_m=16, block_n=16, block_k=16, num_warps=1, num_stages=2, group_m=2)
    expected = a.double().cpu() @ b.double().cpu()
    torch.testing.assert_close(c.double().cpu(), expected, atol=2e-2 * k ** 0.5, rtol=1e-2)


def test_staged_dot_is_a_correct_product(dev):
    _, c, a, b = probe.staged_dot(16, 16, 2, num_warps=1, device=dev)
    torch.testing.assert_close(c.double().cpu(), a.double().cpu() @ b.double().cpu(), atol=0.1, rtol=1e-2)


def test_threads_writes_each_lane_once(dev):
    _, out = probe.threads(2, warp_size=32, device=dev)
    assert torch.equal(out.cpu(), torch.arange(64, dtype=torch.int32))


def test_empty_launches(dev):
    probe.empty(torch.zeros(1, device=dev))
