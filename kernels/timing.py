"""The one timing helper: warm-up, cold L2, device-wide sync inside the timed region, fixed repetitions, median.

Modelled on FlashInfer's ``bench_gpu_time`` and METHOD.md of this project's GPU notes: each timed call is
preceded by an L2 flush (a write of a buffer larger than L2) and by rotating to the next of several input
sets; the region is bounded by CUDA events on the current stream *and* a device-wide synchronize, so work hidden
on another stream or finished late cannot shorten the figure; the host wall clock of the same region is kept
to cross-check the event time. Repetition counts are fixed by the caller, never derived from the timed
function's own first calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

#: Bytes written to flush L2 before each timed call (H200 L2 is 60 MiB; MI300X Infinity Cache 256 MiB).
L2_FLUSH_BYTES = 512 * 1024 * 1024

#: GPU-side delay (microseconds) enqueued before each timed call's start event, so the host's launch work (Python,
#: argument checks, a sandbox's guards) overlaps GPU work instead of leaving the GPU idle inside the event window --
#: the same effect as replaying a CUDA graph. Host time beyond this still counts.
HOST_COVER_US = 3000.0


@dataclass(frozen=True)
class Timing:
    """Per-call times in microseconds (median, quartiles, all samples) plus the wall-clock medians."""

    median_us: float
    p25_us: float
    p75_us: float
    min_us: float
    wall_median_us: float
    samples_us: tuple[float, ...]
    reps: int
    device: str

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (samples as a list)."""
        out = asdict(self)
        out["samples_us"] = list(self.samples_us)
        return out


class _GpuDelay:
    """Enqueues a spin kernel of a given duration (``torch.cuda._sleep`` counts SM clock cycles)."""

    _cycles_per_us: dict[torch.device, float] = {}

    @classmethod
    def enqueue(cls, device: torch.device, us: float) -> None:
        cycles = max(1, int(us * cls.rate(device)))
        with torch.cuda.device(device):  # _sleep spins on the current device
            torch.cuda._sleep(cycles)

    @classmethod
    def rate(cls, device: torch.device) -> float:
        """SM cycles per microsecond on `device`, calibrated once per process."""
        if device not in cls._cycles_per_us:
            cls._cycles_per_us[device] = cls._calibrate(device)
        return cls._cycles_per_us[device]

    @staticmethod
    def _calibrate(device: torch.device, cycles: int = 2_000_000) -> float:
        """SM cycles per microsecond: the fastest of three timed spins after ~20 ms of spinning that lets the clock
        leave its idle state (the fastest rate makes every later delay at least as long as asked)."""
        rates = []
        with torch.cuda.device(device):
            torch.cuda._sleep(20 * cycles)
            for _ in range(3):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.cuda._sleep(cycles)
                end.record()
                torch.cuda.synchronize(device)
                rates.append(cycles / (start.elapsed_time(end) * 1e3))
        return max(rates)


class _L2Flusher:
    """Holds one large buffer per device and overwrites it to evict L2 before each timed call; with `clean`, then
    reads a second buffer of the same size, so the L2 is left holding clean lines.

    A write flush leaves the L2 full of dirty lines of the flush buffer (the L2 is write-back): the timed call's
    first L2-sized share of misses then also writes those lines back to device memory, up to the L2's size of
    extra traffic inside the timed region. The read after the write pays that write-back before the timed region.
    """

    _buffers: dict[tuple[torch.device, str], torch.Tensor] = {}

    @classmethod
    def _buffer(cls, device: torch.device, role: str) -> torch.Tensor:
        buf = cls._buffers.get((device, role))
        if buf is None:
            buf = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
            cls._buffers[(device, role)] = buf
        return buf

    @classmethod
    def flush(cls, device: torch.device, clean: bool = False) -> None:
        cls._buffer(device, "write").fill_(0x5A5A)
        if clean:
            cls._buffer(device, "read").sum()


