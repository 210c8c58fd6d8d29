"""Every cheating candidate is rejected at its expected stage; every honest candidate passes (CPU, interpreter).

One sandbox zygote serves the whole module; each candidate still runs in its own fresh process. Cheats the
static rules reject are verified a second time with the static stage skipped, to show the dynamic stage
catches them on its own (except attacks that only show on a GPU, listed with `dynamic=None`).
"""

from __future__ import annotations

import pytest

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import CHEATS, CHEATS_DIR, HONEST, THREAT_KINDS, Cheat, accepts, stages_label

pytestmark = pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="CPU corpus run; the GPU run is scripts/verify_corpus_gpu.py")


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cpu", timeout_s=300)) as v:
        yield v


def _verify(verifier: Verifier, path, **options):
    verifier.options = VerifyOptions(device="cpu", timeout_s=300, **options)
    return verifier.verify(path)


def test_corpus_covers_every_threat_kind():
    assert len(CHEATS) >= 20
    kinds = {c.kind.split(" (")[0] for c in CHEATS}
    assert set(THREAT_KINDS) <= kinds, sorted(set(THREAT_KINDS) - kinds)
    on_disk = {p.stem for p in CHEATS_DIR.glob("*.py")}
    assert on_disk == {c.name for c in CHEATS}, on_disk ^ {c.name for c in CHEATS}
    assert len(HONEST) >= 3


def test_an_expectation_is_a_verdict_stage_or_a_tuple_of_them():
    from typing import get_args

    from agent.verifier.verdict import Stage

    assert accepts("mismatch", "mismatch") and not accepts("mismatch", "runtime_error")
    assert accepts(("mismatch", "runtime_error"), "runtime_error") and not accepts(("mismatch",), "pass")
    assert stages_label(("mismatch", "runtime_error")) == "mismatch|runtime_error" and stages_label("pass") == "pass"
    for c in CHEATS:
        for expected in (c.full, c.dynamic, c.gpu, c.unguarded, c.gpu_full):
            for stage in (expected if isinstance(expected, tuple) else (expected,)):
                assert stage is None or stage in get_args(Stage), (c.name, stage)


#: Cheats whose verification takes over ~1.5 s on a quiet 2-core machine: full suite only (the fast lane keeps the
#: others, every stage among them).
SLOW_CHEATS = {"fp32_wide_heads_as_fp16", "stale_allocator", "prefix_truncation",
               *(c.name for c in CHEATS if c.full == "pass"),
               # caught only by a covering trial (kernels/extend_attention/long_trials.py): 5-30 s each
               "ea_prefix_mask_prefix_cap", "ea_split_dv_prefix_cap", "ea_float32_prefix_cap",
               "ea_wide_heads_prefix_cap", "ea_custom_mask_first_block", "ea_noncausal_first_block",
               "ea_noncausal_fp32_prefix_cap", "ea_split_dv_causal_prefix_cap", "ea_mask_wide_first_block"}


def _lanes(cheats, slow):
    return [pytest.param(c, marks=pytest.mark.slow) if c.name in slow else c for c in cheats]


@pytest.mark.parametrize("cheat", _lanes(CHEATS, SLOW_CHEATS), ids=lambda c: c.name)
@pytest.mark.slow
def test_cheat_is_rejected_at_its_stage(verifier, cheat: Cheat):
    verdict = _verify(verifier, cheat.path)
    assert accepts(cheat.full, verdict.stage), verdict.summary()
    if cheat.full == "pass":  # a known gap (tests/verifier/corpus.py): it must keep passing until it is closed
        return
    assert verdict.reasons and not verdict.timed
    if cheat.full == "static_rejected":
        assert all(r.startswith("static rule ") for r in verdict.reasons[:-1])
    else:
        assert any(cheat.reason in r for r in verdict.reasons), verdict.summary()


STATIC_ONLY_ON_CPU = [c for c in CHEATS if c.full == "static_rejected" and c.dynamic is not None]


