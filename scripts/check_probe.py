"""GPU check of ``chiplore profile probe`` against what issue 19 asks (PASS/FAIL lines, JSON under --out).

On the full H200: 132 compute units within 2 %, 227 KiB of shared memory per block, bandwidth and bf16 dot
throughput within 15 % of a torch copy and cuBLAS timed in the same run. In a 40-SM partition (a virtual chip
declared with ``chiplore profile virtual``): the partition's real size, counted independently by the distinct
%smid values a large grid runs on (NVIDIA PTX; the probe itself uses no vendor instruction). Each probe runs in
its own process and CHIPLORE_HOME.

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

from benchmarks.transfer_virtual_chips import _SMID  # noqa: E402 - the %smid counter of the experiment


def chiplore(home: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(CHIPLORE_HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "agent.cli", *args], env=env, cwd=ROOT, text=True,
                          capture_output=True, timeout=400)
    print(f"$ chiplore {' '.join(args)} (rc {done.returncode})\n{done.stdout[-6000:]}{done.stderr[-3000:]}", flush=True)


def smid_count(sms: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", _SMID, str(sms)], env=env, cwd=ROOT, text=True,
                          capture_output=True, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {"error": done.stderr[-500:]}


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
    truth = {n: smid_count(n) for n in [args.partition_sms] + [int(x) for x in args.also_count.split(",") if x]}
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
    real = truth[args.partition_sms].get("smid_count")
    if part.is_file():
        units = json.loads(part.read_text())["report"]["readings"].get("num_compute_units", {}).get("value")
        check(f"{name} real size", units is not None and units == real,
              f"probe {units}, distinct %smid {real}, driver {truth[args.partition_sms].get('driver_sms')}", results)
    else:
        check(f"{name} probe", False, "no probe JSON", results)
    for n, t in truth.items():
        print(f"partition asked {n}: driver gives {t.get('driver_sms')}, distinct %smid {t.get('smid_count')}")
    (out / "check.json").write_text(json.dumps({"checks": results, "partitions": truth}, indent=1))


if __name__ == "__main__":
    main()
