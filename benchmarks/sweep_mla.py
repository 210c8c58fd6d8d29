"""MLA sweep (GPU): candidate kernels of the dedicated MLA path against FlashInfer's MLA wrapper and the tuned entry
point on the ``mla`` bench case (E = 512, P = 8192, B = 4, 16/1 heads, 576/512, bf16).

Every provider is first checked against the fp32 reference (bf16 tolerance, no NaN), then timed with
`kernels.timing.bench` (L2 flushed, inputs rotated, median of `--reps`); a row gives the time, the fraction of the
roofline floor at the chip profile's spec peaks and PASS/FAIL. A provider that raises is reported, never fatal.
Providers marked `isolated` (kernels not yet run on a GPU, and the tuned entry point that routes to one) run in a
child process on the same seeded inputs, one row after another, each under `--row-timeout-s`: a kernel that hangs
or faults (a fault poisons the CUDA context of its process) costs its own row and a fresh child for the rest, not
the sweep. Rows are written to the JSON file as they come; the last lines name the fastest passing provider and
whether the tuned entry point is within 3 % of it. FlashInfer (benchmark peer only) is imported from
``$CHIPLORE_FLASHINFER_PATH`` when set; its plan and the copy of the extend keys into free cache pages are setup,
outside the timed region.

    python benchmarks/sweep_mla.py --out $OUT/mla-sweep.json        # scripts/gpu.sh suite mla-sweep
    python benchmarks/sweep_mla.py --only gluon-ws tuned           # a subset
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
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
from kernels.chip import current_chip_limits  # noqa: E402
from kernels.extend_attention import extend_attention_fwd  # noqa: E402
from kernels.extend_attention.family import FamilyConfig, run_family  # noqa: E402
from kernels.extend_attention.mla import run_mla  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.extend_attention.tuned import MLA_ROUTE as TUNED_MLA  # noqa: E402
from kernels.timing import bench  # noqa: E402

#: The generic family's MLA rule before the dedicated path (tuned.choose_config, `big_d > 512`).
GENERIC = FamilyConfig(block_m=64, block_n=32, num_warps=8, num_stages=2, num_splits=1, pack_gqa=True,
                       gather_stages=3, pregather=True)


def _mla(**knobs) -> FamilyConfig:
    return FamilyConfig(**{"block_m": 64, "num_warps": 8, "num_splits": 0, "pregather": True, "tma": True, **knobs})


_WS = _mla(block_n=64, num_stages=2, mla="gluon_ws")
#: (name, FamilyConfig, run_mla keyword overrides (measurement switches), isolated, run by default), in run order.
#: The warp-specialized variants: `family_mla_ws` (EARLY_QK, P_REGS); not run by default: every one faulted on the
#: H200 (BENCHMARKS.md "MLA path (issue 20)"), and each fault costs a fresh child process of the suite's budget.
CANDIDATES = [
    ("triton-n32-s3", _mla(block_n=32, num_stages=3, mla="triton"), {}, False, False),
    ("triton-n32-s3-chainedqk", _mla(block_n=32, num_stages=3, mla="triton"), {"split_qk": False}, False, False),
    ("gluon-n64-lazy", _mla(block_n=64, num_stages=2, mla="gluon"), {"lazy_rescale": True}, False, False),
    ("gluon-n64-eager", _mla(block_n=64, num_stages=2, mla="gluon"), {"lazy_rescale": False}, False, True),
    # the two-warpgroup kernel with tile t + 1's scores issued behind P . V(t) (family_mla_gluon SCORES_AHEAD), with
    # P in its own buffer or in the key tile's rope slot (P_IN_ROPE); isolated: not yet run on a GPU
    ("gluon-ahead", _mla(block_n=64, num_stages=2, mla="gluon_ahead"), {}, True, True),
    ("gluon-ahead-rope", _mla(block_n=64, num_stages=2, mla="gluon_ahead_rope"), {}, True, True),
    # the scores-ahead kernel with lazy rescale (no spills in the sm_90 compile) and with P . V in two column halves
    # (half of the rescale beside the tensor cores); isolated: not yet run on a GPU
    ("gluon-ahead-lazy", _mla(block_n=64, num_stages=2, mla="gluon_ahead_lazy"), {}, True, True),
    ("gluon-ahead-rope-lazy", _mla(block_n=64, num_stages=2, mla="gluon_ahead_rope_lazy"), {}, True, True),
    ("gluon-ahead-rope-split", _mla(block_n=64, num_stages=2, mla="gluon_ahead_rope_split"), {}, True, True),
    # lazy rescale with the row statistics reduced within each warpgroup: one CTA-wide reduction per tile
    ("gluon-ahead-rope-lazy-local", _mla(block_n=64, num_stages=2, mla="gluon_ahead_rope_lazy_local"), {}, True, True),
    ("gluon-ws-early-preg", _WS, {"early_qk": True, "p_regs": True}, True, False),
    ("gluon-ws-early", _WS, {"early_qk": True, "p_regs": False}, True, False),
    ("gluon-ws", _WS, {"early_qk": False, "p_regs": False}, True, False),
    ("gluon-ws-preg", _WS, {"early_qk": False, "p_regs": True}, True, False),
]
#: Providers outside CANDIDATES: (name, isolated, run by default).
OTHERS = {"generic-family": (False, False), "flashinfer": (False, True), "tuned": (True, True)}
_MLA_KEYS = ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer", "qo_indptr", "kv_indptr",
             "kv_indices", "is_causal", "sm_scale", "logit_cap", "sinks")


def mla_provider(config: FamilyConfig, overrides: dict):
    """`run_mla` at `config` with `overrides` (measurement switches), with the chip's limits (`use_chip`)."""
    def call(**args):
        limits = current_chip_limits()
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
    print_row(row)
    return row


