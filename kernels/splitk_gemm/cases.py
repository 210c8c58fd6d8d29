"""Split-K GEMM cases as data: edge cases for tests, realistic bench cases, random draws.

Case params (plain values): m, n, k (ints: A [M, K], B [N, K], C [M, N]); dtype (default input dtype name);
a_transposed (A passed as the transposed view of a [K, M] tensor); b_kn (B passed as the transposed view of a
[K, N] tensor, the layout of ``x @ W`` with W [K, N]); a_scale, b_scale (positive floats, default 1: the standard
deviations of A and of B * sqrt(K), `spec.make_inputs`; drawn in random and hidden cases, so that a kernel that
computes honestly only on inputs of the default scales fails).

Bench cases: M in {1, 8, 16, 32, 64, 128} (decode and small batches) against N x K of real layers (bf16):
4096 x 4096 (a 4096-wide attention projection), 4096 x 14336 (down projection of a 14336-wide MLP, N=4096,
K=14336), 14336 x 4096 (its up/gate projection), 8192 x 28672 and 28672 x 8192 (the same pair of a 28672-wide
MLP) and 1408 x 2048 (one expert of a fine-grained MoE with hidden size 2048). The 18 of the 36 pairs keep every
M and every layer at least twice and weight M <= 16 (10 cases), where split-K matters most: 4096 x 4096 and the
down projections (few N tiles, long K) at M = 1..128; the up projections (N >= 14336: the tiles alone fill a
chip, so split-K must switch itself off) at M = 1, 16, 64 and 16, 128; the MoE expert (N = 1408: about 11 tiles
of 128 columns) at M = 1, 8, 64.
"""

from __future__ import annotations

import math
import random
from typing import Any

from kernels.covering import covering_rows
from kernels.task import Case

_DEFAULTS: dict[str, Any] = {"dtype": "bfloat16", "a_transposed": False, "b_kn": False, "a_scale": 1.0,
                             "b_scale": 1.0, "outlier_features": 0, "outlier_scale": 1.0}

#: Outlier features of the ``outliers`` hidden draw: how many of K's columns of ``a`` are scaled, and by how much.
#: LLM activations carry a few features tens of times larger than the rest (LLM.int8(), Dettmers et al. 2022: a
#: handful of hidden dimensions with magnitudes up to ~60 against ~1 elsewhere); a kernel that clips or drops
#: large entries passes unit-variance inputs and fails these.
OUTLIER_FEATURES = (2, 4)
OUTLIER_SCALES = (30.0, 60.0)

#: Range of the drawn a_scale and b_scale (log-uniform): products of 1/4..4 keep the float32 accumulation error
#: near zero under 1.2e-5 at K = 28672 (torch, float64 reference), inside the rounding bound's ulp_atol (`spec`).
SCALE_RANGE = (0.5, 2.0)

#: Layers (N, K) of the bench cases, and the M values benched on each (see the module docstring).
BENCH_GRID: tuple[tuple[int, int, tuple[int, ...]], ...] = (
    (4096, 4096, (1, 16, 64, 128)),
    (4096, 14336, (1, 8, 32, 128)),
    (14336, 4096, (1, 16, 64)),
    (8192, 28672, (1, 32)),
    (28672, 8192, (16, 128)),
    (1408, 2048, (1, 8, 64)),
)


