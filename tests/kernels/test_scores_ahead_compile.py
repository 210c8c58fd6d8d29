"""Offline sm_90 compile of the scores-ahead key loop (`FamilyConfig.scores_ahead`, `family_pipelined.py`), no GPU
needed: in the PTX the next tile's score wgmma group must still be in flight while the current tile's exponentials
run (an `ex2` between that group's commit and the next `wgmma.wait_group`), with ``scores_ahead=2`` the previous
tile's P . V group as well, and the plain loop has no such overlap.
Runs in a child process without TRITON_INTERPRET, as tests/kernels/test_tma_compile.py does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def score_groups_overlapping_exp(ptx: str, score_mmas: int) -> int:
    """Commits of a group of >= `score_mmas` wgmma.mma_async (a score dot: D / 16 instructions) followed by an
    ex2 before the next wgmma.wait_group."""
    count, run, pending = 0, 0, False
    for line in ptx.splitlines():
        op = line.strip()
        if op.startswith("wgmma.mma_async"):
            run += 1
        elif op.startswith("wgmma.commit_group"):
            pending, run = run >= score_mmas, 0
        elif op.startswith("wgmma.wait_group"):
            pending = False
        elif op.startswith("ex2.approx") and pending:
            count, pending = count + 1, False
    return count


def _report() -> dict[str, dict[str, int]]:
    from kernels.extend_attention.offline_compile import compile_family, groups_in_flight_at_exp

    out = {}
    for name, depth in (("plain", 0), ("scores-ahead", 1), ("pv-behind", 2)):
        compiled = compile_family("bf16", 90, 8, 3, BLOCK_M=128, BLOCK_N=64, SCORES_AHEAD=depth)
        ptx = compiled.asm["ptx"]
        out[name] = {"overlaps": score_groups_overlapping_exp(ptx, 8), "in_flight": groups_in_flight_at_exp(ptx),
                     "smem": compiled.metadata.shared}
    return out


@pytest.mark.slow
def test_next_scores_in_flight_during_softmax():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import json, sys; sys.path.insert(0, '.'); from tests.kernels.test_scores_ahead_compile import _report;"
            " print(json.dumps(_report()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode and "ptxas" in proc.stderr and "not found" in proc.stderr:
        pytest.skip("Triton's bundled ptxas is missing")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["plain"]["overlaps"] == 0 and report["plain"]["in_flight"] == 0, report
    for name in ("scores-ahead", "pv-behind"):  # the extend loop's and the prefix loop's steady state
        assert report[name]["overlaps"] >= 2, report
        assert report[name]["smem"] <= 227 * 1024, report  # one program still fits an H200 SM
    assert report["scores-ahead"]["in_flight"] == 1, report
    assert report["pv-behind"]["in_flight"] == 2, report  # the next scores and the previous P . V
