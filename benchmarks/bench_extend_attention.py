"""Extend attention on the 9 bench cases: baseline, tuned, SGLang 0.5.23's own kernel, torch flex_attention and
FlashInfer, all in one process on the same input sets (benchmarks/extend_providers.py).

Every provider's output is first checked against the float32 reference (the task tolerance, no NaN). Then three
times per case and provider, each median beside its fraction of the roofline floor (the chip profile's spec peaks):
- ``gpu_us``: CUDA-graph replay (`kernels.timing.graph_bench`: L2 flushed, inputs rotated): the GPU work alone;
- ``b2b_us``: back-to-back calls without graphs (`kernels.timing.back_to_back_us`): what a caller sees, host launch
  work included;
- ``host_us``: host time of one call, ``time.perf_counter`` around it without synchronizing (`kernels.timing.host_us`).
Work a serving engine does once per batch is setup, outside the timed region: FlashInfer's ``plan()`` and the copy of
the extend K/V into its cache, flex_attention's gather and block mask. The table notes whether the baseline is within
+-30 % of SGLang's kernel (GPU time), the claim that it reproduces the public kernel. SGLang needs ``.cache/sglang``
(``python benchmarks/sglang_kernel.py --fetch``); FlashInfer is optional (``CHIPLORE_FLASHINFER_PATH``); a provider
that cannot run is listed with its reason. Writes JSON and prints a Markdown table.

    python benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json [--providers a,b] [--cases a,b]
    python benchmarks/bench_extend_attention.py --check --out /tmp/check.json   # CPU: correctness at tiny shapes
    python benchmarks/bench_extend_attention.py --providers baseline,tuned --kernel best=RUN/best.py --out ...
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if "--check" in sys.argv and not __import__("torch").cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from benchmarks._util import (  # noqa: E402
    environment,
    input_sets,
    max_error,
    reference_output,
    roofline,
    use_chip,
    write_json,
)
from benchmarks.extend_providers import (  # noqa: E402
    PROVIDERS,
    Provider,
    Unavailable,
    file_provider,
    flex_provider,
)
from kernels.extend_attention.cases import full_params  # noqa: E402
from kernels.extend_attention.spec import TASK, make_inputs, reference  # noqa: E402
from kernels.task import Case  # noqa: E402

#: The baseline reproduces the public kernel when its GPU time is within this ratio of SGLang's.
SGLANG_BAND = 0.30
HOST_CALLS = 50
B2B_CALLS = 20

#: Tiny versions of the bench cases for the CPU check (interpreter, float16): each keeps its case's structure
#: (one long sequence, ragged batch, MLA, head dims), with interpreter-sized lengths and heads.
CHECK_CASES = tuple(Case(f"check-{cid}", full_params({**p, "dtype": "float16"}), 7, "check") for cid, p in (
    ("prefill", dict(extend_lens=[40], prefix_lens=[0], num_q_heads=4, num_kv_heads=1)),
    ("chunked-prefill", dict(extend_lens=[16], prefix_lens=[90], num_q_heads=4, num_kv_heads=1)),
    ("mixed-batch", dict(extend_lens=[6] * 3, prefix_lens=[20] * 3, num_q_heads=4, num_kv_heads=1)),
    ("decode", dict(extend_lens=[1] * 4, prefix_lens=[30] * 4, num_q_heads=4, num_kv_heads=1)),
    ("ragged", dict(extend_lens=[30, 2, 2], prefix_lens=[0, 17, 17], num_q_heads=4, num_kv_heads=1)),
    ("small-heads", dict(extend_lens=[8] * 2, prefix_lens=[9] * 2, num_q_heads=2, num_kv_heads=2, head_dim=64)),
    ("large-heads", dict(extend_lens=[5], prefix_lens=[12], num_q_heads=2, num_kv_heads=1, head_dim=256)),
    ("mla", dict(extend_lens=[4, 3], prefix_lens=[9, 5], num_q_heads=4, num_kv_heads=1, head_dim=576,
                 head_dim_v=512, mla=True)),
))


def make_providers(names: list[str], compiled_flex: bool, kernels: dict[str, str] | None = None
                   ) -> tuple[dict[str, Provider], dict[str, str]]:
    """(name -> provider, name -> reason it is unavailable); `kernels`: name -> kernel file (`file_provider`)."""
    out, skipped = {}, {}
    kernels = kernels or {}
    for name in names:
        try:
            if name in kernels:
                out[name] = file_provider(name, kernels[name])
            else:
                out[name] = flex_provider(compiled_flex) if name == "flex_attention" else PROVIDERS[name]()
        except Unavailable as exc:
            skipped[name] = str(exc)
    return out, skipped


def _check(provider: Provider, prepared: dict, raw: dict, ref: torch.Tensor, case: Case) -> dict:
    raw["o_extend"].fill_(float("nan"))
    result = provider.call(**prepared)
    if raw["o_extend"].is_cuda:
        torch.cuda.synchronize()
    ok, err = max_error(provider.output(prepared, result), ref, case)
    return {"ok": ok, "max_err": err}


def _timings(provider: Provider, prepared: list[dict], case: Case, peaks, reps: int) -> dict:
    from kernels.timing import back_to_back_us, graph_bench, host_us

    out = {}
    for key, measure in (("gpu_us", lambda: graph_bench(provider.call, prepared, reps=reps).median_us),
                         ("b2b_us", lambda: back_to_back_us(provider.call, prepared, B2B_CALLS)),
                         ("host_us", lambda: host_us(provider.call, prepared[0], HOST_CALLS))):
        try:
            out[key] = measure()
        except Exception as exc:  # noqa: BLE001 - e.g. a provider that cannot be captured in a graph
            out[f"{key}_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    for key in ("gpu_us", "b2b_us"):
        if key in out:
            out[key.replace("_us", "_floor")] = roofline(case, out[key], *peaks)["fraction_of_floor"]
    if "gpu_us" in out:
        out.update(time_us=out["gpu_us"], **roofline(case, out["gpu_us"], *peaks))
    return out


def run_provider(name: str, provider: Provider, sets: list[dict], ref: torch.Tensor, case: Case, peaks,
                 reps: int) -> dict:
    """Check then (with `peaks`) time one provider on one case, then check a warm call again (``warm_max_err``; ``ok``
    covers both); a failure is recorded in the row, not raised."""
    row = {"case": case.id, "provider": name}
    try:
        prepared = provider.setup(sets)
        row.update(_check(provider, prepared[0], sets[0], ref, case))
        if peaks:
            row.update(_timings(provider, prepared, case, peaks, reps))
        else:
            provider.call(**prepared[0])
        warm = _check(provider, prepared[0], sets[0], ref, case)  # a warm call (the tuned entry point: a replay)
        row.update(ok=row["ok"] and warm["ok"], warm_max_err=warm["max_err"])
    except Unavailable as exc:
        row["skipped"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - a provider that fails on a case is reported, not fatal
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def _warm_flex(case_id: str) -> str:
    """Compile flex_attention for one case in a worker (fills the inductor/Triton caches)."""
    try:
        provider = flex_provider(True)
        provider.call(**provider.setup(input_sets(TASK.case(case_id), 1))[0])
        torch.cuda.synchronize()
        return f"{case_id}: ok"
    except Exception as exc:  # noqa: BLE001 - flex does not run on every case; record why
        return f"{case_id}: {type(exc).__name__}: {str(exc)[:200]}"


def _cell(r: dict, key: str, frac: str) -> str:
    if key in r:
        return f"{r[key]:.0f} ({100 * r[frac]:.1f}%)" if frac in r else f"{r[key]:.0f}"
    return (r.get("skipped") or r.get("error") or r.get(f"{key}_error") or "-")[:32]


def markdown(rows: list[dict], providers: list[str]) -> str:
    """Per case: floor, then per provider GPU / back-to-back / host µs (GPU and back-to-back with % of floor), the
    tuned speedup over the baseline and over SGLang, and whether the baseline is within +-30 % of SGLang."""
    by = {(r["case"], r["provider"]): r for r in rows}
    head = ["case", "floor µs"] + [f"{p} GPU / b2b / host µs" for p in providers]
    head += ["tuned / baseline", "tuned / SGLang", "baseline within ±30 % of SGLang"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios: dict[str, list[float]] = {"baseline": [], "sglang": []}
    for case in [c for c in TASK.bench_cases if any(k[0] == c.id for k in by)]:
        cells, floor = [], float("nan")
        for prov in providers:
            r = by.get((case.id, prov), {})
            floor = r.get("floor_us", floor)
            bad = "" if r.get("ok", True) else " MISMATCH"
            cells.append(" / ".join((_cell(r, "gpu_us", "gpu_floor"), _cell(r, "b2b_us", "b2b_floor"),
                                     _cell(r, "host_us", "-"))) + bad)
        tuned = by.get((case.id, "tuned"), {}).get("gpu_us")
        speed = []
        for other in ("baseline", "sglang"):
            t = by.get((case.id, other), {}).get("gpu_us")
            if tuned and t:
                ratios[other].append(t / tuned)
            speed.append(f"{t / tuned:.2f}x" if tuned and t else "-")
        base, sgl = by.get((case.id, "baseline"), {}).get("gpu_us"), by.get((case.id, "sglang"), {}).get("gpu_us")
        band = ("yes" if abs(base / sgl - 1) <= SGLANG_BAND else "NO") + f" ({base / sgl:.2f})" if base and sgl else "-"
        lines.append(f"| {case.id} | {floor:.0f} | " + " | ".join(cells) + f" | {speed[0]} | {speed[1]} | {band} |")
    for other, values in ratios.items():
        if values:
            geo = math.exp(sum(map(math.log, values)) / len(values))
            lines.append(f"\nGeomean GPU-time speedup of tuned over {other}: {geo:.2f}x ({len(values)} cases)")
    return "\n".join(lines)


def run_check(out: str, names: list[str], kernels: dict[str, str] | None = None) -> int:
    """CPU check: every available provider's output within tolerance on `CHECK_CASES`, nothing timed; exit 1 if
    not."""
    providers, skipped = make_providers(names, compiled_flex=torch.cuda.is_available(), kernels=kernels)
    rows = []
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for case in CHECK_CASES:
        sets = [make_inputs(case, 3, device)]
        ref = reference(sets[0])["o_extend"]
        rows += [run_provider(n, p, sets, ref, case, None, 0) for n, p in providers.items()]
    write_json(out, {"env": environment(), "mode": "check", "skipped": skipped, "rows": rows})
    bad = [f"{r['case']}/{r['provider']}: {r.get('error') or r.get('max_err')}" for r in rows
           if "skipped" not in r and not r.get("ok")]
    print(f"check: {len(rows) - len(bad)} of {len(rows)} outputs within tolerance; unavailable: {skipped}"
          + (f"; FAIL: {bad}" if bad else ""))
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chip", default="h200")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--providers", default=",".join(PROVIDERS))
    ap.add_argument("--cases", default="")
    ap.add_argument("--check", action="store_true", help="correctness at tiny shapes only (runs on the CPU)")
    ap.add_argument("--kernel", action="append", default=[], metavar="NAME=PATH",
                    help="one more provider: the extend_attention_fwd of a kernel file (e.g. a run's best candidate)")
    args = ap.parse_args()
    names = [n for n in args.providers.split(",") if n]
    unknown = set(names) - set(PROVIDERS)
    if unknown:
        ap.error(f"unknown provider(s) {sorted(unknown)}; known: {', '.join(PROVIDERS)}")
    kernels = {}
    for item in args.kernel:
        name, sep, path = item.partition("=")
        if not sep or not name or not path or name in PROVIDERS:
            ap.error(f"--kernel {item!r}: expected NAME=PATH with a NAME other than {', '.join(PROVIDERS)}")
        kernels[name] = path
    names += list(kernels)
    profile = use_chip(args.chip)  # the chip's limits for the kernels; a virtual chip's partition
    if args.check:
        return run_check(args.out, names, kernels)
    peaks = (profile.peak_flops("bf16") / 1e12, profile.peak_bytes_per_s() / 1e9)
    cases = [c for c in TASK.bench_cases if not args.cases or c.id in args.cases.split(",")]
    t0, warm = time.time(), []
    if "flex_attention" in names:
        with mp.get_context("spawn").Pool(min(len(cases), 9), initializer=use_chip, initargs=(args.chip,)) as pool:
            warm = pool.map(_warm_flex, [c.id for c in cases])
        print(f"flex_attention compiled in {time.time() - t0:.0f}s: {warm}", flush=True)
    providers, skipped = make_providers(names, compiled_flex=True, kernels=kernels)
    print(f"providers: {list(providers)}; unavailable: {skipped}", flush=True)
    rows = []
    for case in cases:
        sets = input_sets(case, 2)
        ref = reference_output(sets[0])
        for name, provider in providers.items():
            rows.append(run_provider(name, provider, sets, ref, case, peaks, args.reps))
            print(f"{case.id} {name}: { {k: v for k, v in rows[-1].items() if k not in ('case', 'provider')} }",
                  flush=True)
        del sets, ref
        torch.cuda.empty_cache()
        write_json(args.out, {"env": environment(), "chip": args.chip, "peaks_tflops_gbps": peaks,
                              "flex_warmup": warm, "skipped": skipped, "rows": rows})
    table = markdown(rows, names)
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    print(table)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
