"""The GPU suite of issue 17 (scripts/optimize_splitk_gpu.py, `bash scripts/gpu.sh optimize-splitk`): its dry run on
the CPU goes through every step (onboarding, three arms, the extend-attention findings seeded, the bench of the
arms' best kernels) and writes its results; its arithmetic on bench rows; its defaults are valid inputs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agent.verifier import VerifyOptions
from benchmarks.bench_splitk_gemm import CHECK_CASES
from kernels.task import load_task

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import optimize_splitk_gpu as suite  # noqa: E402

TASK = load_task("splitk_gemm")


def test_defaults_are_bench_cases_of_every_m_and_valid_verifier_options():
    cases = [TASK.case(c) for c in suite.DEFAULT_CASES.split(",")]
    assert all(c in TASK.bench_cases for c in cases)
    assert sorted(c.params["m"] for c in cases) == [1, 8, 16, 32, 64, 128]
    VerifyOptions.model_validate(json.loads('{"random_cases": 1, "reps": 10}'))


def _row(case, provider, us, ok=True):
    return {"case": case, "provider": provider, "ok": ok, "time_us": us}


def test_arm_against_baseline_and_cublas():
    rows = [_row("m1-n4096-k4096", "baseline", 30.0), _row("m1-n4096-k4096", "cublas", 12.0),
            _row("m1-n4096-k4096", "candidate:empty", 10.0),
            _row("m128-n28672-k8192", "baseline", 300.0), _row("m128-n28672-k8192", "cublas", 100.0),
            _row("m128-n28672-k8192", "candidate:empty", 125.0)]
    got = suite.against(rows, "empty")
    assert got["geomean_vs_baseline"] == pytest.approx(math.sqrt(3.0 * 2.4))
    assert got["geomean_vs_cublas"] == pytest.approx(math.sqrt(1.2 * 0.8))
    assert got["small_m_cases"] == ["m1-n4096-k4096"] and got["faster_than_cublas_small_m"] == ["m1-n4096-k4096"]
    rows[2] = _row("m1-n4096-k4096", "candidate:empty", 10.0, ok=False)  # a wrong output has no speed
    got = suite.against(rows, "empty")
    assert got["geomean_vs_cublas"] is None and got["faster_than_cublas_small_m"] == []


@pytest.mark.slow  # ~2 min on the shared 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU dry run is what this test covers")
def test_cpu_dry_run_goes_through_every_step(tmp_path):
    out = tmp_path / "suite"
    env = {**os.environ, "TRITON_INTERPRET": "1", "CHIPLORE_HOME": str(tmp_path / "unused-home")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "optimize_splitk_gpu.py"), "--out", str(out),
                           "--cpu-dry-run", "--max-evals", "1", "--seconds", "400"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    arms = ("empty", "no-retrieval", "extend-findings")
    assert list(result["arms"]) == list(arms)
    exported = json.loads((ROOT / "benchmarks" / "data" / "h200_findings.json").read_text())["findings"]
    assert result["seeded"] == len({f["id"] for f in exported if f["task"] == "extend_attention"}) > 0
    for name in arms:
        state = json.loads((out / "runs" / name / "state.json").read_text())
        assert state["config"]["task"] == "splitk_gemm" and state["config"]["retrieval"] == (name != "no-retrieval")
        assert result["arms"][name]["run"]["evaluations"] == 1
        assert list((out / "runs" / name / "report").glob("splitk_gemm_best_v*.py"))
    rows = json.loads((out / "bench.json").read_text())["rows"]
    assert {(r["case"], r["provider"]) for r in rows if r["provider"].startswith("candidate:")} == {
        (c, f"candidate:{a}") for c in CHECK_CASES for a in arms}
    assert all(r["ok"] for r in rows)
    verdicts = [v for v in proc.stdout.splitlines() if v.startswith(("PASS", "FAIL"))]
    assert verdicts and not [v for v in verdicts if v.startswith("FAIL")], verdicts
    assert "## `chiplore optimize splitk_gemm --chip h200`: three arms" in (out / "results.md").read_text()


def test_results_table_shows_each_arm_against_cublas_per_case():
    rows = [_row("m1-n4096-k4096", "baseline", 30.0), _row("m1-n4096-k4096", "cublas", 12.0),
            _row("m1-n4096-k4096", "candidate:empty", 10.0), _row("m1-n4096-k4096", "candidate:no-retrieval", 15.0)]
    clean = [_row("m1-n4096-k4096", "baseline", 29.0), _row("m1-n4096-k4096", "cublas", 11.0),
             _row("m1-n4096-k4096", "candidate:empty", 10.0), _row("m1-n4096-k4096", "candidate:no-retrieval", 12.0)]
    run = {"evaluations": 4, "accepted": 2, "failed": 0, "final_geomean": 2.9, "evals_to_95pct_best": 2}
    result = {"env": {"date": "2026-12-01", "device": "NVIDIA H200"}, "command": "bash scripts/gpu.sh optimize-splitk",
              "cases": "m1-n4096-k4096", "max_evals": 10, "arm_seconds": 30.0, "seeded": None, "best_geomean": 2.9,
              "verdicts": ["PASS bench: 4 rows"],
              "arms": {name: {"run": run, "wall_s": 41.0, "bench": suite.against(rows, name),
                              "bench_clean": suite.against(clean, name)} for name in ("empty", "no-retrieval")}}
    text = suite.markdown(result)
    assert "| empty | 4 | 2 | 0 | x2.900 | 2 | x3.000 | x1.200 | 1 of 1 | x1.100 | 1 of 1 | 41 |" in text
    assert "| no-retrieval | 4 | 2 | 0 | x2.900 | 2 | x2.000 | x0.800 | 0 of 1 | x0.917 | 0 of 1 | 41 |" in text
    dirty_table, clean_table = text.split("clean L2 flush (us;")
    assert "| m1-n4096-k4096 | 30.0 | 12.0 | 10.0 (x1.200) | 15.0 (x0.800) |" in dirty_table
    assert "| m1-n4096-k4096 | 29.0 | 11.0 | 10.0 (x1.100) | 12.0 (x0.917) |" in clean_table
    assert text.rstrip().endswith("PASS bench: 4 rows")
