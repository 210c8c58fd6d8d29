"""Extend-attention cases as data: edge cases for tests, the 9 realistic benchmark cases, random draws, and the
hidden cases the verifier draws at verification time (`hidden_cases`, `dtype_case`).

Case params and their defaults: `params` (`full_params`). Benchmark cases and their ids come from
shared/reference/extend_attention.md (H_q/H_kv/D = 32/8/128, bf16).
"""

from __future__ import annotations

import random
from typing import Any

from kernels.extend_attention import long_trials
from kernels.extend_attention.params import POOL_FACTOR, full_params
from kernels.task import Case

__all__ = ["BENCH_CASES", "POOL_FACTOR", "TEST_CASES", "dtype_case", "full_params", "hidden_cases", "random_case"]


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
    _case("kv-scales", "edge", 22, extend_lens=[5, 3], prefix_lens=[11, 19], k_scale=0.37, v_scale=1.9, **_SMALL),
    # a ragged batch whose last sequence ends inside a key tile, with the index buffer running on into NaN slots
    _case("indices-tail", "edge", 23, extend_lens=[3, 9, 1, 6], prefix_lens=[20, 1, 9, 13], kv_indices_tail=11,
          **_SMALL),
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


# ----- hidden cases the verifier draws at verification time (TaskSpec.hidden_cases, TaskSpec.dtype_case); each is
# built to catch a specific cheat or bug; `small` is the Triton interpreter's plan (CPU, tens of tokens).

#: Multiplier of q in the large-logits case: logits ~ N(0, 100^2), so every row of at least 16 keys almost surely
#: has logits above 88.7, where exp() without max-subtraction overflows float32 (exp(88.7) = 3.4e38, the IEEE 754
#: single-precision maximum).
ADVERSARIAL_Q_SCALE = 100.0

#: Prefix lengths of the long-prefix case: above the windows a kernel might "keep" (1024 to 4096 keys) on the CPU
#: interpreter, above the longest bench prefix (32768) on a GPU.
LONG_PREFIX_KEYS = long_trials.DRAWN_PREFIX_KEYS  # {True: (4200, 6000), False: (40000, 80000)}

#: Extend lengths (query tokens) of the long-extend case: more rows than one query block holds (BLOCK_M is at most
#: 128 rows in the project's kernels, and every other CPU trial has <= 24 tokens), so the second and later blocks
#: and the causal bound between blocks are checked; on a GPU longer than one 1024-row block as well.
LONG_EXTEND_TOKENS = {True: (130, 300), False: (1100, 2500)}

#: Head dims of the CPU's float32 case (the CPU's other float32 trials use head dims 16 and 32): a kernel that
#: computed float32 in float16 only when head_dim > 32 passed the CPU verifier without it
#: (tests/verifier/cheats/fp32_wide_heads_as_fp16.py).
WIDE_DTYPE_HEAD_DIMS = (64, 128)

#: Head dim of the GPU's float32 case (its only float32 trial): fixed, so the sandbox's Triton cache serves later
#: candidates with the same kernel; 64, not wider, because an IEEE float32 dot compiles slowly at large tiles (the
#: family and the baseline cap float32 tiles, `common.FLOAT32_TILE_CAP`: 3-4 s at head dim 64 or 128; the
#: baseline's uncapped 128x64 tiles took 19-22 s of a 30 s verification on the H200; BENCHMARKS.md, 'Verifier').
#: A kernel that downgrades float32 only at head dims other than 64 passes on a GPU -- the CPU checks 16, 32 and
#: 64 or 128.
GPU_DTYPE_HEAD_DIM = 64
#: Prefix keys of the GPU dtype trial's first sequence: past a 4,096-key window kept only for the dtypes the bench
#: does not use, in a case that stays quick to compile.
DTYPE_LONG_PREFIX_KEYS = (4500, 9000)


def _suffix(case: Case) -> str:
    return case.id.split("-")[-1]


def adversarial_case(rng: random.Random, small: bool) -> Case:
    """Large logits: a random head layout with q scaled by `ADVERSARIAL_Q_SCALE`, no cap, window, mask or sinks,
    and at least 16 prefix keys per row (so a kernel that skips max-subtraction overflows)."""
    base = random_case(rng, small)
    scale = 1 if small else 24
    batch = rng.randint(1, 3)
    params = {**dict(base.params), "q_scale": ADVERSARIAL_Q_SCALE, "logit_cap": 0.0, "sinks": False,
              "sliding_window": -1, "custom_mask": False, "is_causal": True,
              "extend_lens": [rng.randint(8, 24) * scale for _ in range(batch)],
              "prefix_lens": [rng.randint(16, 40) * scale for _ in range(batch)]}
    if not small:
        params["head_dim"] = params["head_dim_v"] = 128
    return Case(f"adversarial-logits-{_suffix(base)}", params, base.seed, "adversarial")


