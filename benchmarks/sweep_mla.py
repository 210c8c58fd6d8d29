"""MLA sweep (GPU): candidate configurations of the dedicated MLA path against today's generic-family rule, the tuned
entry point and FlashInfer's MLA wrapper, on the ``mla`` bench case (E = 512, P = 8192, B = 4, 16/1 heads,
576/512, bf16), all in one process on the same inputs.

Every provider is first checked against the fp32 reference (bf16 tolerance, no NaN), then timed with
`kernels.timing.bench` (L2 flushed, inputs rotated, median of `--reps`); a row gives the time, the fraction of the
roofline floor at the chip profile's spec peaks and PASS/FAIL. A provider that raises is reported, never fatal.
Providers are run in the order listed and skipped once `--budget-s` is spent (compiles dominate), so the run ends
in time. FlashInfer (benchmark peer only) is imported from ``$CHIPLORE_FLASHINFER_PATH`` when set; its plan and
the copy of the extend keys into free cache pages are setup, outside the timed region.

    python benchmarks/sweep_mla.py --out $OUT/mla-sweep.json        # scripts/gpu.sh suite mla-sweep
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from benchmarks._util import environment, input_sets, max_error, reference_output, roofline, write_json  # noqa: E402
from kernels.extend_attention import extend_attention_fwd  # noqa: E402
from kernels.extend_attention.family import FamilyConfig, run_family  # noqa: E402
from kernels.extend_attention.mla import run_mla  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.extend_attention.tuned import device_limits  # noqa: E402
from kernels.timing import bench  # noqa: E402

#: The generic family's MLA rule before the dedicated path (tuned.choose_config, `big_d > 512`).
GENERIC = FamilyConfig(block_m=64, block_n=32, num_warps=8, num_stages=2, num_splits=1, pack_gqa=True,
                       gather_stages=3, pregather=True)


def _mla(**knobs) -> FamilyConfig:
    return FamilyConfig(**{"block_m": 64, "num_warps": 8, "num_splits": 0, "pregather": True, "tma": True, **knobs})


#: (name, FamilyConfig, run_mla keyword overrides). The Triton kernel first, the Gluon kernel (first run on a GPU
#: here) after FlashInfer, and the tuned entry point (Gluon on Hopper) last, so that a device fault in the Gluon
#: kernel, which poisons the CUDA context for the rest of the process, costs only the rows after it.
TRITON_CANDIDATES = [
    ("triton-n32-s3", _mla(block_n=32, num_stages=3, mla="triton"), {}),
    ("triton-n32-s2", _mla(block_n=32, num_stages=2, mla="triton"), {}),
    ("triton-n32-s3-chainedqk", _mla(block_n=32, num_stages=3, mla="triton"), {"split_qk": False}),
]
GLUON_CANDIDATES = [
    ("gluon-n64-lazy", _mla(block_n=64, num_stages=2, mla="gluon"), {}),
    ("gluon-n64-eager", _mla(block_n=64, num_stages=2, mla="gluon"), {"lazy_rescale": False}),
    ("gluon-n32-lazy", _mla(block_n=32, num_stages=2, mla="gluon"), {}),
    ("gluon-n64-split2", _mla(block_n=64, num_stages=2, num_splits=2, mla="gluon"), {}),
]
_MLA_KEYS = ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr",
             "kv_indices", "is_causal", "sm_scale", "logit_cap", "sinks")


def mla_provider(config: FamilyConfig, overrides: dict):
    """`run_mla` at `config` with `overrides` (measurement switches), on the call's device limits."""
    def call(**args):
        limits = device_limits(args["q_extend"].device)
        return run_mla(config, *(args[k] for k in _MLA_KEYS), 1.0, 1.0, limits, **overrides)
    return call


def flashinfer_provider(sets: list[dict]):
    """(callable, prepared input sets) for FlashInfer's BatchMLAPagedAttentionWrapper, or raises ImportError /
    RuntimeError with the reason. Pages of one token; the extend keys are appended to the cache as new pages."""
    path = os.environ.get("CHIPLORE_FLASHINFER_PATH")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    import flashinfer  # noqa: F401 - benchmark peer, optional
    from flashinfer.mla import BatchMLAPagedAttentionWrapper

    prepared = []
    for args in sets:
        q, k_ext, k_buf = args["q_extend"], args["k_extend"], args["k_buffer"]
        qo, kv = args["qo_indptr"].long().tolist(), args["kv_indptr"].long().tolist()
        slots = k_buf.shape[0]
        cache = torch.cat([k_buf[:, 0], k_ext[:, 0]])  # extend token j -> page slots + j
        pages, lens = [], []
        for b in range(len(qo) - 1):
            pages.append(args["kv_indices"][kv[b]:kv[b + 1]])
            pages.append(torch.arange(slots + qo[b], slots + qo[b + 1], device=q.device))
            lens.append(kv[b + 1] - kv[b] + qo[b + 1] - qo[b])
        kv_len = torch.tensor(lens, dtype=torch.int32, device=q.device)
        kv_indptr = torch.zeros(len(lens) + 1, dtype=torch.int32, device=q.device)
        kv_indptr[1:] = torch.cumsum(kv_len, 0)
        wrapper = BatchMLAPagedAttentionWrapper(torch.empty(128 << 20, dtype=torch.uint8, device=q.device),
                                                backend="auto")
        wrapper.plan(args["qo_indptr"].int(), kv_indptr, torch.cat(pages).int(), kv_len, q.shape[1], 512, 64, 1,
                     True, q.shape[2] ** -0.5, q.dtype, q.dtype)
        prepared.append({"wrapper": wrapper, "q_nope": q[..., :512].contiguous(), "q_pe": q[..., 512:].contiguous(),
                         "ckv": cache[:, :512].contiguous().unsqueeze(1),
                         "kpe": cache[:, 512:].contiguous().unsqueeze(1), "o_extend": args["o_extend"]})

    def call(wrapper, q_nope, q_pe, ckv, kpe, o_extend):
        wrapper.run(q_nope, q_pe, ckv, kpe, out=o_extend)
        return o_extend
    return call, prepared


