"""The extend-attention bench: its markdown table (a pure function of the rows) and its CPU check mode end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_extend_attention import CHECK_CASES, markdown

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ["baseline", "tuned", "sglang"]


def _row(case: str, provider: str, gpu_us: float, **extra) -> dict:
    return {"case": case, "provider": provider, "gpu_us": gpu_us, "gpu_floor": 0.5, "b2b_us": gpu_us + 10,
            "b2b_floor": 0.4, "host_us": 30.0, "floor_us": 1.0, "ok": True, **extra}


def test_a_subset_of_cases_lists_only_those_and_averages_over_them():
    rows = [_row("prefill", "baseline", 300.0), _row("prefill", "tuned", 100.0), _row("prefill", "sglang", 330.0),
            _row("mixed-batch", "baseline", 120.0), _row("mixed-batch", "tuned", 40.0 * 4 / 3),
            _row("mixed-batch", "sglang", 200.0)]
    table = markdown(rows, PROVIDERS)
    assert "| decode |" not in table and "| prefill |" in table and "| mixed-batch |" in table
    expected = math.sqrt(3.0 * 2.25)  # geomean of the two speedups
    assert f"tuned over baseline: {expected:.2f}x (2 cases)" in table
    assert "300 (50.0%) / 310 (40.0%) / 30" in table


def test_the_sglang_band_column_and_a_mismatch():
    rows = [_row("prefill", "baseline", 300.0), _row("prefill", "tuned", 100.0, ok=False),
            _row("prefill", "sglang", 330.0), _row("decode", "baseline", 300.0), _row("decode", "tuned", 100.0),
            _row("decode", "sglang", 200.0)]
    table = markdown(rows, PROVIDERS)
    prefill = next(line for line in table.splitlines() if line.startswith("| prefill"))
    decode = next(line for line in table.splitlines() if line.startswith("| decode"))
    assert "MISMATCH" in prefill and prefill.endswith("| yes (0.91) |")
    assert decode.endswith("| NO (1.50) |")


def test_an_unavailable_provider_shows_its_reason():
    rows = [_row("prefill", "baseline", 300.0), {"case": "prefill", "provider": "sglang", "skipped": "not fetched"}]
    assert "not fetched" in markdown(rows, PROVIDERS)


@pytest.mark.slow  # ~6 s on the 2-core machine
def test_check_mode_runs_every_available_provider_within_tolerance(tmp_path):
    out = tmp_path / "check.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_extend_attention.py"), "--check",
                           "--out", str(out)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    data = json.loads(out.read_text())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = {r["provider"] for r in data["rows"]}
    assert {"baseline", "tuned", "flex_attention"} <= ran and ran.isdisjoint(data["skipped"])
    assert ran | set(data["skipped"]) == {"baseline", "tuned", "sglang", "flex_attention", "flashinfer"}
    assert all(data["skipped"].values()), "an unavailable provider says why"
    assert {r["case"] for r in data["rows"]} == {c.id for c in CHECK_CASES}
    assert all(r.get("ok") for r in data["rows"]) and not any("gpu_us" in r or "host_us" in r for r in data["rows"])
