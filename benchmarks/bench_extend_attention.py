"""Extend attention on the 9 bench cases: baseline, optimized (tuned family), torch flex_attention.

Medians of timed calls with cold L2 and rotated inputs (`kernels.timing.bench`), every figure beside its
fraction of the roofline floor from the chip profile's spec peaks. flex_attention runs on K/V already gathered
into contiguous per-sequence order and a prebuilt block mask: as in shared/reference/extend_attention.md, its
gather and mask construction are excluded from its time. Writes JSON and prints a Markdown table.

    python benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json [--no-flex] [--reps 20]
"""

from __future__ import annotations

import argparse
import math
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
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.task import Case  # noqa: E402
from kernels.timing import bench  # noqa: E402


def flex_inputs(args: dict) -> dict:
    """Contiguous per-sequence K/V ([1, H_kv, Σ(P+E), D]), Q ([1, H_q, ΣE, D]) and a document-causal block mask."""
    from torch.nn.attention.flex_attention import create_block_mask

    qo, kv = args["qo_indptr"].tolist(), args["kv_indptr"].tolist()
    ks, vs, q_doc, q_pos, kv_doc, kv_pos = [], [], [], [], [], []
    for b in range(len(qo) - 1):
        slots = args["kv_indices"][kv[b]:kv[b + 1]]
        e, p = qo[b + 1] - qo[b], kv[b + 1] - kv[b]
        ks += [args["k_buffer"][slots], args["k_extend"][qo[b]:qo[b + 1]]]
        vs += [args["v_buffer"][slots], args["v_extend"][qo[b]:qo[b + 1]]]
        q_doc += [b] * e
        q_pos += list(range(p, p + e))
        kv_doc += [b] * (p + e)
        kv_pos += list(range(p + e))
    dev = args["q_extend"].device
    qd, qp, kd, kp = (torch.tensor(x, device=dev) for x in (q_doc, q_pos, kv_doc, kv_pos))

    def mask_mod(b, h, q_idx, kv_idx):
        return (qd[q_idx] == kd[kv_idx]) & (kp[kv_idx] <= qp[q_idx])

    block_mask = create_block_mask(mask_mod, None, None, len(q_doc), len(kv_doc), device=dev)
    return {
        "query": args["q_extend"].transpose(0, 1).unsqueeze(0).contiguous(),
        "key": torch.cat(ks).transpose(0, 1).unsqueeze(0).contiguous(),
        "value": torch.cat(vs).transpose(0, 1).unsqueeze(0).contiguous(),
        "block_mask": block_mask,
        "scale": 1.0 / math.sqrt(args["q_extend"].shape[2]),
    }


_FLEX = None


def flex_fn():
    """torch.compile'd flex_attention with GQA enabled (compiled once per process)."""
    global _FLEX
    if _FLEX is None:
        from torch.nn.attention.flex_attention import flex_attention

        compiled = torch.compile(flex_attention, dynamic=False)
        _FLEX = lambda **kw: compiled(**kw, enable_gqa=True)  # noqa: E731
    return _FLEX


def _warm_flex(case_id: str) -> str:
    """Compile flex_attention for one case in a worker (fills the inductor/Triton caches)."""
    try:
        args = input_sets(TASK.case(case_id), 1)[0]
        flex_fn()(**flex_inputs(args))
        torch.cuda.synchronize()
        return f"{case_id}: ok"
    except Exception as exc:  # noqa: BLE001 - flex does not run on every case; record why
        return f"{case_id}: {type(exc).__name__}: {str(exc)[:200]}"


