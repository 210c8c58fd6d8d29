"""LLM proposer against a real local OpenAI-protocol server: replies with code, without code, with the wrong
signature, duplicates, server errors with retries, and a clean stop with the state saved."""

import inspect
import socket

import pytest

from agent.config import LLMOptions, OptimizeConfig, StopRules
from agent.errors import CandidateFailed
from agent.family_space import FamilySpace
from agent.proposers.llm import LLMProposer, check_signature, extract_code, parse_header
from agent.session import run_optimization, start_run
from kernels.extend_attention import baseline
from kernels.extend_attention.spec import TASK
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile
from tests.agent.llm_server import ScriptedChatServer

SIG = inspect.signature(baseline.extend_attention_fwd)


def _family_source() -> str:
    space = FamilySpace(TASK, h200_profile(), list(TASK.bench_cases))
    table = {"memory-d128": {"block_m": 16, "block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 8,
                             "pack_gqa": True}}
    return space.render(table, SIG, {"id": "llm", "parent_id": "v0", "generation": 1, "patterns": ["split-kv"],
                                     "rationale": "split the prefix", "run_id": "r", "chip": "h200"})


GOOD = ("Split-KV fills the 132 SMs on decode [P1], [D2].\nPATTERNS: split-kv, multi-query-block\n"
        "TARGET CASES: decode, spec-verify\n\n```python\n" + _family_source() + "```\n")
NO_CODE = "I would split the KV cache along the prefix, but I will not write code today."
BAD_SIG = "PATTERNS: none\n```python\ndef extend_attention_fwd(q_extend, k_extend):\n    return None\n```"


def test_extract_and_check():
    assert "def extend_attention_fwd" in extract_code(GOOD, "extend_attention_fwd")
    with pytest.raises(CandidateFailed) as exc:
        extract_code(NO_CODE, "extend_attention_fwd")
    assert exc.value.stage == "no_code"
    with pytest.raises(CandidateFailed, match="takes \\(q_extend, k_extend\\)"):
        check_signature(extract_code(BAD_SIG, "x"), "extend_attention_fwd", SIG)
    wrong_default = extract_code(GOOD, "extend_attention_fwd").replace("logit_cap=0.0", "logit_cap=1.0")
    with pytest.raises(CandidateFailed, match="default of logit_cap is 1.0"):
        check_signature(wrong_default, "extend_attention_fwd", SIG)
    with pytest.raises(CandidateFailed) as exc:
        check_signature("def extend_attention_fwd(:\n", "extend_attention_fwd", SIG)
    assert exc.value.stage == "syntax_error"
    check_signature(extract_code(GOOD, "extend_attention_fwd"), "extend_attention_fwd", SIG)
    assert parse_header(GOOD) == (["split-kv", "multi-query-block"], ["decode", "spec-verify"])
    assert parse_header("PATTERNS: none\nTARGET CASES: all") == ([], [])


def test_llm_run_failed_candidates_and_clean_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    script = [GOOD, NO_CODE, BAD_SIG, GOOD, 500, 500, 500]
    with ScriptedChatServer(script) as server:
        options = LLMOptions(base_url=server.base_url, model="scripted-model", retries=2, backoff_s=0.0,
                             extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        config = OptimizeConfig(task="extend_attention", chip="h200", proposer="llm", llm=options,
                                stop=StopRules(max_evals=10))
        run, state = start_run(config, root=tmp_path)
        proposer = LLMProposer(options, sleep=lambda s: None)
        state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge(),
                                 proposer=proposer)
    assert [e.stage for e in state.evaluations] == ["pass", "no_code", "bad_signature", "duplicate"]
    first = state.evaluations[0]
    assert first.accepted and first.patterns == ["split-kv", "multi-query-block"]
    assert first.target_cases == ["decode", "spec-verify"]
    assert state.status == "stopped" and state.stop_kind == "proposer_unavailable"
    assert "failed 3 time(s): InternalServerError" in state.stop_reason
    assert run.load_state().stop_kind == "proposer_unavailable"  # saved on the way out
    assert (run.path / "replies" / "v2.md").read_text() == NO_CODE
    assert run.read_candidate(1).startswith('"""chiplore candidate llm')
    # requests: model, extra options passed through, auth header, prompts from the templates
    bodies = [r["body"] for r in server.requests]
    assert len(bodies) == 7 and all(b["model"] == "scripted-model" for b in bodies)
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert server.requests[0]["auth"] == "Bearer test-key"
    system, user = bodies[0]["messages"][0]["content"], bodies[0]["messages"][1]["content"]
    assert "Never branch" in system and "Diagnose" in system and "TARGET CASES:" in system
    assert "[D1] h200-note.md > Memory" in user and "[P1]" in user and "h200-note.md > Compute units" in user
    assert "No candidate has been verified yet." in user
    second_user = bodies[1]["messages"][1]["content"]
    assert '"stage": "pass"' in second_user and "Split-KV fills" not in second_user
    assert "from kernels.extend_attention.family import FamilyConfig, run_family" in second_user  # best source
    third_user = bodies[2]["messages"][1]["content"]
    assert "failed candidate (no_code)" in third_user


def test_unreachable_endpoint_stops_cleanly(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = LLMOptions(base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=1, backoff_s=0.0)
    config = OptimizeConfig(task="extend_attention", chip="h200", proposer="llm", llm=options)
    run, state = start_run(config, root=tmp_path)
    slept = []
    state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), None,
                             proposer=LLMProposer(options, sleep=slept.append))
    assert state.stop_kind == "proposer_unavailable" and "APIConnectionError" in state.stop_reason
    assert slept == [0.0] and state.evaluations == [] and state.baseline is not None


def test_refusal_is_not_retried(tmp_path):
    with ScriptedChatServer([401, GOOD]) as server:
        options = LLMOptions(base_url=server.base_url, model="m", retries=3, backoff_s=0.0)
        proposer = LLMProposer(options, sleep=lambda s: None)
        from agent.errors import ProposerUnavailable
        with pytest.raises(ProposerUnavailable, match="HTTP 401"):
            proposer.complete([{"role": "user", "content": "hi"}])
        assert len(server.requests) == 1
