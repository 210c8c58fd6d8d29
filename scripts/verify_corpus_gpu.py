"""Verify the whole regression corpus on a GPU (H200): every cheat must be rejected, every honest candidate must
pass with timings on the 9 bench cases. Reports the verdict stage and verify seconds per candidate and writes
JSON to --out.

    python scripts/verify_corpus_gpu.py --chip h200 --out verify_corpus_h200.json

Order: the baseline first (its times become the speedup reference), the other honest candidates, then each
cheat twice -- with every layer (expected: its `full` stage) and with the static stage skipped (expected: its
GPU dynamic stage), which shows the dynamic stage alone rejects it. Exit code 0 only if all of that holds.

``--device cpu`` runs the same corpus on a machine without a GPU (Triton interpreter, nothing timed; the CPU
expectations of tests/verifier/corpus.py apply, GPU-only attacks are skipped in the static-off run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agent.verifier import Verdict, Verifier, VerifyOptions  # noqa: E402
from core.atomic_io import atomic_write_text  # noqa: E402
from hardware_profiles import load_profile  # noqa: E402
from tests.verifier.corpus import CHEATS, HONEST, Stages, accepts, stages_label  # noqa: E402


def _row(name: str, kind: str, mode: str, expected: Stages | None, verdict: Verdict) -> dict:
    ok = accepts(expected, verdict.stage) if expected else verdict.stage != "pass"
    return {
        "candidate": name, "kind": kind, "mode": mode, "expected": stages_label(expected) if expected else None,
        "stage": verdict.stage, "ok": ok,
        "verify_seconds": verdict.verify_seconds, "phase_seconds": verdict.config.get("phase_seconds", {}),
        "reasons": verdict.reasons[:3], "flags": verdict.flags, "time_us": verdict.time_us,
        "fraction_of_floor": {k: round(t.fraction_of_floor, 4) for k, t in verdict.timings.items()},
        "speedup": verdict.speedup, "timing_note": verdict.timing_note,
    }


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON results path")
    parser.add_argument("--chip", default="h200", help="chip profile for the roofline gate")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated candidate names (default: all)")
    parser.add_argument("--skip-dynamic-only", action="store_true", help="skip the static-stage-off reruns")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    gpu = args.device == "cuda"
    if gpu and not torch.cuda.is_available():
        print("no GPU: run with --device cpu (interpreter, untimed) or `pytest tests/verifier`", file=sys.stderr)
        return 1
    os.environ.setdefault("CHIPLORE_HOME", tempfile.mkdtemp(prefix="chiplore-home-"))
    only = {n for n in args.only.split(",") if n}
    console = Console()
    profile = load_profile(args.chip)
    options = VerifyOptions(device=args.device, reps=args.reps)
    rows: list[dict] = []
    started = time.perf_counter()
    with Verifier("extend_attention", profile, options) as verifier:
        for honest in HONEST:
            if only and honest.name not in only:
                continue
            verdict = verifier.verify(honest.path)
            rows.append(_row(honest.name, "honest: " + honest.what, "full", "pass", verdict))
            if honest.name == "baseline" and verdict.passed:
                verifier.options = options.model_copy(update={"baseline_time_us": verdict.time_us})
            console.print(f"{honest.name}: {verdict.stage} in {verdict.verify_seconds:.1f} s {verdict.reasons[:1]}")
        for cheat in CHEATS:
            if only and cheat.name not in only:
                continue
            runs = [("full", verifier.options, cheat.gpu_full_stage if gpu else cheat.full)]
            dynamic_expected = cheat.gpu_dynamic if gpu else cheat.dynamic
            if not args.skip_dynamic_only and cheat.full == "static_rejected" and dynamic_expected:
                runs.append(("dynamic only", verifier.options.model_copy(update={"skip_static": True}),
                             dynamic_expected))
            for mode, opts, expected in runs:
                saved, verifier.options = verifier.options, opts
                try:
                    verdict = verifier.verify(cheat.path)
                finally:
                    verifier.options = saved
                rows.append(_row(cheat.name, cheat.kind, mode, expected, verdict))
                console.print(f"{cheat.name} [{mode}]: {verdict.stage} (expected {stages_label(expected)}) in "
                              f"{verdict.verify_seconds:.1f} s {verdict.reasons[:1]}")
    table = Table("candidate", "mode", "expected", "stage", "ok", "verify s", title=f"verifier corpus ({args.device})")
    for r in rows:
        table.add_row(r["candidate"], r["mode"], str(r["expected"]), r["stage"], "yes" if r["ok"] else "NO",
                      f"{r['verify_seconds']:.1f}")
    console.print(table)
    honest_rows = [r for r in rows if r["kind"].startswith("honest")]
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(), "device": torch.cuda.get_device_name() if gpu else "cpu (Triton interpreter)",
        "chip_profile": args.chip,
        "torch": torch.__version__, "reps": args.reps, "total_seconds": round(time.perf_counter() - started, 1),
        "cheats_rejected": sum(r["stage"] != "pass" for r in rows if not r["kind"].startswith("honest")),
        "cheat_runs": sum(not r["kind"].startswith("honest") for r in rows),
        "honest_passed": sum(r["stage"] == "pass" for r in honest_rows), "honest": len(honest_rows),
        "all_as_expected": all(r["ok"] for r in rows),
        "known_gaps": sorted({r["candidate"] for r in rows if r["expected"] == "pass" and not r["kind"].startswith(
            "honest")}),
        "max_honest_verify_seconds": max((r["verify_seconds"] for r in honest_rows), default=0.0),
        "rows": rows,
    }
    atomic_write_text(Path(args.out), json.dumps(summary, indent=2))
    console.print(f"cheat runs rejected {summary['cheats_rejected']}/{summary['cheat_runs']}, honest passed "
                  f"{summary['honest_passed']}/{summary['honest']}, all as expected: {summary['all_as_expected']}; "
                  f"wrote {args.out}")
    return 0 if summary["all_as_expected"] else 1


if __name__ == "__main__":
    sys.exit(main())
