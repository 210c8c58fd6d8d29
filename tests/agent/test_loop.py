"""The loop end to end with the real proposers, run state and candidate files, a scripted verifier (timing
model) and an in-memory knowledge base."""

import json
import statistics

import pytest

from agent.config import AcceptanceRules, OptimizeConfig, StopRules
from agent.session import run_optimization, start_run
from kernels.extend_attention.spec import TASK
from tests.agent.helpers import BASELINE_US, LATER_KNOBS, ScriptedKnowledge, ScriptedVerifier, floors, h200_profile


def _config(**kw):
    stop = kw.pop("stop", StopRules(max_evals=12))
    return OptimizeConfig(task="extend_attention", chip="h200", stop=stop,
                          accept=AcceptanceRules(baseline_repeats=2), **kw)


def _run(tmp_path, config, verifier=None, knowledge=None):
    run, state = start_run(config, run_id="loop-test", root=tmp_path)  # fixed id: the scripted noise depends on it
    knowledge = knowledge if knowledge is not None else ScriptedKnowledge()
    verifier = verifier or ScriptedVerifier()
    return run, run_optimization(run, state, h200_profile(), verifier, knowledge), verifier, knowledge


def test_offline_run_improves_and_keeps_every_promise(tmp_path):
    run, state, verifier, knowledge = _run(tmp_path, _config())
    assert state.status == "finished" and state.stop_kind == "max_evals"
    assert len(state.evaluations) == 12 and [e.n for e in state.evaluations] == list(range(1, 13))
    # baseline timed twice, then one verification per candidate
    assert verifier.calls[:2] == ["baseline.py", "baseline.py"] and len(verifier.calls) == 14
    assert state.baseline.time_us.keys() == BASELINE_US.keys()
    best = state.best_record()
    assert best is not None and best.accepted and best.geomean_speedup > 2.0
    # every accepted candidate passed and was timed; while the baseline kernel was best every case counted as
    # changed; later only the cases of the classes it changed
    for e in state.evaluations:
        assert set(e.target_cases) <= set(e.changed_cases) or not e.passed
        if e.accepted:
            assert e.passed and e.timed and e.decision.startswith("target gain")
    first_accepted = next(e for e in state.evaluations if e.accepted)
    assert set(first_accepted.changed_cases) == set(BASELINE_US)
    # best times are the medians of the best kernel's replicates
    assert state.best_time_us == {c: statistics.median(ts) for c, ts in state.reference_us.items()}
    assert all(len(ts) >= 1 for ts in state.reference_us.values())
    # no time under the roofline floor (the scripted model is realistic)
    floor = floors(h200_profile())
    assert all(t >= floor[c] for e in state.evaluations for c, t in e.time_us.items())
    # candidates and lineage on disk; content hashes distinct
    hashes = [e.content_hash for e in state.evaluations]
    assert len(set(hashes)) == len(hashes)
    first = run.read_lineage(1)
    assert first.parent_id == "v0" and first.generation == 1 and "split-kv" in first.patterns
    assert ("from kernels.extend_attention.family import ChipLimits, FamilyConfig, call_class, run_family"
            in run.read_candidate(1))
    # the first candidate applies the ranked patterns' parameters: splits 9 -> 8 allowed, GQA packing, block_m 16;
    # the switches no scripted pattern sets keep the baseline structure
    assert first.parameters["table"]["memory-d128"] == {"block_m": 16, "block_n": 64, "num_warps": 8,
                                                        "num_stages": 1, "num_splits": 8, "pack_gqa": True,
                                                        "pregather": False, "tma": False, "mla": "off",
                                                        **{k: TASK.knobs[k][0] for k in LATER_KNOBS}}
    # retrieval logged with citations every iteration
    log = run.read_retrieval(5)
    assert log["enabled"] and log["documents"][0]["cite"] == "h200-note.md > Memory"
    assert log["patterns"]["decode"][0]["citations"] == ["h200-note.md > Compute units"]
    assert log["diagnosis"]["decode"]["bottleneck"] in ("memory-bound", "occupancy")
    # one finding per target case per evaluation, recorded once
    ids = [i for e in state.evaluations for i in e.finding_ids]
    assert len(ids) == len(set(ids)) == len(knowledge.findings) == knowledge.record_calls
    # a finding names the patterns applied to its case's class only
    decode_v1 = knowledge.findings[f"{state.run_id}-v1-decode"]
    prefill_v1 = knowledge.findings[f"{state.run_id}-v1-prefill"]
    assert set(decode_v1.patterns) == {"split-kv", "multi-query-block"}
    assert set(prefill_v1.patterns) == {"software-pipelining"}
    assert decode_v1.parameters["num_splits"] == 8 and decode_v1.parameters["dispatch_class"] == "memory-d128"
    statuses = {f.status for f in knowledge.findings.values()}
    assert "accepted" in statuses and statuses <= {"accepted", "rejected", "failed"}


