"""The verifier on split-K GEMM on a GPU (skipped without one): the baseline is timed with ``a`` redrawn before every
timed call (`TaskSpec.fresh_inputs`) and its captured outputs re-checked; a pointer-keyed result cache fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
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
