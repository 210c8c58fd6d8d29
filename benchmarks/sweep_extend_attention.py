"""GPU sweep of the extend-attention family over its knobs on the 9 bench cases (one call, one JSON).

Compiles every (case, config) in parallel worker processes first (Triton's on-disk cache then serves the timing
process), checks every configuration's output against the fp32 reference, and times baseline, the tuned entry
point and each configuration with `kernels.timing.bench` (cold L2, rotated inputs, median).

    python benchmarks/sweep_extend_attention.py --out $OUT/sweep.json [--cases decode,prefill] [--workers 14]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
from kernels.extend_attention import baseline, extend_attention_fwd  # noqa: E402
from kernels.extend_attention.family import AHEAD_DERIVED, FamilyConfig, run_family, tma_plan  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.task import Case  # noqa: E402
from kernels.timing import bench  # noqa: E402

QUICK = False  # set by --quick: the neighbourhood of the configurations that won the full sweep


def quick_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """A short list around the full sweep's winners (BENCHMARKS.md, sweep 1)."""
    if rows <= 64:
        bm = 16 if rows <= 16 else 32 if rows <= 32 else 64
        return [FamilyConfig(bm, bn, 4, st, sp, True) for bn in (64, 128) for st in (2, 3) for sp in (1, 2, 4)]
    if d_total > 512:
        return [FamilyConfig(64, bn, 8, st, sp, True) for bn in (32, 64) for st in (1, 2) for sp in (1, 2)] + [
            FamilyConfig(32, 32, 4, 3, sp, True) for sp in (1, 2)]
    if d_total > 256:
        return [FamilyConfig(bm, bn, 8, st, 1, pack) for bm in (64, 128) for bn in (32, 64) for st in (2, 3)
                for pack in (False, True)]
    packs = (False, True) if group > 1 else (False,)
    return [FamilyConfig(128, bn, 8, st, 1, pack) for bn in (64, 128) for st in (2, 3) for pack in packs] + [
        FamilyConfig(64, 128, 4, 3, 1, False), FamilyConfig(128, 64, 4, 2, 1, False)]


def focus_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 3: fold_scale and gather_stages (loop pipelining of the kv_indices gather) on sweep 2's winners."""
    from dataclasses import replace
    if rows <= 64:
        bm = 16 if rows <= 16 else 32 if rows <= 32 else 64
        base = [FamilyConfig(bm, bn, 4, st, sp, True) for bn in (64, 128) for st in (2, 3) for sp in (2, 4)]
        return [replace(c, gather_stages=g) for c in base for g in (0, 2, 3)]
    if d_total > 512:
        base = [FamilyConfig(64, 64, 8, 1, 1, True), FamilyConfig(64, 32, 8, 2, 1, True),
                FamilyConfig(64, 64, 8, 2, 1, True)]
    elif d_total > 256:
        base = [FamilyConfig(128, 64, 8, 3, 1, False), FamilyConfig(128, 64, 8, 2, 1, True)]
    else:
        base = [FamilyConfig(128, 128, 8, 3, 1, False), FamilyConfig(128, 128, 8, 2, 1, False),
                FamilyConfig(128, 64, 8, 3, 1, False), FamilyConfig(64, 128, 4, 3, 1, False)]
    return [replace(c, fold_scale=f, gather_stages=g) for c in base for f in (True, False) for g in (0, 2, 3)]


