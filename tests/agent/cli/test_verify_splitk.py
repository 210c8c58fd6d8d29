"""`chiplore verify splitk_gemm FILE` through the typer app (CPU, Triton interpreter): the task's baseline and a
family kernel pass (exit 0); GEMM cheats are rejected (exit 2) at their stage, each with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import agent.cli.pattern_cmds  # noqa: F401  a second command keeps typer in multi-command mode
import agent.cli.verify_cmds  # noqa: F401  registers `verify`
from agent.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
CHEATS = ROOT / "tests" / "verifier" / "splitk_gemm_cheats"
runner = CliRunner()
pytestmark = [pytest.mark.usefixtures("chiplore_home"),
              pytest.mark.skipif(torch.cuda.is_available(), reason="CPU behaviour (interpreter, untimed)")]


def _verify(path: Path) -> tuple[int, dict]:
    result = runner.invoke(app, ["verify", "splitk_gemm", str(path), "--chip", "h200", "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.slow
def test_baseline_passes_every_test_case():
    code, verdict = _verify(ROOT / "kernels" / "splitk_gemm" / "baseline.py")
    assert code == 0 and verdict["stage"] == "pass", verdict["reasons"]
    assert {"odd-3x13x37", "k-zero", "a-transposed", "fp32-7x96x100"} <= set(verdict["errors"])
    assert verdict["timed"] is False


@pytest.mark.slow  # ~4 s on the 2-core machine
def test_family_kernel_passes(tmp_path):
    """A candidate in the family's terms, as the candidate template writes one: split-K with a fused reduction on the
    H200's limits (the profile's)."""
    path = tmp_path / "split4.py"
    path.write_text(
        "from kernels.splitk_gemm.family import ChipLimits, FamilyConfig, run_family\n\n"
        "LIMITS = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32,"
        " max_threads_per_block=1024)\n"
        "CONFIG = FamilyConfig(block_m=16, block_n=32, block_k=32, split_k=4, fused_reduce=True)\n\n\n"
        "def splitk_gemm(a, b, c):\n"
        "    return run_family(CONFIG, a, b, c, limits=LIMITS)\n")
    code, verdict = _verify(path)
    assert code == 0 and verdict["stage"] == "pass", verdict["reasons"]


@pytest.mark.parametrize("name, stage, reason", [
    ("torch_matmul", "static_rejected", "no-torch-compute"),
    ("ptr_cache", "static_rejected", "no-module-state"),
    ("global_shape", "static_rejected", "no-module-state"),
    ("sampled_rows", "mismatch", "outside |got-expected|"),
    ("no_split_reduce", "mismatch", "outside |got-expected|"),
    ("k_tail_dropped", "mismatch", "outside |got-expected|"),
])
@pytest.mark.slow  # ~20 s on the 2-core machine
def test_gemm_cheat_exits_2_at_its_stage(name, stage, reason):
    code, verdict = _verify(CHEATS / f"{name}.py")
    assert code == 2 and verdict["stage"] == stage, verdict["reasons"]
    assert any(reason in r for r in verdict["reasons"]), verdict["reasons"]
