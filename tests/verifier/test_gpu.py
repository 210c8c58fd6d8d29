"""GPU-only behaviour of the verifier: timing, the roofline gate and timing attacks (skipped without a GPU)."""

from __future__ import annotations

import pytest

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import CHEATS, HONEST, accepts

pytestmark = pytest.mark.gpu
BY_NAME = {c.name: c for c in CHEATS}


@pytest.fixture(scope="module")
def verifier():
    with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cuda")) as v:
        yield v


def test_baseline_is_timed_above_the_roofline_floor(verifier):
    verifier.options = VerifyOptions(device="cuda", case_ids=("decode", "small-heads"), reps=10)
    verdict = verifier.verify(HONEST[0].path)
    assert verdict.stage == "pass", verdict.summary()
    assert verdict.timed and set(verdict.time_us) == {"decode", "small-heads"}
    for timing in verdict.timings.values():
        assert timing.floor_us > 0 and timing.time_us > timing.floor_us
        assert 0 < timing.fraction_of_floor < 1 and timing.verifier_wall_us >= 0.5 * timing.time_us


@pytest.mark.parametrize("name", ["side_stream", "replay_when_timed", "hardcoded_bench_shapes", "monkeypatch_timer"])
def test_timing_attacks_fail_the_dynamic_stage_on_a_gpu(verifier, name):
    cheat = BY_NAME[name]
    verifier.options = VerifyOptions(device="cuda", skip_static=True, reps=10)
    verdict = verifier.verify(cheat.path)
    assert accepts(cheat.gpu_dynamic, verdict.stage), verdict.summary()
