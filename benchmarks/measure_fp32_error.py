"""How far from the float32 reference are float32 calls? (Evidence for the float32 tolerance in spec.py.)

For each implementation -- the honest kernels of the project and the verifier corpus (baseline, the optimized entry
point, family configurations, tests/verifier/honest/simple_triton.py) and the cheat ``fp32_as_fp16`` (float32 inputs
computed in float16) -- runs float32 cases and prints the error as the tolerance sees it: the smallest t with
``|got - expected| <= t + t * |expected|`` for every element, i.e. max |got - expected| / (1 + |expected|).

Cases: the fp32-inputs test case over several seeds (the verifier's only float32 trial), every test case cast to
float32, and float32 versions of the verifier's large-logits and long-prefix trials (agent/verifier/plan.py).
On the CPU Triton runs under its interpreter (small sizes); on a GPU at the verifier's GPU sizes.

    python benchmarks/measure_fp32_error.py [--seeds 8] [--only baseline,fp32_as_fp16]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._util import use_chip  # noqa: E402
from kernels.extend_attention import extend_attention_fwd as tuned  # noqa: E402
from kernels.extend_attention.baseline import extend_attention_fwd as baseline  # noqa: E402
from kernels.extend_attention.cases import adversarial_case, long_prefix_case  # noqa: E402
from kernels.extend_attention.family import FamilyConfig, run_family  # noqa: E402
from kernels.extend_attention.spec import TASK, make_inputs, reference  # noqa: E402
from kernels.task import Case  # noqa: E402


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.extend_attention_fwd


def _family(cfg: FamilyConfig):
    return lambda **a: run_family(cfg, **a)


def implementations() -> dict[str, object]:
    verifier = ROOT / "tests" / "verifier"
    return {
        "baseline": baseline,
        "tuned": tuned,
        "family_split3_pack": _family(FamilyConfig(block_m=16, block_n=16, num_warps=4, num_stages=2, num_splits=3,
                                                   pack_gqa=True)),
        "family_nosplit_nopack": _family(FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=False,
                                                      heavy_first=False)),
        "simple_triton": _load(verifier / "honest" / "simple_triton.py"),
        "fp32_as_fp16": _load(verifier / "cheats" / "fp32_as_fp16.py"),
    }


def as_float32(case: Case, suffix: str = "") -> Case:
    return Case(case.id + suffix, {**dict(case.params), "dtype": "float32"}, case.seed, case.case_class)


def error(fn, case: Case, seed: int, device: str) -> tuple[float, float]:
    """(max |d| / (1 + |ref|), max |d|) of `fn` on `case` at `seed`; inf if the output is not finite."""
    args = make_inputs(case, seed, device, "float32")
    expected = reference(args)["o_extend"]
    fn(**args)
    got = args["o_extend"].float()
    if not torch.isfinite(got).all():
        return float("inf"), float("inf")
    diff = (got - expected).abs()
    return float((diff / (1 + expected.abs())).max()), float(diff.max())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the fp32-inputs case")
    parser.add_argument("--only", default="", help="comma-separated implementation names (default: all)")
    parser.add_argument("--no-trials", action="store_true", help="skip the large-logits and long-prefix trials")
    parser.add_argument("--no-test-cases", action="store_true", help="skip the test cases cast to float32")
    parser.add_argument("--chip", default="h200", help="chip profile whose limits the kernels run with")
    args = parser.parse_args()
    use_chip(args.chip)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    small = device == "cpu"
    rng = random.Random(20261130)
    groups: list[tuple[str, list[tuple[Case, int]]]] = [
        ("fp32-inputs", [(TASK.case("fp32-inputs"), 100 + s) for s in range(args.seeds)])]
    if not args.no_test_cases:
        groups.append(("test cases as float32", [(as_float32(c), 7) for c in TASK.test_cases]))
    if not args.no_trials:
        groups.append(("large logits (float32)", [(as_float32(adversarial_case(rng, small)), 11 + i)
                                                  for i in range(3)]))
        groups.append(("long prefix (float32)", [(as_float32(long_prefix_case(rng, small)), 21 + i)
                                                 for i in range(2)]))
    only = {n for n in args.only.split(",") if n}
    print(f"device {torch.cuda.get_device_name() if device == 'cuda' else 'cpu (Triton interpreter)'}; "
          f"error = max |got-ref| / (1 + |ref|) (max |got-ref| in brackets); min/max over the group's calls")
    for name, fn in implementations().items():
        if only and name not in only:
            continue
        for label, runs in groups:
            errs = [error(fn, case, seed, device) for case, seed in runs]
            worst = max(errs)
            best = min(errs)
            print(f"{name:22s} {label:24s} n={len(errs):2d} max {worst[0]:.3g} [{worst[1]:.3g}]  "
                  f"min {best[0]:.3g} [{best[1]:.3g}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
