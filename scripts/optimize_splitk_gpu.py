#!/usr/bin/env python3
"""Issue 17's H200 suite: ``chiplore optimize splitk_gemm --chip h200`` in three arms, then one bench process.

    bash scripts/gpu.sh optimize-splitk:540      # = python scripts/optimize_splitk_gpu.py --out $OUT/optimize-splitk
    python scripts/optimize_splitk_gpu.py --out /tmp/dry --cpu-dry-run     # the orchestration on the CPU

1. Onboard one CHIPLORE_HOME (``chiplore profile detect --as h200``, ``chiplore onboard h200
   hardware_profiles/notes/h200.md``) and copy it once per arm.
2. Arms, one after another on the one GPU, each ``--max-evals N --patience N --record-findings`` with a wall-clock
   budget (``--arm-seconds``, shrunk so that the whole script keeps to ``--seconds``) on the bench cases ``--cases``.
   On the H200 onboarding takes ~45 s and verifying and timing the baseline ~25 s of each arm, so three arms of
   10 evaluations need the defaults (510 s, 120 s per arm; ~420 s in all):
   ``empty`` (empty findings store, retrieval), ``no-retrieval`` (empty store, ``--no-retrieval``: uniform choice),
   ``extend-findings`` (the store seeded with the extend-attention findings of the H200 optimize run,
   benchmarks/data/h200_findings.json, then retrieval). An arm still running at its hard limit is killed (its
   state is saved after every step) and its report written by ``chiplore report``.
3. Two processes of benchmarks/bench_splitk_gemm.py on the same cases: baseline, tuned, cuBLAS
   (``torch.matmul(a, b.T, out=c)``) and each arm's best kernel (its report's ``splitk_gemm_best_v*.py``), timed
   after the usual L2 flush (a write: the call pays the write-back of its dirty lines) and then after a clean one
   (``--clean-l2``: the write, then a read of a second buffer), each with its own PASS/FAIL lines.

Writes OUT/results.json and OUT/results.md (per arm: evaluations, accepted, final geomean over the baseline as the
run timed it, evaluations to 95 % of the best arm's geomean, and from the bench: geomean over the baseline and over
cuBLAS, per case against cuBLAS), OUT/runs/<arm>/ (state, verdicts, report) and OUT/logs/. Prints PASS/FAIL lines:
setup, each arm (finished, baseline timed, accepted kernels verified), the bench (every output within tolerance),
and per arm the issue's targets against cuBLAS (>= 0.9x geomean; faster where M <= 16).
``--cpu-dry-run`` runs the same steps untimed under the Triton interpreter (2 evaluations per arm, the bench's
``--check``), so that the GPU call does not fail on a typo.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(1, str(ROOT))

from optimize_benchmarks import evals_to, run_summary  # noqa: E402
from optimize_gpu import cli, env_for, environment, run_logged  # noqa: E402

TASK = "splitk_gemm"
#: (arm, extra optimize arguments, seed the store with the extend-attention findings)
ARMS = (("empty", [], False), ("no-retrieval", ["--no-retrieval"], False), ("extend-findings", [], True))
#: The bench's L2 flushes: (label, extra bench arguments, suffix of its JSON, log and result keys).
FLUSHES = (("dirty L2 flush", [], ""), ("clean L2 flush", ["--clean-l2"], "_clean"))
#: One bench case per M of the issue (1, 8, 16, 32, 64, 128), over the layers' N x K.
DEFAULT_CASES = ("m1-n4096-k14336,m8-n4096-k14336,m16-n14336-k4096,m32-n8192-k28672,m64-n1408-k2048,"
                 "m128-n28672-k8192")
EXTEND_FINDINGS = ROOT / "benchmarks" / "data" / "h200_findings.json"
#: Seconds kept for the bench process at the end, and granted past an arm's budget (its verification in progress
#: and its report finish).
BENCH_RESERVE_S = 60.0
GRACE_S = 25.0
CUBLAS_GEOMEAN_TARGET = 0.9
FASTER_THAN_CUBLAS_MAX_M = 16


def line(ok: bool, text: str) -> str:
    out = f"{'PASS' if ok else 'FAIL'} {text}"
    print(out, flush=True)
    return out


def onboard_h200(home: Path, log: Path) -> dict[str, int]:
    """`chiplore profile detect --as h200` (the device's reading beside the shipped profile; fails without a GPU),
    `chiplore onboard h200` of the shipped note, `chiplore profile show h200`: their exit codes."""
    env = env_for(home, None)
    note = ROOT / "hardware_profiles" / "notes" / "h200.md"
    return {"detect": run_logged(cli("profile", "detect", "--as", "h200"), env, log, timeout=120),
            "onboard": run_logged(cli("onboard", "h200", str(note)), env, log, timeout=300),
            "show": run_logged(cli("profile", "show", "h200"), env, log, timeout=60)}


def seed_extend_findings(home: Path, log: Path) -> int:
    """Record the H200's extend-attention findings into the store of `home`; the number of findings in it after."""
    run_logged([sys.executable, str(ROOT / "benchmarks" / "transfer_virtual_chips.py"), "_seed", str(home),
                str(EXTEND_FINDINGS)], env_for(home, None), log, timeout=300)
    done = subprocess.run(cli("findings", "--task", "extend_attention", "--json"), env=env_for(home, None),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    try:
        return len(json.loads(done.stdout)["findings"])
    except (json.JSONDecodeError, KeyError):
        return 0


def run_arm(name: str, extra: list[str], home: Path, args: argparse.Namespace, budget_s: float, hard_s: float,
            logs: Path) -> dict:
    """One optimize run in `home`; killed (process group) at `hard_s` seconds; its report written in any case."""
    opts = ["optimize", TASK, "--chip", "h200", "--max-evals", str(args.max_evals), "--patience",
            str(args.max_evals), "--run-id", name, "--record-findings", "--budget-min", f"{budget_s / 60:.3f}", *extra]
    if args.cases:
        opts += ["--cases", args.cases]
    if args.verify_options:
        opts += ["--verify-options", args.verify_options]
    env = env_for(home, None)
    t0 = time.monotonic()
    with open(logs / f"{name}.log", "a") as out:
        out.write(f"$ {' '.join(cli(*opts))}\n")
        out.flush()
        proc = subprocess.Popen(cli(*opts), env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc, killed = proc.wait(timeout=max(hard_s, 5.0)), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc, killed = proc.wait(), True
    run = home / "runs" / name
    if not list((run / "report").glob(f"{TASK}_best_v*.py")) and (run / "state.json").is_file():
        run_logged(cli("report", name), env, logs / f"{name}.log", timeout=120)
    return {"rc": rc, "killed": killed, "wall_s": time.monotonic() - t0, "budget_s": budget_s}


def best_file(run: Path) -> Path | None:
    return next(iter(sorted((run / "report").glob(f"{TASK}_best_v*.py"))), None)


def run_bench(best: dict[str, Path], args: argparse.Namespace, out: Path, timeout_s: float,
              flush_args: list[str], suffix: str) -> tuple[int, list[dict]]:
    """One bench process with `flush_args` (killed after `timeout_s`: exit status 124), writing
    OUT/bench<suffix>.json: exit status and rows (bench_splitk_gemm's JSON)."""
    path = out / f"bench{suffix}.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_splitk_gemm.py"), "--out", str(path)]
    cmd += ["--check"] if args.cpu_dry_run else ["--chip", "h200", "--reps", str(args.reps),
                                                 "--cases", args.bench_cases or args.cases or DEFAULT_CASES,
                                                 *flush_args]
    for name, file in best.items():
        cmd += ["--candidate", f"{name}={file}"]
    try:
        rc = run_logged(cmd, env_for(out, None), out / "logs" / f"bench{suffix}.log", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        rc = 124
    try:
        return rc, json.loads(path.read_text())["rows"]
    except (OSError, json.JSONDecodeError, KeyError):
        return rc, []


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def against(rows: list[dict], arm: str) -> dict:
    """An arm's best kernel in the bench: per case its time, the baseline's and cuBLAS's; geomeans over both (None
    where a case is untimed or wrong: then the geomeans are None too)."""
    by = {(r["case"], r["provider"]): r for r in rows}
    cases, complete = [], True
    for case in dict.fromkeys(r["case"] for r in rows):
        x, b, c = (by.get((case, p), {}) for p in (f"candidate:{arm}", "baseline", "cublas"))
        timed = all("time_us" in r and r.get("ok") for r in (x, b, c))
        complete &= timed
        m = int(case.split("-")[0].removeprefix("m")) if case.startswith("m") and "-n" in case else None
        cases.append({"case": case, "m": m, "ok": bool(x.get("ok")), "us": x.get("time_us"),
                      "baseline_us": b.get("time_us"), "cublas_us": c.get("time_us"),
                      "vs_baseline": b["time_us"] / x["time_us"] if timed else None,
                      "vs_cublas": c["time_us"] / x["time_us"] if timed else None})
    small = [c for c in cases if c["m"] is not None and c["m"] <= FASTER_THAN_CUBLAS_MAX_M]
    return {"cases": cases,
            "geomean_vs_baseline": _geomean([c["vs_baseline"] for c in cases]) if complete and cases else None,
            "geomean_vs_cublas": _geomean([c["vs_cublas"] for c in cases]) if complete and cases else None,
            "faster_than_cublas_small_m": [c["case"] for c in small if (c["vs_cublas"] or 0) > 1.0],
            "small_m_cases": [c["case"] for c in small]}


def _x(v: float | None) -> str:
    return f"x{v:.3f}" if v is not None else "-"


def markdown(result: dict) -> str:
    env = result["env"]
    lines = ["## `chiplore optimize splitk_gemm --chip h200`: three arms (issue 17)", "",
             f"Command: `{result['command']}`. Date {env.get('date', '?')}, machine {env.get('device', '?')}, commit "
             f"{env.get('commit', '?')}, torch {env.get('torch', '?')}, triton {env.get('triton', '?')}. Cases: "
             f"{result['cases'] or 'all bench cases'}; up to {result['max_evals']} evaluations per arm, "
             f"{result['arm_seconds']:.0f} s budget each; offline pattern-guided proposer. Extend-attention findings "
             f"seeded in arm extend-findings: {result['seeded']}.", "",
             "| arm | evaluations | accepted | failed verification | final geomean over baseline (run) | "
             "evaluations to 95 % of the best | bench: over baseline | bench: over cuBLAS | faster than cuBLAS, "
             "M <= 16 | clean L2: over cuBLAS | clean L2: faster, M <= 16 | wall s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, arm in result["arms"].items():
        r, b, c = arm.get("run") or {}, arm.get("bench") or {}, arm.get("bench_clean") or {}
        lines.append(f"| {name} | {r.get('evaluations', '-')} | {r.get('accepted', '-')} | {r.get('failed', '-')} | "
                     f"{_x(r.get('final_geomean'))} | {r.get('evals_to_95pct_best') or 'not reached'} | "
                     f"{_x(b.get('geomean_vs_baseline'))} | {_x(b.get('geomean_vs_cublas'))} | {_faster(b)} | "
                     f"{_x(c.get('geomean_vs_cublas'))} | {_faster(c)} | {arm['wall_s']:.0f} |")
    lines += ["", f"Best geomean of any arm (as the runs timed it): {_x(result['best_geomean'])}."]
    for label, _, suffix in FLUSHES:
        lines += ["", f"Per case, bench process, {label} (us; ratio = other's time / this arm's best kernel's):", "",
                  *case_table(result["arms"], "bench" + suffix)]
    lines += ["", *result["verdicts"], ""]
    return "\n".join(lines)


def _faster(bench: dict) -> str:
    small = bench.get("small_m_cases")
    return f"{len(bench.get('faster_than_cublas_small_m', []))} of {len(small)}" if small else "-"


def case_table(arms: dict[str, dict], key: str) -> list[str]:
    """Markdown rows: per case the baseline's and cuBLAS's us and each arm's best kernel's (vs cuBLAS), from the
    bench numbers under ``arm[key]``."""
    lines = ["| case | baseline | cuBLAS | " + " | ".join(f"{n} (vs cuBLAS)" for n in arms) + " |",
             "|---|---:|---:|" + "---:|" * len(arms)]
    cases = {c["case"]: c for arm in arms.values() for c in (arm.get(key) or {}).get("cases", [])}
    for case, c in cases.items():
        cells = []
        for arm in arms.values():
            row = next((x for x in (arm.get(key) or {}).get("cases", []) if x["case"] == case), {})
            cells.append(f"{row['us']:.1f} ({_x(row['vs_cublas'])})" if row.get("us") is not None else "-")
        base, cub = c.get("baseline_us"), c.get("cublas_us")
        head = f"| {case} | {base:.1f} | {cub:.1f} | " if base is not None and cub is not None else f"| {case} | - | - | "
        lines.append(head + " | ".join(cells) + " |")
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=510.0,
                        help="wall-clock budget of the whole script (the bench may end up to 30 s after)")
    parser.add_argument("--arm-seconds", type=float, default=120.0, help="optimize budget per arm (at most)")
    parser.add_argument("--max-evals", type=int, default=10)
    parser.add_argument("--arms", default=",".join(a for a, _, _ in ARMS), help="comma-separated arms to run")
    parser.add_argument("--cases", default=DEFAULT_CASES, help="bench cases of the runs ('' = all)")
    parser.add_argument("--bench-cases", default="", help="bench cases of the bench process (default: --cases)")
    parser.add_argument("--reps", type=int, default=10, help="timed calls per provider and case in the bench")
    parser.add_argument("--verify-options", default='{"random_cases": 1, "reps": 10}',
                        help="JSON of verifier options of every verification of the runs")
    parser.add_argument("--cpu-dry-run", action="store_true",
                        help="the steps without a GPU (interpreter, untimed, 2 evaluations per arm, bench --check)")
    args = parser.parse_args()
    if args.cpu_dry_run:
        args.max_evals, args.cases, args.verify_options = min(args.max_evals, 2), "", ""
    return args


def run_arms(args: argparse.Namespace, base: Path, scratch: Path, out: Path, deadline: float,
             verdicts: list[str]) -> tuple[dict[str, dict], int | None]:
    """Every wanted arm in its own copy of the onboarded home `base`: ``{arm: record}`` (the run's summary under
    ``run``, its state under ``state``) and the findings seeded for arm extend-findings (None: not run)."""
    wanted = [a for a in ARMS if a[0] in args.arms.split(",")]
    seeded, arms = None, {}
    for i, (name, extra, seed) in enumerate(wanted):
        home = scratch / name
        shutil.copytree(base, home)
        if seed:
            seeded = seed_extend_findings(home, out / "logs" / "seed.log")
            verdicts.append(line(seeded > 0, f"setup: {seeded} extend-attention findings in the store of arm {name}"))
        left = deadline - time.monotonic() - BENCH_RESERVE_S
        budget = max(5.0, min(args.arm_seconds, left / (len(wanted) - i) - GRACE_S / 2))
        hard = max(10.0, min(budget + GRACE_S, deadline - time.monotonic() - BENCH_RESERVE_S / 2))
        arm = arms[name] = run_arm(name, extra, home, args, budget, hard, out / "logs")
        if (home / "runs" / name).is_dir():
            shutil.copytree(home / "runs" / name, out / "runs" / name, dirs_exist_ok=True)
        state_file = out / "runs" / name / "state.json"
        if state_file.is_file():
            arm["state"] = json.loads(state_file.read_text())
            arm["run"] = run_summary(arm["state"])
        r = arm.get("run") or {}
        ok = bool(r) and r["evaluations"] > 0 and r["all_accepted_passed"] and (r["timed"] or args.cpu_dry_run)
        verdicts.append(line(ok, f"arm {name}: {r.get('evaluations', 0)} evaluations, {r.get('accepted', 0)} "
                                 f"accepted, baseline {'timed' if r.get('timed') else 'untimed'}, stop "
                                 f"{r.get('stop', '?')}{' (killed at its hard limit)' if arm['killed'] else ''}, "
                                 f"{arm['wall_s']:.0f} s"))
    best = max((a["run"]["final_geomean"] for a in arms.values() if (a.get("run") or {}).get("final_geomean")),
               default=None)
    for arm in arms.values():
        if arm.get("run"):
            arm["run"]["evals_to_95pct_best"] = evals_to(arm["state"], 0.95 * best) if best else None
        arm.pop("state", None)
    return arms, seeded


def bench_arms(arms: dict[str, dict], args: argparse.Namespace, out: Path, timeout_s: float,
               verdicts: list[str]) -> None:
    """The benches of every arm's best kernel, one per L2 flush of `FLUSHES` (the CPU dry run: the first only;
    each gets half of `timeout_s` and what the previous left); numbers into ``arms[name]["bench<suffix>"]``,
    PASS/FAIL into `verdicts`."""
    best = {name: f for name in arms if (f := best_file(out / "runs" / name)) is not None}
    deadline = time.monotonic() + timeout_s
    flushes = FLUSHES[:1] if args.cpu_dry_run else FLUSHES
    for i, (label, flush_args, suffix) in enumerate(flushes):
        left = deadline - time.monotonic()
        rc, rows = run_bench(best, args, out, left / (len(flushes) - i), flush_args, suffix)
        failed = [f"{r['case']}/{r['provider']}" for r in rows if not r.get("ok")]
        verdicts.append(line(rc == 0 and bool(rows) and not failed,
                             f"bench ({label}): {len(rows)} rows, outputs within tolerance"
                             + (f" except {', '.join(failed)}" if failed else "") + f" (exit {rc})"))
        for name, arm in arms.items():
            b = arm["bench" + suffix] = against(rows, name) if name in best else None
            if not args.cpu_dry_run and b is not None:
                verdicts += target_lines(name, b, label)


def target_lines(arm: str, bench: dict, label: str) -> list[str]:
    """PASS/FAIL lines of issue 17's targets for one arm's bench numbers (`against`) under the flush `label`."""
    geo, small, faster = bench["geomean_vs_cublas"], bench["small_m_cases"], bench["faster_than_cublas_small_m"]
    return [line(geo is not None and geo >= CUBLAS_GEOMEAN_TARGET,
                 f"arm {arm} ({label}): best kernel over cuBLAS {_x(geo)} geomean (target >= "
                 f"{CUBLAS_GEOMEAN_TARGET}x)"),
            line(bool(small) and len(faster) == len(small),
                 f"arm {arm} ({label}): faster than cuBLAS on {len(faster)} of {len(small)} cases with "
                 f"M <= {FASTER_THAN_CUBLAS_MAX_M}")]


def main() -> None:
    args = parse_args()
    t0 = time.monotonic()
    deadline, out = t0 + args.seconds, args.out
    for sub in ("logs", "runs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    env = environment(out, args.cpu_dry_run)
    scratch = Path(tempfile.mkdtemp(prefix="chiplore-splitk-"))
    verdicts: list[str] = []
    rcs = onboard_h200(scratch / "base", out / "logs" / "onboard.log")
    verdicts.append(line(rcs["onboard"] == 0 and rcs["show"] == 0,
                         f"setup: H200 onboarded in {time.monotonic() - t0:.0f} s (exit codes {rcs})"))
    arms, seeded = run_arms(args, scratch / "base", scratch, out, deadline, verdicts)
    bench_arms(arms, args, out, max(BENCH_RESERVE_S, deadline - time.monotonic()) + 30.0, verdicts)
    result = {"env": env, "command": "bash scripts/gpu.sh optimize-splitk", "cases": args.cases,
              "max_evals": args.max_evals, "arm_seconds": args.arm_seconds, "seeded": seeded, "arms": arms,
              "best_geomean": max((a["run"]["final_geomean"] for a in arms.values()
                                   if (a.get("run") or {}).get("final_geomean")), default=None),
              "verdicts": verdicts, "wall_s": time.monotonic() - t0}
    (out / "results.json").write_text(json.dumps(result, indent=2))
    (out / "results.md").write_text(markdown(result))
    print((out / "results.md").read_text())
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"optimize_splitk_gpu: done in {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
