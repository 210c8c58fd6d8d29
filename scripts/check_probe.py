"""GPU check of ``chiplore profile probe`` against what issue 19 asks (PASS/FAIL lines, JSON under --out).

On the full H200: 132 compute units within 2 %, 227 KiB of shared memory per block, bandwidth and bf16 dot
throughput within 15 % of a torch copy and cuBLAS timed in the same run. In a 40-SM partition (a virtual chip
declared with ``chiplore profile virtual``): the partition's real size, counted independently inside the partition
by `hardware_profiles.smid` (the distinct %smid values a large grid runs on, NVIDIA PTX; the probe itself uses no
vendor instruction), beside the driver's split for the request and the context's own report. The same counts for
36 and 66 SMs asked say how the driver rounds. Each probe and count runs in its own process (and CHIPLORE_HOME).

    python scripts/check_probe.py --out $OUT/probe [--partition-sms 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hardware_profiles.smid import partition_problem  # noqa: E402


def chiplore(home: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(CHIPLORE_HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "agent.cli", *args], env=env, cwd=ROOT, text=True,
                          capture_output=True, timeout=400)
    print(f"$ chiplore {' '.join(args)} (rc {done.returncode})\n{done.stdout[-6000:]}{done.stderr[-3000:]}", flush=True)


def smid_counts(sizes: list[int]) -> dict[int, dict]:
    """`hardware_profiles.smid`'s report for each partition size, one process each, all at once (a count needs no
    quiet GPU); ``{"error": ...}`` for one that failed."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    procs = {n: subprocess.Popen([sys.executable, "-m", "hardware_profiles.smid", str(n)], env=env, cwd=ROOT,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in sizes}
    reports = {}
    for n, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        reports[n] = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else {"error": err[-800:]}
    return reports


def check(name: str, ok: bool, detail: str, results: list) -> None:
    line = f"{'PASS' if ok else 'FAIL'} {name}: {detail}"
    print(line, flush=True)
    results.append(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--partition-sms", type=int, default=40)
    parser.add_argument("--host-sms", type=int, default=132)
    parser.add_argument("--also-count", default="36,66", help="partitions whose given SM count is only reported")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chiplore(out / "home-h200", "profile", "probe", "h200", "--dry-run", "--out", str(out / "probe_h200.json"))
    name = f"vm{args.partition_sms}"
    chiplore(out / "home-vm", "profile", "virtual", name, "--host", "h200", "--compute-units",
             str(args.partition_sms))
    chiplore(out / "home-vm", "profile", "probe", name, "--out", str(out / f"probe_{name}.json"))
    truth = smid_counts([args.partition_sms] + [int(x) for x in args.also_count.split(",") if x])
    results: list[str] = []
    full = json.loads((out / "probe_h200.json").read_text()) if (out / "probe_h200.json").is_file() else None
    if full:
        r, cmp = full["report"]["readings"], full["report"]["comparisons"]
        units = r.get("num_compute_units", {}).get("value")
        check("h200 compute units", units is not None and abs(units - args.host_sms) <= 0.02 * args.host_sms,
              f"{units} (device {args.host_sms})", results)
        smem = r.get("smem_per_block_kb", {}).get("value")
        check("h200 shared memory per block", smem is not None and abs(smem - 227) <= 0.5, f"{smem} KiB", results)
        for field, ref_key, what in (("achievable_mem_bw_gbps", "torch_copy_gbps", "bandwidth vs torch copy"),
                                     ("achievable_tflops.bf16", "torch_matmul_bf16_tflops", "bf16 dot vs cuBLAS")):
            mine, ref = r.get(field, {}).get("value"), cmp.get(ref_key)
            ok = bool(mine and ref and abs(mine - ref) <= 0.15 * ref)
            check(f"h200 {what}", ok, f"{mine} against {ref} ({mine / ref:.0%})" if mine and ref else "missing",
                  results)
    else:
        check("h200 probe", False, "no probe_h200.json", results)
    part = out / f"probe_{name}.json"
    inside = truth[args.partition_sms]
    real = inside.get("smid_count")
    if part.is_file():
        units = json.loads(part.read_text())["report"]["readings"].get("num_compute_units", {}).get("value")
        check(f"{name} real size", units is not None and units == real and partition_problem(args.partition_sms,
                                                                                             inside) is None,
              f"probe {units}, distinct %smid {real}, driver {inside.get('driver_sms')}", results)
    else:
        check(f"{name} probe", False, "no probe JSON", results)
    for n, t in truth.items():
        if "error" in t:
            check(f"partition asked {n}", False, f"the count failed: {t['error'].strip().splitlines()[-1:]}",
                  results)
            continue
        problem = partition_problem(n, t)
        seen = (f"the driver gives {t.get('driver_sms')} SMs, distinct %smid {t.get('smid_count')}, the context "
                f"reports {t.get('context_sms')} (SM groups {t.get('granularity') or 'unreadable'}; device query "
                f"inside {t.get('props_sms')})")
        check(f"partition asked {n}", problem is None, f"{problem}; {seen}" if problem else seen, results)
    (out / "check.json").write_text(json.dumps({"checks": results, "partitions": truth}, indent=1))


if __name__ == "__main__":
    main()
