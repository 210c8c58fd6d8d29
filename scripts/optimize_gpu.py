"""The optimize runs on the GPU machine: onboard the H200, optimize with and without retrieval, SIGKILL + resume.

    bash scripts/gpu.sh optimize:600         # = python scripts/optimize_gpu.py --out $OUT/optimize
    SUITE_ARGS_optimize="--part runs --minutes 9.3" bash scripts/gpu.sh optimize   # two device commands when
    SUITE_ARGS_optimize="--part kill --minutes 4" bash scripts/gpu.sh optimize     # verifying is slow
    bash scripts/gpu.sh optimize-splitk:590  # --task splitk_gemm --part runs, then the bench (scripts/gpu.sh)

``--task`` (default extend_attention) names the task every run optimizes.

1. Onboard (CHIPLORE_HOME under a scratch folder): ``chiplore profile detect --as h200`` and
   ``chiplore onboard h200 hardware_profiles/notes/h200.md``; the home is then copied once per job, so every
   optimize run starts from an empty findings store.
2. ``chiplore optimize TASK --chip h200 --max-evals 40`` (run ``retrieval``) and the same with
   ``--no-retrieval`` (run ``no-retrieval``), each on its own GPU when there are several, with a wall-clock
   budget so the whole script ends within ``--minutes``.
3. Kill check: run ``uninterrupted`` (``--max-evals K``) and run ``killed``: SIGKILL to its process group while
   candidate v(K//2) is being verified, then ``--resume killed``; compare distinct evaluations and findings.

Writes under OUT: ``runs/<name>/`` (state, candidates, verdicts, retrieval logs, report), ``logs/*.log``,
``findings/<name>.json``, ``kill_check.json``, ``env.json``, ``summary.json`` and ``summary.md``
(`scripts/optimize_benchmarks.py`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("torch", "triton", "chromadb", "sentence_transformers", "typer", "rich", "pydantic", "jinja2",
          "matplotlib", "networkx", "yaml", "openai")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent.cli", *args]


def env_for(home: Path, gpu: str | None) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # keep e.g. /tmp/site
    env = {**os.environ, "CHIPLORE_HOME": str(home), "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


def run_logged(args: list[str], env: dict[str, str], log: Path, timeout: float | None = None) -> int:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        return subprocess.run(args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode


def start_logged(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "a")  # noqa: SIM115  closed when the process is reaped
    out.write(f"$ {' '.join(args)}\n")
    out.flush()
    return subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def environment(out: Path, cpu_dry_run: bool) -> dict[str, object]:
    missing = []
    for name in NEEDED:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        sys.exit(f"optimize_gpu: missing Python packages on this machine: {', '.join(missing)}")
    import torch
    import triton

    if not torch.cuda.is_available() and not cpu_dry_run:
        sys.exit("optimize_gpu: no GPU visible")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    commit = os.environ.get("CHIPLORE_COMMIT") or commit or "unknown"  # the device copy may see another .git
    gpu = torch.cuda.is_available()
    env = {"device": torch.cuda.get_device_name(0) if gpu else "cpu (dry run: interpreter, untimed)",
           "gpus": torch.cuda.device_count() if gpu else 1, "torch": torch.__version__,
           "triton": triton.__version__, "python": sys.version.split()[0], "commit": commit,
           "date": dt.date.today().isoformat()}
    (out / "env.json").write_text(json.dumps(env, indent=2))
    return env


def sample_gpu_memory(log: Path, stop: threading.Event, every_s: float = 5.0) -> None:
    """Every `every_s` seconds append nvidia-smi's per-process GPU memory (pid, MiB, command line) to `log`."""
    with open(log, "a") as out:
        while not stop.wait(every_s):
            try:
                rows = subprocess.run(["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,used_memory",
                                       "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError) as exc:
                out.write(f"nvidia-smi failed: {exc}\n")
                return
            stamp = dt.datetime.now().strftime("%H:%M:%S")
            for row in rows.strip().splitlines():
                pid = row.split(",")[1].strip()
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
                except OSError:
                    cmd = "?"
                out.write(f"{stamp} {row} {cmd}\n")
            out.flush()


def onboard(base: Path, logs: Path) -> None:
    env = env_for(base, "0")
    run_logged(cli("profile", "detect", "--as", "h200"), env, logs / "onboard.log", timeout=120)
    note = ROOT / "hardware_profiles" / "notes" / "h200.md"
    if note.is_file():
        run_logged(cli("onboard", "h200", str(note)), env, logs / "onboard.log", timeout=300)
    run_logged(cli("profile", "show", "h200"), env, logs / "onboard.log", timeout=60)


def optimize_args(name: str, max_evals: int, budget_min: float | None, extra: list[str],
                  task: str = "extend_attention") -> list[str]:
    args = ["optimize", task, "--chip", "h200", "--max-evals", str(max_evals), "--run-id", name,
            "--patience", str(max_evals), "--record-findings", *extra]
    if budget_min is not None:
        args += ["--budget-min", f"{budget_min:.2f}"]
    return cli(*args)


def wait_for_pending(state_file: Path, n: int, proc: subprocess.Popen, timeout: float) -> bool:
    """True once the run's state says candidate `n` is being evaluated (and its verdict is not yet written)."""
    deadline = time.monotonic() + timeout
    verdict = state_file.parent / "verdicts" / f"v{n}.json"
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            pending = json.loads(state_file.read_text()).get("pending")
        except (OSError, json.JSONDecodeError):
            pending = None
        if pending and pending.get("n") == n and not verdict.exists():
            time.sleep(0.5)  # inside the verifier now
            return not verdict.exists()
        time.sleep(0.05)
    return False


def findings_of(home: Path, name: str, out: Path) -> list[str]:
    done = subprocess.run(cli("findings", "--chip", "h200", "--json"), env=env_for(home, None), cwd=ROOT,
                          capture_output=True, text=True)
    (out / "findings" / f"{name}.json").write_text(done.stdout or done.stderr)
    try:
        return [f["id"] for f in json.loads(done.stdout)["findings"]]
    except (json.JSONDecodeError, KeyError):
        return []


def kill_check(homes: dict[str, Path], gpus: tuple[str, str], k: int, out: Path,
               task: str = "extend_attention") -> dict[str, object]:
    """Uninterrupted run of `k` evaluations next to one SIGKILLed mid-evaluation and resumed."""
    logs = out / "logs"
    ref = start_logged(optimize_args("uninterrupted", k, None, [], task), env_for(homes["uninterrupted"], gpus[0]),
                       logs / "uninterrupted.log")
    if gpus[0] == gpus[1]:
        ref.wait()
    target = max(2, k // 2)
    env = env_for(homes["killed"], gpus[1])
    proc = start_logged(optimize_args("killed", k, None, [], task), env, logs / "killed.log")
    state_file = homes["killed"] / "runs" / "killed" / "state.json"
    hit = wait_for_pending(state_file, target, proc, timeout=600)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_state = json.loads(state_file.read_text())
    run_logged(cli("optimize", "--resume", "killed"), env, logs / "killed.log", timeout=900)
    ref.wait()
    a = json.loads((homes["uninterrupted"] / "runs" / "uninterrupted" / "state.json").read_text())
    b = json.loads(state_file.read_text())
    fa, fb = findings_of(homes["uninterrupted"], "uninterrupted", out), findings_of(homes["killed"], "killed", out)
    distinct = len({e["n"] for e in b["evaluations"]})
    expected = [fid for e in b["evaluations"] for fid in e.get("finding_ids", [])]
    result = {
        "max_evals": k, "killed_at": target, "killed_mid_evaluation": hit,
        "pending_at_kill": killed_state.get("pending"), "evaluations_at_kill": len(killed_state["evaluations"]),
        "uninterrupted_evaluations": len(a["evaluations"]), "resumed_evaluations": len(b["evaluations"]),
        "resumed_distinct_evaluations": distinct, "uninterrupted_findings": len(fa), "resumed_findings": len(fb),
        "duplicated_findings": len(fb) - len(set(fb)), "recorded_ids_unique":
            len(b["findings_recorded"]) == len(set(b["findings_recorded"])),
        "resumed_status": b["status"], "resumes": b["resumes"],
        "findings_of_evaluations": len(expected),
        "store_matches_evaluations": sorted(set(fb)) == sorted(set(expected)) and len(expected) == len(set(expected)),
    }
    # the two runs may take different paths (timings differ between runs), so their finding counts may differ;
    # what must hold: as many distinct evaluations, and the resumed run's store holds exactly one finding for
    # every finding its evaluations name, none twice
    result["ok"] = bool(hit and result["resumed_evaluations"] == result["uninterrupted_evaluations"] == distinct
                        and result["duplicated_findings"] == 0 and result["recorded_ids_unique"]
                        and result["store_matches_evaluations"] and b["status"] == "finished")
    return result


def safe_kill_check(homes: dict[str, Path], gpus: tuple[str, str], k: int, out: Path,
                    task: str = "extend_attention") -> dict[str, object]:
    """`kill_check`, with any failure recorded (logs under OUT/logs) instead of ending the script."""
    try:
        return kill_check(homes, gpus, k, out, task)
    except Exception as exc:  # noqa: BLE001  the optimize runs' results must still be collected
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "max_evals": k}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--task", default="extend_attention", help="the task every run optimizes")
    parser.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget of the whole script")
    parser.add_argument("--max-evals", type=int, default=40)
    parser.add_argument("--kill-evals", type=int, default=6)
    parser.add_argument("--part", choices=("all", "runs", "kill"), default="all",
                        help="runs: only the two optimize runs (all the budget); kill: only the SIGKILL check")
    parser.add_argument("--runs", default="retrieval,no-retrieval",
                        help="which optimize runs of --part runs/all (comma-separated: retrieval, no-retrieval)")
    parser.add_argument("--cpu-dry-run", action="store_true",
                        help="exercise the orchestration without a GPU (interpreter, untimed, nothing to report)")
    args = parser.parse_args()
    t0 = time.monotonic()
    out = args.out
    for sub in ("logs", "runs", "findings"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    env = environment(out, args.cpu_dry_run)
    stop_sampler = threading.Event()
    if not args.cpu_dry_run:
        threading.Thread(target=sample_gpu_memory, args=(out / "logs" / "gpu_mem.log", stop_sampler),
                         daemon=True).start()
    scratch = Path(tempfile.mkdtemp(prefix="chiplore-gpu-"))
    base = scratch / "base"
    onboard(base, out / "logs")
    names = ("retrieval", "no-retrieval", "uninterrupted", "killed")
    homes = {name: scratch / name for name in names}
    for home in homes.values():
        shutil.copytree(base, home)
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()  # physical ids, when this script was given some
    gpus = inherited.split(",") if inherited else [str(i) for i in range(int(env["gpus"]))]
    used = (time.monotonic() - t0) / 60
    if args.part == "kill":
        kill = safe_kill_check(homes, (gpus[0], gpus[1 % len(gpus)]), args.kill_evals, out, args.task)
    else:
        kill_gpus = (gpus[2], gpus[3] if len(gpus) >= 4 else gpus[2]) if len(gpus) >= 3 else None
        # with fewer than 3 GPUs the kill check runs after the optimize runs: keep ~3.3 min for it
        reserve = 0.8 if len(gpus) >= 3 or args.part == "runs" else 3.3
        budget = args.minutes - used - reserve
        wanted = set(args.runs.split(","))
        if len(gpus) == 1 and len(wanted) > 1:
            budget /= 2
        procs = []
        for name, extra, gpu in (("retrieval", [], gpus[0]),
                                 ("no-retrieval", ["--no-retrieval"], gpus[1 % len(gpus)])):
            if name not in wanted:
                continue
            p = start_logged(optimize_args(name, args.max_evals, max(budget, 0.5), extra, args.task),
                             env_for(homes[name], gpu), out / "logs" / f"{name}.log")
            procs.append(p)
            if len(gpus) == 1:
                p.wait()
        kill = None
        if args.part == "all" and kill_gpus is not None:
            kill = safe_kill_check(homes, kill_gpus, args.kill_evals, out, args.task)
        for p in procs:
            p.wait()
        if args.part == "all" and kill is None:
            kill = safe_kill_check(homes, (gpus[0], gpus[1 % len(gpus)]), args.kill_evals, out, args.task)
    if kill is not None:
        (out / "kill_check.json").write_text(json.dumps(kill, indent=2))
    for name, home in homes.items():
        run = home / "runs" / name
        if run.is_dir():
            shutil.copytree(run, out / "runs" / name, dirs_exist_ok=True)
    for name in ("retrieval", "no-retrieval"):
        findings_of(homes[name], name, out)
    sys.path.insert(0, str(ROOT / "scripts"))
    import optimize_benchmarks

    summary = optimize_benchmarks.summarize(out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(optimize_benchmarks.markdown(summary, "bash scripts/gpu.sh optimize"))
    print((out / "summary.md").read_text())
    stop_sampler.set()
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"optimize_gpu: done in {(time.monotonic() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()
