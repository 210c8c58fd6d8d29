"""Split-K GEMM on the bench cases: baseline (plain Triton GEMM), tuned (split-K family) and cuBLAS, same process.

``C[M, N] = A[M, K] @ B[N, K]^T`` in bfloat16. Every provider runs on the same input sets, its output checked
against the float64 reference first; then medians of timed calls with cold L2 and rotated inputs
(`kernels.timing.bench`), each beside its fraction of the roofline floor max(flops / peak, bytes / bandwidth) from
the chip profile, and the host time per call (wall time of back-to-back calls without synchronization; for tuned
also that of Triton's launcher alone, the floor under it). cuBLAS is
``torch.matmul(a, b.T, out=c)`` (cuBLASLt on the same [N, K] weights, writing into the same preallocated c).
``--sweep`` also times variants of the tuned configuration per case (reduce modes, stream-K, split counts, tiles)
and reports the fastest, to check and retune the rules of `kernels/splitk_gemm/tuned.py`. ``--candidate NAME=FILE``
(repeatable) also times a candidate file's ``splitk_gemm(a, b, c)`` (e.g. the best kernel of a ``chiplore
optimize`` run, which carries its chip limits) as provider ``candidate:NAME``, with its geomeans over the baseline
and cuBLAS and the issue's targets against cuBLAS (>= 0.9x geomean; faster where M <= 16). Writes JSON and prints
Markdown tables; exit status 1 when an output of baseline, tuned, cuBLAS or a candidate is out of tolerance.

    python benchmarks/bench_splitk_gemm.py --chip h200 --out $OUT/splitk.json [--sweep] [--reps 20] [--cases ID,...]
        [--candidate retrieval=RUN/report/splitk_gemm_best_v7.py ...]
    python benchmarks/bench_splitk_gemm.py --few-rows --out $OUT/gemv.json [--budget-s 135]   # M 1, 2, 4, GEMV mode
    python benchmarks/bench_splitk_gemm.py --check --out /tmp/check.json   # CPU: correctness at tiny shapes only

``--few-rows``: M in {1, 2, 4} on every bench layer, cuBLAS, tuned and the GEMV-mode variants side by side
with their fraction of the spec (and measured) bandwidth (benchmarks/splitk_few_rows.py).

    python benchmarks/bench_splitk_gemm.py --m16 --out $OUT/m16.json [--budget-s 150] [--cases ID,...]

``--m16``: the bench cases with M <= 16, cuBLAS, tuned and the streaming-read variants (benchmarks/splitk_m16.py),
each checked, then timed after a dirty and after a clean L2 flush.

``--clean-l2``: every timed call starts on an L2 of clean lines (the flush's write, then a read of a second buffer;
`kernels.timing.bench` ``clean_l2``), so the call does not pay the write-back of the flush's dirty lines, up to one
L2 of extra traffic that weighs most on short weight-streaming calls (BENCHMARKS.md, Split-K GEMM, M <= 16 sweep).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if "--check" in sys.argv and not __import__("torch").cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from benchmarks._util import environment, write_json  # noqa: E402
from benchmarks.splitk_few_rows import GEMV_VARIANTS, few_rows_markdown, run_few_rows, variant_config  # noqa: E402
from benchmarks.splitk_m16 import m16_markdown, run_m16  # noqa: E402
from hardware_profiles import load_profile  # noqa: E402
from kernels.chip import ChipLimits  # noqa: E402
from kernels.launch import current_device_and_stream  # noqa: E402
from kernels.splitk_gemm import baseline, splitk_gemm, tuned  # noqa: E402
from kernels.splitk_gemm.config import FamilyConfig  # noqa: E402
from kernels.splitk_gemm.family import run_family  # noqa: E402
from kernels.splitk_gemm.spec import TASK, bytes_moved, flops, make_inputs, reference  # noqa: E402
from kernels.splitk_gemm.tuned import choose_config, dot_config  # noqa: E402
from kernels.task import Case  # noqa: E402

#: Tiny cases of the CPU check (interpreter): odd shapes, a split, float16 and float32.
CHECK_CASES = ("odd-3x13x37", "decode-1x80x257", "fp32-odd-3x13x37")
HOST_CALLS = 50
TASK_DTYPE = torch.bfloat16


def cublas(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``c = a @ b.T`` by torch.matmul (cuBLAS on a GPU), into the preallocated c."""
    return torch.matmul(a, b.T, out=c)