def run_row(name: str, fn, sets: list[dict], ref: torch.Tensor, case, peaks, reps: int) -> dict:
    """Check, then time one provider; print one line."""
    row = {"provider": name}
    try:
        sets[0]["o_extend"].fill_(float("nan"))
        fn(**sets[0])
        torch.cuda.synchronize()
        row["ok"], row["max_err"] = max_error(sets[0]["o_extend"], ref, case)
        t = bench(fn, sets, reps=reps, warmup=3)
        row.update(time_us=t.median_us, p25_us=t.p25_us, p75_us=t.p75_us, wall_us=t.wall_median_us)
        if peaks:
            row.update(roofline(case, t.median_us, *peaks))
    except Exception as exc:  # noqa: BLE001 - a failing candidate is a result of the sweep
        row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    verdict = "PASS" if row.get("ok") else "FAIL"
    timing = (f"{row['time_us']:8.0f} us  {100 * row.get('fraction_of_floor', float('nan')):5.1f} % of floor"
              if "time_us" in row else row.get("error", ""))
    print(f"{verdict} {name:28s} {timing}  max_err {row.get('max_err', float('nan')):.3g}", flush=True)
    return row


def _budgeted(name, fn, sets, ref, case, peaks, args, start) -> dict:
    """`run_row` unless the time budget is spent (then a skipped row)."""
    if time.time() - start > args.budget_s:
        print(f"SKIP {name} (budget {args.budget_s:.0f} s spent)", flush=True)
        return {"provider": name, "skipped": "time budget"}
    return run_row(name, fn, sets, ref, case, peaks, args.reps)


def _peaks(chip: str):
    """(peak TFLOP/s bf16, peak GB/s) from the chip's profile, or None when the profile cannot be loaded."""
    try:
        from hardware_profiles import load_profile
        profile = load_profile(chip)
        return profile.peak_flops("bf16") / 1e12, profile.peak_bytes_per_s() / 1e9
    except Exception as exc:  # noqa: BLE001 - e.g. pydantic missing on a bare GPU image
        print(f"no roofline: profile {chip!r} not loaded ({type(exc).__name__}: {exc})", flush=True)
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mla-sweep.json")
    parser.add_argument("--chip", default="h200")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--budget-s", type=float, default=130.0)
    parser.add_argument("--only", nargs="*", help="provider names to run (default: all)")
    args = parser.parse_args()
    start = time.time()
    case = TASK.case("mla")
    peaks = _peaks(args.chip)
    sets = input_sets(case, 2)
    ref = reference_output(sets[0])
    wanted = (lambda name: not args.only or name in args.only)
    rows = []
    for name, fn in [("generic-family", lambda **a: run_family(GENERIC, **a))] + [
            (name, mla_provider(cfg, over)) for name, cfg, over in TRITON_CANDIDATES]:
        if wanted(name):
            rows.append(_budgeted(name, fn, sets, ref, case, peaks, args, start))
    if wanted("flashinfer"):
        try:
            call, fsets = flashinfer_provider(sets)
            rows.append(run_row("flashinfer", call, fsets, ref, case, peaks, args.reps))
            del fsets
        except Exception as exc:  # noqa: BLE001 - the peer is optional
            print(f"SKIP flashinfer ({type(exc).__name__}: {str(exc)[:200]})", flush=True)
            rows.append({"provider": "flashinfer", "skipped": f"{type(exc).__name__}: {str(exc)[:300]}"})
    for name, fn in [(name, mla_provider(cfg, over)) for name, cfg, over in GLUON_CANDIDATES] + [
            ("tuned", extend_attention_fwd)]:
        if wanted(name):
            rows.append(_budgeted(name, fn, sets, ref, case, peaks, args, start))
    write_json(args.out, {"env": environment(), "case": case.id, "peaks_tflops_gbps": peaks, "rows": rows,
                          "wall_s": time.time() - start})
    print(f"wrote {args.out} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
