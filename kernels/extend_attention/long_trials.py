"""Long hidden trials of extend attention whose interface features are drawn from the verifier's secret seed.

A red team (breaker3, 2026-12-02) found cheats that are an honest kernel plus one branch that cuts work -- caps the
prefix at 64 keys, computes only the first query block -- taken only when a setting has a value that every long
trial held fixed (``skip_prefix_custom_mask=False``, ``head_dim_v != head_dim``, float32, ``head_dim > 32``, a
custom mask, non-causal; tests/verifier/cheats/ea_*_prefix_cap.py, ea_*_first_block.py). A long trial here is one
case with both a long prefix (more keys than a window a kernel might keep) and a long extend (more query rows than
one query block holds), and it sets every feature of SGLang 0.5.23's ``extend_attention_fwd``
(shared/reference/extend_attention.md; semantics: kernels/extend_attention/reference.py) within what the
interface allows: causal or not, a custom mask or not, ``skip_prefix_custom_mask``, ``sm_scale`` passed or left to
the default, k/v scales, the GQA group, ``head_dim_v`` equal to ``head_dim`` or not, the head width, the input
dtype, a logit cap, a sliding window (wider than half the long prefix), attention sinks, which sequence holds the
long prefix, ``max_len_extend`` slack and an index-buffer tail.

Which trial takes which value is a covering array of strength 2 (`kernels.covering.covering_rows`): over the
trials of one verification, every pair of these binary features takes each of its 4 value pairs at least once, so
every rare value meets a long prefix and several query blocks in every verification, and so does every combination
of two (a cut taken only when non-causal AND float32, or when float32 and NOT non-causal). A cut that is itself a
window over the prefix (keep the last N keys) can step aside when the caller passes a sliding window, which makes
"no sliding window" a third condition of every such cut: the covering rows of the other features all run without
a window, and two more rows take a window with every other feature's rare value in one of them and its common
value in the other. So every pair of values of two features meets a long prefix with no window, and the window's
rare value meets every value of every other feature. Each feature takes its rare value in fewer than half the
covering rows (3 of 7), which also catches most cuts keyed on one rare and two common values (86 % of such
triples over the 15 CPU features are in the rows). Which trial and which column each feature gets, and every value
within a feature (the group, the widths, the scales, the lengths) are drawn. `drawn_long_case` is a longer trial
(`cases.LONG_PREFIX_KEYS`) with each feature drawn independently.

CPU sizes (the Triton interpreter: about 0.1 s per 1,000 prefix keys per q head in float16, twice that in
float32): `COVERING_PREFIX_KEYS` keys, one KV head, 1-3 q heads, head width 16 unless a wide head is the feature.
A cut keyed on settings that keeps more than ~1,000 keys meets only the longer drawn trial with those settings
(probability 1/2 per verification for one setting, 1/4 for two), and the shifted-values trial (1,200-1,600 keys,
its own fixed settings).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from kernels.covering import covering_rows
from kernels.extend_attention.params import full_params
from kernels.task import Case

__all__ = ["COVERING_PREFIX_KEYS", "FEATURES", "WINDOW", "complementary_pair", "covering_rows_of", "covering_trials",
           "drawn_long_case"]

#: Prefix keys of the covering trials' long sequence ({small: (low, high)}): past 1,024-key windows on the CPU (the
#: interpreter's time is about proportional to them: 2,100-3,000 keys took 2x the verification time of a plan
#: without covering trials, this 1.3-1.5x), past the longest bench prefix (32,768) on a GPU.
COVERING_PREFIX_KEYS = {True: (1100, 1600), False: (40000, 80000)}
#: Prefix keys of the drawn long trial (as `cases.LONG_PREFIX_KEYS`: past 4,096-key windows on the CPU).
DRAWN_PREFIX_KEYS = {True: (4200, 6000), False: (40000, 80000)}
#: Query tokens of the long-extend sequence: more rows than a 128-row query block, the largest of the project's
#: kernels (GPU: a 1,024-row block).
EXTEND_TOKENS = {True: (130, 200), False: (1100, 2500)}

#: The binary features (name: the rare value's meaning); "float32" and "head_dim > 32" on the CPU only (a GPU's
#: float32 is its dtype trial's, at head dim 64 with a long prefix; every GPU head is wider than 32), "float16" on
#: a GPU only (its other draws are bfloat16; the CPU's default is float16).
FEATURES: dict[str, str] = {
    "non-causal": "is_causal=False", "custom mask": "a random custom mask",
    "mask over prefix": "skip_prefix_custom_mask=False", "split head_dim_v": "head_dim_v != head_dim",
    "float32": "float32 inputs (CPU)", "float16": "float16 inputs (GPU)", "wide heads": "head_dim > 32 (CPU)",
    "sm_scale passed": "sm_scale given (half the draws: exactly 1/sqrt(head_dim))",
    "kv scales": "k_scale and v_scale away from 1", "gqa": "2+ q heads per KV head", "logit cap": "logit_cap > 0",
    "sliding window": "a window of half the long prefix or more", "sinks": "attention sinks",
    "later sequence": "the long prefix not in the first sequence", "slack": "max_len_extend above max(E_b)",
    "index tail": "kv_indices runs on into unused slots",
}
_CPU_ONLY, _GPU_ONLY = frozenset({"float32", "wide heads"}), frozenset({"float16"})
#: The feature a prefix cut can defer to (a sliding window is a prefix cut the caller asked for).
WINDOW = "sliding window"
#: Features whose rare value costs the interpreter time (float32: twice float16's; 2 q heads: twice 1): in the two
#: window rows, rare together in one and common in the other, so the costly rare values share one row.
_COSTLY = frozenset({"float32", "gqa", "wide heads"})

def features(small: bool) -> tuple[str, ...]:
    """The binary features of a plan (`FEATURES`, without the other device's)."""
    skip = _GPU_ONLY if small else _CPU_ONLY
    return tuple(f for f in FEATURES if f not in skip)


def _lengths(rng: random.Random, small: bool, keys: tuple[int, int], later: bool) -> tuple[list, list, int]:
    """(extend_lens, prefix_lens, long prefix index): a sequence with a long prefix (`keys`) and a short extend,
    one with a long extend and a short prefix, 1 in 2 draws a third short one; the long prefix first unless
    `later`, the rest in a drawn order."""
    scale = 1 if small else 16
    rest = [(rng.randint(*EXTEND_TOKENS[small]), rng.randint(0, 40) * scale)]
    if rng.random() < 0.5:
        rest.append((rng.randint(0, 8) * scale, rng.randint(0, 40) * scale))
    rng.shuffle(rest)
    at = rng.randint(1, len(rest)) if later else 0
    seqs = [*rest[:at], (rng.randint(1, 6) * scale, rng.randint(*keys)), *rest[at:]]
    return [e for e, _ in seqs], [p for _, p in seqs], at


def _case(rng: random.Random, small: bool, on: Callable[[str], bool], keys: tuple[int, int], tag: str,
          dtype: str | None = None, head_dim: int | None = None) -> Case:
    """A long case with the binary features `on` says (see `FEATURES`) and the values within each drawn; `dtype`
    and `head_dim`, where given, replace the drawn ones."""
    dtype = dtype or ("float32" if on("float32") else "float16" if small or on("float16") else "bfloat16")
    if small:
        head_dim = head_dim or (rng.choice((48, 64)) if on("wide heads") else 16)
        num_kv, group = 1, 2 if on("gqa") else 1
    else:
        head_dim = head_dim or rng.choice((64, 80, 96, 128))
        num_kv, group = rng.choice((1, 2, 4, 8)), rng.choice((2, 4, 7)) if on("gqa") else 1
    widths = (16, 32, 48) if small else (64, 96, 128)
    head_dim_v = rng.choice([w for w in widths if w != head_dim]) if on("split head_dim_v") else head_dim
    ext, pre, at = _lengths(rng, small, keys, on("later sequence"))
    params: dict[str, Any] = dict(
        extend_lens=ext, prefix_lens=pre, num_q_heads=num_kv * group, num_kv_heads=num_kv, head_dim=head_dim,
        head_dim_v=head_dim_v, dtype=dtype, is_causal=not on("non-causal"), custom_mask=on("custom mask"),
        skip_prefix_custom_mask=not on("mask over prefix"), sinks=on("sinks"),
        logit_cap=rng.uniform(10.0, 50.0) if on("logit cap") else 0.0,
        sliding_window=rng.randint(pre[at] // 2, pre[at]) if on("sliding window") else -1,
        max_len_extend_slack=rng.randint(1, 9) if on("slack") else 0,
        kv_indices_tail=rng.randint(1, 13) if on("index tail") else 0)
    if on("sm_scale passed"):  # as SGLang passes it (the default's value) or another scale
        params["sm_scale"] = (1.0 if rng.random() < 0.5 else rng.uniform(0.5, 1.5)) / math.sqrt(head_dim)
    if on("kv scales"):
        params.update(k_scale=rng.uniform(0.5, 2.0), v_scale=rng.uniform(0.5, 2.0))
    return Case(f"long-{tag}-{rng.randrange(1 << 30):08x}", full_params(params), rng.randrange(1 << 31),
                "long-drawn")


def covering_rows_of(names: list[str]) -> list[frozenset[str]]:
    """The rare features of each covering trial over the binary features `names` (one of them `WINDOW`): the
    complement of `covering_rows` over the others (each rare in 3 of 7 rows), all without a window, then two rows
    with a window: one with the `_COSTLY` features rare and the rest common, one the other way round."""
    others = [n for n in names if n != WINDOW]
    rows = [frozenset(n for n, value in zip(others, row) if not value) for row in covering_rows(len(others))]
    costly = frozenset(others) & _COSTLY
    return [*rows, frozenset({WINDOW, *costly}), frozenset({WINDOW, *others}) - costly]


def covering_trials(rng: random.Random, small: bool) -> tuple[tuple[str, Case], ...]:
    """(label, case) of the covering trials: `covering_rows_of` over `features`, with columns assigned to features
    and rows ordered at random. Labels: "long prefix and extend, " and the row's rare features (or "common
    values")."""
    names = list(features(small))
    rng.shuffle(names)
    rows = covering_rows_of(names)
    rng.shuffle(rows)
    out = []
    for i, rare in enumerate(rows):
        case = _case(rng, small, rare.__contains__, COVERING_PREFIX_KEYS[small], f"cover{i}")
        out.append((f"long prefix and extend, {', '.join(sorted(rare)) or 'common values'}", case))
    return tuple(out)


def complementary_pair(rng: random.Random, dtype: str, head_dim: int, keys: tuple[int, int],
                       ) -> tuple[tuple[str, Case], tuple[str, Case]]:
    """(label, case) of two GPU-sized long trials in input dtype `dtype` at `head_dim` (fixed, so the sandbox's
    Triton cache serves both), with a long prefix of `keys` keys and a long extend, no sliding window in either, and
    every other binary feature of `features` drawn in the first and flipped in the second. A GPU's covering trials
    draw only the bench's dtypes (float32's IEEE dots compile slowly at their drawn head widths), so a cut taken
    only for `dtype` inputs meets these two: whatever one other setting's value it is also keyed on, one of them
    has it, with the window (the cut's usual way to step aside) left off."""
    names = [f for f in features(False) if f not in (WINDOW, "float16")]
    drawn = frozenset(f for f in names if rng.random() < 0.5)
    pair = []
    for i, rare in enumerate((drawn, frozenset(names) - drawn)):
        case = _case(rng, False, rare.__contains__, keys, f"{dtype}{i}", dtype=dtype, head_dim=head_dim)
        pair.append((f"{dtype} long prefix and extend, {', '.join(sorted(rare)) or 'common values'}", case))
    return pair[0], pair[1]


def drawn_long_case(rng: random.Random, small: bool) -> Case:
    """One long case (`DRAWN_PREFIX_KEYS`) with every binary feature of `features` but the sliding window drawn
    with probability 1/2 (the CPU's float32 1/4: twice the interpreter's time). It never has a window: it is there
    for prefix cuts wider than the covering trials' prefixes, and a window narrower than the cut would hide one."""
    drawn = {f for f in features(small) if f != WINDOW and rng.random() < (0.25 if f == "float32" else 0.5)}
    return _case(rng, small, drawn.__contains__, DRAWN_PREFIX_KEYS[small], "prefix")
