"""Cold-start wall time of the CLI: ``chiplore --help``, ``chiplore chips``, ``chiplore ask Q`` (one question) and
``chiplore ask Q1..Q5`` (five questions in one call), each a fresh process, against a store that holds documents.

Usage: ``python benchmarks/bench_cold_start.py [--home DIR] [--runs N] [--cli "python -m agent.cli"]
[--out FILE.json]``. Without ``--home`` a temporary CHIPLORE_HOME is onboarded with the shipped H200 note first.
Each command runs ``--runs`` times (default 7) after one untimed run (the OS file cache is warm, as for a user's
second command); the median wall time and range are printed with the median CPU time (user + system of the
process, less sensitive to other load) and the load average at the start and end, since the 2-core machine is
shared. ``--cli`` runs another checkout (``PYTHONPATH=OLD python -m agent.cli``) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = ["shared memory per block", "how many streaming multiprocessors", "memory bandwidth HBM3e",
             "warp size", "L2 cache size"]


CLI: list[str] = []


def chiplore() -> list[str]:
    if CLI:
        return CLI
    beside = Path(sys.executable).parent / "chiplore"
    return [str(beside) if beside.exists() else shutil.which("chiplore") or "chiplore"]


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``chiplore ARGS`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([*chiplore(), *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"chiplore {' '.join(args)} failed: {' '.join(out.stderr.split())[-300:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="CHIPLORE_HOME with documents (default: a fresh one)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cli", help="command that runs chiplore (default: the installed console script)")
    args = parser.parse_args()
    CLI.extend(shlex.split(args.cli) if args.cli else [])
    home = args.home or Path(tempfile.mkdtemp(prefix="chiplore-bench-cold-"))
    env = dict(os.environ, CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    if args.home is None:
        from agent.demo import NOTES_DIR

        timed(["onboard", "h200", str(NOTES_DIR / "h200.md")], env)
    commands = {"--help": ["--help"], "chips": ["chips"], "ask (1 question)": ["ask", QUESTIONS[0], "--chip", "h200"],
                "ask (5 questions)": ["ask", *QUESTIONS, "--chip", "h200"]}
    load_before = os.getloadavg()
    rows = {}
    for name, command in commands.items():
        try:
            timed(command, env)  # untimed: warms the OS file cache
        except RuntimeError as exc:  # e.g. an older checkout without several questions per ask
            print(f"{name:20s} {exc}")
            continue
        pairs = [timed(command, env) for _ in range(args.runs)]
        times, cpu = [w for w, _ in pairs], [c for _, c in pairs]
        rows[name] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                      "cpu_median_s": statistics.median(cpu), "runs": times}
        print(f"{name:20s} wall median {rows[name]['median_s']:.2f} s (min {min(times):.2f}, max {max(times):.2f}); "
              f"CPU median {rows[name]['cpu_median_s']:.2f} s; {args.runs} runs")
    load_after = os.getloadavg()
    print(f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after; {os.cpu_count()} CPUs")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "load_before": load_before, "load_after": load_after,
                                        "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