def print_row(row: dict) -> None:
    """One PASS/FAIL/SKIP line for a row."""
    if "skipped" in row:
        print(f"SKIP {row['provider']} ({row['skipped']})", flush=True)
        return
    verdict = "PASS" if row.get("ok") else "FAIL"
    timing = (f"{row['time_us']:8.0f} us  {100 * row.get('fraction_of_floor', float('nan')):5.1f} % of floor"
              if "time_us" in row else row.get("error", ""))
    print(f"{verdict} {row['provider']:28s} {timing}  max_err {row.get('max_err', float('nan')):.3g}", flush=True)


def _peaks(chip: str):
    """(peak TFLOP/s bf16, peak GB/s) from the chip's profile, or None when the profile cannot be loaded."""
    try:
        from hardware_profiles import load_profile
        profile = load_profile(chip)
        return profile.peak_flops("bf16") / 1e12, profile.peak_bytes_per_s() / 1e9
    except Exception as exc:  # noqa: BLE001 - e.g. pydantic missing on a bare GPU image
        print(f"no roofline: profile {chip!r} not loaded ({type(exc).__name__}: {exc})", flush=True)
        return None


def _provider(name: str):
    """The callable of an in-process provider other than FlashInfer."""
    if name == "tuned":
        return extend_attention_fwd
    if name == "generic-family":
        return lambda **a: run_family(GENERIC, **a)
    config, overrides = next((c, o) for n, c, o, _, _ in CANDIDATES if n == name)
    return mla_provider(config, overrides)


def _child_rows(names: list[str], args) -> None:
    """Child mode: run `names` in order, printing ``START name`` before and ``ROW {json}`` after each."""
    case = TASK.case("mla")
    peaks = _peaks(args.chip)
    sets = input_sets(case, 2)
    ref = reference_output(sets[0])
    for name in names:
        print(f"START {name}", flush=True)
        row = run_row(name, _provider(name), sets, ref, case, peaks, args.reps)
        print("ROW " + json.dumps(row, default=str), flush=True)


def _pump(proc: subprocess.Popen, lines: queue.Queue) -> None:
    """Move the child's output lines into `lines`, then None at its end."""
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


def _isolated_rows(names: list[str], args, emit) -> None:
    """Run `names` in child processes (`_child_rows`); a row that hangs past ``args.row_timeout_s`` or whose child
    dies is recorded as an error row, and after it or any row with an error a fresh child runs the remaining
    names."""
    pending = list(names)
    while pending:
        cmd = [sys.executable, __file__, "--child", ",".join(pending), "--reps", str(args.reps), "--chip", args.chip]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
        current, deadline = None, time.time() + args.row_timeout_s
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                line = "TIMEOUT"
            if line is None or line == "TIMEOUT":
                name = current or pending[0]
                proc.kill()
                proc.wait()
                why = (f"hung past {args.row_timeout_s:.0f} s" if line == "TIMEOUT"
                       else f"child exited {proc.returncode}")
                row = {"provider": name, "error": f"isolated run: {why}"}
                print_row(row)
                emit(row)
                pending = pending[pending.index(name) + 1:]
                break
            if line.startswith("START "):
                current, deadline = line.split()[1], time.time() + args.row_timeout_s
            elif line.startswith("ROW "):
                row = json.loads(line[4:])
                emit(row)
                pending.remove(current)
                current, deadline = None, time.time() + args.row_timeout_s
                if "error" in row and pending:  # e.g. a device fault: the child's CUDA context may be unusable
                    proc.kill()
                if not pending or "error" in row:
                    proc.wait()
                    break
            else:
                print(f"  [child] {line.rstrip()}", flush=True)


