"""Numbers of the GPU optimize run (scripts/optimize_gpu.py) for BENCHMARKS.md, and the example report for docs/.

    python scripts/optimize_benchmarks.py RESULTS [RESULTS2] # print the Markdown section
    python scripts/optimize_benchmarks.py RESULTS --write    # also append/replace it in BENCHMARKS.md and copy
                                                             # the retrieval run's report to docs/example_run/

RESULTS is the folder optimize_gpu.py wrote (``runs/<name>/state.json`` per run, ``kill_check.json``,
``env.json``, and ``bench.md`` where the suite benched the runs' best kernels in one process, as
``optimize-splitk`` does with benchmarks/bench_splitk_gemm.py). The runs' task is read from their state; the
section is that task's (`section_title`). A run's final geomean is over the cases of baseline time / best kernel
time, the best kernel's time being the median of every timing of its code in the run. "Evaluations to 95% of the
best configuration": the best configuration is the higher final geomean of the two optimize runs; for each run, the
first evaluation whose accepted candidate measured at least 95% of that (None: never within its budget).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kernels.task import DEFAULT_TASK, load_task  # noqa: E402

SECTION = "## Agent loop: `chiplore optimize` on the H200 (issue 6)"


def section_title(task: str) -> str:
    """The BENCHMARKS.md section of a task's optimize runs: `SECTION` for the default task (extend attention)."""
    return SECTION if task == DEFAULT_TASK else f"## Agent loop: `chiplore optimize {task}` on the H200"


def baseline_summary(task: str) -> str:
    """First clause of the task's baseline module docstring (up to its first comma or full stop), without a leading
    ``Baseline:``."""
    spec = importlib.util.find_spec(load_task(task).baseline_module)
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").split(". ")[0].split(", ")[0].rstrip(".")
    return first.removeprefix("Baseline:").strip()


def trajectory(state: dict[str, Any]) -> list[float]:
    """Geomean speedup of the best kernel after each evaluation (1.0 while the baseline is best)."""
    best, out = 1.0, []
    for e in state["evaluations"]:
        if e["accepted"] and e.get("geomean_speedup"):
            best = e["geomean_speedup"]
        out.append(best)
    return out


def evals_to(state: dict[str, Any], target: float) -> int | None:
    for n, best in enumerate(trajectory(state), start=1):
        if best >= target:
            return n
    return None


def run_summary(state: dict[str, Any]) -> dict[str, Any]:
    """Final geomean, per-case table, counts and stop reason of one run."""
    evals = state["evaluations"]
    base = state.get("baseline") or {}
    best_times = state.get("best_time_us") or {}
    cases = []
    for case, t0 in (base.get("time_us") or {}).items():
        t1 = best_times.get(case, t0)
        floor = (base.get("floor_us") or {}).get(case)
        cases.append({"case": case, "baseline_us": t0, "best_us": t1, "speedup": t0 / t1,
                      "floor_us": floor, "fraction_baseline": floor / t0 if floor else None,
                      "fraction_best": floor / t1 if floor else None})
    traj = trajectory(state)
    accepted = [e for e in evals if e["accepted"]]
    return {
        "run_id": state["run_id"], "retrieval": state["config"]["retrieval"], "status": state["status"],
        "stop": f"{state.get('stop_kind')}: {state.get('stop_reason')}", "evaluations": len(evals),
        "accepted": len(accepted), "failed": sum(not e["passed"] for e in evals),
        "all_accepted_passed": all(e["stage"] == "pass" for e in accepted),
        "final_geomean": _geomean([c["speedup"] for c in cases]) if base.get("timed") and cases else None,
        "trajectory": traj,
        "cases": cases,
        "elapsed_min": state.get("elapsed_s", 0) / 60, "best_id": state["best_id"],
        "findings": len(state.get("findings_recorded", [])), "timed": bool(base.get("timed")),
    }


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _first(folders: list[Path], relative: str) -> Path | None:
    return next((f / relative for f in folders if (f / relative).exists()), None)


def summarize(*folders: Path) -> dict[str, Any]:
    """Everything BENCHMARKS.md needs from one or more results folders (e.g. ``--part runs`` and ``--part kill``
    written by two device commands); the first folder holding a file wins."""
    folders_ = list(folders)
    runs, states = {}, {}
    for name in ("retrieval", "no-retrieval"):
        path = _first(folders_, f"runs/{name}/state.json")
        if path is not None:
            states[name] = json.loads(path.read_text())
            runs[name] = run_summary(states[name])
    best = max((r["final_geomean"] for r in runs.values() if r["final_geomean"]), default=None)
    for name, r in runs.items():
        r["evals_to_95pct_best"] = evals_to(states[name], 0.95 * best) if best else None
    kill_file, env_file = _first(folders_, "kill_check.json"), _first(folders_, "env.json")
    kill = json.loads(kill_file.read_text()) if kill_file else None
    env = json.loads(env_file.read_text()) if env_file else {}
    tasks = {s["config"]["task"] for s in states.values()}
    bench = [f / "bench.md" for f in folders_ if (f / "bench.md").exists()]
    return {"env": env, "task": tasks.pop() if len(tasks) == 1 else DEFAULT_TASK, "runs": runs,
            "best_geomean_any_run": best, "kill_check": kill, "bench_md": [p.read_text() for p in bench]}


