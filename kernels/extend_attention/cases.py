"""Extend-attention cases as data: edge cases for tests, the 9 realistic benchmark cases, random draws.

Case params (all plain values):
    extend_lens, prefix_lens: list[int], one entry per sequence (E_b, P_b; either may be 0).
    num_q_heads, num_kv_heads, head_dim (D_qk), head_dim_v (D_v): ints; H_q % H_kv == 0.
    mla: bool, V is a view of K's first head_dim_v columns (cache and extend), H_kv = 1.
    is_causal: bool; custom_mask: bool (random mask replaces causality); skip_prefix_custom_mask: bool.
    sliding_window: int (<= 0 off); logit_cap: float (0 off); sinks: bool; sm_scale: float | None.
    q_scale: float multiplying q (large values stress logit caps and max subtraction).
    max_len_extend_slack: int added to max(E_b) when passing max_len_extend (an upper bound, not exact).
    dtype: default input dtype name.

Benchmark cases and their ids come from shared/reference/extend_attention.md (H_q/H_kv/D = 32/8/128, bf16).
"""

from __future__ import annotations

import random
from typing import Any

from kernels.task import Case

#: Cache pool size of `spec.make_inputs` relative to the slots actually used (unused slots hold NaN).
POOL_FACTOR = 1.25

_DEFAULTS: dict[str, Any] = {
    "num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "head_dim_v": None, "mla": False,
    "is_causal": True, "custom_mask": False, "skip_prefix_custom_mask": True, "sliding_window": -1,
    "logit_cap": 0.0, "sinks": False, "sm_scale": None, "q_scale": 1.0, "max_len_extend_slack": 0,
    "dtype": "bfloat16",
}


