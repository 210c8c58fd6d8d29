"""Split-K GEMM on a GPU at the real bench shapes in bfloat16 (skipped without a GPU), with the H200 profile's
limits: every reduction mode and stream-K, determinism, arrival counters left at zero, IEEE float32."""

from __future__ import annotations

import functools
import random

import pytest
import torch

from benchmarks.splitk_few_rows import GEMV_VARIANTS, variant_config
from hardware_profiles import load_profile
from kernels.chip import ChipLimits
from kernels.splitk_gemm import baseline, splitk_gemm, workspace
from kernels.splitk_gemm.cases import full_params
from kernels.splitk_gemm.config import FamilyConfig
from kernels.splitk_gemm.family import run_family
from kernels.splitk_gemm.spec import TASK, make_inputs
from kernels.splitk_gemm.tuned import choose_config
from kernels.task import Case
from tests.kernels.helpers import count_launches
from tests.kernels.splitk_gemm.helpers import check_impl

pytestmark = pytest.mark.gpu

H200 = ChipLimits.from_profile(load_profile("h200"))
H200_BANDWIDTH = load_profile("h200").mem_bw_gbps.value * 1e9  # bytes/s, for the GEMV tile rule
tuned = functools.partial(splitk_gemm, limits=H200)
#: Skinny, long-K, wide-N and batch-128 shapes for the mode tests.
MODE_CASES = ["m1-n4096-k14336", "m16-n4096-k4096", "m128-n4096-k14336", "m8-n1408-k2048", "m16-n28672-k8192"]


def family(case_id: str, **knobs):
    """The tuned configuration of `case_id` with `knobs` replaced, run through run_family on H200 limits."""
    p = TASK.case(case_id).params
    cfg = FamilyConfig.from_dict({**choose_config(H200, p["m"], p["n"], p["k"], torch.bfloat16).to_dict(), **knobs})
    return functools.partial(run_family, cfg, limits=H200)


@pytest.mark.parametrize("case", TASK.bench_cases, ids=lambda c: c.id)
def test_tuned_bench_cases(case):
    check_impl(tuned, case, "cuda")


@pytest.mark.parametrize("case", TASK.bench_cases, ids=lambda c: c.id)
def test_baseline_bench_cases(case):
    check_impl(baseline.splitk_gemm, case, "cuda")


@pytest.mark.parametrize("mode", [dict(), dict(fused_reduce=True), dict(atomic=True)],
                         ids=["workspace", "fused", "atomic"])
@pytest.mark.parametrize("case_id", MODE_CASES)
def test_reductions_at_8_splits(case_id, mode):
    knobs = {"fused_reduce": False, "atomic": False, **mode}
    check_impl(family(case_id, split_k=8, stream_k=False, **knobs), TASK.case(case_id), "cuda")


@pytest.mark.parametrize("case_id", MODE_CASES)
def test_stream_k(case_id):
    check_impl(family(case_id, stream_k=True), TASK.case(case_id), "cuda")


@pytest.mark.parametrize("variant", list(GEMV_VARIANTS))
@pytest.mark.parametrize("m", [1, 2, 3, 4, 8])
def test_gemv_variants_bf16(m, variant):
    """The few-row sweep's GEMV configurations (benchmarks/splitk_few_rows.py) in bfloat16 at a bench layer with
    a long K, and at odd N and K (tails in both)."""
    for n, k in ((4096, 14336), (1409, 2051)):
        case = Case(f"gemv-{m}x{n}x{k}", full_params(dict(m=m, n=n, k=k)), 5, "decode")
        config = variant_config(variant, case, H200, H200_BANDWIDTH)
        check_impl(functools.partial(run_family, config, limits=H200), case, "cuda")


@pytest.mark.parametrize("knobs", [dict(split_k=32, fused_reduce=True, stream_k=False),
                                   dict(split_k=32, fused_reduce=False, stream_k=False),
                                   dict(stream_k=True, block_k=32)], ids=["fused", "workspace", "stream-k"])