def test_failed_candidates_are_recorded_and_not_retried(tmp_path):
    # the scripted verifier fails every configuration with block_n=64 in any class
    verifier = ScriptedVerifier(fail_when={"block_n": 64})
    run, state, _, knowledge = _run(tmp_path, _config(stop=StopRules(max_evals=8)), verifier)
    failed = [e for e in state.evaluations if e.stage == "compile_error"]
    assert failed and all(not e.accepted and "out of resources" in e.decision for e in failed)
    configs = [json.dumps(e.parameters["table"], sort_keys=True) for e in state.evaluations]
    assert len(configs) == len(set(configs))
    assert any(f.status == "failed" and f.speedup is None for f in knowledge.findings.values())


def test_patience_stops_a_run_without_improvement(tmp_path):
    verifier = ScriptedVerifier(fail_when={})  # an empty condition matches every configuration: all fail
    config = _config(stop=StopRules(max_evals=40, patience=3))
    run, state, *_ = _run(tmp_path, config, verifier)
    assert state.stop_kind == "no_improvement" and len(state.evaluations) == 3
    assert all(e.stage == "compile_error" for e in state.evaluations)


def test_patience_without_a_gpu_says_nothing_could_improve(tmp_path):
    verifier = ScriptedVerifier(fail_when={})
    run, state, *_ = _run(tmp_path, _config(stop=StopRules(max_evals=40, patience=2), timing="interpreter"), verifier)
    assert state.stop_kind == "no_improvement"
    assert "nothing is timed without a GPU" in state.stop_reason


def test_roofline_target_stops(tmp_path):
    config = _config(stop=StopRules(max_evals=40, target_roofline_fraction=0.01))
    run, state, *_ = _run(tmp_path, config)
    assert state.stop_kind == "roofline" and state.evaluations == []


def test_budget_stops(tmp_path):
    config = _config(stop=StopRules(max_evals=40, budget_min=1e-6))
    run, state, *_ = _run(tmp_path, config)
    assert state.stop_kind == "budget" and len(state.evaluations) == 0


def test_no_retrieval_is_uniform_and_queries_nothing(tmp_path):
    knowledge = ScriptedKnowledge()
    run, state, _, _ = _run(tmp_path, _config(retrieval=False, stop=StopRules(max_evals=10)), knowledge=knowledge)
    assert knowledge.queries == [] and knowledge.record_calls == 0
    assert {e.proposer for e in state.evaluations} == {"uniform"}
    assert run.read_retrieval(3)["enabled"] is False
    hashes = [e.content_hash for e in state.evaluations]
    assert len(set(hashes)) == len(hashes) == 10


def test_untimed_run_claims_no_speedup(tmp_path):
    config = _config(timing="interpreter", stop=StopRules(max_evals=4))
    run, state, verifier, _ = _run(tmp_path, config, ScriptedVerifier(timed=False))
    assert verifier.calls.count("baseline.py") == 1
    assert state.baseline.timed is False and state.best_id == "v0"
    assert all(e.passed and not e.accepted and e.geomean_speedup is None for e in state.evaluations)
    assert all("no speedup claimed" in e.decision for e in state.evaluations)


@pytest.mark.slow
def test_retrieval_beats_uniform_on_the_scripted_model(tmp_path):
    """With the same budget the pattern-guided proposer gets further than uniform search (scripted optimum)."""
    budget = StopRules(max_evals=15)
    _, guided, *_ = _run(tmp_path / "a", _config(stop=budget))
    _, uniform, *_ = _run(tmp_path / "b", _config(retrieval=False, stop=budget))
    best = lambda s: s.best_record().geomean_speedup if s.best_record() else 1.0  # noqa: E731
    assert best(guided) > best(uniform)


