"""Torch emulation of a tiled extend-attention kernel on the verifier's shifted-values draw, honest or with the P.V
accumulator kept in float16 between key tiles (tests/verifier/cheats/ea_half_accumulator.py), so the draw can be
sized over thousands of draws where the Triton interpreter takes a second each.

The emulated kernel follows the baseline's arithmetic (kernels/extend_attention/baseline.py): per key tile of
`block_n` keys (prefix tiles from key 0, extend tiles from the first extend key) an online-softmax step in float32,
P rounded to the input dtype before P.V, the accumulator float32 (``honest``) or rounded to float16 after every
tile (``half``). Only the draw's first sequence (the long prefix) is emulated; its rows are compared with the
task's float32 reference as the verifier compares them (`kernels.extend_attention.spec.TOLERANCES`). On the CPU
plan's draws the emulated errors match the interpreter's kernels to 3 digits (BENCHMARKS.md, 'Verifier').

    python benchmarks/emulate_half_accumulator.py --draws 2000 --block-n 16 64          # the CPU plan
    python benchmarks/emulate_half_accumulator.py --gpu --draws 10 --block-n 64 128 --dtype float16

Prints, per tile size, the honest kernel's largest error as a fraction of the bound (max |got - ref| / (atol +
rtol |ref|)), with the 99th/99.9th percentiles, and the float16 accumulator's smallest fraction and how many draws
it fails (fraction > 1).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels.extend_attention.cases import shifted_values_case  # noqa: E402
from kernels.extend_attention.spec import TOLERANCES, make_inputs, reference  # noqa: E402


def emulate(inputs: dict, block_n: int, half_accumulator: bool) -> torch.Tensor:
    """Output rows [E_0, H_q, D_v] (float32 of the input dtype's values) of sequence 0 of `inputs`
    (`make_inputs` keywords; causal, no mask or window), tiled as the module docstring says."""
    q, dt = inputs["q_extend"], inputs["q_extend"].dtype
    e, pre = int(inputs["qo_indptr"][1]), int(inputs["kv_indptr"][1])
    slots = inputs["kv_indices"][:pre]
    group = q.shape[1] // inputs["k_extend"].shape[1]
    k = torch.cat([inputs["k_buffer"][slots], inputs["k_extend"][:e]]).float().repeat_interleave(group, 1)
    v = torch.cat([inputs["v_buffer"][slots], inputs["v_extend"][:e]]).float().repeat_interleave(group, 1)
    sm = inputs["sm_scale"] or 1.0 / math.sqrt(q.shape[2])
    s_all = torch.einsum("ehd,nhd->hen", q[:e].float(), k)
    s_all[:, :, :pre] *= sm * inputs["k_scale"]
    s_all[:, :, pre:] *= sm
    if inputs["logit_cap"] > 0:
        s_all = inputs["logit_cap"] * torch.tanh(s_all / inputs["logit_cap"])
    n = pre + e
    visible = torch.arange(n)[None, :] <= (pre + torch.arange(e))[:, None]
    s_all = s_all.masked_fill(~visible[None], float("-inf"))
    heads = q.shape[1]
    m = torch.full((heads, e), float("-inf"))
    den = torch.zeros(heads, e)
    acc = torch.zeros(heads, e, v.shape[2])
    for start in [*range(0, pre, block_n), *range(pre, n, block_n)]:
        s = s_all[:, :, start:min(start + block_n, pre if start < pre else n)]
        m_new = torch.maximum(m, s.max(-1).values)
        m_safe = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
        alpha, p = torch.exp(m - m_safe), torch.exp(s - m_safe[..., None])
        den = den * alpha + p.sum(-1)
        pv = torch.einsum("hen,nhd->hed", p.to(dt).float(), v[start:start + s.shape[-1]])
        acc = acc * alpha[..., None] + (pv * inputs["v_scale"] if start < pre else pv)
        if half_accumulator:
            acc = acc.to(torch.float16).float()
        m = m_new
    if inputs["sinks"] is not None:
        sink = inputs["sinks"].float()[:, None]
        m_new = torch.maximum(m, sink)
        alpha = torch.exp(m - m_new)
        den, acc = den * alpha + torch.exp(sink - m_new), acc * alpha[..., None]
    return (acc / den[..., None]).to(dt).float().permute(1, 0, 2)


def bound_fraction(got: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> float:
    """max |got - expected| / (atol + rtol |expected|) under the task's tolerance of `dtype`."""
    tol = TOLERANCES[str(dtype).removeprefix("torch.")]
    return float(((got - expected).abs() / (tol.atol + tol.rtol * expected.abs())).max())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--half-draws", type=int, default=None, help="draws for the float16 accumulator (default all)")
    ap.add_argument("--block-n", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--gpu", action="store_true", help="the GPU plan's draw (default: the CPU plan's)")
    ap.add_argument("--dtype", default=None, help="input dtype instead of the draw's")
    ap.add_argument("--seed", type=int, default=0, help="first draw's seed (draw i uses seed + i)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    half_draws = args.draws if args.half_draws is None else args.half_draws
    honest: dict[int, list[float]] = {b: [] for b in args.block_n}
    half: dict[int, list[float]] = {b: [] for b in args.block_n}
    for i in range(args.draws):
        inputs = make_inputs(shifted_values_case(random.Random(args.seed + i), not args.gpu), dtype=args.dtype)
        rows = int(inputs["qo_indptr"][1])
        expected = reference(inputs)["o_extend"][:rows]
        dt = inputs["q_extend"].dtype
        for b in args.block_n:
            honest[b].append(bound_fraction(emulate(inputs, b, False), expected, dt))
            if i < half_draws:
                half[b].append(bound_fraction(emulate(inputs, b, True), expected, dt))
    for b in args.block_n:
        h, c = sorted(honest[b]), sorted(half[b])
        line = (f"block_n {b}: honest ({len(h)} draws) max {h[-1]:.3f}, p99.9 {h[int(len(h) * .999)]:.3f}, "
                f"p99 {h[int(len(h) * .99)]:.3f}")
        if c:
            line += f"; float16 accumulator ({len(c)} draws) min {c[0]:.3f}, fails {sum(x > 1 for x in c)}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
