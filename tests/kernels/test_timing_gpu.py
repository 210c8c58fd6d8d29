"""The timing helper on a GPU: the GPU-side delay hides host launch work, the exposed mode counts it."""

from __future__ import annotations

import time

import pytest
import torch

from kernels.timing import HOST_COVER_US, back_to_back_us, bench, graph_bench, host_us, time_one_call

pytestmark = pytest.mark.gpu

HOST_STALL_S = 0.001  # 1 ms of host work before the launch, well under HOST_COVER_US


@pytest.fixture(scope="module")
def buffer():
    return torch.zeros(1 << 16, device="cuda", dtype=torch.float32)


def _stalled_add(x: torch.Tensor) -> None:
    time.sleep(HOST_STALL_S)
    x.add_(1.0)


def test_host_work_before_the_launch_is_hidden_behind_the_delay(buffer):
    covered = bench(lambda x: _stalled_add(x), [{"x": buffer}], reps=9, warmup=2)
    exposed = bench(lambda x: _stalled_add(x), [{"x": buffer}], reps=9, warmup=2, cover_us=0)
    assert covered.median_us < 200, covered  # a 256 KiB add is a few microseconds of GPU time
    assert exposed.median_us > 0.9 * HOST_STALL_S * 1e6, exposed  # the idle GPU waits for the host
    assert covered.wall_median_us < 0.5 * HOST_COVER_US  # the delay itself is not part of the wall figure


def test_one_call_reports_the_delay_it_enqueued(buffer):
    event_us, wall_us, cover_us = time_one_call(lambda: buffer.add_(1.0), buffer.device)
    assert 0.5 * HOST_COVER_US < cover_us < 2 * HOST_COVER_US
    assert 0 < event_us < wall_us + 20
    _, _, none = time_one_call(lambda: buffer.add_(1.0), buffer.device, cover_us=0)
    assert none < 50


def test_graph_replay_drops_the_host_work_that_back_to_back_calls_and_host_time_show(buffer):
    """A call of 1 ms of host work and a few microseconds of GPU work: the graph time is the GPU work, the
    back-to-back time and the host time are the host's millisecond."""
    sets = [{"x": buffer}, {"x": buffer.clone()}]
    gpu = graph_bench(lambda x: _stalled_add(x), sets, reps=9, warmup=2)
    assert gpu.median_us < 200, gpu
    assert back_to_back_us(lambda x: _stalled_add(x), sets, calls=8) > 0.9 * HOST_STALL_S * 1e6
    assert host_us(lambda x: _stalled_add(x), sets[0], calls=8) > 0.9 * HOST_STALL_S * 1e6
    assert host_us(lambda x: x.add_(1.0), sets[0], calls=8) < 0.5 * HOST_STALL_S * 1e6
