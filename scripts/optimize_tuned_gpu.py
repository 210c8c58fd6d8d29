#!/usr/bin/env python3
"""Issue 20's H200 suite: ``chiplore optimize extend_attention --chip h200`` from an empty findings store, then its
best kernel against the hand-tuned entry point in one bench process.

    bash scripts/gpu.sh optimize-tuned:600      # = python scripts/optimize_tuned_gpu.py --out $OUT/optimize-tuned
    python scripts/optimize_tuned_gpu.py --out /tmp/dry --cpu-dry-run     # the orchestration on the CPU

1. Onboard a scratch CHIPLORE_HOME (``chiplore profile detect --as h200``, ``chiplore onboard h200
   hardware_profiles/notes/h200.md``; `optimize_gpu.onboard`): no findings.
2. ``chiplore optimize extend_attention --chip h200 --max-evals 40`` with a wall-clock budget that leaves time for
   the bench (``--minutes`` for the whole script), then ``chiplore report``.
3. One process of benchmarks/bench_extend_attention.py on the 9 bench cases: baseline, tuned and the run's best
   kernel (``--kernel best=...``), GPU time by CUDA-graph replay.

Prints PASS/FAIL lines: the run (finished, baseline timed, at least one kernel accepted), the bench (every output
within tolerance), and the issue's targets: geomean over the cases of time(tuned) / time(best) >= 0.95, every case
within 10 % of tuned (time(best) <= 1.1 x time(tuned)), and the evaluation at which the run's best geomean over its
baseline first reached 95 % of tuned's geomean over the baseline (the bench's), at most ``--max-evals``.
Writes OUT/results.json, OUT/results.md, OUT/bench.json, OUT/runs/tuned-reach/ and OUT/logs/.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import optimize_gpu  # noqa: E402

RUN = "tuned-reach"
#: Minutes kept for the report and the bench (3 providers x 9 cases, checked then timed) after the run.
BENCH_RESERVE_MIN = 2.5
GEOMEAN_TARGET, CASE_TARGET, REACH_SHARE = 0.95, 1.10, 0.95


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def reach_evaluation(evaluations: list[dict], target: float | None) -> int | None:
    """The first evaluation n at which the best accepted geomean over the baseline so far is >= `target`."""
    if target is None:
        return None
    best = 0.0
    for record in sorted(evaluations, key=lambda e: e["n"]):
        if record.get("accepted") and record.get("geomean_speedup"):
            best = max(best, float(record["geomean_speedup"]))
        if best >= target:
            return int(record["n"])
    return None


def compare(rows: list[dict], evaluations: list[dict], max_evals: int) -> dict:
    """The issue's targets from the bench rows (per case and provider: ``gpu_us``) and the run's evaluations."""
    times = {(r["case"], r["provider"]): r.get("gpu_us") for r in rows}
    cases = sorted({r["case"] for r in rows})
    per_case = {}
    for case in cases:
        tuned, best, base = (times.get((case, p)) for p in ("tuned", "best", "baseline"))
        if tuned and best:
            per_case[case] = {"tuned_us": tuned, "best_us": best, "baseline_us": base, "best_over_tuned": best / tuned}
    ratio = _geomean([c["tuned_us"] / c["best_us"] for c in per_case.values()])
    tuned_gain = _geomean([c["baseline_us"] / c["tuned_us"] for c in per_case.values() if c["baseline_us"]])
    target = REACH_SHARE * tuned_gain if tuned_gain else None
    worst = max(per_case.items(), key=lambda kv: kv[1]["best_over_tuned"], default=(None, None))
    reached = reach_evaluation(evaluations, target)
    return {"per_case": per_case, "geomean_tuned_over_best": ratio, "tuned_geomean_over_baseline": tuned_gain,
            "reach_target_over_baseline": target, "reached_at_evaluation": reached,
            "worst_case": worst[0], "worst_best_over_tuned": worst[1]["best_over_tuned"] if worst[1] else None,
            "geomean_ok": ratio is not None and ratio >= GEOMEAN_TARGET,
            "cases_ok": bool(per_case) and len(per_case) == len(cases)
            and all(c["best_over_tuned"] <= CASE_TARGET for c in per_case.values()),
            "reach_ok": reached is not None and reached <= max_evals}


def _line(ok: bool, text: str) -> str:
    return f"{'PASS' if ok else 'FAIL'} {text}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=9.3, help="wall-clock budget of the whole script")
    parser.add_argument("--max-evals", type=int, default=40)
    parser.add_argument("--cpu-dry-run", action="store_true", help="2 evaluations untimed, the bench's --check")
    args = parser.parse_args()
    t0, out = time.monotonic(), args.out
    logs = out / "logs"
    for sub in ("logs", "runs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    env_info = optimize_gpu.environment(out, args.cpu_dry_run)
    scratch = Path(tempfile.mkdtemp(prefix="chiplore-tuned-"))
    home = scratch / "home"
    optimize_gpu.onboard(home, logs)
    env = optimize_gpu.env_for(home, None)
    max_evals = 2 if args.cpu_dry_run else args.max_evals
    budget = max(args.minutes - (time.monotonic() - t0) / 60 - BENCH_RESERVE_MIN, 0.5)
    optimize_gpu.run_logged(optimize_gpu.optimize_args(RUN, max_evals, budget, []), env, logs / "optimize.log",
                            timeout=budget * 60 + 240)
    optimize_gpu.run_logged(optimize_gpu.cli("report", RUN), env, logs / "report.log", timeout=300)
    run = home / "runs" / RUN
    shutil.copytree(run, out / "runs" / RUN, dirs_exist_ok=True)
    state = json.loads((run / "state.json").read_text())
    evaluations = state.get("evaluations", [])
    best_file = run / "report" / f"extend_attention_best_{state.get('best_id', 'v0')}.py"
    if not best_file.is_file():
        best_file = run / f"kernel_{state.get('best_id', 'v0')}.py"
    bench = [sys.executable, str(ROOT / "benchmarks" / "bench_extend_attention.py"), "--chip", "h200",
             "--out", str(out / "bench.json"), "--providers", "baseline,tuned", "--kernel", f"best={best_file}"]
    if args.cpu_dry_run:
        bench.append("--check")
    bench_rc = optimize_gpu.run_logged(bench, env, logs / "bench.log", timeout=600)
    rows = json.loads((out / "bench.json").read_text()).get("rows", []) if (out / "bench.json").is_file() else []
    result = compare(rows, evaluations, args.max_evals)
    accepted = [e for e in evaluations if e.get("accepted")]
    lines = [
        _line(state.get("status") == "finished" and bool(evaluations) and state.get("baseline") is not None
              and (args.cpu_dry_run or bool(accepted)),
              f"run: {state.get('status')}, {len(evaluations)} evaluations, {len(accepted)} accepted, best "
              f"{state.get('best_id')} ({state.get('stop_kind')})"),
        _line(bench_rc == 0 and bool(rows) and all(r.get("ok", False) for r in rows if "skipped" not in r),
              f"bench: {len(rows)} outputs checked (exit {bench_rc})"),
    ]
    if not args.cpu_dry_run:
        ratio, worst = result["geomean_tuned_over_best"], result["worst_best_over_tuned"]
        lines += [
            _line(result["geomean_ok"], f"geomean time(tuned) / time(best) = {ratio or float('nan'):.3f} "
                                        f"(target >= {GEOMEAN_TARGET})"),
            _line(result["cases_ok"], f"every case within 10 % of tuned: worst {result['worst_case']} "
                                      f"time(best) / time(tuned) = {worst or float('nan'):.3f}"),
            _line(result["reach_ok"], f"95 % of tuned's geomean over the baseline (x"
                                      f"{result['reach_target_over_baseline'] or float('nan'):.2f}) reached at "
                                      f"evaluation {result['reached_at_evaluation']} (at most {args.max_evals})"),
        ]
    summary = {"env": env_info, "run": {k: state.get(k) for k in ("status", "stop_kind", "best_id")},
               "evaluations": len(evaluations), "accepted": len(accepted), "best_file": best_file.name, **result,
               "lines": lines, "minutes": (time.monotonic() - t0) / 60}
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    table = ["| case | baseline us | tuned us | best us | best / tuned |", "|---|---:|---:|---:|---:|"]
    table += [f"| {c} | {v['baseline_us'] or float('nan'):.1f} | {v['tuned_us']:.1f} | {v['best_us']:.1f} | "
              f"{v['best_over_tuned']:.3f} |" for c, v in result["per_case"].items()]
    (out / "results.md").write_text("\n".join(lines + [""] + table) + "\n")
    print("\n".join(lines + [""] + table))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(line.startswith("PASS") for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