def full_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with every default filled in (head_dim_v defaults to head_dim).

    Raises:
        ValueError: unknown key, mismatched list lengths, negative lengths or bad head ratio.
    """
    unknown = set(params) - set(_DEFAULTS) - {"extend_lens", "prefix_lens"}
    if unknown:
        raise ValueError(f"unknown case parameter(s): {sorted(unknown)}")
    out = {**_DEFAULTS, **params}
    if out["head_dim_v"] is None:
        out["head_dim_v"] = out["head_dim"]
    ext, pre = list(out["extend_lens"]), list(out["prefix_lens"])
    if len(ext) != len(pre) or not ext:
        raise ValueError(f"extend_lens ({len(ext)}) and prefix_lens ({len(pre)}) must be equal, non-empty")
    if min(ext + pre) < 0:
        raise ValueError("extend_lens and prefix_lens must be >= 0")
    if out["num_q_heads"] % out["num_kv_heads"]:
        raise ValueError(f"num_q_heads={out['num_q_heads']} not a multiple of num_kv_heads")
    return out


def _case(case_id: str, case_class: str, seed: int, **params: Any) -> Case:
    return Case(case_id, full_params(params), seed, case_class)


BENCH_CASES: tuple[Case, ...] = (
    _case("prefill", "prefill", 101, extend_lens=[8192], prefix_lens=[0]),
    _case("chunked-prefill", "prefix-extend", 102, extend_lens=[2048], prefix_lens=[32768]),
    _case("mixed-batch", "prefix-extend", 103, extend_lens=[256] * 16, prefix_lens=[4096] * 16),
    _case("spec-verify", "small-extend", 104, extend_lens=[4] * 64, prefix_lens=[4096] * 64),
    _case("decode", "decode", 105, extend_lens=[1] * 64, prefix_lens=[8192] * 64),
    _case("ragged", "ragged", 106, extend_lens=[8192] + [16] * 7, prefix_lens=[0] + [4096] * 7),
    _case("small-heads", "prefix-extend", 107, extend_lens=[4096] * 4, prefix_lens=[4096] * 4,
          num_q_heads=8, num_kv_heads=8, head_dim=64),
    _case("large-heads", "prefix-extend", 108, extend_lens=[2048] * 2, prefix_lens=[8192] * 2,
          num_q_heads=16, num_kv_heads=8, head_dim=256),
    _case("mla", "mla", 109, extend_lens=[512] * 4, prefix_lens=[8192] * 4,
          num_q_heads=16, num_kv_heads=1, head_dim=576, head_dim_v=512, mla=True),
)

_SMALL = {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 32, "dtype": "float16"}

TEST_CASES: tuple[Case, ...] = (
    _case("zero-lengths", "edge", 1, extend_lens=[5, 0, 7, 1], prefix_lens=[0, 9, 3, 20], **_SMALL),
    _case("decode-long-prefix", "edge", 2, extend_lens=[1, 1], prefix_lens=[300, 77], **_SMALL),
    _case("shorter-than-tile", "edge", 3, extend_lens=[3], prefix_lens=[2], **_SMALL),
    _case("gqa-1", "edge", 4, extend_lens=[9, 4], prefix_lens=[11, 0], num_q_heads=3, num_kv_heads=3,
          head_dim=32, dtype="float16"),
    _case("gqa-4", "edge", 5, extend_lens=[6, 17], prefix_lens=[23, 5], num_q_heads=8, num_kv_heads=2,
          head_dim=32, dtype="float16"),
    _case("gqa-7", "edge", 6, extend_lens=[10, 3], prefix_lens=[4, 31], num_q_heads=7, num_kv_heads=1,
          head_dim=32, dtype="float16"),
    _case("head-dim-13", "edge", 7, extend_lens=[7, 12], prefix_lens=[9, 3], num_q_heads=2, num_kv_heads=1,
          head_dim=13, dtype="float16"),
    _case("head-dim-80", "edge", 8, extend_lens=[11], prefix_lens=[21], num_q_heads=2, num_kv_heads=2,
          head_dim=80, dtype="float16"),
    _case("head-dim-96", "edge", 9, extend_lens=[5, 9], prefix_lens=[17, 0], num_q_heads=4, num_kv_heads=1,
          head_dim=96, dtype="float16"),
    _case("qk192-v128", "edge", 10, extend_lens=[6], prefix_lens=[13], num_q_heads=2, num_kv_heads=1,
          head_dim=192, head_dim_v=128, dtype="float16"),
    _case("mla-576-512", "edge", 11, extend_lens=[5, 3], prefix_lens=[19, 8], num_q_heads=4, num_kv_heads=1,
          head_dim=576, head_dim_v=512, mla=True, dtype="float16"),
    _case("sliding-window", "edge", 12, extend_lens=[9, 14], prefix_lens=[20, 3], sliding_window=5, **_SMALL),
    _case("logit-cap-huge", "edge", 13, extend_lens=[8], prefix_lens=[16], logit_cap=30.0, q_scale=300.0,
          **_SMALL),
    _case("sinks", "edge", 14, extend_lens=[6, 1], prefix_lens=[10, 0], sinks=True, **_SMALL),
    _case("custom-mask", "edge", 15, extend_lens=[7, 5], prefix_lens=[6, 9], custom_mask=True, **_SMALL),
    _case("custom-mask-prefix", "edge", 16, extend_lens=[6], prefix_lens=[8], custom_mask=True,
          skip_prefix_custom_mask=False, **_SMALL),
    _case("non-causal", "edge", 17, extend_lens=[7, 4], prefix_lens=[5, 0], is_causal=False, **_SMALL),
    _case("loose-max-len", "edge", 18, extend_lens=[4, 9], prefix_lens=[3, 6], max_len_extend_slack=50,
          **_SMALL),
    _case("sm-scale", "edge", 19, extend_lens=[5], prefix_lens=[7], sm_scale=0.3, **_SMALL),
    _case("fp32-inputs", "edge", 20, extend_lens=[6, 3], prefix_lens=[5, 12], num_q_heads=4, num_kv_heads=2,
          head_dim=32, dtype="float32"),
    _case("window-and-mask", "edge", 21, extend_lens=[4, 6], prefix_lens=[40, 2], sliding_window=3,
          custom_mask=True, **_SMALL),
)


def random_case(rng: random.Random, small: bool = True) -> Case:
    """A case drawn at verification time, never written down: random batch, lengths, GQA, head dim, features.

    `small=True` keeps sizes fit for the Triton interpreter (tens of tokens); `small=False` draws
    GPU-sized cases (hundreds to thousands of tokens).
    """
    scale = 1 if small else 48
    batch = rng.randint(1, 4)
    num_kv = rng.choice([1, 2] if small else [1, 2, 4, 8])
    group = rng.choice([1, 2, 3, 4, 7])
    head_dim = rng.choice([16, 32, 48, 64] if small else [64, 80, 96, 128])
    extend = [rng.choice([0, 1, rng.randint(1, 24 * scale)]) for _ in range(batch)]
    if sum(extend) == 0:
        extend[0] = rng.randint(1, 8 * scale)
    params = dict(
        extend_lens=extend,
        prefix_lens=[rng.choice([0, rng.randint(1, 40 * scale)]) for _ in range(batch)],
        num_q_heads=num_kv * group, num_kv_heads=num_kv, head_dim=head_dim,
        sliding_window=rng.choice([-1, -1, rng.randint(1, 30 * scale)]),
        logit_cap=rng.choice([0.0, 0.0, 20.0]), sinks=rng.random() < 0.25,
        custom_mask=rng.random() < 0.15, dtype="float16" if small else "bfloat16",
        max_len_extend_slack=rng.choice([0, 0, 7]),
    )
    return Case(f"random-{rng.randrange(1 << 30):08x}", full_params(params), rng.randrange(1 << 31), "random")
