"""The verifier on split-K GEMM on a GPU (skipped without one): the baseline is timed with ``a`` redrawn before every
timed call (`TaskSpec.fresh_inputs`) and its captured outputs re-checked; a pointer-keyed result cache fails; the tuned
split-K entry point passes the rounding bound of 16-bit outputs; a side stream and a kernel that is honest only on
NaN-poisoned scratch memory fail; free-memory poison follows the trial's prefill."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agent.verifier import Verifier, VerifyOptions
from agent.verifier.guard import poison_free_memory
from hardware_profiles import load_profile

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
CHEATS = Path(__file__).resolve().parent / "splitk_gemm_cheats"
CASES = ("m1-n4096-k4096", "m8-n4096-k14336")


@pytest.fixture(scope="module")
def verifier():
    with Verifier("splitk_gemm", load_profile("h200"), VerifyOptions(device="cuda")) as v:
        yield v


def test_baseline_is_timed_above_the_roofline_floor(verifier):
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10)
    verdict = verifier.verify(ROOT / "kernels" / "splitk_gemm" / "baseline.py")
    assert verdict.stage == "pass", verdict.summary()
    assert verdict.timed and set(verdict.time_us) == set(CASES)
    for timing in verdict.timings.values():
        assert timing.floor_us > 0 and timing.time_us > timing.floor_us


def test_pointer_cache_fails_the_dynamic_stage_on_a_gpu(verifier):
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10, skip_static=True)
    verdict = verifier.verify(Path(__file__).resolve().parent / "splitk_gemm_cheats" / "ptr_cache.py")
    assert verdict.stage == "mismatch", verdict.summary()


def test_tuned_split_k_passes_the_rounding_bound(verifier, tmp_path):
    """The tuned entry point (split-K with float32 partials on these skinny cases) is within one bfloat16 ulp."""
    path = tmp_path / "tuned_wrapper.py"
    path.write_text("from kernels.splitk_gemm.tuned import splitk_gemm as tuned\n\n\n"
                    "def splitk_gemm(a, b, c):\n    return tuned(a, b, c)\n")
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10)
    verdict = verifier.verify(path)
    assert verdict.stage == "pass", verdict.summary()


def test_side_stream_fails_the_timing_stage(verifier):
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10, skip_static=True)
    verdict = verifier.verify(CHEATS / "side_stream.py")
    assert verdict.stage in ("runtime_error", "too_fast_to_be_true"), verdict.summary()


def test_scratch_nan_gate_fails(verifier):
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10)
    verdict = verifier.verify(CHEATS / "scratch_nan_gate.py")
    assert verdict.stage == "mismatch", verdict.summary()


@pytest.mark.parametrize("prefill", ["nan", "zeros", "noise"])
def test_free_memory_poison_follows_the_prefill(prefill):
    device = torch.device("cuda")
    block = torch.empty(1 << 20, dtype=torch.uint8, device=device)
    del block
    poison_free_memory(device, 1 << 20, prefill, seed=5)
    again = torch.empty(1 << 20, dtype=torch.uint8, device=device)  # the caching allocator's block just poisoned
    if prefill == "nan":
        assert bool((again == 255).all())
    elif prefill == "zeros":
        assert bool((again == 0).all())
    else:
        assert bool((again < 0x40).all()) and again.float().std() > 5
        assert bool(torch.isfinite(again.view(torch.float16)).all())


def test_freed_workspace_never_reaches_the_next_timed_call(verifier):
    """The probe looks for the tag its previous call left in a freed workspace the size of the output and writes
    NaN when it finds it: the caching allocator hands the block back to the next call unless free memory is
    refilled before every call. Refilled before the timed calls too, it never finds the tag and passes; without
    that refill its captured timed calls are NaN (a mismatch)."""
    verifier.options = VerifyOptions(device="cuda", case_ids=CASES, reps=10, skip_static=True)
    verdict = verifier.verify(CHEATS / "freed_workspace_memo.py")
    assert verdict.stage == "pass", verdict.summary()
    assert verdict.timed
