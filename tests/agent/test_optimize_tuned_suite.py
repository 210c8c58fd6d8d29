"""The GPU suite of issue 20 (scripts/optimize_tuned_gpu.py, `bash scripts/gpu.sh optimize-tuned`): its arithmetic
on bench rows and run evaluations, and its dry run on the CPU through every step."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import optimize_tuned_gpu as suite  # noqa: E402


def _rows(times: dict[str, tuple[float, float, float]]) -> list[dict]:
    """Bench rows of (baseline, tuned, best) GPU times per case."""
    return [{"case": case, "provider": p, "ok": True, "gpu_us": t}
            for case, ts in times.items() for p, t in zip(("baseline", "tuned", "best"), ts)]


def test_targets_against_tuned_and_the_evaluation_that_reached_them():
    rows = _rows({"decode": (8000.0, 500.0, 520.0), "prefill": (3000.0, 1200.0, 1150.0)})
    tuned_gain = math.sqrt(8000 / 500 * 3000 / 1200)  # tuned's geomean over the baseline in the bench
    target = 0.95 * tuned_gain
    evaluations = [{"n": 1, "accepted": True, "geomean_speedup": 0.9 * target},
                   {"n": 2, "accepted": False, "geomean_speedup": 2 * target},  # rejected: never the best
                   {"n": 3, "accepted": True, "geomean_speedup": 1.01 * target}]
    got = suite.compare(rows, evaluations, 40)
    assert got["geomean_tuned_over_best"] == pytest.approx(math.sqrt(500 / 520 * 1200 / 1150))
    assert got["tuned_geomean_over_baseline"] == pytest.approx(tuned_gain)
    assert got["reached_at_evaluation"] == 3 and got["reach_ok"]
    assert suite.compare(rows, evaluations, 2)["reach_ok"] is False  # reached after the budget
    assert got["worst_case"] == "decode" and got["worst_best_over_tuned"] == pytest.approx(520 / 500)
    assert got["geomean_ok"] and got["cases_ok"]
    slow = suite.compare(_rows({"decode": (8000.0, 500.0, 560.0)}), evaluations, 40)
    assert not slow["cases_ok"] and slow["worst_best_over_tuned"] == pytest.approx(1.12)
    missing = _rows({"decode": (8000.0, 500.0, 520.0)})[:2]  # the best kernel failed on the case
    assert not suite.compare(missing, evaluations, 40)["cases_ok"]


@pytest.mark.slow  # ~40 s on the shared 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU dry run is what this test covers")
def test_cpu_dry_run_goes_through_every_step(tmp_path):
    out = tmp_path / "suite"
    env = {**os.environ, "TRITON_INTERPRET": "1", "CHIPLORE_HOME": str(tmp_path / "unused-home")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "optimize_tuned_gpu.py"), "--out", str(out),
                           "--cpu-dry-run"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    state = json.loads((out / "runs" / suite.RUN / "state.json").read_text())
    assert state["config"]["task"] == "extend_attention" and len(state["evaluations"]) == 2
    assert all(e["passed"] for e in state["evaluations"])
    rows = json.loads((out / "bench.json").read_text())["rows"]
    assert {r["provider"] for r in rows} == {"baseline", "tuned", "best"} and all(r["ok"] for r in rows)
    verdicts = [v for v in proc.stdout.splitlines() if v.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 2 and all(v.startswith("PASS") for v in verdicts), verdicts