def _advice(name: str) -> str:
    """The edit that makes the tuned entry point run candidate `name`."""
    entry = next((c for c in CANDIDATES if c[0] == name), None)
    if entry is None:
        return "not a dedicated-kernel candidate"
    _, config, overrides, _, _ = entry
    switches = ", ".join(f"{k}={v}" for k, v in overrides.items()) or "none"
    edit = (f"in kernels/extend_attention/mla_gluon.py set MLA_ROUTE = {config.mla!r} (the tuned entry point's MLA "
            "branch and the optimizer's mla knob)")
    if config.block_n != 64 or config.num_stages != 2:
        edit += f"; in tuned.class_config's MLA branch block_n={config.block_n}, num_stages={config.num_stages}"
    if overrides:
        edit += f"; in kernels/extend_attention/mla.py run_mla's defaults of the measurement switches: {switches}"
    return edit


def _verdict(rows: list[dict]) -> None:
    """Print the fastest passing provider and how the tuned entry point compares with it."""
    timed = {r["provider"]: r["time_us"] for r in rows if r.get("ok") and "time_us" in r}
    ours = {k: v for k, v in timed.items() if k not in ("flashinfer", "tuned")}
    if ours:
        best = min(ours, key=ours.get)
        print(f"BEST chiplore provider: {best} {ours[best]:.0f} us", flush=True)
        if "tuned" in timed:
            ok = timed["tuned"] <= 1.03 * ours[best]
            print(f"TUNED {timed['tuned']:.0f} us: {'within 3 % of' if ok else 'SLOWER than'} {best}; it runs "
                  f"mla={TUNED_MLA!r} (tuned.choose_config's MLA branch, run_mla's switch defaults)", flush=True)
            if not ok:
                print(f"TO RUN {best} FROM THE TUNED ENTRY POINT: {_advice(best)}", flush=True)
    if "flashinfer" in timed and ours:
        best = min(ours, key=ours.get)
        print(f"FLASHINFER {timed['flashinfer']:.0f} us; time ratio flashinfer / {best} = "
              f"{timed['flashinfer'] / ours[best]:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mla-sweep.json")
    parser.add_argument("--chip", default="h200")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--row-timeout-s", type=float, default=75.0)
    parser.add_argument("--only", nargs="*", help="provider names to run (default: those run by default)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    use_chip(args.chip)  # the chip's limits for every kernel (and a virtual chip's partition)
    if args.child:
        _child_rows(args.child.split(","), args)
        return
    start = time.time()
    order = [(n, iso, default) for n, _, _, iso, default in CANDIDATES]
    order = [("generic-family", *OTHERS["generic-family"]), ("flashinfer", *OTHERS["flashinfer"])] + order + [
        ("tuned", *OTHERS["tuned"])]
    wanted = [(n, iso) for n, iso, default in order if (n in args.only if args.only else default)]
    rows: list[dict] = []
    case = TASK.case("mla")
    peaks = _peaks(args.chip)

    env = environment()

    def emit(row: dict) -> None:
        rows.append(row)
        write_json(args.out, {"env": env, "case": case.id, "peaks_tflops_gbps": peaks, "rows": rows,
                              "wall_s": time.time() - start})

    local = [n for n, iso in wanted if not iso]
    if local:
        sets = input_sets(case, 2)
        ref = reference_output(sets[0])
        for name in local:
            if name == "flashinfer":
                try:
                    call, fsets = flashinfer_provider(sets)
                    emit(run_row("flashinfer", call, fsets, ref, case, peaks, args.reps))
                    del fsets
                except Exception as exc:  # noqa: BLE001 - the peer is optional
                    row = {"provider": "flashinfer", "skipped": f"{type(exc).__name__}: {str(exc)[:300]}"}
                    print_row(row)
                    emit(row)
            else:
                emit(run_row(name, _provider(name), sets, ref, case, peaks, args.reps))
        del sets, ref
        torch.cuda.empty_cache()
    isolated = [n for n, iso in wanted if iso]
    if isolated:
        _isolated_rows(isolated, args, emit)
    _verdict(rows)
    print(f"wrote {args.out} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
