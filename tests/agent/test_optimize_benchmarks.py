"""scripts/optimize_benchmarks.py on results laid out as scripts/optimize_gpu.py writes them (scripted runs)."""

import json
import shutil
import sys
from pathlib import Path

from agent.config import OptimizeConfig, StopRules
from agent.report import write_report
from agent.session import run_optimization, start_run
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import optimize_benchmarks  # noqa: E402


def test_summary_and_markdown(tmp_path):
    results = tmp_path / "results"
    for name, retrieval in (("retrieval", True), ("no-retrieval", False)):
        config = OptimizeConfig(task="extend_attention", chip="h200", retrieval=retrieval,
                                stop=StopRules(max_evals=12))
        run, state = start_run(config, run_id=name, root=tmp_path / "homes" / name)
        run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())
        write_report(run)
        shutil.copytree(run.path, results / "runs" / name)
    kill = {"max_evals": 6, "killed_at": 3, "resumed_evaluations": 6, "uninterrupted_evaluations": 6,
            "resumed_findings": 14, "uninterrupted_findings": 16, "duplicated_findings": 0, "ok": True,
            "store_matches_evaluations": True, "findings_of_evaluations": 14}
    (results / "kill_check.json").write_text(json.dumps(kill))
    (results / "env.json").write_text(json.dumps({"device": "NVIDIA H200", "gpus": 4, "commit": "abc1234"}))
    summary = optimize_benchmarks.summarize(results)
    r, u = summary["runs"]["retrieval"], summary["runs"]["no-retrieval"]
    assert summary["best_geomean_any_run"] == max(r["final_geomean"], u["final_geomean"])
    states = {n: json.loads((results / "runs" / n / "state.json").read_text()) for n in ("retrieval", "no-retrieval")}
    first_accepted = next(e for e in states["retrieval"]["evaluations"] if e["accepted"])
    assert r["trajectory"][first_accepted["n"] - 1] == first_accepted["geomean_speedup"]
    assert r["evals_to_95pct_best"] is not None and r["evals_to_95pct_best"] <= 12
    assert r["all_accepted_passed"] and r["evaluations"] == 12
    text = optimize_benchmarks.markdown(summary, "bash scripts/gpu.sh optimize")
    assert text.startswith(optimize_benchmarks.SECTION)
    assert f"| retrieval | 12 | {r['accepted']} | 0 | x{r['final_geomean']:.2f} |" in text
    assert "exactly one for each finding its evaluations name (14); duplicated findings: 0" in text
    assert text.rstrip().splitlines()[-3].endswith("PASS.")