def compute_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 4 (compute-bound cases): prefix pre-gather x load stages x loop pipelining around the tile winners,
    and the same tiles x stages x pre-gather with TMA descriptor loads (tma; gather_stages 0: with tma the prefix
    is either pre-gathered, a box per tile, or gathered through pointers as before). At most 60 per case."""
    if rows <= 64:
        return []
    if d_total > 512:
        tiles = [(64, 64, 8, True), (64, 32, 8, True)]
        stages = (1, 2)
    elif d_total > 256:
        tiles = [(128, 64, 8, False), (64, 64, 4, False), (128, 32, 8, False)]
        stages = (2, 3)
    else:
        tiles = [(128, 128, 8, False), (128, 64, 8, False), (128, 64, 4, False)]
        stages = (2, 3, 4)
    out = [FamilyConfig(bm, bn, w, st, 1, pack, gather_stages=gs, pregather=pg)
           for bm, bn, w, pack in tiles for st in stages for gs in (0, 3) for pg in (False, True)]
    if d_total <= 512:  # MLA (d_total 1088) has a rope part: never descriptor loads (FamilyConfig docstring)
        out += [FamilyConfig(bm, bn, w, st, 1, pack, pregather=pg, tma=True)
                for bm, bn, w, pack in tiles for st in stages for pg in (False, True)]
    if group > 1 and d_total <= 256:
        out += [FamilyConfig(128, 128, 8, 3, 1, True, gather_stages=gs, pregather=pg) for gs in (0, 3)
                for pg in (False, True)]
        out += [FamilyConfig(128, 128, 8, 3, 1, True, pregather=pg, tma=True) for pg in (False, True)]
    return out


def tma_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 5 (compute-bound D <= 256 with pre-gather + TMA, sweep 4's winners): what sweep 4 never tried --
    split-KV over the prefix (2, 4: more, shorter programs against the 7.8-wave tail of mixed-batch), 64-row blocks,
    heavy-first off -- around 128x128/8 warps, 128x64 and 64x64/4 warps. At most 48 per case."""
    if rows <= 64 or d_total > 512:
        return []
    tiles = [(128, 128, 8), (128, 64, 8), (64, 128, 4), (64, 64, 4)]
    packs = (False, True) if group > 1 else (False,)
    out = [FamilyConfig(128, 128, 8, 3, 1, pack, heavy_first=False, pregather=True, tma=True) for pack in packs]
    out += [FamilyConfig(bm, bn, w, st, sp, pack, pregather=True, tma=True)
            for sp in (1, 2, 4) for bm, bn, w in tiles for st in (3, 4) for pack in packs]
    return out[:48]  # splits 1 and 2 in full, split 4 as far as it goes


