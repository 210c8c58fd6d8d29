"""Bandwidth of the prefix pre-gather (`kernels/extend_attention/prefix_gather.py`) on the compute-bound cases.

    python benchmarks/bench_prefix_gather.py [--out gather.json]

For the pre-gathered cases of the 9-case suite (bf16, H_kv 8, D 128 unless the case says otherwise; slots
scattered in a pool twice the prefix), times `gather_prefix` at several (BLOCK_T, BLOCK_C) tilings, and beside it
two references that move the same bytes: a contiguous device-to-device copy (`Tensor.copy_`, the bandwidth
ceiling) and torch advanced indexing (`k_buffer[kv_indices]` and the same for V). Effective GB/s counts each byte
read and written once. Medians of 20 calls, L2 flushed (`kernels.timing.bench`). GPU only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernels.extend_attention import prefix_gather  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.timing import bench  # noqa: E402

CASES = ("chunked-prefill", "mixed-batch", "small-heads", "large-heads", "mla")
TILINGS = ((8, 1024), (16, 512), (32, 256), (4, 1024), (64, 128))


def _buffers(case_id: str, device: torch.device) -> dict:
    p = TASK.case(case_id).params
    total = sum(p["prefix_lens"])
    heads, d, dv = p["num_kv_heads"], p["head_dim"], p["head_dim_v"]
    gen = torch.Generator(device="cpu").manual_seed(5)
    k = torch.randn(2 * total, heads, d, generator=gen).to(device=device, dtype=torch.bfloat16)
    v = k[:, :, :dv] if case_id == "mla" else torch.randn(2 * total, heads, dv, generator=gen).to(
        device=device, dtype=torch.bfloat16)
    idx = torch.randperm(2 * total, generator=gen)[:total].to(device=device, dtype=torch.int32)
    return {"k": k, "v": v, "idx": idx, "v_is_k": case_id == "mla"}


def _moved_bytes(b: dict) -> int:
    rows = b["idx"].shape[0]
    per_row = b["k"][0].numel() + (0 if b["v_is_k"] else b["v"][0].numel())
    return 2 * rows * per_row * b["k"].element_size()  # read once, written once


def time_case(case_id: str, device: torch.device) -> list[dict]:
    """Median time and effective GB/s of each tiling and of both references for one case."""
    b = _buffers(case_id, device)
    moved = _moved_bytes(b)
    out = []

    def record(name: str, fn) -> None:
        t = bench(lambda **_: fn(), [{"device_anchor": b["k"]}], reps=20, warmup=3)  # bench finds the device
        out.append({"case": case_id, "name": name, "time_us": t.median_us, "gbps": moved / t.median_us / 1e3})

    for block_t, block_c in TILINGS:
        prefix_gather.BLOCK_T, prefix_gather.BLOCK_C = block_t, block_c
        got_k, got_v = prefix_gather.gather_prefix(b["k"], b["v"], b["idx"], b["v_is_k"])
        torch.cuda.synchronize()
        want_v = b["k" if b["v_is_k"] else "v"][b["idx"].long()]  # with V a view of K, V_g is K_g
        if not (torch.equal(got_k, b["k"][b["idx"].long()]) and torch.equal(got_v, want_v)):
            raise SystemExit(f"{case_id}: gather_prefix at {block_t}x{block_c} copied the wrong rows")
        record(f"gather_prefix {block_t}x{block_c}",
               lambda: prefix_gather.gather_prefix(b["k"], b["v"], b["idx"], b["v_is_k"]))
    src = torch.empty(moved // 2 // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    record("copy_ (contiguous ceiling)", lambda: dst.copy_(src))
    idx = b["idx"].long()
    record("torch indexing", lambda: (b["k"][idx], None if b["v_is_k"] else b["v"][idx]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_prefix_gather: needs a GPU (nothing is timed under the interpreter)")
    rows = []
    for case_id in CASES:
        rows += time_case(case_id, torch.device("cuda"))
        for r in rows[-len(TILINGS) - 2:]:
            print(f"{r['case']:16s} {r['name']:28s} {r['time_us']:9.1f} us {r['gbps']:7.0f} GB/s", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
