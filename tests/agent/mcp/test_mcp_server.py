"""`chiplore mcp` driven by a real MCP client of the SDK: the server runs as a subprocess over stdio (and once over
streamable HTTP), against a small onboarded store, with the verifier in interpreter mode (CPU). Every tool is
called; the baseline and a cheating candidate go through submit_candidate; bad arguments are tool errors."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agent.mcp.server import PROMPT_NAME, TOOL_NAMES

ROOT = Path(__file__).resolve().parents[3]
BASELINE = ROOT / "kernels" / "extend_attention" / "baseline.py"
CHEAT = ROOT / "tests" / "verifier" / "cheats" / "reference_import.py"
#: The smallest plan the verifier allows on the CPU: two test cases and one hidden random shape.
VERIFY_OPTIONS = {"random_cases": 1, "case_ids": ["zero-lengths", "gqa-4"]}

pytestmark = pytest.mark.slow


def chiplore_exe() -> str:
    beside = Path(sys.executable).parent / "chiplore"
    return str(beside) if beside.exists() else shutil.which("chiplore")


@pytest.fixture(scope="module")
def onboarded_home(tmp_path_factory):
    """A CHIPLORE_HOME with the shipped H200 note onboarded (documents and profile), by the real CLI."""
    home = tmp_path_factory.mktemp("mcp-home")
    from agent.demo import NOTES_DIR

    env = dict(os.environ, CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    out = subprocess.run([chiplore_exe(), "onboard", "h200", str(NOTES_DIR / "h200.md")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return home


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    return env


def _json(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def _error(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


def _verify_here(path: Path) -> list[str]:
    """The reasons of the in-process verifier for `path` (its static stage: the cheat never reaches a sandbox)."""
    from agent.verifier import Verifier, VerifyOptions

    with Verifier("extend_attention", None, VerifyOptions(**VERIFY_OPTIONS)) as verifier:
        verdict = verifier.verify(path)
    assert verdict.stage == "static_rejected"
    return verdict.reasons


def test_every_tool_over_stdio(onboarded_home, tmp_path):
    params = StdioServerParameters(command=chiplore_exe(), args=["mcp", "--verify-options", json.dumps(VERIFY_OPTIONS)],
                                   env=_env(onboarded_home), cwd=str(ROOT))
    named = tmp_path / "kernel_v2.py"
    shutil.copyfile(CHEAT, named)
    expected_cheat_reasons = _verify_here(CHEAT)
    expected_submit_reasons = _verify_here(named)

    async def session():
        async with Client(params, read_timeout_seconds=600) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert list(tools) == list(TOOL_NAMES)
            for tool in tools.values():
                assert tool.description and tool.input_schema["type"] == "object"
            assert tools["search_knowledge"].input_schema["required"] == ["query"]

            hits = _json(await client.call_tool("search_knowledge", {"query": "shared memory per block",
                                                                      "chip": "h200", "k": 3}))["hits"]
            assert len(hits) == 3 and all(h["citation"].startswith("h200.md") for h in hits)
            assert any("227" in h["text"] for h in hits)

            profile = _json(await client.call_tool("get_profile", {"chip": "h200"}))["profile"]
            assert profile["num_compute_units"]["value"] == 132 and profile["num_compute_units"]["unit"] == "count"
            assert profile["num_compute_units"]["source"]["document"]

            ranked = _json(await client.call_tool("rank_patterns", {"chip": "h200", "task": "extend_attention",
                                                                     "case": "decode"}))
            assert ranked["cases"][0]["case"] == "decode" and ranked["cases"][0]["patterns"]
            assert _json(await client.call_tool("list_findings", {"chip": "h200"})) == {"findings": []}

            verdict = _json(await client.call_tool("run_verification", {
                "task": "extend_attention", "file": str(CHEAT), "chip": "h200"}))["verdict"]
            assert verdict["stage"] == "static_rejected" and verdict["reasons"] == expected_cheat_reasons
            passed = _json(await client.call_tool("run_verification", {
                "task": "extend_attention", "file": str(BASELINE), "chip": "h200", "cases": ["gqa-4"]}))["verdict"]
            assert passed["stage"] == "pass" and passed["reasons"] == [] and passed["timed"] is False
            assert set(passed["errors"]) >= {"gqa-4"} and "zero-lengths" not in passed["errors"]

            prof = _json(await client.call_tool("profile_kernel", {
                "task": "extend_attention", "file": str(BASELINE), "chip": "h200"}))
            assert prof["verdict"]["stage"] == "pass" and prof["timed"] is False
            assert "nothing is timed" in prof["note"]
            decode = next(c for c in prof["cases"] if c["case_id"] == "decode")
            assert decode["time_us"] is None and decode["floor_us"] > 0 and decode["bound"] == "memory-bound"

            run = _json(await client.call_tool("start_run", {"task": "extend_attention", "chip": "h200"}))
            run_id = run["run"]
            assert run["status"] == "running" and Path(run["baseline_file"]).read_text() == BASELINE.read_text()

            first = _json(await client.call_tool("submit_candidate", {"run": run_id,
                                                                      "source": BASELINE.read_text()}))
            assert first["candidate"] == "v1" and first["stage"] == "pass" and first["passed"]
            assert first["decision"] == "verified correct; not timed on this machine, no speedup claimed"
            assert Path(first["file"]).name == "kernel_v1.py" and first["findings"]
            cheat = _json(await client.call_tool("submit_candidate", {"run": run_id, "source": CHEAT.read_text(),
                                                                      "patterns": ["split-kv"]}))
            assert cheat["candidate"] == "v2" and cheat["stage"] == "static_rejected" and not cheat["accepted"]
            assert cheat["reasons"] == expected_submit_reasons and cheat["findings"]

            # a candidate that would end any process importing it: the server is not that process
            exits = _json(await client.call_tool("submit_candidate", {
                "run": run_id, "source": "import os\nos._exit(3)\n" + BASELINE.read_text()}))
            assert exits["stage"] == "static_rejected" and exits["candidate"] == "v3"
            found = _json(await client.call_tool("list_findings", {"chip": "h200", "task": "extend_attention"}))
            status = {(f["verdict_id"], f["status"], f["verdict_stage"]) for f in found["findings"]
                      if f["run_id"] == run_id}
            assert status == {(f"{run_id}/verdicts/v1.json", "untimed", "pass"),
                              (f"{run_id}/verdicts/v2.json", "failed", "static_rejected"),
                              (f"{run_id}/verdicts/v3.json", "failed", "static_rejected")}
            assert {f["id"] for f in found["findings"]} == set(first["findings"]) | set(cheat["findings"]) | set(
                exits["findings"])

            state = _json(await client.call_tool("run_status", {"run": run_id}))
            assert [e["stage"] for e in state["evaluations"]] == ["pass", "static_rejected", "static_rejected"]
            done = _json(await client.call_tool("finish_run", {"run": run_id}))
            assert done["status"] == "finished" and Path(done["report"]).is_file()
            assert "Correctness-only run" in Path(done["report"]).read_text()

            # bad arguments and unknown names: one-line tool errors, and the server keeps serving
            assert _error(await client.call_tool("search_knowledge", {"query": "x", "k": "many"})).startswith(
                "search_knowledge: argument k: Input should be a valid integer")
            assert _error(await client.call_tool("search_knowledge", {"query": "x", "k": 0})).startswith(
                "search_knowledge: argument k: Input should be greater than or equal to 1")
            assert "argument query: Field required" in _error(await client.call_tool("search_knowledge", {}))
            assert "unknown chip 'zz9'" in _error(await client.call_tool("get_profile", {"chip": "zz9"}))
            assert "unknown task" in _error(await client.call_tool("rank_patterns", {"chip": "h200",
                                                                                     "task": "nope"}))
            assert "no such file" in _error(await client.call_tool("run_verification", {
                "task": "extend_attention", "file": "missing.py", "chip": "h200"}))
            assert "bench case, checked only on a GPU" in _error(await client.call_tool("run_verification", {
                "task": "extend_attention", "file": str(BASELINE), "chip": "h200", "cases": ["decode"]}))
            assert "has ended" in _error(await client.call_tool("submit_candidate", {
                "run": run_id, "source": BASELINE.read_text()}))
            assert "not found" in _error(await client.call_tool("run_status", {"run": "no-such-run"}))
            assert _error(await client.call_tool("launch_missiles", {})).startswith("unknown tool 'launch_missiles'")

            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == [PROMPT_NAME]
            text = (await client.get_prompt(PROMPT_NAME, {"task": "extend_attention", "chip": "h200"})
                    ).messages[0].content.text
            assert "start_run(task=\"extend_attention\", chip=\"h200\")" in text
            assert "Stop after 20 submissions in a row without gain" in text and "Never branch" in text
            assert "def extend_attention_fwd(q_extend, k_extend" in text
            assert _json(await client.call_tool("get_profile", {"chip": "h200"}))["profile"]["chip"] == "h200"

    anyio.run(session)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_streamable_http_on_localhost(onboarded_home):
    port = _free_port()
    proc = subprocess.Popen([chiplore_exe(), "mcp", "--http", str(port)], env=_env(onboarded_home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    async def session():
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            assert [t.name for t in (await client.list_tools()).tools] == list(TOOL_NAMES)
            hits = _json(await client.call_tool("search_knowledge", {"query": "warp size", "chip": "h200", "k": 1}))
            assert hits["hits"][0]["chip"] == "h200"

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)
        anyio.run(session)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