def time_provider(name, fn, sets, case, ref, peaks, reps):
    """Check then time one provider; returns a result row."""
    row = {"case": case.id, "provider": name}
    try:
        if ref is not None:
            sets[0]["o_extend"].fill_(float("nan"))
            fn(**sets[0])
            torch.cuda.synchronize()
            row["ok"], row["max_err"] = max_error(sets[0]["o_extend"], ref, case)
        t = bench(fn, sets, reps=reps, warmup=3)
        row.update(time_us=t.median_us, p25_us=t.p25_us, p75_us=t.p75_us, wall_us=t.wall_median_us)
        row.update(roofline(case, t.median_us, *peaks))
    except Exception as exc:  # noqa: BLE001 - a provider that fails on a case is reported, not fatal
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def bench_case(case: Case, peaks, reps: int, with_flex: bool) -> list[dict]:
    """Baseline, optimized and flex rows for one case."""
    sets = input_sets(case, 2)
    ref = reference_output(sets[0])
    rows = [time_provider("baseline", baseline.extend_attention_fwd, sets, case, ref, peaks, reps),
            time_provider("optimized", extend_attention_fwd, sets, case, ref, peaks, reps)]
    if with_flex:
        try:
            fsets = [flex_inputs(s) for s in sets]
            rows.append(time_provider("flex_attention", flex_fn(), fsets, case, None, peaks, reps))
        except Exception as exc:  # noqa: BLE001
            rows.append({"case": case.id, "provider": "flex_attention", "error": f"{type(exc).__name__}: {exc}"[:300]})
    del sets, ref
    torch.cuda.empty_cache()
    return rows


def markdown(rows: list[dict]) -> str:
    """Table: case | floor | baseline | optimized | flex | speedup; times in µs with % of floor."""
    by = {(r["case"], r["provider"]): r for r in rows}
    lines = ["| case | floor µs | baseline µs (% floor) | optimized µs (% floor) | flex_attention µs (% floor) "
             "| speedup vs baseline |", "|---|---|---|---|---|---|"]
    speedups = []
    for case in TASK.bench_cases:
        if not any(c == case.id for c, _ in by):  # not benched in this run (--cases)
            continue
        cells = []
        for prov in ("baseline", "optimized", "flex_attention"):
            r = by.get((case.id, prov), {})
            ok = "" if r.get("ok", True) else " MISMATCH"
            cells.append(f"{r['time_us']:.0f} ({100 * r['fraction_of_floor']:.1f}%){ok}" if "time_us" in r
                         else r.get("error", "-")[:40])
        b, o = by.get((case.id, "baseline"), {}), by.get((case.id, "optimized"), {})
        sp = b.get("time_us", float("nan")) / o.get("time_us", float("nan"))
        speedups.append(sp)
        floor = o.get("floor_us", b.get("floor_us", float("nan")))
        lines.append(f"| {case.id} | {floor:.0f} | " + " | ".join(cells) + f" | {sp:.2f}x |")
    timed = [s for s in speedups if s == s]
    geo = math.exp(sum(math.log(s) for s in timed) / max(1, len(timed)))
    lines.append(f"\nGeomean speedup of the optimized kernel over the baseline: {geo:.2f}x ({len(timed)} cases)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chip", default="h200")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--cases", default="")
    args = ap.parse_args()
    profile = use_chip(args.chip)  # the chip's limits for the kernels; a virtual chip's partition
    peaks = (profile.peak_flops("bf16") / 1e12, profile.peak_bytes_per_s() / 1e9)
    cases = [c for c in TASK.bench_cases if not args.cases or c.id in args.cases.split(",")]
    t0 = time.time()
    warm = []
    if not args.no_flex:
        with mp.get_context("spawn").Pool(min(len(cases), 9), initializer=use_chip, initargs=(args.chip,)) as pool:
            warm = pool.map(_warm_flex, [c.id for c in cases])
        print(f"flex_attention compiled in {time.time() - t0:.0f}s: {warm}", flush=True)
    rows = []
    for case in cases:
        rows += bench_case(case, peaks, args.reps, not args.no_flex)
        print(f"benched {case.id} at {time.time() - t0:.0f}s", flush=True)
        write_json(args.out, {"env": environment(), "chip": args.chip, "peaks_tflops_gbps": peaks,
                              "flex_warmup": warm, "rows": rows})
    table = markdown(rows)
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
