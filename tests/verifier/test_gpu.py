"""GPU-only behaviour of the verifier: timing, the roofline gate and timing attacks (skipped without a GPU)."""

from __future__ import annotations

import pytest

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import CHEATS, HONEST, accepts

pytestmark = pytest.mark.gpu
BY_NAME = {c.name: c for c in CHEATS}
HONEST_BY_NAME = {h.name: h for h in HONEST}


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


def test_float32_computed_with_tf32_dots_is_a_mismatch_on_a_gpu(verifier, tmp_path):
    """Triton's default for float32 dots on a GPU is tf32 (10-bit mantissa); the task holds float32 calls to IEEE
    float32 (1e-4). The honest plain kernel with its IEEE dot switched back to the default must fail the plan's
    float32 long trials (head dim 64), and the unchanged kernel must pass the same plan shape."""
    source = HONEST_BY_NAME["simple_triton"].path.read_text()
    ieee = 'tl.dot(a, b, input_precision="ieee")'
    assert ieee in source
    candidate = tmp_path / "simple_triton_tf32.py"
    candidate.write_text(source.replace(ieee, "tl.dot(a, b)"))
    verifier.options = VerifyOptions(device="cuda", case_ids=("decode",), reps=3, timing=False)
    verdict = verifier.verify(candidate)
    assert verdict.stage == "mismatch", verdict.summary()
    assert any("float32" in r for r in verdict.reasons), verdict.reasons
    assert verifier.verify(HONEST_BY_NAME["simple_triton"].path).stage == "pass"


def test_children_run_under_landlock_on_a_gpu_by_default(verifier):
    """Write isolation is on by default on a GPU too; the CUDA driver initializes under it (needs /proc/self)."""
    verifier.options = VerifyOptions(device="cuda", case_ids=("decode",), reps=5)
    verdict = verifier.verify(HONEST[0].path)
    assert verdict.stage == "pass", verdict.summary()
    assert verdict.config["fs_isolation"].startswith("landlock ABI")
