"""`chiplore mcp` on a GPU: verification timed, profile_kernel with times, roofline fractions and bottleneck classes,
a run whose baseline is timed and where the optimized kernel is faster (GPU only; scripts/gpu.sh suite `mcp`).
With ``CHIPLORE_GPU_OUT`` set, the tool outputs are written there as mcp_gpu.json."""

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[3]
BASELINE = ROOT / "kernels" / "extend_attention" / "baseline.py"
TUNED = ROOT / "tests" / "verifier" / "honest" / "tuned_wrapper.py"
CHEAT = ROOT / "tests" / "verifier" / "cheats" / "passthrough_return.py"
CASES = ["decode", "mixed-batch"]

pytestmark = pytest.mark.gpu


def _json(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_timed_tools_on_the_gpu(tmp_path):
    exe = Path(sys.executable).parent / "chiplore"
    command = [str(exe)] if exe.exists() else ([shutil.which("chiplore")] if shutil.which("chiplore") else
                                               [sys.executable, "-m", "agent.cli"])
    env = dict(os.environ, CHIPLORE_HOME=str(tmp_path / "home"))
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp"], env=env, cwd=str(ROOT))
    record = {}

    async def session():
        async with Client(params, read_timeout_seconds=900) as client:
            verdict = _json(await client.call_tool("run_verification", {
                "task": "extend_attention", "file": str(BASELINE), "chip": "h200", "cases": CASES}))["verdict"]
            record["run_verification"] = verdict
            assert verdict["stage"] == "pass" and verdict["timed"] is True
            assert set(verdict["time_us"]) == set(CASES) and min(verdict["time_us"].values()) > 0
            prof = _json(await client.call_tool("profile_kernel", {
                "task": "extend_attention", "file": str(TUNED), "chip": "h200", "cases": CASES}))
            record["profile_kernel"] = prof
            assert prof["timed"] is True and sorted(c["case_id"] for c in prof["cases"]) == sorted(CASES)
            for row in prof["cases"]:
                assert row["time_us"] >= row["floor_us"] > 0 and 0 < row["roofline_fraction"] <= 1
                assert row["bottleneck"] in ("memory-bound", "compute-bound", "occupancy", "launch-overhead")
            run = _json(await client.call_tool("start_run", {"task": "extend_attention", "chip": "h200",
                                                              "cases": CASES}))
            record["start_run"] = run
            assert run["timed"] is True and set(run["baseline_time_us"]) == set(CASES)
            tuned = _json(await client.call_tool("submit_candidate", {"run": run["run"], "source": TUNED.read_text(),
                                                                      "target_cases": CASES}))
            record["submit_tuned"] = tuned
            assert tuned["stage"] == "pass" and tuned["timed"] and tuned["speedup"]["decode"] > 1.0
            cheat = _json(await client.call_tool("submit_candidate", {"run": run["run"],
                                                                      "source": CHEAT.read_text()}))
            record["submit_cheat"] = cheat
            assert cheat["stage"] == "static_rejected" and not cheat["accepted"]
            done = _json(await client.call_tool("finish_run", {"run": run["run"]}))
            record["finish_run"] = done
            assert Path(done["report"]).is_file()

    try:
        anyio.run(session)
    finally:
        out = os.environ.get("CHIPLORE_GPU_OUT")
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "mcp_gpu.json").write_text(json.dumps(record, indent=1, default=str))
