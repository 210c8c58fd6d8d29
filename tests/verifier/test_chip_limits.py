"""The verifier hands the chip's limits to its sandbox children (CPU, interpreter): the tuned entry point runs with
the profile's numbers, and without a profile it is refused with the reason, never run on borrowed defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU sandbox run")
TUNED = Path(__file__).resolve().parent / "honest" / "tuned_wrapper.py"
OPTIONS = VerifyOptions(device="cpu", case_ids=("gqa-4",), random_cases=1, timeout_s=300)


@pytest.mark.slow  # ~10 s on a busy 2-core machine
def test_the_children_run_with_the_profiles_limits():
    profile = load_profile("h200")
    small = profile.model_copy(update={"num_compute_units": profile.num_compute_units.model_copy(
        update={"value": 36})})
    with Verifier("extend_attention", small, OPTIONS) as verifier:
        verdict = verifier.verify(TUNED)
    assert verdict.stage == "pass", verdict.summary()
    assert verdict.config["chip_limits"] == {"num_compute_units": 36, "smem_per_block_kb": 227.0, "warp_size": 32,
                                             "max_threads_per_block": 1024, "chip": "h200"}
    assert verdict.config["partition"] is None  # a real chip: no partition


@pytest.mark.slow
def test_without_a_profile_the_tuned_entry_point_is_refused_with_the_reason():
    with Verifier("extend_attention", None, OPTIONS) as verifier:
        verdict = verifier.verify(TUNED)
    assert verdict.stage == "runtime_error", verdict.summary()
    assert any("ChipLimitsUnset" in r and "set_chip_limits" in r for r in verdict.reasons), verdict.reasons
    assert any(f.startswith("chip limits unknown") and "--chip" in f for f in verdict.flags), verdict.flags
