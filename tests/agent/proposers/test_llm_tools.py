"""`--proposer llm-tools` against a real local OpenAI-protocol server (tests/agent/llm_server.py) that sends tool
calls: real tools (the MCP server in-process), malformed tool calls, unknown tools, replies without code, bounds,
network errors, and the run killed with SIGKILL then resumed. The verifier and knowledge base are the scripted
ones of tests/agent/helpers.py (the CPU end-to-end run with the real verifier is in tests/agent/test_llm_tools_e2e.py).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.config import LLMOptions, OptimizeConfig, StopRules, ToolBounds
from agent.mcp.toolbox import Toolbox
from agent.proposers.llm_tools import ToolCallingProposer
from agent.report import write_report
from agent.runstate import RunDir
from agent.session import run_optimization, start_run
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile
from tests.agent.llm_server import ScriptedChatServer
from tests.agent.test_llm_proposer import BAD_SIG, GOOD, _family_source

RUN = "tools-run"
SOURCE = _family_source()


def call(name, arguments):
    """A scripted tool call; `arguments` is sent as given when a string (possibly malformed JSON)."""
    return {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


def tools_turn(*calls, content=None, usage=None):
    return {"content": content, "tool_calls": list(calls), "usage": usage}


def _run(tmp_path, script, bounds=ToolBounds(), max_evals=10, retries=1):
    with ScriptedChatServer(script) as server:
        options = LLMOptions(base_url=server.base_url, model="scripted-model", retries=retries, backoff_s=0.0)
        config = OptimizeConfig(task="extend_attention", chip="h200", proposer="llm-tools", llm=options,
                                tool_bounds=bounds, stop=StopRules(max_evals=max_evals))
        run, state = start_run(config, run_id=RUN, root=tmp_path)
        proposer = ToolCallingProposer(options, bounds, sleep=lambda s: None)
        try:
            state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge(),
                                     proposer=proposer)
        finally:
            proposer.close()
    return run, state, server.requests


def test_tool_calls_failed_steps_and_clean_stop(tmp_path):
    script = [
        tools_turn(call("get_profile", {"chip": "h200"}), call("search_knowledge", {"query": "smem", "k": "abc"}),
                   call("delete_everything", {}), call("get_profile", "{chip: h200")),
        tools_turn(call("submit_candidate", {"run": RUN, "source": SOURCE, "patterns": ["split-kv"],
                                             "target_cases": ["decode", "no-such-case"]})),
        "I would split the KV cache, but I will not write code now.",  # no tool call, no code
        GOOD.replace("num_splits=8", "num_splits=4"),  # code in the reply itself, no submit call
        tools_turn(call("submit_candidate", {"run": RUN, "source": BAD_SIG.split("```python\n")[1][:-3]})),
        500, 500,
    ]
    run, state, requests = _run(tmp_path, script)
    assert [e.stage for e in state.evaluations] == ["pass", "no_code", "pass", "bad_signature"]
    first = state.evaluations[0]
    assert first.patterns == ["split-kv"] and first.target_cases == ["decode"]
    assert first.parameters["usage"] == {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240,
                                         "requests": 2, "tool_calls": 5, "responses_without_usage": 0}
    assert state.status == "stopped" and state.stop_kind == "proposer_unavailable"

    # the tools' outputs went back verbatim: the profile as the MCP tool returns it, errors as one line
    second = requests[1]["body"]["messages"]  # the second request of the first turn
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert len(tool_msgs) == 4
    profile = json.loads(tool_msgs[0]["content"])
    assert profile == json.loads(json.dumps(Toolbox().get_profile("h200")))
    assert profile["profile"]["num_compute_units"]["value"] == 132
    assert tool_msgs[1]["content"].startswith("error: search_knowledge: argument k: Input should be a valid integer")
    assert tool_msgs[2]["content"].startswith("error: unknown tool 'delete_everything'; tools: search_knowledge")
    assert tool_msgs[3]["content"].startswith("error: get_profile: the arguments are not a JSON object")
    assert all("\n" not in m["content"] for m in tool_msgs[1:])
    # the tools offered: the MCP tools less the two the loop owns; the schema is the MCP server's
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["body"]["tools"]}
    assert set(offered) == {"search_knowledge", "get_profile", "rank_patterns", "list_findings", "profile_kernel",
                            "run_verification", "submit_candidate", "run_status"}
    assert offered["search_knowledge"]["parameters"]["properties"]["k"]["maximum"] == 100
    # the next turn starts fresh and shows the last verdict verbatim
    turn2 = requests[2]["body"]["messages"]
    assert len(turn2) == 2 and '"stage": "pass"' in turn2[1]["content"]
    assert "submit_candidate" in turn2[0]["content"] and "Never branch" in turn2[0]["content"]
    transcript = (run.path / "replies" / "v1.md").read_text()
    assert "## tool call `delete_everything`" in transcript and "## tool output `get_profile`" in transcript
    assert (run.path / "replies" / "v2.md").read_text().endswith("will not write code now.\n")
    assert state.evaluations[1].parameters["usage"]["total_tokens"] == 120
    report = write_report(run).markdown.read_text()
    assert "with tools: 600 tokens (500 prompt, 100 completion) in 5 requests with 6 tool calls" in report
    assert "16 tool calls and 200000 tokens per candidate, 5000000 tokens per run" in report


def test_model_that_stops_proposing_ends_the_run(tmp_path):
    script = ["no code here", tools_turn(call("run_status", {"run": RUN})), "still nothing", "nothing"]
    _, state, requests = _run(tmp_path, script, bounds=ToolBounds(idle_iterations=3))
    assert [e.stage for e in state.evaluations] == ["no_code", "no_code", "no_code"]
    assert state.status == "finished" and state.stop_kind == "model_stopped"
    assert "3 turns in a row without a candidate" in state.stop_reason
    status = json.loads(requests[2]["body"]["messages"][-1]["content"])  # run_status read the run folder
    assert status["run"] == RUN and [e["stage"] for e in status["evaluations"]] == ["no_code"]


def test_turn_and_run_bounds(tmp_path):
    many = tools_turn(*[call("get_profile", {"chip": "h200"})] * 3)
    big = {"content": "thinking", "tool_calls": [call("get_profile", {"chip": "h200"})],
           "usage": {"prompt_tokens": 1500, "completion_tokens": 100, "total_tokens": 1600}}
    script = [many, big, tools_turn(call("submit_candidate", {"run": RUN, "source": SOURCE}),
                                    usage={"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500})]
    bounds = ToolBounds(tool_calls_per_iteration=2, tokens_per_iteration=1500, tokens_per_run=3000)
    _, state, _ = _run(tmp_path, script, bounds=bounds)
    assert [e.stage for e in state.evaluations] == ["tool_call_limit", "token_limit", "pass"]
    assert "more than 2 tool calls" in state.evaluations[0].reasons[0]
    assert state.stop_kind == "token_budget" and "3220 tokens used (budget 3000" in state.stop_reason


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_sigkill_mid_verification_then_resume(tmp_path):
    """The driver is killed while candidate v1 (submitted through a tool call) is being verified; the resumed run
    verifies v1 without asking the model again, counts the tokens of the first session, and goes on."""
    script = [tools_turn(call("get_profile", {"chip": "h200"})),
              tools_turn(call("submit_candidate", {"run": RUN, "source": SOURCE})),
              "no code", GOOD.replace("num_splits=8", "num_splits=2")]
    with ScriptedChatServer(script) as server:
        env = dict(os.environ, HANG_AT="1", OPENAI_BASE_URL=server.base_url, CHIPLORE_MODEL="scripted-model")
        driver = [sys.executable, "-m", "tests.agent.llm_tools_driver", str(tmp_path), RUN]
        proc = subprocess.Popen([*driver, "start"], env=env, cwd=Path(__file__).parents[3])
        deadline = time.monotonic() + 120
        while not (tmp_path / "verifying").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "driver ended before verifying v1"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = RunDir.open(RUN, tmp_path / "runs").load_state()
        assert state.pending is not None and state.pending.n == 1 and state.evaluations == []
        asked = len(server.requests)
        env.pop("HANG_AT")
        out = subprocess.run([*driver, "resume"], env=env, cwd=Path(__file__).parents[3], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
    state = RunDir.open(RUN, tmp_path / "runs").load_state()
    assert [e.stage for e in state.evaluations] == ["pass", "no_code", "pass"] and state.resumes == 1
    assert state.evaluations[0].parameters["usage"]["total_tokens"] == 240  # counted in the killed session
    assert len(server.requests) == asked + 2  # v1 was not asked for again
    assert (tmp_path / "calls-resume.txt").read_text().split() == ["kernel_v1.py", "kernel_v3.py"]


def test_submit_without_source_is_a_failed_step(tmp_path):
    _, state, _ = _run(tmp_path, [tools_turn(call("submit_candidate", {"run": RUN}))], max_evals=1)
    assert state.evaluations[0].stage == "no_code" and "without a source" in state.evaluations[0].reasons[0]


def test_no_retrieval_offers_no_knowledge_tools():
    from agent.proposers.llm_tools import ToolBridge

    assert set(ToolBridge(retrieval=False).names()) == {"get_profile", "profile_kernel", "run_verification",
                                                        "submit_candidate", "run_status"}