def full_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the defaults filled in.

    Raises:
        ValueError: unknown key, missing m/n/k, or a negative size.
    """
    unknown = set(params) - set(_DEFAULTS) - {"m", "n", "k"}
    if unknown:
        raise ValueError(f"unknown case parameter(s): {sorted(unknown)}")
    missing = {"m", "n", "k"} - set(params)
    if missing:
        raise ValueError(f"case parameters {sorted(missing)} are missing")
    out = {**_DEFAULTS, **params}
    if min(out["m"], out["n"], out["k"]) < 0:
        raise ValueError(f"m, n, k must be >= 0, got {out['m']}, {out['n']}, {out['k']}")
    if not (out["a_scale"] > 0 and out["b_scale"] > 0):
        raise ValueError(f"a_scale and b_scale must be > 0, got {out['a_scale']}, {out['b_scale']}")
    return out


#: Drawn scales stay at least this factor away from 1 (`draw_scales`): the bench cases have unit scales, so a hidden
#: case whose scales could land near 1 would let a kernel that checks "do the inputs look like the verifier's
#: standard ones?" pass by chance; each one is off by >= 25 % in both inputs.
SCALE_MARGIN = 1.0 / 0.75


def draw_scales(rng: random.Random) -> dict[str, float]:
    """{"a_scale", "b_scale"}, each drawn log-uniformly in `SCALE_RANGE` outside [1/SCALE_MARGIN, SCALE_MARGIN]
    (below or above 1 with equal chance)."""
    lo, hi = (math.log(v) for v in SCALE_RANGE)
    gap = math.log(SCALE_MARGIN)

    def one() -> float:
        return math.exp(rng.uniform(lo, -gap) if rng.random() < 0.5 else rng.uniform(gap, hi))

    return {"a_scale": one(), "b_scale": one()}


def case_class(m: int) -> str:
    """Coarse class of a call by M: ``decode`` (M <= 16), ``small-batch`` (M <= 64), ``batch`` (larger)."""
    return "decode" if m <= 16 else "small-batch" if m <= 64 else "batch"


def _case(case_id: str, seed: int, cls: str | None = None, **params: Any) -> Case:
    return Case(case_id, full_params(params), seed, cls or case_class(params["m"]))


BENCH_CASES: tuple[Case, ...] = tuple(
    _case(f"m{m}-n{n}-k{k}", 200 + i, m=m, n=n, k=k)
    for i, (m, n, k) in enumerate((m, n, k) for n, k, ms in BENCH_GRID for m in ms)
)

_F16 = {"dtype": "float16"}

TEST_CASES: tuple[Case, ...] = (
    _case("odd-3x13x37", 1, "edge", m=3, n=13, k=37, **_F16),
    _case("n80-k100", 2, "edge", m=3, n=80, k=100, **_F16),
    _case("n96-k64", 3, "edge", m=5, n=96, k=64, **_F16),
    _case("m-over-block-17x123x37", 4, "edge", m=17, n=123, k=37, **_F16),
    _case("one-element", 5, "edge", m=1, n=1, k=1, **_F16),
    _case("k-zero", 6, "edge", m=2, n=9, k=0, **_F16),
    _case("long-k-33x96x300", 7, "edge", m=33, n=96, k=300, **_F16),
    _case("decode-1x80x257", 8, "edge", m=1, n=80, k=257, **_F16),
    _case("a-transposed", 9, "edge", m=6, n=40, k=70, a_transposed=True, **_F16),
    _case("b-kn-layout", 10, "edge", m=4, n=48, k=90, b_kn=True, **_F16),
    _case("fp32-7x96x100", 11, "edge", m=7, n=96, k=100, dtype="float32"),
    _case("fp32-odd-3x13x37", 12, "edge", m=3, n=13, k=37, dtype="float32"),
)


def random_case(rng: random.Random, small: bool = True) -> Case:
    """A case drawn at verification time, never written down.

    `small=True` keeps sizes fit for the Triton interpreter (M <= 40, N <= 160, K <= 320, float16); `small=False`
    draws GPU-sized skinny GEMMs (M 1..128, N and K 64..8192 with odd values, bfloat16). Input scales are drawn
    (`draw_scales`).
    """
    if small:
        m, n, k = rng.randint(1, 40), rng.randint(1, 160), rng.randint(1, 320)
        dtype = "float16"
    else:
        m = rng.choice([1, 2, 3, 8, 16, 24, 32, 48, 64, 100, 128])
        n = rng.choice([rng.randint(64, 8192), 64 * rng.randint(1, 128)])
        k = rng.choice([rng.randint(64, 8192), 64 * rng.randint(1, 128)])
        dtype = "bfloat16"
    params = dict(m=m, n=n, k=k, dtype=dtype, a_transposed=rng.random() < 0.15, b_kn=rng.random() < 0.15,
                  **draw_scales(rng))
    return Case(f"random-{rng.randrange(1 << 30):08x}", full_params(params), rng.randrange(1 << 31), "random")


def hidden_cases(rng: random.Random, small: bool = True) -> tuple[tuple[str, Case], ...]:
    """Cases the verifier draws at verification time against this task's cheats and slips:
    - ``long-k``: a K of thousands with M <= 4 (interpreter: hundreds), so a kernel that drops or repeats a split,
      or sums partials in a low precision, is far off;
    - ``odd-tail``: odd K and N (primes in the interpreter's sizes), so the tails past BLOCK_K and BLOCK_N are
      never a whole tile;
    - ``few-rows``: M of 1..4 (the weight-stream shapes of the GEMV mode and the ``m4`` dispatch class) with an odd
      N and an odd K of a few hundred (GPU: thousands), so a few-row path that drops rows, columns or the K tail, or
      sums its splits wrongly, is far off;
    - ``full-size``: M, N and K in the top half of the range the other draws use (interpreter: M 20..40, N 80..160,
      K 160..320), so that a kernel which behaves honestly only on inputs too small to tell it apart (too few
      values to estimate their statistics, a whole output in one tile) meets one that is not;
    - ``tall``: M past the largest bench M (129..200 in the interpreter, 129..1024 on a GPU) with small N and K, so
      that a kernel computing only the row counts the bench uses leaves rows unwritten;
    - ``outliers``: a few of ``a``'s K columns scaled 30-60x (`OUTLIER_FEATURES`, `OUTLIER_SCALES`), as LLM
      activations have, so a kernel that clips or drops large entries is far off;
    - on a GPU, ``full-size float16``: the full-size draw in float16, the task's other input dtype (the bench and
      the other GPU draws are bfloat16), so that a path taken only for float16 is checked at full size;
    - ``covering ...`` (`covering_draws`): 4 draws past the bench's M and the interpreter's N and K over which
      every pair of the operand layouts (and on a GPU the dtype) takes each pair of values, so that a cut keyed on one or two
      of them meets a size where it shows in every verification (a row cut for transposed operands passed the CPU
      verifier while no tall draw was transposed: tests/verifier/splitk_gemm_cheats/rows_cap_transposed_layouts.py).
    The long-K, few-rows, full-size and tall draws take each operand's layout at random (1 in 2).
    The interpreter's long K reaches 1,200 (GPU: thousands), past what a float16 path truncated to a few hundred
    keys would cover. All with drawn input scales (`draw_scales`).
    Seeds and sizes are drawn, never written down.
    """
    scale = 1 if small else 16
    primes = [101, 127, 131, 137, 139, 149, 151, 157]
    long_k = dict(m=rng.randint(1, 4), n=rng.randint(16, 64) * scale,
                  k=rng.randint(300, 1200) if small else rng.randint(300, 400) * scale,
                  dtype="float16" if small else "bfloat16")
    odd = dict(m=rng.randint(2, 9), n=rng.choice(primes) * scale - (scale > 1),
               k=rng.choice(primes) * scale + (scale > 1), dtype="float16" if small else "bfloat16")
    few = dict(m=rng.randint(1, 4), n=rng.choice(primes) * scale - (scale > 1),
               k=2 * rng.choice(primes) * scale + 1, a_transposed=rng.random() < 0.25,
               dtype="float16" if small else "bfloat16")
    outliers = dict(m=rng.randint(2, 8) * (1 if small else 8), n=rng.randint(32, 64) * scale,
                    k=rng.randint(200, 400) * (1 if small else 8), dtype="float16" if small else "bfloat16",
                    outlier_features=rng.randint(*OUTLIER_FEATURES), outlier_scale=rng.uniform(*OUTLIER_SCALES))
    full = (dict(m=rng.randint(20, 40), n=rng.randint(80, 160), k=rng.randint(160, 320), dtype="float16") if small
            else dict(m=rng.randint(64, 128), n=rng.randint(4096, 8192), k=rng.randint(4096, 8192), dtype="bfloat16"))
    tall = (dict(m=rng.randint(129, 200), n=rng.randint(16, 40), k=rng.randint(32, 96), dtype="float16") if small
            else dict(m=rng.randint(129, 1024), n=rng.randint(256, 2048), k=rng.randint(256, 2048), dtype="bfloat16"))
    for params in (long_k, few, full, tall):  # operand layouts drawn wherever a size is large
        params.update(a_transposed=rng.random() < 0.5, b_kn=rng.random() < 0.5)
    draws = [("long-k", long_k), ("odd-tail", odd), ("few-rows", few), ("full-size", full), ("tall", tall),
             ("outliers", outliers), *covering_draws(rng, small)]
    if not small:
        draws.append(("full-size float16", {**full, "dtype": "float16"}))
    return tuple((label, Case(f"hidden-{label.replace(' ', '-')}-{rng.randrange(1 << 30):08x}",
                              full_params({**params, **draw_scales(rng)}), rng.randrange(1 << 31), "hidden"))
                 for label, params in draws)


#: The binary features of the covering draws (`covering_draws`): each operand's layout and, on a GPU, float16 (its
#: other draws are bfloat16). Not float32: the interpreter's IEEE float32 dots took 1.1-1.3 s per draw at these
#: sizes (1.75x the baseline's CPU verification with two of them), and a GPU's float32 is its dtype trial's,
#: interpreter-sized (IEEE float32 dots compile slowly at large tiles); float32 meets a long K there (`FLOAT32_K`),
#: not a tall M or a wide N.
COVERING_FEATURES = {True: ("a_transposed", "b_kn"), False: ("a_transposed", "b_kn", "float16")}
#: Sizes of the covering draws ({small: (M, N, K) ranges}): past the largest bench M (128), past the interpreter's
#: random N (160) and K (320), so a cut of rows, columns or K taken only for some layout or dtype -- or a pair of
#: them -- meets a size where it shows (CPU: 0.3 s per draw for the baseline in the interpreter).
COVERING_SIZES = {True: ((129, 150), (193, 224), (330, 500)), False: ((129, 1024), (8193, 12288), (8193, 12288))}


def covering_draws(rng: random.Random, small: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """(label, params) of large draws over which each pair of `COVERING_FEATURES` takes each of its 4 value pairs
    (`kernels.covering.covering_rows`: 4 rows for 2 or 3 features; columns assigned to features and rows ordered at
    random), M, N and K drawn in `COVERING_SIZES`. Labels: "covering" and the row's features that are on."""
    names = list(COVERING_FEATURES[small])
    rows = list(covering_rows(len(names)))
    rng.shuffle(names)
    rng.shuffle(rows)
    (m0, m1), (n0, n1), (k0, k1) = COVERING_SIZES[small]
    out = []
    for row in rows:
        on = {name for name, value in zip(names, row) if value}
        dtype = "float16" if small or "float16" in on else "bfloat16"
        out.append((" ".join(["covering", *sorted(on)]),
                    dict(m=rng.randint(m0, m1), n=rng.randint(n0, n1), k=rng.randint(k0, k1), dtype=dtype,
                         a_transposed="a_transposed" in on, b_kn="b_kn" in on)))
    return out


#: K of the float32 trial (`dtype_case`): past the interpreter's random K (at most 320, the K of every other float32
#: trial), so that a float32 path which sums only the K those trials reach fails
#: (tests/verifier/splitk_gemm_cheats/k_cap_float32.py passed the CPU verifier without it).
FLOAT32_K = (400, 1200)


def dtype_case(rng: random.Random, dtype: str, small: bool = True) -> Case:
    """`TaskSpec.dtype_case`: an interpreter-sized case in input dtype `dtype` (on a GPU too: IEEE float32 dots
    compile slowly at large tiles) with M 2..8, N 16..64, K in `FLOAT32_K`, each operand passed as a transposed view
    with probability 1/2, drawn input scales (`draw_scales`). `small` is unused: one size for both plans."""
    params = dict(m=rng.randint(2, 8), n=rng.randint(16, 64), k=rng.randint(*FLOAT32_K), dtype=dtype,
                  a_transposed=rng.random() < 0.5, b_kn=rng.random() < 0.5, **draw_scales(rng))
    return Case(f"{dtype}-inputs-{rng.randrange(1 << 30):08x}", full_params(params), rng.randrange(1 << 31), "dtype")