def providers(limits: ChipLimits) -> dict:
    """name -> entry point ``fn(a, b, c)``."""
    return {"baseline": baseline.splitk_gemm, "tuned": lambda a, b, c: splitk_gemm(a, b, c, limits=limits),
            "cublas": cublas}


#: The issue's targets for a kernel against cuBLAS: geomean speedup over the bench cases, and M of the cases where it
#: must be faster (issue 17, "Must show").
CUBLAS_GEOMEAN_TARGET = 0.9
FASTER_THAN_CUBLAS_MAX_M = 16


def load_candidate(path: str | Path):
    """The entry point (``splitk_gemm``) of a candidate file.

    Raises:
        SystemExit: the file does not exist or defines no entry point (one line naming it).
    """
    path = Path(path)
    if not path.is_file():
        sys.exit(f"bench_splitk_gemm: candidate {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"candidate_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, TASK.entry_point, None)
    if not callable(fn):
        sys.exit(f"bench_splitk_gemm: candidate {path} defines no {TASK.entry_point}()")
    return fn


def previous_rule(limits: ChipLimits, m: int, n: int, k: int) -> FamilyConfig:
    """The tuned rule measured before the byte-share model (commit 2a95320): 128 x 128 weight tiles, 4 stages
    (BLOCK_K 64 and 8 warps at BLOCK_M = 128), BLOCK_K halved to 32 while the tiles cannot fill the units, the
    fused reduction; kept to compare the rules on the same run. Its split count is today's auto split."""
    block_m = min(128, max(16, 1 << max(0, (max(m, 1) - 1).bit_length())))
    cfg = FamilyConfig(block_m=block_m, block_n=128, block_k=128 if block_m <= 64 else 64,
                       num_warps=4 if block_m <= 64 else 8, num_stages=4, fused_reduce=True, split_k=0)
    tiles = -(-m // block_m) * -(-n // 128)
    while cfg.block_k > 32 and tiles * min(64, -(-k // cfg.block_k) // 4) < limits.num_compute_units:
        cfg = replace(cfg, block_k=cfg.block_k // 2)
    return cfg


def sweep_variants(case: Case, limits: ChipLimits) -> dict:
    """Variants of the tuned configuration of `case` (name -> FamilyConfig), duplicates dropped: the previous
    rule, the other reduction modes, stream-K on or off, split counts, tile sizes and stage counts around it; where
    the tuned configuration is the GEMV mode, the tensor-core tile rule (``dot tiles``, `tuned.dot_config`)."""
    p = case.params
    t = choose_config(limits, p["m"], p["n"], p["k"], TASK_DTYPE)
    auto = dict(split_k=0, stream_k=False)
    variants = {
        "tuned": t, "previous rule": previous_rule(limits, p["m"], p["n"], p["k"]),
        "reduce=workspace": replace(t, fused_reduce=False, atomic=False, stream_k=False),
        "reduce=fused": replace(t, fused_reduce=True, atomic=False, stream_k=False),
        "reduce=atomic": replace(t, atomic=True, stream_k=False),
        "stream_k": replace(t, stream_k=not t.stream_k),
        "split_k=1": replace(t, split_k=1, stream_k=False),
        "split_k=2x": replace(t, split_k=min(64, 2 * max(1, t.split_k)), stream_k=False),
        "split_k/2": replace(t, split_k=max(1, t.split_k // 2), stream_k=False),
        "block_n=64" if t.block_n != 64 else "block_n=128": replace(t, block_n=128 if t.block_n == 64 else 64, **auto),
        "block_k/2": replace(t, block_k=max(16, t.block_k // 2), **auto),
        "block_k*2": replace(t, block_k=min(256, t.block_k * 2), **auto),
        "stages-1": replace(t, num_stages=max(2, t.num_stages - 1)),
        "stages+1": replace(t, num_stages=min(8, t.num_stages + 1)),
    }
    if t.gemv:
        variants["dot tiles"] = dot_config(limits, p["m"], p["n"], p["k"], TASK_DTYPE)
    if t.block_m > 64:
        variants["block_m=64"] = replace(t, block_m=64, num_warps=4, **auto)
    if p["m"] <= 16:
        variants.update({name: variant_config(name, case, limits) for name in GEMV_VARIANTS
                         if name != "gemv rule"})  # the rule needs the bandwidth; the --few-rows sweep times it
    seen, out = set(), {}
    for name, cfg in variants.items():
        if cfg not in seen:
            seen.add(cfg)
            out[name] = cfg
    return out


def check_output(fn, args: dict, expected: torch.Tensor) -> tuple[bool, float]:
    """Run `fn` once on NaN-filled c; (within the task tolerance and finite, max |c - reference|)."""
    args["c"].fill_(float("nan"))
    fn(**args)
    if args["c"].is_cuda:
        torch.cuda.synchronize()
    got = args["c"].float()
    tol = TASK.tolerances[str(args["c"].dtype).removeprefix("torch.")]
    err = (got - expected).abs()
    ok = bool(torch.isfinite(got).all()) and bool((err <= tol.atol + tol.rtol * expected.abs()).all())
    return ok, float(err.nan_to_num(float("inf")).max()) if err.numel() else 0.0


def host_time_us(fn, args: dict, calls: int = HOST_CALLS) -> float:
    """Host wall time per call of `calls` back-to-back calls, no synchronization inside (after one warm call)."""
    fn(**args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(**args)
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def launcher_host_us(args: dict, limits: ChipLimits, calls: int = HOST_CALLS) -> float:
    """Host time per call of Triton's launcher alone (`CompiledKernel.run` of the tuned call's main kernel, with the
    arguments built once): the floor under the tuned entry point's host time; NaN when no compiled kernel is kept."""
    prepared = tuned.prepared_call(args["a"], args["b"], args["c"], limits)
    device, stream = current_device_and_stream("cuda")
    compiled = prepared.main.compiled_for(device) if prepared is not None else None
    if compiled is None:
        return math.nan
    full = prepared.main_arguments(args["a"], args["b"], args["c"], stream)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        prepared.main.launch_compiled(compiled, stream, full)
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def roofline(case: Case, time_us: float, peak_flops: float, peak_bytes: float) -> dict:
    """Floor (us) = max(flops / peak, bytes / bandwidth), fraction of floor, achieved TFLOP/s and GB/s."""
    f, b = flops(case), bytes_moved(case)
    floor = max(f / peak_flops, b / peak_bytes) * 1e6
    return {"floor_us": floor, "fraction_of_floor": floor / time_us, "tflops": f / time_us / 1e6,
            "gbps": b / time_us / 1e3}


def time_provider(name: str, fn, sets: list, case: Case, expected, peaks, reps: int, clean_l2: bool = False) -> dict:
    """Check then time one provider on one case (after a clean L2 flush with `clean_l2`); a failure is recorded in
    the row, not raised."""
    from kernels.timing import bench

    row = {"case": case.id, "provider": name}
    try:
        row["ok"], row["max_err"] = check_output(fn, sets[0], expected)
        t = bench(fn, sets, reps=reps, warmup=3, clean_l2=clean_l2)
        row.update(time_us=t.median_us, p25_us=t.p25_us, p75_us=t.p75_us, wall_us=t.wall_median_us,
                   host_us=host_time_us(fn, sets[0]))
        row.update(roofline(case, t.median_us, *peaks))
    except Exception as exc:  # noqa: BLE001 - a provider failing on a case is reported, not fatal
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def bench_case(case: Case, limits: ChipLimits, peaks, reps: int, sweep: bool,
               candidates: dict | None = None, clean_l2: bool = False) -> list[dict]:
    """Rows of the three providers, the `candidates` (name -> entry point; provider ``candidate:<name>``) and the
    sweep's variants on one case, each timed after a clean L2 flush with `clean_l2`."""
    sets = [make_inputs(case, 1000 + i, "cuda") for i in range(2)]
    expected = reference(sets[0])["c"]
    rows = [time_provider(name, fn, sets, case, expected, peaks, reps, clean_l2)
            for name, fn in providers(limits).items()]
    rows += [time_provider(f"candidate:{name}", fn, sets, case, expected, peaks, reps, clean_l2)
             for name, fn in (candidates or {}).items()]
    rows[1]["config"] = choose_config(limits, *(case.params[x] for x in "mnk"), TASK_DTYPE).to_dict()
    rows[1]["host_launcher_us"] = launcher_host_us(sets[0], limits)
    if sweep:
        for name, cfg in sweep_variants(case, limits).items():
            fn = (lambda a, b, c, _cfg=cfg: run_family(_cfg, a, b, c, limits=limits))
            row = time_provider("variant:" + name, fn, sets, case, expected, peaks, reps, clean_l2)
            rows.append({**row, "config": cfg.to_dict()})
    del sets, expected
    torch.cuda.empty_cache()
    return rows


def _cell(row: dict) -> str:
    if "time_us" not in row:
        return row.get("error", "-")[:40] if "error" in row else ("ok" if row.get("ok") else "MISMATCH")
    flag = "" if row.get("ok", True) else " MISMATCH"
    return f"{row['time_us']:.1f} ({100 * row['fraction_of_floor']:.0f}%){flag}"


def _num(value: float, spec: str, suffix: str = "") -> str:
    return "-" if value != value else format(value, spec) + suffix


def markdown(rows: list[dict], cases: list[Case]) -> str:
    """Table: case | floor | baseline | tuned | cuBLAS (us, % of floor) | tuned vs baseline, vs cuBLAS | host us;
    then geomeans, and with a sweep the fastest variant per case."""
    by = {(r["case"], r["provider"]): r for r in rows}
    lines = ["| case | floor us | baseline us (% floor) | tuned us (% floor) | cuBLAS us (% floor) | tuned vs baseline "
             "| tuned vs cuBLAS | host us baseline / tuned (launcher) / cuBLAS |", "|---|---|---|---|---|---|---|---|"]
    over_base, over_cublas = [], []
    for case in cases:
        b, t, c = (by.get((case.id, p), {}) for p in ("baseline", "tuned", "cublas"))
        sb = b.get("time_us", math.nan) / t.get("time_us", math.nan)
        sc = c.get("time_us", math.nan) / t.get("time_us", math.nan)
        over_base.append(sb)
        over_cublas.append(sc)
        cells = [f"{r['host_us']:.0f}" if "host_us" in r else "-" for r in (b, t, c)]
        launcher = t.get("host_launcher_us", math.nan)
        if launcher == launcher:
            cells[1] += f" ({launcher:.0f})"
        host = " / ".join(cells)
        floor = t.get("floor_us", b.get("floor_us", math.nan))
        lines.append(f"| {case.id} | {_num(floor, '.1f')} | {_cell(b)} | {_cell(t)} | {_cell(c)} "
                     f"| {_num(sb, '.2f', 'x')} | {_num(sc, '.2f', 'x')} | {host} |")
    lines.append("")
    for label, values in (("baseline", over_base), ("cuBLAS", over_cublas)):
        timed = [v for v in values if v == v]
        if timed:
            geo = math.exp(sum(math.log(v) for v in timed) / len(timed))
            lines.append(f"Geomean speedup of tuned over {label}: {geo:.3f}x ({len(timed)} cases)")
    variants = [r for r in rows if r["provider"].startswith("variant:") and "time_us" in r and r.get("ok")]
    pairs = [(by.get((c.id, "variant:previous rule"), {}), by.get((c.id, "tuned"), {})) for c in cases]
    previous = [old["time_us"] / new["time_us"] for old, new in pairs if "time_us" in old and "time_us" in new]
    if previous:
        geo = math.exp(sum(math.log(v) for v in previous) / len(previous))
        lines.append(f"Geomean speedup of tuned over the previous rule: {geo:.3f}x ({len(previous)} cases)")
    if variants:
        lines += ["", "| case | fastest variant | us | vs tuned |", "|---|---|---|---|"]
        for case in cases:
            mine = [r for r in variants if r["case"] == case.id]
            if mine:
                best = min(mine, key=lambda r: r["time_us"])
                tuned = by.get((case.id, "tuned"), {}).get("time_us", math.nan)
                lines.append(f"| {case.id} | {best['provider'][8:]} | {best['time_us']:.1f} "
                             f"| {tuned / best['time_us']:.2f}x |")
    return "\n".join(lines)


def _geomean(values: list[float]) -> float:
    timed = [v for v in values if v == v]
    return math.exp(sum(math.log(v) for v in timed) / len(timed)) if timed else math.nan


def candidate_markdown(rows: list[dict], cases: list[Case]) -> str:
    """Per candidate provider (``candidate:NAME``): a table case | baseline | cuBLAS | candidate (us, % of floor) |
    vs baseline | vs cuBLAS, its geomeans, and one PASS/FAIL line per target against cuBLAS
    (`CUBLAS_GEOMEAN_TARGET`; faster than cuBLAS on every case with M <= `FASTER_THAN_CUBLAS_MAX_M`)."""
    by = {(r["case"], r["provider"]): r for r in rows}
    names = list(dict.fromkeys(r["provider"] for r in rows if r["provider"].startswith("candidate:")))
    lines = []
    for provider in names:
        name = provider.removeprefix("candidate:")
        lines += [f"Candidate {name}:", "", "| case | baseline us (% floor) | cuBLAS us (% floor) | "
                  f"{name} us (% floor) | vs baseline | vs cuBLAS |", "|---|---|---|---|---|---|"]
        over_base, over_cublas, small = [], [], []
        for case in cases:
            b, c, x = (by.get((case.id, p), {}) for p in ("baseline", "cublas", provider))
            ok = x.get("ok", False)
            sb = b.get("time_us", math.nan) / x["time_us"] if "time_us" in x and ok else math.nan
            sc = c.get("time_us", math.nan) / x["time_us"] if "time_us" in x and ok else math.nan
            over_base.append(sb)
            over_cublas.append(sc)
            if case.params["m"] <= FASTER_THAN_CUBLAS_MAX_M:
                small.append((case.id, sc))
            lines.append(f"| {case.id} | {_cell(b)} | {_cell(c)} | {_cell(x)} | {_num(sb, '.2f', 'x')} "
                         f"| {_num(sc, '.2f', 'x')} |")
        geo_base, geo_cublas = _geomean(over_base), _geomean(over_cublas)
        counted = sum(v == v for v in over_cublas)
        lines += ["", f"Geomean speedup of {name} over baseline: {_num(geo_base, '.3f', 'x')}; over cuBLAS: "
                  f"{_num(geo_cublas, '.3f', 'x')} ({counted} of {len(cases)} cases timed and correct)"]
        verdict = "PASS" if counted == len(cases) and geo_cublas >= CUBLAS_GEOMEAN_TARGET else "FAIL"
        lines.append(f"{verdict} {name}: geomean over cuBLAS {_num(geo_cublas, '.3f', 'x')} "
                     f"(target >= {CUBLAS_GEOMEAN_TARGET}x)")
        slower = [cid for cid, v in small if not v > 1.0]
        verdict = "PASS" if small and not slower else "FAIL"
        lines.append(f"{verdict} {name}: faster than cuBLAS on {len(small) - len(slower)} of {len(small)} cases "
                     f"with M <= {FASTER_THAN_CUBLAS_MAX_M}" + (f" (not on {', '.join(slower)})" if slower else ""))
        lines.append("")
    return "\n".join(lines)


def run_check(out: str, candidates: dict | None = None) -> int:
    """CPU check: every provider's (and candidate's) output within tolerance on `CHECK_CASES` (no timing); exit
    status 1 if not."""
    limits = ChipLimits(num_compute_units=8, smem_per_block_kb=100.0, warp_size=32, max_threads_per_block=1024)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for case_id in CHECK_CASES:
        case = TASK.case(case_id)
        args = make_inputs(case, 7, device)
        expected = reference(args)["c"]
        named = {**providers(limits), **{f"candidate:{n}": fn for n, fn in (candidates or {}).items()}}
        for name, fn in named.items():
            ok, err = check_output(fn, args, expected)
            rows.append({"case": case.id, "provider": name, "ok": ok, "max_err": err})
    write_json(out, {"env": environment(), "mode": "check", "rows": rows})
    bad = [r for r in rows if not r["ok"]]
    print(markdown(rows, [TASK.case(c) for c in CHECK_CASES]))
    print(f"check: {len(rows) - len(bad)} of {len(rows)} outputs within tolerance" + (f"; FAIL: {bad}" if bad else ""))
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chip", default="h200")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all bench cases)")
    ap.add_argument("--sweep", action="store_true", help="also time variants of the tuned configuration")
    ap.add_argument("--few-rows", action="store_true",
                    help="M 1, 2, 4 on every bench layer: cuBLAS, tuned and the GEMV-mode variants (splitk_few_rows)")
    ap.add_argument("--m16", action="store_true",
                    help="M <= 16 bench cases: cuBLAS, tuned and the streaming-read variants, dirty and clean L2")
    ap.add_argument("--budget-s", type=float, default=135.0,
                    help="--few-rows, --m16: start no case after this many seconds")
    ap.add_argument("--clean-l2", action="store_true",
                    help="time each call after a write-then-read L2 flush (no dirty-line write-back in the call)")
    ap.add_argument("--check", action="store_true", help="CPU-capable correctness check at tiny shapes, no timing")
    ap.add_argument("--candidate", action="append", default=[], metavar="NAME=FILE",
                    help="also time a candidate file's splitk_gemm as provider candidate:NAME (repeatable)")
    args = ap.parse_args()
    candidates = {}
    for spec in args.candidate:
        name, sep, path = spec.partition("=")
        if not sep or not name:
            ap.error(f"--candidate {spec!r}: expected NAME=FILE")
        candidates[name] = load_candidate(path)
    if args.check:
        return run_check(args.out, candidates)
    profile = load_profile(args.chip)
    limits = ChipLimits.from_profile(profile)
    peaks = (profile.peak_flops("bf16"), profile.peak_bytes_per_s())
    if args.few_rows:
        return few_rows_main(args, profile, limits, peaks)
    if args.m16:
        return m16_main(args, limits, peaks)
    cases = [TASK.case(c) for c in args.cases.split(",")] if args.cases else list(TASK.bench_cases)
    rows, t0 = [], time.time()
    for case in cases:
        rows += bench_case(case, limits, peaks, args.reps, args.sweep, candidates, args.clean_l2)
        print(f"benched {case.id} at {time.time() - t0:.0f}s", flush=True)
        write_json(args.out, {"env": environment(), "chip": args.chip, "limits": limits.__dict__,
                              "l2_flush": "clean" if args.clean_l2 else "dirty", "peaks_flops_bytes": peaks,
                              "rows": rows})
    table = markdown(rows, cases)
    if candidates:
        table += "\n\n" + candidate_markdown(rows, cases)
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    print(table)
    failed = [r for r in rows if not r.get("ok", False) and not r["provider"].startswith("variant:")]
    for r in failed:
        print(f"FAIL {r['case']} {r['provider']}: {r.get('error', 'output out of tolerance')}")
    print("PASS: every provider's output within tolerance" if not failed else f"FAIL: {len(failed)} rows")
    return 1 if failed else 0


def few_rows_main(args, profile, limits: ChipLimits, peaks: tuple[float, float]) -> int:
    """``--few-rows``: run `splitk_few_rows.run_few_rows`, write JSON (and .md) to ``--out``, print the table and
    one PASS/FAIL line on the outputs' correctness; exit status 1 on a wrong output."""
    measured = profile.achievable_bytes_per_s()
    rows, cases = run_few_rows(limits, peaks, measured, args.reps, args.budget_s, time_provider, run_family,
                               cublas, lambda a, b, c: splitk_gemm(a, b, c, limits=limits))
    table = few_rows_markdown(rows, cases)
    write_json(args.out, {"env": environment(), "chip": args.chip, "mode": "few-rows", "limits": limits.__dict__,
                          "peaks_flops_bytes": peaks, "measured_bytes_per_s": measured,
                          "variants": {n: c.to_dict() for n, c in GEMV_VARIANTS.items()}, "rows": rows})
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    print(table)
    bad = [r for r in rows if not r.get("ok", False)]
    for r in bad:
        print(f"FAIL {r['case']} {r['provider']}: {r.get('error', 'output out of tolerance')}")
    timed = len({r["case"] for r in rows})
    print(f"PASS: {len(rows)} outputs within tolerance on {timed} of {len(cases)} cases" if not bad
          else f"FAIL: {len(bad)} of {len(rows)} rows")
    return 1 if bad else 0


def m16_main(args, limits: ChipLimits, peaks: tuple[float, float]) -> int:
    """``--m16``: run `splitk_m16.run_m16` (on ``--cases`` if given), writing JSON (and .md) to ``--out`` after every
    case, print the table and one PASS/FAIL line on the checked outputs; exit status 1 on a wrong output."""
    cases = [TASK.case(c) for c in args.cases.split(",")] if args.cases else list(TASK.bench_cases)

    def save(rows: list[dict]) -> str:
        table = m16_markdown(rows)
        write_json(args.out, {"env": environment(), "chip": args.chip, "mode": "m16", "limits": limits.__dict__,
                              "peaks_flops_bytes": peaks, "rows": rows})
        Path(args.out).with_suffix(".md").write_text(table + "\n")
        return table

    rows, _ = run_m16(cases, limits, peaks, args.reps, args.budget_s, run_family, cublas,
                      lambda a, b, c: splitk_gemm(a, b, c, limits=limits), check_output, progress=save)
    print(save(rows))
    bad = [r for r in rows if "ok" in r and not r["ok"] or "error" in r]
    for r in bad:
        print(f"FAIL {r['case']} {r['provider']}: {r.get('error', 'output out of tolerance')}")
    print(f"PASS: {len(rows)} rows, checked outputs within tolerance" if not bad else f"FAIL: {len(bad)} rows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
