"""Task spec for split-K GEMM: seeded inputs, reference, tolerances, roofline FLOPs/bytes, cases, and the plug-in
parts (`kernels.task`): family, formula variables, hidden cases, candidate template, catalog, drop-in.

``C[M, N] = A[M, K] @ B[N, K]^T`` (weights in the ``torch.nn.Linear`` [N, K] layout), float32 accumulation,
output in the input dtype. Entry point ``splitk_gemm(a, b, c)``, writing ``c`` in place and returning it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from kernels.splitk_gemm import variables
from kernels.splitk_gemm.cases import BENCH_CASES, TEST_CASES, dtype_case, full_params, hidden_cases, random_case
from kernels.splitk_gemm.common import DTYPES
from kernels.splitk_gemm.reference import reference_gemm
from kernels.splitk_gemm.space import FAMILY, KNOBS
from kernels.task import Case, DropIn, FormulaVariables, TaskFiles, TaskSpec, Tolerance

_HERE = Path(__file__).resolve().parent


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; expected one of {sorted(DTYPES)}")
    return DTYPES[dtype]


def make_inputs(case: Case, seed: int | None = None, device: str | torch.device = "cpu",
                dtype: str | torch.dtype | None = None) -> dict[str, Any]:
    """Keyword arguments of ``splitk_gemm`` for `case`, deterministic in `seed`.

    a [M, K] is normal with standard deviation a_scale (``outlier_features`` of its K columns, drawn from `seed`,
    scaled by ``outlier_scale``); b [N, K] is normal with standard deviation
    b_scale/sqrt(K) (the scale of initialized weights), so every output has a standard deviation of about
    a_scale * b_scale whatever K is (both 1 unless the case draws them); c [M, N] is filled with NaN so that an
    output the kernel does not write fails. With ``a_transposed`` / ``b_kn`` the tensor is the transposed view
    of a [K, M] / [K, N] tensor (same values, other strides).

    Returns:
        {"a": [M, K], "b": [N, K], "c": [M, N]}, all of the case's (or the given) dtype on `device`.
    """
    p = full_params(dict(case.params))
    device = torch.device(device)
    dt = _dtype(dtype or p["dtype"])
    gen = torch.Generator(device=device).manual_seed(case.seed if seed is None else seed)
    m, n, k = p["m"], p["n"], p["k"]

    def randn(rows: int, cols: int, scale: float, transposed: bool) -> torch.Tensor:
        shape = (cols, rows) if transposed else (rows, cols)
        x = (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dt)
        return x.T if transposed else x

    a = randn(m, k, float(p["a_scale"]), p["a_transposed"])
    b = randn(n, k, float(p["b_scale"]) / max(k, 1) ** 0.5, p["b_kn"])
    if p["outlier_features"] and k:
        features = torch.randperm(k, generator=gen, device=device)[:int(p["outlier_features"])]
        a[:, features] = (a[:, features].float() * float(p["outlier_scale"])).to(dt)
    return {"a": a, "b": b, "c": torch.full((m, n), float("nan"), dtype=dt, device=device)}


def reference(inputs: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """``{"c": float32 [M, N]}``: `reference_gemm` (float64 product) of the inputs."""
    return {"c": reference_gemm(inputs["a"], inputs["b"])}


def flops(case: Case) -> float:
    """Compulsory FLOPs: 2 * M * N * K (one multiply and one add per term)."""
    p = full_params(dict(case.params))
    return 2.0 * p["m"] * p["n"] * p["k"]


def bytes_moved(case: Case) -> float:
    """Compulsory device-memory bytes: read A and B once, write C once: elem * (M*K + N*K + M*N)."""
    p = full_params(dict(case.params))
    m, n, k = p["m"], p["n"], p["k"]
    return float(_dtype(p["dtype"]).itemsize * (m * k + n * k + m * n))


#: Bound |got - ref| <= atol + rtol * |ref| per input dtype, with outputs of about unit variance (`make_inputs`).
#: Measured on the CPU as max |got - ref| / (1 + |ref|) against the float64 product, M=16, N=512, K=37..28672:
#: - float32 means IEEE float32 (tl.dot with input_precision="ieee"): float32 products in another summation order
#:   (plain, or as 8 split-K partials) <= 1.3e-6; the same inputs rounded to tf32 (Triton's default for float32
#:   dots on GPUs, 10-bit mantissa) >= 9.0e-4, computed in float16 >= 9.0e-4. 1e-4 sits 75x above the honest
#:   error and 9x below a tf32 or float16 computation.
#: - bfloat16 / float16 outputs: one rounding of the float32 result to the output dtype dominates (<= 2**-8 and
#:   2**-11 relative: measured <= 2.7e-3 and <= 3.7e-4); the float32 accumulation adds ~1e-6 at any K up to
#:   28672. Bounds 1e-2 (bfloat16) and 2e-3 (float16) leave ~4x; an 8-bit (fp8-like) input or accumulation is
#:   1e-1 off. One bound serves the GPU and the interpreter (its dots are float32 numpy products).
#: - bfloat16 / float16 also carry the rounding bound of `Tolerance.ulps`: the contract's one rounding of a float32
#:   sum errs by <= 0.5 ulp of the output dtype plus the accumulation's own error near zero (<= 3.3e-6 at K =
#:   28672 and unit scales, <= 1.2e-5 at the drawn scales' largest product 4: ulp_atol 1e-4), while split partials
#:   or a K-loop accumulator kept in the output dtype stay inside 2e-3 + 2e-3*|ref| (float16, K = 300: max 9e-4)
#:   yet exceed one ulp (beyond ulp_atol) at 5-78% of the elements (torch simulation, M x N x K from 3x13x37 to
#:   16x512x4096; honest float32 accumulation: <= 0.49 ulp everywhere).
TOLERANCES = {
    "bfloat16": Tolerance(atol=1e-2, rtol=1e-2, ulps=1.0, ulp_atol=1e-4),
    "float16": Tolerance(atol=2e-3, rtol=2e-3, ulps=1.0, ulp_atol=1e-4),
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
}

#: The report's drop-in package: a module with the task's ``splitk_gemm(a, b, c)``, in place of
#: ``torch.nn.functional.linear(x, weight)`` for bias-free skinny layers.
DROPIN = DropIn(package="chiplore_splitk_gemm",
                summary="Split-K GEMM c = a @ b.T for skinny (decode / small-batch) linear layers, tuned by chiplore.",
                replaces="torch.nn.functional.linear(x, weight, out=c)  # bias-free, weight [N, K]")

TASK = TaskSpec(
    name="splitk_gemm",
    entry_point="splitk_gemm",
    baseline_module="kernels.splitk_gemm.baseline",
    optimized_module="kernels.splitk_gemm",
    output_args=("c",),
    make_inputs=make_inputs,
    reference=reference,
    tolerances=TOLERANCES,
    flops=flops,
    bytes=bytes_moved,
    test_cases=TEST_CASES,
    bench_cases=BENCH_CASES,
    random_case=random_case,
    knobs=KNOBS,
    fresh_inputs=("a",),
    negated_inputs=("b",),
    hidden_cases=hidden_cases,
    dtype_case=dtype_case,
    family=FAMILY,
    variables=FormulaVariables(variables=variables.VARIABLES, functions=variables.FUNCTIONS,
                               values=variables.case_values, bind=variables.bind),
    files=TaskFiles(candidate_template=_HERE / "candidate.py.j2", catalog=_HERE / "catalog.yaml"),
    dropin=DROPIN,
)