def long_prefix_case(rng: random.Random, small: bool) -> Case:
    """One long prefix (`LONG_PREFIX_KEYS`) beside a long extend, every interface feature drawn
    (`long_trials.drawn_long_case`): a kernel that reads only the most recent keys (a truncation window) fails it,
    whatever the settings it keys the cut on. Heads are few and narrow on the CPU so the interpreter stays fast."""
    return long_trials.drawn_long_case(rng, small)


def long_extend_case(rng: random.Random, small: bool) -> Case:
    """A causal case whose first sequence has more query tokens than a query block holds (a kernel wrong only in
    later blocks or at block edges -- a causal off-by-one -- fails it), a short second sequence, short prefixes;
    other features as drawn. An off-by-one in a causal bound passes every other CPU trial. Few, narrow heads and
    float32 on the CPU (4 q / 2 KV heads, head_dim 16); on a GPU the drawn dtype (bfloat16), where missing one key
    of a long row can stay within the tolerance -- the GPU's bench cases exercise long extends as well."""
    base = random_case(rng, small)
    low, high = LONG_EXTEND_TOKENS[small]
    params = {**dict(base.params), "extend_lens": [rng.randint(low, high), rng.randint(1, 20)],
              "prefix_lens": [rng.randint(0, 40), rng.randint(0, 40)], "is_causal": True, "custom_mask": False}
    if small:  # float32 (held to 1e-4): a row that misses one of its ~130+ keys errs by ~1e-3..1e-2, which
        # float16's 4e-3 bound lets through on some draws; IEEE float32 dots of these small tiles compile fast
        params.update(num_q_heads=4, num_kv_heads=2, head_dim=16, head_dim_v=16, dtype="float32")
    return Case(f"long-extend-{_suffix(base)}", params, base.seed, "long-extend")


def dtype_case_at(rng: random.Random, dtype: str, head_dim: int) -> Case:
    """A random case in input dtype `dtype` at `head_dim`, with 8-24 query tokens in each of 1-3 sequences, so that
    a kernel computing `dtype` inputs in a narrower type (float32 in float16 or tf32, say) errs on many elements,
    not on a handful that might all round well. Interpreter-sized (IEEE float32 dots compile slowly at GPU-sized
    tiles: this trial at a drawn head dim was once the slowest of a verification on the H200, recompiled for
    every draw)."""
    base = random_case(rng, True)
    batch = rng.randint(1, 3)
    params = {**dict(base.params), "dtype": dtype, "head_dim": head_dim, "head_dim_v": head_dim,
              "extend_lens": [rng.randint(8, 24) for _ in range(batch)],
              "prefix_lens": [rng.randint(0, 40) for _ in range(batch)]}
    return Case(f"{dtype}-inputs-{_suffix(base)}", params, base.seed, "dtype")


#: Sequences and query heads of the wide draws: past the bench's largest batch (64 sequences) and head count (32 q
#: heads; MLA models run 128), so a grid clamped to the counts the bench uses leaves outputs unwritten.
WIDE_COUNTS = {True: (65, 72), False: (65, 160)}


def many_sequences_case(rng: random.Random, small: bool) -> Case:
    """More sequences than any bench case, each short (decode-like on the CPU: one query token, a few prefix keys;
    one KV head of width 16, so the interpreter runs about one program per sequence)."""
    base = random_case(rng, small)
    batch = rng.randint(*WIDE_COUNTS[small])
    params = {**dict(base.params), "extend_lens": [rng.randint(1, 1 if small else 16) for _ in range(batch)],
              "prefix_lens": [rng.randint(0, 4 if small else 512) for _ in range(batch)], "sliding_window": -1,
              "custom_mask": False}
    if small:
        params.update(num_q_heads=1, num_kv_heads=1, head_dim=16, head_dim_v=16)
    return Case(f"many-sequences-{_suffix(base)}", params, base.seed, "many-sequences")


def many_heads_case(rng: random.Random, small: bool) -> Case:
    """More query heads than any bench case over one KV head (the CPU: one short sequence of width 16; a GPU: one
    or eight KV heads, GQA groups up to 160), so a kernel that covers only the head counts the bench uses fails."""
    base = random_case(rng, small)
    heads = rng.randint(*WIDE_COUNTS[small])
    num_kv = 1 if small else rng.choice([1, 8])
    heads = max(num_kv, heads - heads % num_kv)
    params = {**dict(base.params), "num_q_heads": heads, "num_kv_heads": num_kv, "sliding_window": -1,
              "custom_mask": False}
    if small:
        params.update(extend_lens=[rng.randint(1, 3)], prefix_lens=[rng.randint(0, 4)], head_dim=16, head_dim_v=16)
    return Case(f"many-heads-{_suffix(base)}", params, base.seed, "many-heads")


