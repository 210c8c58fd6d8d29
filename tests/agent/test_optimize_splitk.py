"""`chiplore optimize splitk_gemm --chip h200` end to end on the CPU with every real component (the second task
through the plug-in contract): the baseline and family candidates verified under the Triton interpreter
(correctness only), the run ended by its no-improvement rule, the report written; the drop-in of a verified
candidate imports with torch and triton only and computes c = a @ b.T; the GPU suite's summary reads the run."""

import importlib
import json
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from agent.cli.app import _register_commands, app
from agent.dropin import write_dropin
from agent.runstate import RunDir
from kernels.task import load_task

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path is what this test covers")
ROOT = Path(__file__).resolve().parents[2]
TASK = load_task("splitk_gemm")
runner = CliRunner()


def _invoke(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.mark.slow  # ~4 s on the 2-core machine
def test_optimize_splitk_gemm_ends_by_its_patience_and_reports(chiplore_home, tmp_path):
    _register_commands()
    out = _invoke(["optimize", "splitk_gemm", "--chip", "h200", "--max-evals", "6", "--patience", "2",
                   "--run-id", "gemm", "--json"])
    assert "No GPU on this machine" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "finished" and summary["stop_kind"] == "no_improvement", summary
    assert summary["evaluations"] == 2 and summary["timed"] is False and summary["best_id"] == "v0"
    run = RunDir.open("gemm")
    state = run.load_state()
    assert state.config.task == "splitk_gemm" and state.baseline.passed
    assert [e.stage for e in state.evaluations] == ["pass", "pass"], [e.reasons for e in state.evaluations]
    candidate = run.candidate_path(1)
    source = candidate.read_text()
    assert "from kernels.splitk_gemm.family import" in source
    h200 = "num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024"
    assert f"CHIP_LIMITS = ChipLimits({h200})" in source
    patterns = set(run.read_lineage(1).patterns) | set(run.read_lineage(2).patterns)
    assert patterns & {"split_kv", "fused_split_reduce", "persistent_grid", "tile_sizing"}, patterns
    report = Path(json.loads(_invoke(["report", "gemm", "--json"]))["markdown"])
    assert "Correctness-only run" in report.read_text() and (report.parent / "splitk_gemm_best_v0.py").is_file()

    # the drop-in (written by `chiplore report` once a candidate is the best, i.e. after a timed run) of this run's
    # verified family candidate: torch and triton only, and it computes c = a @ b.T
    folder = write_dropin(candidate, tmp_path / "dropin", TASK.dropin, TASK.entry_point)
    sys.path.insert(0, str(folder.parent))
    try:
        package = importlib.import_module(TASK.dropin.package)
        inputs = TASK.make_inputs(TASK.case("long-k-33x96x300"), seed=4)
        assert getattr(package, TASK.entry_point)(**inputs) is inputs["c"]
        expected = (inputs["a"].double() @ inputs["b"].double().T).float()
        tol = TASK.tolerances["float16"]
        assert ((inputs["c"].float() - expected).abs() <= tol.atol + tol.rtol * expected.abs()).all()
    finally:
        sys.path.remove(str(folder.parent))
        for name in [m for m in sys.modules if m.split(".")[0] == TASK.dropin.package]:
            del sys.modules[name]

    sys.path.insert(0, str(ROOT / "scripts"))
    import optimize_benchmarks

    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True)
    (results / "runs" / "retrieval").symlink_to(run.path)
    (results / "bench.md").write_text("| case | ... |\nPASS retrieval: geomean over cuBLAS 1.000x (target >= 0.9x)\n")
    text = optimize_benchmarks.markdown(optimize_benchmarks.summarize(results), "bash scripts/gpu.sh optimize-splitk")
    assert text.startswith("## Agent loop: `chiplore optimize splitk_gemm` on the H200")
    assert "baseline (a plain Triton GEMM without split-K)" in text and "| retrieval | 2 | 0 | 0 | untimed |" in text
    assert "PASS retrieval: geomean over cuBLAS" in text and "docs/example_run" not in text