@pytest.mark.parametrize("seed", [0, 1])
def test_uniform_is_reproducible(tmp_path, seed):
    a = _run(tmp_path / "a", _config(retrieval=False, seed=seed, stop=StopRules(max_evals=5)))[1]
    b = _run(tmp_path / "b", _config(retrieval=False, seed=seed, stop=StopRules(max_evals=5)))[1]
    assert [e.content_hash for e in a.evaluations] == [e.content_hash for e in b.evaluations]


def test_class_slower_than_baseline_is_unblocked_first(tmp_path):
    """The family starts 2.5x slower than the baseline on the MLA class: nothing can be accepted until that class
    is fixed, so the proposer works on it first."""
    verifier = ScriptedVerifier(scale={"compute-wide": 2.5})
    run, state, *_ = _run(tmp_path, _config(stop=StopRules(max_evals=10)), verifier)
    accepted = [e for e in state.evaluations if e.accepted]
    assert accepted and accepted[0].parameters["classes"] == ["compute-wide"]
    assert accepted[0].time_us["mla"] < state.baseline.time_us["mla"]
    before = [e for e in state.evaluations if e.n < accepted[0].n]
    assert all(e.parameters["classes"] == ["compute-wide"] for e in before[1:])


@pytest.mark.slow
def test_long_run_never_repeats_a_configuration(tmp_path):
    run, state, *_ = _run(tmp_path, _config(stop=StopRules(max_evals=60, patience=60)))
    seen = set()
    for e in state.evaluations:
        for key in e.parameters["classes"]:
            item = (key, json.dumps(e.parameters["table"][key], sort_keys=True))
            moved_back = e.parameters.get("move") == {"class": key, "knob": None}
            assert moved_back or item not in seen, (e.n, item)
            seen.add(item)


def test_gpu_run_needs_a_timed_baseline(tmp_path):
    from agent.errors import BaselineFailed

    run, state = start_run(_config(), root=tmp_path)
    with pytest.raises(BaselineFailed, match="not timed on every case"):
        run_optimization(run, state, h200_profile(), ScriptedVerifier(timed=False), ScriptedKnowledge())
    assert run.load_state().status == "stopped" and run.load_state().baseline is None


def test_noisy_untouched_cases_do_not_block_progress(tmp_path):
    """Timings that move 10% between verifications (as on the H200) on cases whose code did not change are
    replicates, not regressions."""
    verifier = ScriptedVerifier(jitter=0.10)
    run, state, *_ = _run(tmp_path, _config(stop=StopRules(max_evals=12)), verifier)
    accepted = [e for e in state.evaluations if e.accepted]
    assert len(accepted) >= 3
    for e in state.evaluations:
        if "regressed" in e.decision:
            case = e.decision.split()[1]
            assert case in e.changed_cases
    noise = run.load_state().reference_us
    assert max(len(ts) for ts in noise.values()) >= 3


def test_same_failure_again_and_again_stops_for_the_harness(tmp_path):
    """Every candidate fails with the identical reason (as when the GPU ran out of memory in the sandbox): the run
    stops after `same_failure_limit` and can be resumed."""
    verifier = ScriptedVerifier(fail_when={})  # every configuration fails the same way
    config = _config(stop=StopRules(max_evals=40, patience=40, same_failure_limit=3))
    run, state, *_ = _run(tmp_path, config, verifier)
    assert state.status == "stopped" and state.stop_kind == "verifier_suspect" and len(state.evaluations) == 3
    assert "out of resources" in state.stop_reason


def test_stop_reasons_count_in_the_singular_and_plural(tmp_path):
    from agent.runstate import count

    assert count(1, "evaluation") == "1 evaluation" and count(2, "evaluation") == "2 evaluations"
    assert count(0, "finding") == "0 findings" and count(1, "document chunk") == "1 document chunk"
    run, state, *_ = _run(tmp_path, _config(stop=StopRules(max_evals=1)))
    assert state.stop_kind == "max_evals" and state.stop_reason == "1 evaluation made (max 1)"
    verifier = ScriptedVerifier(fail_when={})
    run, state, *_ = _run(tmp_path / "b", _config(stop=StopRules(max_evals=40, patience=1)), verifier)
    assert state.stop_reason.startswith("1 consecutive evaluation without improvement")
