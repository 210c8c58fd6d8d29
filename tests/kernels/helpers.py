"""Running an extend-attention implementation on a case and checking it against the fp32 reference."""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernels.extend_attention.spec import TASK, make_inputs, reference
from kernels.extend_attention.workspace import pooled
from kernels.task import Case


def check_impl(fn: Callable, case: Case, device: str, dtype: str | None = None, seed: int | None = None):
    """Run `fn` on fresh NaN-poisoned inputs of `case`; assert finite and within the dtype tolerance."""
    dtype = dtype or case.params["dtype"]
    args = make_inputs(case, seed, device, dtype)
    expected = reference(args)["o_extend"]
    result = fn(**args)
    assert result is args["o_extend"], "entry point must return o_extend"
    got = args["o_extend"].float()
    assert torch.isfinite(got).all(), f"{case.id}: non-finite output (unwritten rows or NaN)"
    tol = TASK.tolerances[dtype]
    err = (got - expected).abs()
    bound = tol.atol + tol.rtol * expected.abs()
    bad = (err > bound).nonzero()
    assert bad.numel() == 0, (f"{case.id} {dtype}: {bad.shape[0]} elements out of tolerance, first at "
                              f"{tuple(bad[0].tolist())}: got {got[tuple(bad[0])]:.4f} expected "
                              f"{expected[tuple(bad[0])]:.4f}")


def poison_prefix_workspace(args: dict) -> None:
    """Fill the pooled pre-gather buffers a call with `args` will use with NaN, so that a row attention reads before
    the call copies it shows as a non-finite output (otherwise an earlier call may have left the right rows there)."""
    for name, buf in (("prefix_k", args["k_buffer"]), ("prefix_v", args["v_buffer"])):
        numel = args["kv_indices"].shape[0] * buf.shape[1] * buf.shape[2]
        if numel:
            pooled(buf.device, buf.dtype, name, numel).fill_(float("nan"))


def on_poisoned_workspace(fn: Callable) -> Callable:
    """`fn` called after `poison_prefix_workspace` on its arguments."""
    def call(**args):
        poison_prefix_workspace(args)
        return fn(**args)
    return call


def serving_engine_inputs(extend_lens: list[int], prefix_lens: list[int], num_q_heads: int, num_kv_heads: int,
                          head_dim: int, dtype: torch.dtype, device: str, seed: int = 0, pool_factor: int = 4,
                          tail: int = 64) -> dict:
    """Keyword arguments of an SGLang 0.5.23 call laid out as a serving engine hands them over: the prefix slots
    scattered non-monotonically over a pool `pool_factor` times larger than ΣP with slot 0 and the pool's last
    slot in use, every other slot NaN, and a preallocated kv_indices `tail` entries longer than ΣP whose tail
    names NaN slots. o_extend starts NaN; k_scale = v_scale = 1.0 passed positionally-compatible by name."""
    gen = torch.Generator().manual_seed(seed)
    total_e, total_p = sum(extend_lens), sum(prefix_lens)
    slots_n = max(2, pool_factor * total_p)
    perm = torch.randperm(slots_n, generator=gen)
    used = perm[:total_p]
    if total_p >= 2:  # slot 0 and the last slot in use, somewhere inside the prefix (not at its ends)
        for k, slot in ((total_p // 3, 0), (2 * total_p // 3, slots_n - 1)):
            where = (used == slot).nonzero()
            if where.numel():
                used[where[0, 0]] = used[k]
            used[k] = slot
    spare = torch.ones(slots_n, dtype=torch.bool)
    spare[used] = False
    free = spare.nonzero().flatten()
    tail_slots = free[torch.randint(0, free.numel(), (tail,), generator=gen)]

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(dtype)

    k_buffer, v_buffer = randn(slots_n, num_kv_heads, head_dim), randn(slots_n, num_kv_heads, head_dim)
    k_buffer[spare] = float("nan")
    v_buffer[spare] = float("nan")

    def indptr(lengths):
        return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)

    args = {
        "q_extend": randn(total_e, num_q_heads, head_dim), "k_extend": randn(total_e, num_kv_heads, head_dim),
        "v_extend": randn(total_e, num_kv_heads, head_dim),
        "o_extend": torch.full((total_e, num_q_heads, head_dim), float("nan"), dtype=dtype),
        "k_buffer": k_buffer, "v_buffer": v_buffer, "qo_indptr": indptr(extend_lens),
        "kv_indptr": indptr(prefix_lens), "kv_indices": torch.cat([used, tail_slots]).to(torch.int64),
        "custom_mask": None, "is_causal": True, "mask_indptr": None, "max_len_extend": max(extend_lens),
        "k_scale": 1.0, "v_scale": 1.0,
    }
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in args.items()}


def assert_close_to_reference(got: torch.Tensor, expected: torch.Tensor, dtype: str, label: str) -> None:
    """Finite everywhere and within the task tolerance of `dtype`; the message counts NaN rows and the worst error."""
    got = got.float()
    nan_rows = int((~torch.isfinite(got)).flatten(1).any(1).sum())
    assert nan_rows == 0, f"{label}: {nan_rows} rows with non-finite values"
    tol = TASK.tolerances[dtype]
    err = (got - expected).abs()
    assert bool((err <= tol.atol + tol.rtol * expected.abs()).all()), f"{label}: max error {float(err.max()):.3g}"


def count_launches(monkeypatch) -> dict[str, int]:
    """Count, from now on, launches through Triton's JIT path (``JITFunction.run``: binding, specialization, cache
    lookup) and through a kept compiled kernel (`kernels.launch.DirectLaunch.launch_compiled`); returns the live
    counts {"jit": n, "direct": n}."""
    from triton.runtime.jit import JITFunction

    from kernels.launch import DirectLaunch

    counts = {"jit": 0, "direct": 0}
    jit_run, direct = JITFunction.run, DirectLaunch.launch_compiled

    def counting_jit(self, *args, **kwargs):
        counts["jit"] += 1
        return jit_run(self, *args, **kwargs)

    def counting_direct(self, *args, **kwargs):
        counts["direct"] += 1
        return direct(self, *args, **kwargs)

    monkeypatch.setattr(JITFunction, "run", counting_jit)
    monkeypatch.setattr(DirectLaunch, "launch_compiled", counting_direct)
    return counts