@pytest.mark.parametrize("cheat", _lanes(STATIC_ONLY_ON_CPU, {"guard_mode_switch"}), ids=lambda c: c.name)
def test_dynamic_stage_alone_rejects_the_cheat(verifier, cheat: Cheat):
    verdict = _verify(verifier, cheat.path, skip_static=True)
    assert accepts(cheat.dynamic, verdict.stage), verdict.summary()
    assert any(cheat.reason in r for r in verdict.reasons), verdict.summary()


@pytest.mark.parametrize("cheat", [c for c in CHEATS if c.unguarded], ids=lambda c: c.name)
def test_kernel_ablation_alone_catches_a_dead_kernel(verifier, cheat: Cheat):
    verdict = _verify(verifier, cheat.path, skip_static=True, compute_guard=False)
    assert accepts(cheat.unguarded, verdict.stage), verdict.summary()
    assert any("dead kernel" in r for r in verdict.reasons), verdict.summary()


#: Honest candidates verified in the full suite only (8-46 s each on a busy 2-core machine); the fast lane keeps the
#: agent-rendered family candidate below (and tests/verifier/test_splitk_gemm.py's baseline).
SLOW_HONEST = {"baseline", "family_pregather_tma", "family_split3_pack", "family_nosplit_nopack", "simple_triton",
               "tuned_wrapper"}


@pytest.mark.parametrize("honest", [pytest.param(h, marks=pytest.mark.slow) if h.name in SLOW_HONEST else h
                                    for h in HONEST], ids=lambda h: h.name)
def test_honest_candidate_passes(verifier, honest):
    verdict = _verify(verifier, honest.path)
    assert verdict.stage == "pass", verdict.summary()
    assert not verdict.reasons and not verdict.timed
    assert "not timed" in verdict.timing_note
    assert len(verdict.errors) >= 20
    assert all(e.mismatches == 0 and e.trials >= 1 for e in verdict.errors.values())
    kinds = {p["kind"] for p in verdict.config["plan"]}
    assert kinds == {"check", "perturb", "ablate"}


@pytest.mark.slow
def test_a_family_candidate_as_the_agent_renders_it_passes(verifier, tmp_path):
    import inspect

    from agent.family_space import FamilySpace
    from kernels.extend_attention import baseline
    from tests.agent.helpers import h200_profile

    task = verifier.task
    space = FamilySpace(task, h200_profile(), list(task.bench_cases))
    table = {"memory-d128": {"block_m": 16, "block_n": 32, "num_warps": 4, "num_stages": 2, "num_splits": 2,
                             "pack_gqa": True}}
    header = {"id": "v1", "parent_id": "v0", "generation": 1, "patterns": ["split-kv"], "rationale": "test",
              "run_id": "run", "chip": "h200"}
    path = tmp_path / "kernel_v1.py"
    path.write_text(space.render(table, inspect.signature(baseline.extend_attention_fwd), header))
    verdict = _verify(verifier, path)
    assert verdict.stage == "pass", verdict.summary()


@pytest.mark.slow  # ~70 s on 2 cores
def test_timing_protocol_on_the_cpu_passes_an_honest_candidate(verifier):
    verdict = _verify(verifier, HONEST[-1].path, timing=True, case_ids=("gqa-4", "sinks"), reps=5)
    assert verdict.stage == "pass", verdict.summary()
    assert set(verdict.timings) == {"gqa-4", "sinks"} and not verdict.timed and not verdict.time_us
    assert "not measurements" in verdict.timing_note
    assert all(t.reps == 5 and t.verifier_wall_us > 0 for t in verdict.timings.values())


@pytest.mark.slow  # ~40 s on 2 cores
def test_replaying_cached_outputs_during_timing_is_caught_by_fresh_inputs(verifier):
    cheat = next(c for c in CHEATS if c.name == "replay_when_timed")
    verdict = _verify(verifier, cheat.path, skip_static=True, timing=True, case_ids=("gqa-4",), reps=6)
    assert verdict.stage == "mismatch" and accepts(cheat.gpu_dynamic, verdict.stage), verdict.summary()
    assert cheat.reason in verdict.reasons[0]