def bench(
    fn: Callable[..., Any],
    arg_sets: Sequence[dict[str, Any]],
    reps: int = 20,
    warmup: int = 3,
    flush_l2: bool = True,
    cover_us: float = HOST_COVER_US,
    clean_l2: bool = False,
) -> Timing:
    """Median per-call GPU time of ``fn(**arg_sets[i % len(arg_sets)])``.

    Args:
        fn: the kernel entry point; called with keyword arguments.
        arg_sets: one or more input sets on one CUDA device; rotated call by call so that repeated calls do
            not hit inputs left in L2 by the previous call.
        reps: timed calls (fixed by the caller). warmup: untimed calls first (compilation, autotuning).
        flush_l2: write `L2_FLUSH_BYTES` before each timed call.
        cover_us: GPU-side delay before each call's start event that hides host launch work (`HOST_COVER_US`);
            0 times the call from an idle GPU, host launch work included.
        clean_l2: after the flush's write, read a second `L2_FLUSH_BYTES` buffer, so the call starts on an L2 of
            clean lines and does not pay the write-back of the flush's dirty lines (`_L2Flusher`).

    Returns:
        `Timing` in microseconds; wall-clock figures exclude the delay (its event-timed duration is subtracted).

    Raises:
        RuntimeError: no CUDA device, or `arg_sets` is empty.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("kernels.timing.bench needs a CUDA/ROCm device; nothing is timed on the CPU")
    if not arg_sets or reps < 1:
        raise RuntimeError("bench needs at least one input set and reps >= 1")
    device = device_of(arg_sets[0])
    for i in range(warmup):
        fn(**arg_sets[i % len(arg_sets)])
    prepare_delay(device)
    torch.cuda.synchronize(device)
    samples, walls = [], []
    for i in range(reps):
        args = arg_sets[i % len(arg_sets)]
        event_us, wall_us, _ = time_one_call(lambda _a=args: fn(**_a), device, flush_l2, cover_us, clean_l2)
        samples.append(event_us)
        walls.append(wall_us)
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Timing(
        median_us=statistics.median(samples), p25_us=q[0], p75_us=q[2], min_us=min(samples),
        wall_median_us=statistics.median(walls), samples_us=tuple(samples), reps=reps,
        device=torch.cuda.get_device_name(device),
    )


def time_one_call(
    call: Callable[[], Any], device: torch.device, flush_l2: bool = True, cover_us: float = HOST_COVER_US,
    clean_l2: bool = False,
) -> tuple[float, float, float]:
    """(event_us, wall_us, cover_us) of one call: the building block of `bench` and of the verifier's timing loop.

    Order on the current stream: L2 flush, device-wide synchronize, host clock starts, delay event, GPU-side delay
    of `cover_us`, start event, the call, end event, device-wide synchronize, host clock stops. `event_us` is
    start->end; `cover_us` the delay's own event-timed duration; `wall_us` the host clock minus `cover_us`, so work
    the events cannot see (another stream, another thread) still shows as wall time above event time. `clean_l2`:
    the flush ends with a read that leaves clean lines in L2 (`_L2Flusher`).
    """
    if flush_l2:
        _L2Flusher.flush(device, clean_l2)
    pre, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    pre.record()
    if cover_us > 0:
        _GpuDelay.enqueue(device, cover_us)
    start.record()
    call()
    end.record()
    torch.cuda.synchronize(device)
    wall_us = (time.perf_counter() - t0) * 1e6
    covered = pre.elapsed_time(start) * 1e3
    return start.elapsed_time(end) * 1e3, wall_us - covered, covered


def prepare_delay(device: torch.device) -> None:
    """Calibrate the GPU-side delay now (once per process), so it never happens inside a timed call."""
    _GpuDelay.rate(device)


def flush_l2(device: torch.device, clean: bool = False) -> None:
    """Evict L2 by writing `L2_FLUSH_BYTES` on `device` (enqueued on the current stream; no synchronize); `clean`:
    then read as many bytes of another buffer, leaving clean lines in L2 (`_L2Flusher`)."""
    _L2Flusher.flush(device, clean)


def device_of(args: dict[str, Any]) -> torch.device:
    """The device of the first CUDA tensor among `args` (RuntimeError if there is none)."""
    for value in args.values():
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return value.device
    raise RuntimeError("bench: no CUDA tensor among the arguments")


def capture_graph(fn: Callable[..., Any], args: dict[str, Any]) -> torch.cuda.CUDAGraph:
    """A CUDA graph of one ``fn(**args)``, captured after a warm-up call on a side stream (compilation, workspace
    allocation: nothing may synchronize or allocate host-visibly inside the capture). Replay it to time the GPU
    work alone, without the host's launch cost.

    Raises:
        whatever capture raises (a host synchronization or an uncapturable operation inside `fn`).
    """
    device = device_of(args)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        fn(**args)
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(**args)
    torch.cuda.synchronize(device)
    return graph


def graph_bench(fn: Callable[..., Any], arg_sets: Sequence[dict[str, Any]], reps: int = 20, warmup: int = 3
                ) -> Timing:
    """`bench` of CUDA-graph replays of ``fn(**arg_sets[i])`` (one graph per input set, L2 flushed before each):
    the GPU time of the call's kernels, host launch work excluded."""
    graphs = {id(args): capture_graph(fn, args) for args in arg_sets}
    replays = [{"_graph": graphs[id(args)], **args} for args in arg_sets]
    return bench(lambda _graph, **_: _graph.replay(), replays, reps=reps, warmup=warmup)


def back_to_back_us(fn: Callable[..., Any], arg_sets: Sequence[dict[str, Any]], calls: int = 20) -> float:
    """Microseconds per call of `calls` consecutive ``fn(**arg_sets[i % n])`` launched with no synchronization or
    L2 flush between them (after one warm-up round), CUDA events around the whole run: the time a caller sees when
    the host's launch work is not hidden (a host-bound call shows its host time here)."""
    device = device_of(arg_sets[0])
    for args in arg_sets:
        fn(**args)
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        fn(**arg_sets[i % len(arg_sets)])
    end.record()
    torch.cuda.synchronize(device)
    return start.elapsed_time(end) * 1e3 / calls


def host_us(fn: Callable[..., Any], args: dict[str, Any], calls: int = 50) -> float:
    """Median host time in microseconds of one ``fn(**args)``: `time.perf_counter` around the call, which is not
    synchronized (the GPU work it queues is not waited for); the device is synchronized between calls, outside the
    measured span, so a full launch queue never blocks the host."""
    device = device_of(args)
    fn(**args)
    samples = []
    for _ in range(calls):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        fn(**args)
        samples.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize(device)
    return statistics.median(samples)