def test_deterministic_modes_repeat_bitwise(knobs):
    """20 calls with many programs per tile: every output within tolerance and bitwise equal to the first (an
    ordering bug between the partials and the arrival counter shows as a wrong or varying tile)."""
    case = TASK.case("m1-n8192-k28672")
    run = family(case.id, **knobs)
    first = check_impl(run, case, "cuda").clone()
    for _ in range(19):
        assert torch.equal(check_impl(run, case, "cuda"), first)


@pytest.mark.parametrize("case_id,splits", [("m1-n8192-k28672", 32), ("m16-n28672-k8192", 8)])
def test_atomic_mode_repeats_within_tolerance(case_id, splits):
    """20 calls: a last program that reads the accumulator while another of its threads already zeroes it, or
    before a partial has landed, shows as zeros or missing terms in some call."""
    case = TASK.case(case_id)
    run = family(case.id, split_k=splits, atomic=True, stream_k=False)
    for _ in range(20):
        check_impl(run, case, "cuda")


@pytest.mark.parametrize("knobs", [dict(split_k=8, fused_reduce=True), dict(split_k=8, atomic=True),
                                   dict(stream_k=True)], ids=["fused", "atomic", "stream-k"])
def test_zeroed_workspaces_are_left_at_zero(knobs):
    case = TASK.case("m16-n4096-k4096")
    check_impl(family(case.id, **{"stream_k": False, **knobs}), case, "cuda")
    torch.cuda.synchronize()
    zeroed = [buf for key, buf in workspace._POOL.items() if key[0] == "cuda" and key[-1]]
    assert zeroed and all(int(torch.count_nonzero(buf)) == 0 for buf in zeroed)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_other_dtypes(dtype):
    """float32 is IEEE float32 (a tf32 dot is ~9e-4 off, TOLERANCES allows 1e-4)."""
    case = TASK.case("m8-n1408-k2048")
    check_impl(tuned, case, "cuda", dtype=dtype)
    check_impl(baseline.splitk_gemm, case, "cuda", dtype=dtype)


@pytest.mark.parametrize("seed", range(6))
def test_random_gpu_shapes(seed):
    case = TASK.random_case(random.Random(seed), small=False)
    check_impl(tuned, case, "cuda")
    check_impl(family(TASK.bench_cases[0].id, stream_k=True), case, "cuda")


@pytest.mark.parametrize("knobs", [dict(split_k=8), dict(split_k=8, fused_reduce=True), dict(split_k=8, atomic=True),
                                   dict(stream_k=True)], ids=["workspace", "fused", "atomic", "stream-k"])
def test_warm_calls_neither_allocate_nor_synchronize(knobs):
    """After one warm call, a call allocates no device memory (partials and counters are pooled) and makes no
    host-device synchronization (torch's sync debug mode raises on one)."""
    case = TASK.case("m16-n4096-k4096")
    args = make_inputs(case, device="cuda")
    run = family(case.id, **{"stream_k": False, "fused_reduce": False, "atomic": False, **knobs})
    for fn in (run, tuned):
        fn(**args)  # compiles, sizes the pooled workspaces
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats()["allocation.all.allocated"]
        torch.cuda.set_sync_debug_mode("error")
        try:
            fn(**args)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        assert torch.cuda.memory_stats()["allocation.all.allocated"] == before


@pytest.mark.parametrize("case_id", ["m16-n4096-k4096", "m128-n28672-k8192", "m1-n1408-k2048"])
def test_warm_calls_launch_the_kept_compiled_kernels(case_id, monkeypatch):
    """After the first call of a signature, the tuned entry point launches through the compiled kernels it kept
    (`DirectLaunch.launch_compiled`, which the verifier's guards count and disable), never `JITFunction.run`;
    the outputs stay right. A call of another signature (a transposed view of a) goes through Triton once."""
    case = TASK.case(case_id)
    check_impl(tuned, case, "cuda")
    counts = count_launches(monkeypatch)
    for seed in range(3):
        check_impl(tuned, case, "cuda", seed=seed)
    assert counts["jit"] == 0 and counts["direct"] >= 3, counts
    args = make_inputs(case, 5, "cuda")
    if args["a"].shape[0] == 1:  # a [1, K] has the same strides transposed: no new signature to compile
        return
    a_t = args["a"].T.contiguous().T
    tuned(a_t, args["b"], args["c"])
    assert counts["jit"] >= 1
