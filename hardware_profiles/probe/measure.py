"""Running the probe on the present GPU (through Triton, so on any backend Triton targets): raw readings in.

Each `measure_*` returns a `Reading` (value, unit, method, repeats, spread, details) or None with the reason in
`ProbeReport.notes`; `run_probe` runs them all in this process, which must already be inside the chip's partition
for a virtual chip (`hardware_profiles.virtual.enter_chip`). The kernels are `hardware_profiles.probe.kernels`
(imported as ``probe``). Timing is `kernels.timing` (CUDA events, a GPU-side
delay that hides host launch work, median of fixed repetitions). Sizes are chosen so that a launch runs well past
its overhead and the copy's data is many times the L2 (METHOD.md of the GPU notes: a few gigabytes, not all).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from hardware_profiles.probe.analysis import Stat, fit_staircase, ladder_limit, largest_that_ran, sweep_points

KIB = 1024


@dataclass(frozen=True)
class Reading:
    """One measured quantity: the median over `repeats`, its spread, the method in words, and what was seen."""

    value: float
    unit: str
    method: str
    repeats: int
    spread: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProbeReport:
    """Everything one probe run read, by profile field name, with the device it ran on and notes."""

    device: str
    backend: str
    triton_version: str
    readings: dict[str, Reading] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    comparisons: dict[str, float] = field(default_factory=dict)  # torch/cuBLAS in the same run, same units


class CannotMeasure(RuntimeError):
    """No GPU to measure on (or only the interpreter): the probe times kernels on the chip itself."""


def _timed(fn, reps: int, warmup: int = 2, cover_us: float = 200.0, flush: bool = False) -> list[float]:
    """Event times (us) of `reps` calls of ``fn()`` after `warmup` (kernels.timing's building block)."""
    import torch

    from kernels.timing import prepare_delay, time_one_call

    device = torch.device("cuda", torch.cuda.current_device())
    for _ in range(warmup):
        fn()
    prepare_delay(device)
    torch.cuda.synchronize()
    return [time_one_call(fn, device, flush, cover_us)[0] for _ in range(reps)]


def measure_compute_units(hint: int, repeats: int = 3, reps: int = 3, target_us: float = 60.0) -> Reading:
    """Compute units from the staircase of the probe's `spin` (32 warps a program) timed at 1 .. 2.5 x `hint`
    programs (`hint`: the device's reported count, an upper bound of a partition); `repeats` sweeps, each fitted
    on its own (`fit_staircase`), the median count reported.

    Raises:
        ValueError: a sweep shows no staircase.
    """
    import torch

    from hardware_profiles.probe import kernels as probe

    out = torch.empty(int(2.5 * hint + 8) * 8192, dtype=torch.float32, device="cuda")
    steps = 256
    for _ in range(6):  # one program alone runs about `target_us`
        t = statistics.median(_timed(lambda n=steps: probe.spin(1, n, out=out), 3))
        if t >= 0.7 * target_us:
            break
        steps = int(steps * max(2.0, target_us / max(t, 1.0)))
    points = sweep_points(hint)
    fits = []
    for _ in range(repeats):
        times = [statistics.median(_timed(lambda p=p: probe.spin(p, steps, out=out), reps, warmup=1))
                 for p in points]
        fits.append(fit_staircase(points, times))
    units = Stat.of([f.units for f in fits])
    method = (f"staircase of a fixed-work kernel (32 warps, {steps} dependent FMA steps on 8192 lanes a program) "
              f"timed at 1..{points[-1]} programs, {reps} launches each; least-squares fit of t0 + T*ceil(P/N); "
              f"median N of {repeats} sweeps")
    return Reading(round(units.median), "count", method, repeats, units.spread,
                   {"fits": [vars(f) for f in fits], "steps": steps, "device_reported": hint})


def _ladder_rung(block: int, block_k: int, stages: int) -> tuple[int, bool, int | None, str]:
    """(required shared bytes, ran, limit the refusal named, note) of one `staged_dot` rung."""
    import torch
    from triton.runtime.errors import OutOfResources

    from hardware_profiles.probe import kernels as probe

    try:
        kernel, c, a, b = probe.staged_dot(block, block_k, stages)
        torch.cuda.synchronize()
        ok = bool(torch.allclose(c.float(), (a.float() @ b.float()), atol=0.5, rtol=0.05))
        return int(kernel.metadata.shared), ok, None, "" if ok else "ran but computed a wrong product"
    except OutOfResources as exc:
        return int(exc.required), False, int(exc.limit), str(exc)[:160]


#: Ladder rungs (tile rows, BLOCK_K, pipeline stages) of `measure_smem_per_block`, by growing shared memory: two
#: small single-stage tiles for chips with little of it, then 128x64 tiles of 1..8 stages (32 KiB a stage, fp16).
SMEM_RUNGS = ((32, 32, 1), (64, 64, 1), *((128, 64, s) for s in range(1, 9)))


def measure_smem_per_block() -> Reading | None:
    """Shared memory a program may use: the `SMEM_RUNGS` of the probe's `staged_dot` compiled and launched until
    Triton refuses one; the limit the refusal names, checked against the rungs that ran (`ladder_limit`)."""
    rungs, seen = [], []
    for block, block_k, stages in SMEM_RUNGS:
        required, ok, limit, note = _ladder_rung(block, block_k, stages)
        rungs.append((required, ok, limit))
        seen.append({"block": block, "block_k": block_k, "stages": stages, "shared_bytes": required, "ran": ok,
                     "named_limit": limit, "note": note})
        if not ok:
            break
    result = ladder_limit(rungs)
    if result.limit is None:
        return None
    method = (f"compile-and-launch ladder of pipelined tl.dot kernels (shared memory from each compiled kernel's "
              f"metadata): {result.how}")
    return Reading(result.limit / KIB, "KiB", method, 1, 0.0, {"rungs": seen})


def measure_threads_per_block(warp_size: int) -> Reading | None:
    """Threads a program may have: one program of 1, 2, 4 ... 64 warps launched until one is refused."""
    import torch

    from hardware_profiles.probe import kernels as probe

    rungs = []
    for warps in (1, 2, 4, 8, 16, 32, 64):
        try:
            _, out = probe.threads(warps, warp_size)
            torch.cuda.synchronize()
            ran = bool(torch.equal(out.cpu(), torch.arange(warps * warp_size, dtype=torch.int32)))
        except Exception:  # noqa: BLE001 - Triton refuses too many warps at compile or at load: either is a no
            ran = False
        rungs.append((warps * warp_size, ran))
        if not ran:
            break
    value = largest_that_ran(rungs)
    if value is None:
        return None
    return Reading(value, "threads", f"launch ladder of one program of 1..64 warps of {warp_size}: the largest that "
                   "ran", 1, 0.0, {"rungs": rungs})


def measure_bandwidth(l2_bytes: int, repeats: int = 5, reps: int = 10) -> tuple[Reading, float]:
    """Achievable device-memory bandwidth (GB/s, bytes read + written) of the probe's `copy` over a buffer of
    16 x L2 (at least 1 GiB), the best of four block/warp variants; and a torch copy of the same buffer."""
    import torch

    from hardware_profiles.probe import kernels as probe

    nbytes = max(1 << 30, 16 * l2_bytes)
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    gbps = lambda us: 2 * nbytes / (us * 1e3)  # noqa: E731
    variants, configs = {}, {f"BLOCK={b}, num_warps={w}": (b, w) for b, w in ((1024, 4), (4096, 8), (8192, 8),
                                                                            (16384, 16))}
    for name, (block, warps) in configs.items():
        variants[name] = [gbps(t) for t in _timed(lambda b=block, w=warps: probe.copy(src, dst, b, w),
                                                  repeats * reps // 5)]
    best = max(variants, key=lambda k: statistics.median(variants[k]))
    chunks = [statistics.median(variants[best][i::repeats]) for i in range(repeats)]
    stat = Stat.of(chunks)
    dst.zero_()
    probe.copy(src, dst, *configs[best])
    if not torch.equal(dst, src):
        raise RuntimeError("the probe's copy kernel did not copy the buffer")
    torch_gbps = statistics.median(gbps(t) for t in _timed(lambda: dst.copy_(src), reps))
    method = (f"Triton copy kernel over {nbytes / 2**30:.2f} GiB (16 x L2 or more), bytes read + written per second; "
              f"best variant {best}; median of {repeats} groups of timed copies")
    return Reading(round(stat.median, 1), "GB/s", method, repeats, stat.spread,
                   {"variants_gbps": {k: statistics.median(v) for k, v in variants.items()}}), torch_gbps


#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) tried for the dot throughput, largest first; a chip with
#: little shared memory refuses the large ones and keeps what fits. Shared memory per program in fp16/bf16 with the
#: JIT's unit-stride specialization (sm_90, triton 3.6, offline compile): 192, 144, 144, 128, 96, 32, 36 KiB.
DOT_CONFIGS = ((128, 256, 64, 8, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
               (128, 128, 64, 4, 3), (128, 128, 32, 8, 2), (128, 64, 32, 4, 3))


def measure_dot(dtype_name: str, size: int = 8192, repeats: int = 5, reps: int = 10) -> tuple[Reading | None, float]:
    """Achievable dense tl.dot throughput (TFLOP/s) of the probe's `matmul` on random [size]^3 inputs, the best
    of `DOT_CONFIGS` that the chip runs; and torch.matmul (cuBLAS / hipBLASLt) of the same inputs."""
    import torch
    from triton.runtime.errors import OutOfResources

    from hardware_profiles.probe import kernels as probe

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    a = torch.randn(size, size, device="cuda").to(dtype)
    b = torch.randn(size, size, device="cuda").to(dtype)
    c = torch.empty(size, size, device="cuda", dtype=dtype)
    tflops = lambda us: 2 * size ** 3 / (us * 1e6)  # noqa: E731
    variants, refused = {}, {}
    configs = {f"{bm}x{bn}x{bk}, {warps} warps, {stages} stages": (bm, bn, bk, warps, stages)
               for bm, bn, bk, warps, stages in DOT_CONFIGS}
    for name, (bm, bn, bk, warps, stages) in configs.items():
        try:
            cfg = (bm, bn, bk, warps, stages)
            variants[name] = [tflops(t) for t in _timed(lambda cfg=cfg: probe.matmul(a, b, c, *cfg),
                                                        repeats * reps // 5)]
        except OutOfResources as exc:
            refused[name] = str(exc)[:120]
    ref = a[:256].float() @ b.float()
    if variants:
        best = max(variants, key=lambda k: statistics.median(variants[k]))
        c.zero_()
        probe.matmul(a, b, c, *configs[best])
        if not torch.allclose(c[:256].float(), ref, atol=1.0, rtol=0.05):
            raise RuntimeError(f"the probe's {dtype_name} matmul computed a wrong product")
    blas = statistics.median(tflops(t) for t in _timed(lambda: torch.matmul(a, b, out=c), reps))
    if not variants:
        return None, blas
    chunks = [statistics.median(variants[best][i::repeats]) for i in range(repeats)]
    stat = Stat.of(chunks)
    method = (f"Triton tl.dot matmul {size}^3 {dtype_name} (random inputs, fp32 accumulation), best tile {best}; "
              f"median of {repeats} groups of timed products" + (f"; refused: {', '.join(refused)}" if refused else ""))
    details = {"variants_tflops": {k: statistics.median(v) for k, v in variants.items()}, "refused": refused}
    return Reading(round(stat.median, 1), "TFLOP/s", method, repeats, stat.spread, details), blas


def measure_launch_overhead(repeats: int = 5, launches: int = 200) -> Reading:
    """Host-side cost of one launch (us): wall time of `launches` back-to-back launches of the probe's `empty`
    divided by their number (the GPU runs nothing, so the host's launch path sets the pace)."""
    import torch

    from hardware_profiles.probe import kernels as probe

    x = torch.zeros(1, device="cuda")
    for _ in range(20):
        probe.empty(x)
    torch.cuda.synchronize()
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(launches):
            probe.empty(x)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) * 1e6 / launches)
    stat = Stat.of(per)
    return Reading(round(stat.median, 2), "us", f"wall time of {launches} back-to-back launches of an empty Triton "
                   f"kernel over their number; median of {repeats}", repeats, stat.spread)


def device_description() -> tuple[str, str, str, int, int, int]:
    """(name, backend, triton version, reported compute units, warp size, L2 bytes) from Triton's driver."""
    import torch
    import triton

    index = torch.cuda.current_device()
    props = triton.runtime.driver.active.utils.get_device_properties(index)
    target = triton.runtime.driver.active.get_current_target()
    l2 = int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or 64 << 20)
    return (torch.cuda.get_device_name(index), target.backend, triton.__version__,
            int(props["multiprocessor_count"]), int(target.warp_size), l2)


def run_probe(dtypes: tuple[str, ...] = ("bf16", "fp16"), quick: bool = False) -> ProbeReport:
    """Every measurement, in this process (see the module docstring); `quick` cuts repeats and sizes (tests).

    Raises:
        CannotMeasure: no GPU, or the Triton interpreter is on.
    """
    import os

    import torch

    if not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
        raise CannotMeasure("no GPU visible to torch" if not torch.cuda.is_available()
                            else "TRITON_INTERPRET=1: interpreter times are not measurements")
    name, backend, version, reported, warp, l2 = device_description()
    report = ProbeReport(device=name, backend=backend, triton_version=version)
    report.notes.append(f"the device reports {reported} compute units (a green context keeps reporting the whole GPU)")
    steps = [("num_compute_units", lambda: measure_compute_units(reported, repeats=2 if quick else 3)),
             ("smem_per_block_kb", measure_smem_per_block),
             ("max_threads_per_block", lambda: measure_threads_per_block(warp))]
    for field_name, run in steps:
        try:
            reading = run()
        except (ValueError, RuntimeError) as exc:
            report.notes.append(f"{field_name}: not measured: {exc}")
            continue
        if reading is None:
            report.notes.append(f"{field_name}: not measured: the ladder reached no refusal")
        else:
            report.readings[field_name] = reading
    bw, torch_gbps = measure_bandwidth(l2, repeats=3 if quick else 5)
    torch.cuda.empty_cache()
    report.readings["achievable_mem_bw_gbps"] = bw
    report.comparisons["torch_copy_gbps"] = round(torch_gbps, 1)
    for dtype in dtypes:
        reading, blas = measure_dot(dtype, size=4096 if quick else 8192, repeats=3 if quick else 5)
        torch.cuda.empty_cache()
        report.comparisons[f"torch_matmul_{dtype}_tflops"] = round(blas, 1)
        if reading is None:
            report.notes.append(f"achievable_tflops.{dtype}: not measured: every tile was refused")
        else:
            report.readings[f"achievable_tflops.{dtype}"] = reading
    report.readings["launch_overhead_us"] = measure_launch_overhead()
    return report