def occupancy_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 7 (compute-bound D <= 256, pre-gather + TMA): 4-warp programs small enough that two share an SM
    (shared memory <= 113 KB and <= 255 registers x 128 threads each; sm_90 compiles of the family, session 6), so
    one program's softmax can run while the other's tensor-core dots do -- the overlap FlashAttention-3 gets from
    warp specialization, which Triton 3.6 does not apply here (scripts/probe_hopper_ws.py). Against the 1-per-SM
    128x128 / 8-warp winner. At most 16 per case."""
    if rows <= 64 or d_total > 512:
        return []
    packs = (True, False) if group > 1 else (False,)
    tiles = [(64, 128, 1), (64, 64, 2), (64, 64, 3), (64, 32, 3), (64, 32, 4)]
    if d_total > 256:  # D = 256: K/V tiles twice as wide
        tiles = [(64, 64, 1), (64, 32, 2), (64, 32, 3), (32, 64, 2)]
    out = [FamilyConfig(bm, bn, 4, st, 1, pack, pregather=True, tma=True) for bm, bn, st in tiles for pack in packs]
    out.append(FamilyConfig(128, 128, 8, 3, 1, group > 1, pregather=True, tma=True))
    return out[:16]


def ahead_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 8 (compute-bound, pre-gather + TMA, one split): gather-ahead (`FamilyConfig.gather_ahead`: KV head
    0's prefix copied first, each later head's by the previous head's launch, under its tensor-core work) at a
    few rows per key tile around cdiv(BLOCK_N, row blocks per sequence), against the same tiles without it. At
    most 12 per case."""
    if rows <= 64 or d_total > 512:
        return []
    pack = group > 1
    wide = d_total > 256
    tiles = [(64, 64, 4, 3)] if wide else [(128, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3)]
    out = []
    for bm, bn, w, st in tiles:
        need = max(1, -(-bn // max(1, -(-rows // bm))))  # rows per tile that cover a slice inside the loop
        rows_per_tile = sorted({1 << max(0, (need - 1).bit_length() + k) for k in (0, 1)})
        out.append(FamilyConfig(bm, bn, w, st, 1, pack, pregather=True, tma=True))
        out += [FamilyConfig(bm, bn, w, st, 1, pack, pregather=True, tma=True, gather_ahead=a)
                for a in rows_per_tile if a <= 256]
    return out[:12]


def prefill_configs(rows: int, d_total: int, group: int) -> list[FamilyConfig]:
    """Sweep 9 (compute-bound D <= 128: prefill, mixed batch, small heads; issue 20's gap to FlashInfer): the
    tuned class configuration (`tuned.class_config`, call-dependent knobs derived per call) against the same with
    the scores-ahead key loop (`FamilyConfig.scores_ahead`: 1, tile t + 1's QK^T in flight during tile t's softmax,
    its 128x128 program needs 2 load stages to fit 227 KB; 2, P . V of tile t - 1 as well, at BLOCK_N 64 where it
    does not spill) and heads-fastest program order (`FamilyConfig.heads_inner`), with the stage / BLOCK_N controls
    that separate the loop from the tile change, and (uniform batch with a prefix) scores-ahead without
    gather-ahead. At most 11 per case."""
    if rows <= 64 or d_total > 256:
        return []
    from dataclasses import replace

    if d_total <= 128:  # D <= 64: tuned 64x64 / 4 warps, two programs per SM
        base = FamilyConfig(64, 64, 4, 3, 0, False, pregather=True, tma=True)
        inner = replace(base, heads_inner=True)
        return [base, inner, replace(base, scores_ahead=1), replace(inner, scores_ahead=1),
                replace(inner, scores_ahead=2), replace(inner, block_m=128),
                replace(inner, block_m=128, scores_ahead=1),  # 128x64 / 4 warps at depth 2 spills (sm_90 compile)
                replace(inner, block_m=128, block_n=128, num_warps=8, scores_ahead=1),
                replace(inner, block_m=128, block_n=128, num_warps=8, scores_ahead=2),
                replace(inner, block_n=128, num_stages=2, scores_ahead=1)]
    base = FamilyConfig(128, 128, 8, 3, 0, group > 1, pregather=True, tma=True, gather_ahead=AHEAD_DERIVED,
                        ahead_heads=1, ahead_sync=True, ragged_tiles=64)
    plain = replace(base, gather_ahead=0, ahead_sync=False)
    n64 = replace(base, block_n=64)
    return [base, replace(base, num_stages=2), replace(base, num_stages=2, scores_ahead=1),
            replace(base, num_stages=2, scores_ahead=1, heads_inner=True), replace(base, heads_inner=True),
            n64, replace(n64, scores_ahead=1), replace(n64, scores_ahead=2),
            replace(n64, scores_ahead=2, heads_inner=True), replace(plain, num_stages=2, scores_ahead=1),
            replace(plain, block_n=64, scores_ahead=2, heads_inner=True)]


def sweep_configs(case: Case) -> list[FamilyConfig]:
    """Candidate configurations for a case, from its features (rows per sequence, head dims)."""
    p = case.params
    group = p["num_q_heads"] // p["num_kv_heads"]
    rows = max(1, sum(p["extend_lens"]) // len(p["extend_lens"])) * group
    d_total = p["head_dim"] + p["head_dim_v"]
    if QUICK == "focus":
        return focus_configs(rows, d_total, group)
    if QUICK == "compute":
        return compute_configs(rows, d_total, group)
    if QUICK == "tma":
        return tma_configs(rows, d_total, group)
    if QUICK == "occupancy":
        return occupancy_configs(rows, d_total, group)
    if QUICK == "ahead":
        return ahead_configs(rows, d_total, group)
    if QUICK == "prefill":
        return prefill_configs(rows, d_total, group)
    if QUICK:
        return quick_configs(rows, d_total, group)
    out: list[FamilyConfig] = []
    if rows <= 64:
        bm = 16 if rows <= 16 else 32 if rows <= 32 else 64
        for bn in (64, 128):
            for st in (2, 3, 4):
                for sp in (1, 2, 4, 8):
                    out.append(FamilyConfig(bm, bn, 4, st, sp, True))
        out += [FamilyConfig(bm, 32, 4, 3, sp, True) for sp in (2, 4)]
        out += [FamilyConfig(bm, 128, 8, 3, sp, True) for sp in (2, 4)]
    elif d_total > 512:
        for bm in (32, 64):
            for bn in (32, 64):
                for w in (4, 8):
                    for st in (1, 2, 3):
                        out.append(FamilyConfig(bm, bn, w, st, 1, True))
        out += [FamilyConfig(64, 32, 8, 2, 2, True), FamilyConfig(32, 32, 4, 2, 2, True)]
    elif d_total > 256:
        for bm in (64, 128):
            for bn in (32, 64):
                for w in (4, 8):
                    for st in (1, 2, 3):
                        out.append(FamilyConfig(bm, bn, w, st, 1, False))
                        if group > 1:
                            out.append(FamilyConfig(bm, bn, w, st, 1, True))
    else:
        for bm, w in ((128, 8), (64, 4), (128, 4)):
            for bn in (64, 128):
                for st in (2, 3, 4):
                    for pack in ((False, True) if group > 1 else (False,)):
                        out.append(FamilyConfig(bm, bn, w, st, 1, pack))
        out += [FamilyConfig(128, 32, 8, 3, 1, False), FamilyConfig(128, 64, 8, 3, 1, False, False)]
    return out


def _compile_worker(items: list[tuple[str, dict]]) -> list[str]:
    """Run each (case id, config) once on full-size inputs so Triton compiles and caches it."""
    errors, inputs = [], {}
    for case_id, cfg in items:
        case = TASK.case(case_id)
        if case_id not in inputs:
            inputs = {case_id: input_sets(case, 1)[0]}
        try:
            run_family(FamilyConfig(**cfg), **inputs[case_id])
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - record and continue: a sweep reports failing configs
            errors.append(f"{case_id} {cfg}: {type(exc).__name__}: {str(exc)[:200]}")
    return errors


def _set_quick(value: bool, chip: str) -> None:
    global QUICK
    QUICK = value
    use_chip(chip)


def precompile(cases: list[Case], workers: int, chip: str) -> list[str]:
    """Compile all (case, config) pairs in `workers` processes; returns error lines."""
    items = [(c.id, cfg.to_dict()) for c in cases for cfg in sweep_configs(c)]
    chunks = [items[i::workers] for i in range(workers)]
    chunks = [sorted(ch, key=lambda it: it[0]) for ch in chunks if ch]
    with mp.get_context("spawn").Pool(len(chunks), initializer=_set_quick, initargs=(QUICK, chip)) as pool:
        results = pool.map(_compile_worker, chunks)
    return [e for r in results for e in r]


def time_flashinfer(sets: list[dict], ref, case: Case, peaks: tuple[float, float], reps: int) -> dict:
    """FlashInfer's row (`extend_providers.flashinfer_provider`: plan() in setup), checked against the reference
    like the others; ``skipped`` with the reason where it cannot run."""
    from benchmarks.extend_providers import Unavailable, flashinfer_provider

    entry: dict = {"name": "flashinfer"}
    try:
        provider = flashinfer_provider()
        prepared = provider.setup(sets)
        result = provider.call(**prepared[0])
        torch.cuda.synchronize()
        entry["ok"], entry["max_err"] = max_error(provider.output(prepared[0], result), ref, case)
        t = bench(provider.call, prepared, reps=reps, warmup=2)
        entry.update(time_us=t.median_us, p25_us=t.p25_us, p75_us=t.p75_us, wall_us=t.wall_median_us)
        entry.update(roofline(case, t.median_us, *peaks))
    except Unavailable as exc:
        entry["skipped"] = str(exc)[:300]
    except Exception as exc:  # noqa: BLE001 - a peer's failure is reported, the sweep goes on
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return entry


def time_case(case: Case, peaks: tuple[float, float], reps: int, flashinfer: bool = False) -> dict:
    """Baseline, tuned, FlashInfer (with `flashinfer`) and every sweep config on one case: correctness then
    timing."""
    sets = input_sets(case, 2)
    ref = reference_output(sets[0])
    row: dict = {"case": case.id, "configs": []}
    if flashinfer:
        row["configs"].append(time_flashinfer(sets, ref, case, peaks, reps))
    providers = [("baseline", baseline.extend_attention_fwd, None), ("tuned", extend_attention_fwd, None)]
    providers += [(f"cfg:{cfg.to_dict()}", (lambda c: lambda **a: run_family(c, **a))(cfg), cfg)
                  for cfg in sweep_configs(case)]
    for name, fn, cfg in providers:
        entry = {"name": name}
        if cfg is not None and cfg.tma:  # whether descriptors really ran (extend, prefix) or it fell back
            entry["tma_used"] = list(tma_plan(cfg, **sets[0]))
        try:
            sets[0]["o_extend"].fill_(float("nan"))
            fn(**sets[0])
            torch.cuda.synchronize()
            entry["ok"], entry["max_err"] = max_error(sets[0]["o_extend"], ref, case)
            t = bench(fn, sets, reps=reps, warmup=2)
            entry.update(time_us=t.median_us, p25_us=t.p25_us, p75_us=t.p75_us, wall_us=t.wall_median_us)
            entry.update(roofline(case, t.median_us, *peaks))
        except Exception as exc:  # noqa: BLE001
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        row["configs"].append(entry)
    del sets, ref
    torch.cuda.empty_cache()
    return row


def summarize(rows: list[dict]) -> None:
    """Print baseline, tuned and best passing config per case."""
    print(f"{'case':16s} {'baseline':>10s} {'tuned':>10s} {'best':>10s} {'%floor':>7s}  best config")
    for row in rows:
        by = {e["name"]: e for e in row["configs"]}
        good = [e for e in row["configs"] if e.get("ok") and e["name"].startswith("cfg")]
        best = min(good, key=lambda e: e["time_us"]) if good else {}
        base, tuned = by["baseline"].get("time_us", float("nan")), by["tuned"].get("time_us", float("nan"))
        print(f"{row['case']:16s} {base:10.1f} {tuned:10.1f} {best.get('time_us', float('nan')):10.1f} "
              f"{100 * best.get('fraction_of_floor', 0):6.1f}%  {best.get('name', '-')[4:]}")
        if "flashinfer" in by:
            fi = by["flashinfer"]
            fi_us = fi.get("time_us", float("nan"))
            best_us = best.get("time_us", float("nan"))
            print(f"{'':16s} flashinfer {fi_us:10.1f} ok={fi.get('ok')} {fi.get('skipped', fi.get('error', ''))}; "
                  f"FlashInfer / tuned {fi_us / tuned:.3f}, FlashInfer / best {fi_us / best_us:.3f}")
        for e in good:  # every configuration of the sweep with its ratio, for sweeps of a few configurations
            if QUICK == "prefill":
                print(f"{'':16s} {e['time_us']:10.1f} {100 * e.get('fraction_of_floor', 0):6.1f}%  "
                      f"x{tuned / e['time_us']:.3f} of tuned  {e['name'][4:]}")
        for e in sorted(good, key=lambda e: e["time_us"])[1:4]:
            print(f"{'':38s}{e['time_us']:10.1f} {100 * e.get('fraction_of_floor', 0):6.1f}%  {e['name'][4:]}")
        tma = [e for e in good if "'tma': True" in e["name"]]
        if tma:  # the knob's question: best with descriptor loads against the best overall
            t = min(tma, key=lambda e: e["time_us"])
            print(f"{'':16s} best tma: {t['time_us']:10.1f} {100 * t.get('fraction_of_floor', 0):6.1f}%  "
                  f"used (extend, prefix)={t.get('tma_used')}  {t['name'][4:]}")
        bad = [e["name"] for e in row["configs"] if e.get("ok") is False]
        if bad:
            print(f"   MISMATCH: {bad[:5]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chip", default="h200", help="chip profile: the kernels' limits (and a virtual chip's partition)")
    ap.add_argument("--cases", default="")
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="bf16 dense peak (H200 profile)")
    ap.add_argument("--peak-gbps", type=float, default=4800.0, help="memory bandwidth peak (H200 profile)")
    ap.add_argument("--quick", action="store_true", help="only the neighbourhood of earlier winners")
    ap.add_argument("--focus", action="store_true", help="fold_scale / gather_stages around the winners")
    ap.add_argument("--compute", action="store_true",
                    help="compute-bound cases only: prefix pre-gather x stages x gather pipelining")
    ap.add_argument("--tma", action="store_true",
                    help="compute-bound cases with pre-gather + TMA: split-KV, 64-row blocks, heavy-first (sweep 5)")
    ap.add_argument("--occupancy", action="store_true",
                    help="compute-bound cases: 4-warp programs two to an SM (sweep 7)")
    ap.add_argument("--ahead", action="store_true",
                    help="compute-bound cases: gather-ahead of the next KV head's prefix (sweep 8)")
    ap.add_argument("--prefill", action="store_true",
                    help="prefill, mixed batch, small heads: scores-ahead loop and heads-fastest order (sweep 9)")
    ap.add_argument("--flashinfer", action="store_true",
                    help="time FlashInfer too (benchmarks/extend_providers.py; skipped with its reason if absent)")
    args = ap.parse_args()
    use_chip(args.chip)
    global QUICK
    QUICK = ("prefill" if args.prefill else "ahead" if args.ahead else "occupancy" if args.occupancy
             else "compute" if args.compute else "tma" if args.tma else "focus" if args.focus else args.quick)
    cases = [c for c in TASK.bench_cases if not args.cases or c.id in args.cases.split(",")]
    if QUICK in ("compute", "tma", "occupancy", "ahead", "prefill"):
        cases = [c for c in cases if sweep_configs(c)]
    t0 = time.time()
    errors = precompile(cases, args.workers, args.chip)
    print(f"precompiled in {time.time() - t0:.0f}s, {len(errors)} errors", flush=True)
    for e in errors[:20]:
        print("  ", e)
    rows = []
    for case in cases:
        with_fi = args.flashinfer or QUICK == "prefill"
        rows.append(time_case(case, (args.peak_tflops, args.peak_gbps), args.reps, with_fi))
        print(f"timed {case.id} at {time.time() - t0:.0f}s", flush=True)
        write_json(args.out, {"env": environment(), "compile_errors": errors, "rows": rows})
    summarize(rows)


if __name__ == "__main__":
    main()
