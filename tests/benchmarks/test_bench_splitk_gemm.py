"""The split-K GEMM bench: its CPU check mode end to end, and its markdown table (a pure function of the rows)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_splitk_gemm import CHECK_CASES, candidate_markdown, markdown
from kernels.splitk_gemm.spec import TASK

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_check_mode_runs_every_provider_within_tolerance(tmp_path):
    out = tmp_path / "check.json"
    candidate = ROOT / "kernels" / "splitk_gemm" / "baseline.py"  # any file defining splitk_gemm(a, b, c)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_splitk_gemm.py"), "--check", "--out",
                           str(out), "--candidate", f"run={candidate}"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {(r["case"], r["provider"]) for r in rows} == {
        (c, p) for c in CHECK_CASES for p in ("baseline", "tuned", "cublas", "candidate:run")}
    assert all(r["ok"] for r in rows) and all("time_us" not in r for r in rows), "the CPU check times nothing"


def _row(case: str, provider: str, time_us: float, **extra) -> dict:
    return {"case": case, "provider": provider, "time_us": time_us, "fraction_of_floor": 0.5, "floor_us": 1.0,
            "ok": True, "host_us": 12.0, **extra}


def test_table_geomeans_and_fastest_variant():
    a, b = TASK.bench_cases[0], TASK.bench_cases[1]
    rows = [_row(a.id, "baseline", 40.0), _row(a.id, "tuned", 10.0), _row(a.id, "cublas", 20.0),
            _row(b.id, "baseline", 90.0), _row(b.id, "tuned", 10.0), _row(b.id, "cublas", 5.0),
            _row(a.id, "variant:stream_k", 8.0), _row(a.id, "variant:split_k=1", 30.0)]
    table = markdown(rows, [a, b])
    assert f"tuned over baseline: {math.sqrt(4.0 * 9.0):.3f}x (2 cases)" in table
    assert f"tuned over cuBLAS: {math.sqrt(2.0 * 0.5):.3f}x (2 cases)" in table
    assert f"| {a.id} | stream_k | 8.0 | 1.25x |" in table
    assert "12 / 12 / 12" in table


def test_table_marks_a_mismatch():
    case = TASK.bench_cases[0]
    rows = [_row(case.id, "baseline", 40.0), _row(case.id, "tuned", 10.0, ok=False), _row(case.id, "cublas", 20.0)]
    assert "MISMATCH" in markdown(rows, [case])


def test_table_shows_the_launcher_and_the_previous_rule():
    a = TASK.bench_cases[0]
    rows = [_row(a.id, "baseline", 40.0), _row(a.id, "tuned", 10.0, host_launcher_us=4.0), _row(a.id, "cublas", 20.0),
            _row(a.id, "variant:previous rule", 12.5)]
    table = markdown(rows, [a])
    assert "| 12 / 12 (4) / 12 |" in table
    assert "tuned over the previous rule: 1.250x (1 cases)" in table


@pytest.mark.slow
def test_host_overhead_script_times_every_bench_case(tmp_path):
    """The CPU host-time measurement runs (launchers replaced, nothing computed) and times each bench case."""
    out = tmp_path / "host.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "host_overhead_splitk.py"), "--calls", "20",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["case"] for r in rows] == [c.id for c in TASK.bench_cases]
    assert all(r[name] > 0 for r in rows for name in ("tuned_us", "run_family_us", "call_key_us"))


@pytest.mark.slow
def test_a_missing_candidate_is_one_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_splitk_gemm.py"), "--check", "--out",
                           str(tmp_path / "x.json"), "--candidate", f"run={tmp_path / 'none.py'}"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 1 and "none.py does not exist" in proc.stderr


def test_candidate_table_geomeans_and_cublas_targets():
    by_m = {c.params["m"]: c for c in TASK.bench_cases}
    small, big = by_m[1], by_m[128]  # M = 1 is held to "faster than cuBLAS", M = 128 only to the geomean
    rows = [_row(small.id, "baseline", 40.0), _row(small.id, "cublas", 12.0), _row(small.id, "candidate:r", 10.0),
            _row(big.id, "baseline", 90.0), _row(big.id, "cublas", 30.0), _row(big.id, "candidate:r", 40.0)]
    table = candidate_markdown(rows, [small, big])
    assert f"over baseline: {math.sqrt(4.0 * 2.25):.3f}x; over cuBLAS: {math.sqrt(1.2 * 0.75):.3f}x (2 of 2" in table
    assert f"PASS r: geomean over cuBLAS {math.sqrt(1.2 * 0.75):.3f}x (target >= 0.9x)" in table
    assert "PASS r: faster than cuBLAS on 1 of 1 cases with M <= 16" in table
    rows[2] = _row(small.id, "candidate:r", 13.0)
    table = candidate_markdown(rows, [small, big])
    assert f"FAIL r: geomean over cuBLAS {math.sqrt(12 / 13 * 0.75):.3f}x" in table
    assert f"FAIL r: faster than cuBLAS on 0 of 1 cases with M <= 16 (not on {small.id})" in table
    rows[2] = _row(small.id, "candidate:r", 10.0, ok=False)  # a wrong output counts as no time
    assert "(1 of 2 cases timed and correct)" in candidate_markdown(rows, [small, big])
