"""`chiplore optimize --proposer llm-tools` end to end on the CPU: the real CLI in a subprocess, the real verifier
(Triton interpreter, smallest plan), the real store with the H200 note onboarded, and a local OpenAI-protocol
server scripted to call tools, send a malformed call, an unknown tool and a reply without code."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.llm_server import ScriptedChatServer

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "kernels" / "extend_attention" / "baseline.py"
VERIFY_OPTIONS = {"random_cases": 1, "case_ids": ["zero-lengths", "gqa-4"]}

pytestmark = pytest.mark.slow


def _chiplore() -> str:
    beside = Path(sys.executable).parent / "chiplore"
    return str(beside) if beside.exists() else shutil.which("chiplore")


def _call(name, arguments):
    return {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


def test_optimize_llm_tools_end_to_end(tmp_path):
    from agent.demo import NOTES_DIR

    env = dict(os.environ, CHIPLORE_HOME=str(tmp_path / "home"), OPENAI_API_KEY="k", CHIPLORE_MODEL="scripted")
    env.pop("CHIPLORE_CHROMA_URL", None)
    out = subprocess.run([_chiplore(), "onboard", "h200", str(NOTES_DIR / "h200.md")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    script = [
        {"tool_calls": [_call("search_knowledge", {"query": "shared memory per block", "chip": "h200", "k": 2}),
                        _call("get_profile", {"chip": "h200"})]},
        {"content": "The baseline is the safest first candidate.",
         "tool_calls": [_call("submit_candidate", {"run": "e2e", "source": BASELINE.read_text(),
                                                   "rationale": "baseline copy", "target_cases": ["decode"]})]},
        {"tool_calls": [_call("rank_patterns", '{"chip": "h200", "task": '), _call("format_disk", {})]},
        "I have nothing better to propose.",
    ]
    with ScriptedChatServer(script) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        out = subprocess.run([_chiplore(), "optimize", "extend_attention", "--chip", "h200", "--proposer",
                              "llm-tools", "--max-evals", "2", "--run-id", "e2e", "--record-findings",
                              "--verify-options", json.dumps(VERIFY_OPTIONS), "--json"],
                             env=env, capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["status"] == "finished" and summary["stop_kind"] == "max_evals" and summary["evaluations"] == 2
    run = Path(summary["run_dir"])
    state = json.loads((run / "state.json").read_text())
    assert [e["stage"] for e in state["evaluations"]] == ["pass", "no_code"]
    assert state["config"]["proposer"] == "llm-tools" and state["config"]["tool_bounds"]["tokens_per_run"] > 0
    # the tools' outputs reached the model verbatim: a real hit from the onboarded note, the profile, two errors
    second = server.requests[2]["body"]["messages"]  # [0] is GET /models (the pre-flight check)
    tool_msgs = [m["content"] for m in second if m["role"] == "tool"]
    hits = json.loads(tool_msgs[0])["hits"]
    assert hits and hits[0]["citation"].startswith("h200.md")
    assert json.loads(tool_msgs[1])["profile"]["num_compute_units"]["value"] == 132
    turn2 = [m["content"] for m in server.requests[4]["body"]["messages"] if m["role"] == "tool"]
    assert turn2[0].startswith("error: rank_patterns: the arguments are not a JSON object")
    assert turn2[1].startswith("error: unknown tool 'format_disk'")
    assert '"stage": "pass"' in server.requests[3]["body"]["messages"][1]["content"]  # last verdict, verbatim
    verdict = json.loads((run / "verdicts" / "v1.json").read_text())
    assert verdict["stage"] == "pass" and verdict["timed"] is False
    report = Path(summary["report"]).read_text()
    assert "with tools: 480 tokens (400 prompt, 80 completion) in 4 requests with 5 tool calls" in report
    assert "Correctness-only run" in report
    assert "## tool output `search_knowledge`" in (run / "replies" / "v1.md").read_text()