#: Outliers of the outlier-keys case. Trained LLMs put most of a head's attention on a few tokens whose logits stand
#: far above the rest (attention sinks: Xiao et al. 2023, "Efficient Streaming Language Models with Attention
#: Sinks"; massive activations: Sun et al. 2024), and a few value rows are tens of times larger than the others.
#: Per sequence: 2-4 random key positions plus the first and last prefix key and the last extend key get their K rows
#: scaled 30-60x (logits 30-60x the unit scale, so large in some rows and far negative in others), and one other
#: position its V row 30-60x, in a strict subset of the KV heads where there are several. Unlike the large-logits
#: trial, q keeps its unit scale. One V outlier per sequence: a row then sees at most one, so an honest kernel's
#: rounding of P to the input dtype (about 2^-9 of each term in bfloat16) cannot be amplified by two large
#: contributions cancelling, and it stays within the dtype's tolerance.
KEY_OUTLIERS = (2, 4)
KEY_OUTLIER_SCALES = (30.0, 60.0)
VALUE_OUTLIER_SCALES = (30.0, 60.0)


def outlier_keys_case(rng: random.Random, small: bool) -> Case:
    """A causal case (no window, mask or cap) with outlier K rows and one outlier V row per sequence
    (`KEY_OUTLIERS`, `KEY_OUTLIER_SCALES`, `VALUE_OUTLIER_SCALES`) in some KV heads, in float16 on the CPU (2 KV
    heads, head dims 16 or 32) and bfloat16 on a GPU (the drawn head layout); 2-3 sequences of 8-24 query tokens
    (x16 on a GPU) with prefixes of 0-40 keys (x16), the first at least 16 (x16)."""
    base = random_case(rng, small)
    scale = 1 if small else 16
    batch = rng.randint(2, 3)
    params = {**dict(base.params), "logit_cap": 0.0, "sliding_window": -1, "custom_mask": False, "is_causal": True,
              "q_scale": 1.0, "extend_lens": [rng.randint(8, 24) * scale for _ in range(batch)],
              "prefix_lens": [rng.randint(16, 40) * scale] + [rng.randint(0, 40) * scale for _ in range(batch - 1)],
              "key_outliers": rng.randint(*KEY_OUTLIERS), "key_outlier_scale": rng.uniform(*KEY_OUTLIER_SCALES),
              "value_outlier_scale": rng.uniform(*VALUE_OUTLIER_SCALES)}
    if small:
        head_dim = rng.choice([16, 32])
        params.update(num_kv_heads=2, num_q_heads=2 * rng.choice([1, 2, 3]), head_dim=head_dim, head_dim_v=head_dim)
    num_kv = int(params["num_kv_heads"])
    params["outlier_heads"] = rng.randint(1, num_kv - 1) if num_kv > 1 else 1
    return Case(f"outlier-keys-{_suffix(base)}", params, base.seed, "outliers")


#: The shifted-values case: a long prefix whose V carries a large shared value in a few dimensions, +shift over
#: the first 45-55 % of the prefix and -shift after it (extend keys included), so that the running P.V sum of
#: those dimensions climbs to about shift/2 times the softmax denominator halfway and falls back to a small output.
#: A kernel that keeps that sum in float16 between key tiles rounds it to float16 once a tile (relative error up to
#: 2^-11 of the running sum, not of the output), and over the prefix's tiles the rounding adds up past the
#: tolerance of the small output; an honest kernel (float32 accumulator, P rounded to the input dtype before P.V)
#: errs only by the rounding of each P term, which averages out over the many keys. A shift over all of V would
#: not do: every output would be ~shift, its relative bound ~shift * 4e-3, loose enough for a truncated prefix.
#: Torch emulation of the CPU draw (benchmarks/emulate_half_accumulator.py; float16; at a kernel's tile size it
#: gives the interpreter's errors to 3 digits): honest <= 0.34 of the bound over 2,000 draws at 16-128-key tiles
#: (99.9th percentile <= 0.30); a float16 accumulator >= 2.1 of it with 16-key tiles, >= 1.3 with 64-key tiles
#: (200 of 200 draws fail), 198 of 200 with 128-key tiles (BENCHMARKS.md, 'Verifier'). Prefix keys: CPU 1,200-1,600,
#: GPU 8,000-16,000; 4 shifted dimensions; shifts 15-45 in magnitude, random signs.
SHIFTED_VALUE_PREFIX_KEYS = {True: (1200, 1600), False: (8000, 16000)}
VALUE_SHIFT_DIMS = 4
VALUE_SHIFTS = (15.0, 45.0)
VALUE_SHIFT_FLIP = (0.45, 0.55)