def _f(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def markdown(summary: dict[str, Any], command: str) -> str:
    """The BENCHMARKS.md section."""
    env, runs = summary["env"], summary["runs"]
    task = summary.get("task", DEFAULT_TASK)
    lines = [section_title(task), "",
             f"Command: `{command}` (then `python scripts/optimize_benchmarks.py RESULTS --write`). "
             f"Date {env.get('date', '?')}, machine {env.get('device', '?')} x{env.get('gpus', '?')}, "
             f"commit {env.get('commit', '?')}, torch {env.get('torch', '?')}, triton {env.get('triton', '?')}. "
             f"Task `{task}`. H200 onboarded from `chiplore profile detect --as h200` and the shipped note "
             "`hardware_profiles/notes/h200.md`; empty findings store; offline pattern-guided proposer. Every "
             f"speedup is over the baseline ({baseline_summary(task)}) timed in the same run; every accepted "
             "kernel passed the verifier.", ""]
    lines += ["| run | evaluations | accepted | failed verification | final geomean over baseline | "
              "evaluations to 95% of the best configuration | wall min | stop |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in runs.items():
        final = f"x{r['final_geomean']:.2f}" if r["final_geomean"] else "untimed"
        lines.append(f"| {name} | {r['evaluations']} | {r['accepted']} | {r['failed']} | {final} | "
                     f"{r['evals_to_95pct_best'] or 'not reached'} | {_f(r['elapsed_min'], '{:.1f}')} | {r['stop']} |")
    lines += ["", f"Best configuration (highest geomean of either run): x{_f(summary['best_geomean_any_run'])}.", ""]
    if "retrieval" in runs:
        r = runs["retrieval"]
        lines += [f"Per case, run with retrieval (best kernel `{r['best_id']}`):", "",
                  "| case | baseline us | best us | speedup | % of roofline floor: baseline -> best |",
                  "|---|---:|---:|---:|---:|"]
        for c in r["cases"]:
            frac = (f"{100 * c['fraction_baseline']:.1f} -> {100 * c['fraction_best']:.1f}"
                    if c["fraction_baseline"] else "-")
            lines.append(f"| {c['case']} | {c['baseline_us']:.1f} | {c['best_us']:.1f} | x{c['speedup']:.2f} "
                         f"| {frac} |")
        lines.append("")
    k = summary.get("kill_check")
    if k and "error" in k:
        lines += [f"SIGKILL + resume check did not complete: {k['error']} "
                  "(logs/uninterrupted.log, logs/killed.log).", ""]
    elif k:
        lines += [f"SIGKILL + resume: a run of {k['max_evals']} evaluations was killed (process group, SIGKILL) while "
                  f"candidate v{k['killed_at']} was being verified, then resumed with `--resume`: "
                  f"{k['resumed_evaluations']} distinct evaluations against {k['uninterrupted_evaluations']} for the "
                  f"uninterrupted run; the resumed run's store holds {k['resumed_findings']} findings, "
                  f"{'exactly' if k.get('store_matches_evaluations') else 'NOT'} one for each finding its "
                  f"evaluations name ({k.get('findings_of_evaluations', '?')}); duplicated findings: "
                  f"{k['duplicated_findings']} (uninterrupted run: {k['uninterrupted_findings']} findings). "
                  f"{'PASS' if k['ok'] else 'FAIL'}.", ""]
    for text in summary.get("bench_md", ()):
        lines += ["Same-process bench of the baseline, cuBLAS and each run's best kernel (its report's "
                  "`*_best_v*.py`), after the runs:", "", text.rstrip(), ""]
    if task == DEFAULT_TASK:
        lines += ["Example report of the run with retrieval: "
                  "[docs/example_run/report.md](docs/example_run/report.md).", ""]
    return "\n".join(lines)


def write(summary_md: str, results: list[Path], task: str = DEFAULT_TASK) -> None:
    """Replace (or append) the task's section in BENCHMARKS.md; for the default task copy the retrieval run's report
    to docs/example_run/ without its drop-in package (`chiplore report` generates that from the run; the tree keeps
    no copy of the kernels)."""
    bench = ROOT / "BENCHMARKS.md"
    text = bench.read_text()
    title = section_title(task)
    pattern = re.compile(re.escape(title) + r".*?(?=\n## |\Z)", re.DOTALL)
    text = pattern.sub(summary_md.rstrip() + "\n", text) if title in text else text.rstrip() + "\n\n" + summary_md
    bench.write_text(text)
    report = _first(results, "runs/retrieval/report")
    if report is not None and task == DEFAULT_TASK:
        target = ROOT / "docs" / "example_run"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(report, target, ignore=shutil.ignore_patterns("dropin", "sglang"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="+", help="results folder(s) of scripts/optimize_gpu.py")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--command", default="bash scripts/gpu.sh optimize")
    args = parser.parse_args()
    summary = summarize(*args.results)
    text = markdown(summary, args.command)
    print(text)
    if args.write:
        write(text, args.results, summary["task"])
    if not summary["runs"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