def shifted_values_case(rng: random.Random, small: bool) -> Case:
    """A long prefix with `VALUE_SHIFT_DIMS` V dimensions shifted by +-`VALUE_SHIFTS` (random signs), changing sign
    at `VALUE_SHIFT_FLIP` of the prefix (`SHIFTED_VALUE_PREFIX_KEYS`); no window or mask, q unscaled. The first
    sequence has 12-16 query tokens (one 16-row query block in the interpreter; 64-256 on a GPU); a second has no
    prefix and 1-3 tokens (all its keys carry -shift: a large output, no cancellation over few keys). On the CPU
    2 q heads over 1 KV head of width 16 in float16; on a GPU the drawn layout and dtype (bfloat16)."""
    base = random_case(rng, small)
    low, high = SHIFTED_VALUE_PREFIX_KEYS[small]
    params = {**dict(base.params), "sliding_window": -1, "custom_mask": False, "q_scale": 1.0,
              "extend_lens": [rng.randint(12, 16) if small else rng.randint(64, 256), rng.randint(1, 3)],
              "prefix_lens": [rng.randint(low, high), 0],
              "value_shifts": [rng.uniform(*VALUE_SHIFTS) * rng.choice((-1.0, 1.0)) for _ in range(VALUE_SHIFT_DIMS)],
              "value_shift_flip": rng.uniform(*VALUE_SHIFT_FLIP)}
    if small:
        params.update(num_q_heads=2, num_kv_heads=1, head_dim=16, head_dim_v=16)
    return Case(f"shifted-values-{_suffix(base)}", params, base.seed, "shifted-values")


def hidden_cases(rng: random.Random, small: bool) -> tuple[tuple[str, Case], ...]:
    """`TaskSpec.hidden_cases`: large logits, outlier keys, a long prefix (features drawn), a long extend, many
    sequences, many heads, shifted values, then the covering trials (`long_trials.covering_trials`: long prefixes
    and long extends over which every pair of interface features takes each pair of values), with their trial
    labels; on a GPU also the shifted values in float16, the task's other low-precision dtype (the bench and the
    other GPU draws are bfloat16; the covering trials take float16 as one of their features) and two float32 long
    trials with complementary features and no window (`long_trials.complementary_pair`), which stand in for the
    GPU's float32 dtype trial."""
    cases = [("large logits", adversarial_case(rng, small)), ("outlier keys", outlier_keys_case(rng, small)),
             ("long prefix", long_prefix_case(rng, small)),
             ("long extend", long_extend_case(rng, small)), ("many sequences", many_sequences_case(rng, small)),
             ("many heads", many_heads_case(rng, small)), ("shifted values", shifted_values_case(rng, small))]
    if not small:
        fp16 = shifted_values_case(rng, small)
        cases.append(("shifted values, float16", Case(f"{fp16.id}-fp16", {**dict(fp16.params), "dtype": "float16"},
                                                      fp16.seed, fp16.case_class)))
        cases.extend(long_trials.complementary_pair(rng, "float32", GPU_DTYPE_HEAD_DIM, DTYPE_LONG_PREFIX_KEYS))
    return (*cases, *long_trials.covering_trials(rng, small))


def dtype_case(rng: random.Random, dtype: str, small: bool) -> Case:
    """`TaskSpec.dtype_case`: the CPU (`small`) draws a wide head (`WIDE_DTYPE_HEAD_DIMS`), a GPU uses
    `GPU_DTYPE_HEAD_DIM` and gives the first sequence a prefix of `DTYPE_LONG_PREFIX_KEYS`, so a path of this dtype
    that reads only the most recent keys fails; interpreter-sized tiles either way."""
    head_dim = rng.choice(WIDE_DTYPE_HEAD_DIMS) if small else GPU_DTYPE_HEAD_DIM
    case = dtype_case_at(rng, dtype, head_dim)
    if small:
        return case
    prefix = [rng.randint(*DTYPE_LONG_PREFIX_KEYS), *case.params["prefix_lens"][1:]]
    return Case(case.id, {**dict(case.params), "prefix_lens": prefix}, case.seed, case.case_class)
