"""The split-K GEMM family as the agent searches it: the task plug-in contract's ``KernelFamily`` (duck-typed).

Features of a case (`GemmShape`) are what a kernel reads from tensor metadata; the dispatch class is
`dispatch.dispatch_class` (candidates compute the same from tensors with `dispatch.call_class`). Shared memory,
fit and programs are the family's own functions (`config.smem_footprint_kb`, `config.fit_to_limits`,
`family.plan_launch`), so the agent budgets exactly what the kernel launches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kernels.chip import ChipLimits
from kernels.splitk_gemm.baseline import baseline_tiles
from kernels.splitk_gemm.common import DTYPES, Problem
from kernels.splitk_gemm.config import GEMV_OFFER_ROWS, FamilyConfig, gemv_rows, smem_footprint_kb
from kernels.splitk_gemm.dispatch import dispatch_class
from kernels.splitk_gemm.family import plan_launch
from kernels.splitk_gemm.tuned import choose_config

#: Knobs of the optimized family that the agent searches (`family.FamilyConfig` fields) and their allowed values.
#: The first value of each is the baseline kernel's structure (one program per tile, no split).
KNOBS: dict[str, tuple[Any, ...]] = {
    "block_m": (64, 16, 32, 128),
    "block_n": (64, 32, 128, 256),
    "block_k": (64, 32, 128, 256),
    "split_k": (1, 0, 2, 3, 4, 6, 8, 12, 16),  # 0 = sized from the chip's compute units (family.auto_split_k)
    "fused_reduce": (False, True),  # the tile's last split sums the partials: one launch, deterministic
    "atomic": (False, True),  # float32 atomics: one launch, the one non-deterministic mode
    "group_m": (8, 1, 4, 16),
    "num_warps": (4, 2, 8),
    "num_stages": (3, 2, 4, 5, 6),
    "stream_k": (False, True),
    "gemv": (False, True),  # vector-unit product of few rows, no tl.dot (FamilyConfig.gemv)
    "evict_weights": (False, True),  # weights loaded evict-first from L2 (FamilyConfig.evict_weights)
}


@dataclass(frozen=True)
class GemmShape:
    """Features of a case a kernel reads from tensor metadata: M, N, K and the input dtype name."""

    m: int
    n: int
    k: int
    dtype: str

    def problem(self) -> Problem:
        """The kernels' `common.Problem` of these sizes."""
        return Problem(self.m, self.n, self.k, DTYPES[self.dtype])


class SplitKGemmFamily:
    """The task's ``KernelFamily`` (kernels/task.py's protocol of the plug-in contract)."""

    module = "kernels.splitk_gemm.family"
    value_labels: Mapping[str, Mapping[Any, str]] = {"split_k": {0: "auto"}}

    def features(self, case) -> GemmShape:
        p = case.params
        return GemmShape(int(p["m"]), int(p["n"]), int(p["k"]), str(p.get("dtype") or "bfloat16"))

    def dispatch_class(self, features: GemmShape, ridge_flop_per_byte: float | None) -> str:
        return dispatch_class(features.m, features.n, features.k)

    def smem_kb(self, config: Mapping[str, Any], features: GemmShape) -> float:
        """`config.smem_footprint_kb` of `config` (missing knobs at their defaults) as launched on the case: in GEMV
        mode with BLOCK_M lowered to `config.gemv_rows` of M, as `family.plan_launch` lowers it."""
        cfg = FamilyConfig(**dict(config))
        if cfg.gemv:
            cfg = replace(cfg, block_m=gemv_rows(cfg.block_m, features.m))
        return smem_footprint_kb(cfg, DTYPES[features.dtype])

    def fits(self, config: Mapping[str, Any], features: GemmShape, chip: Any) -> bool:
        """Within ``smem_per_block_kb`` and ``num_warps * warp_size <= max_threads_per_block`` (unknown: fits); the
        GEMV mode only up to `config.GEMV_OFFER_ROWS` rows (where it is offered: the search never spends an
        evaluation on it where it measured slower)."""
        if config.get("gemv") and features.m > GEMV_OFFER_ROWS:
            return False
        smem_kb = chip.get("smem_per_block_kb")
        if smem_kb and self.smem_kb(config, features) > smem_kb:
            return False
        threads, warp = chip.get("max_threads_per_block"), chip.get("warp_size")
        return not (threads and warp and int(config.get("num_warps", 4)) * warp > threads)

    def programs(self, config: Mapping[str, Any] | None, features: GemmShape, chip: Any) -> int:
        """Programs of the main kernel: the baseline's tiles (config None), or `family.plan_launch` of `config` on
        the chip's limits (fitted; split_k = 0 and stream-K sized from the compute units).

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip`, naming the field."""
        prob = features.problem()
        if config is None or prob.m == 0 or prob.n == 0:
            block_m, block_n, _, _, _ = baseline_tiles(prob)
            return math.ceil(prob.m / block_m) * math.ceil(prob.n / block_n)
        return plan_launch(FamilyConfig(**dict(config)), prob, ChipLimits.from_profile(chip)).programs

    def structure_config(self, features: Sequence[GemmShape], chip: Any) -> dict[str, Any]:
        """The baseline's structure: one program per tile, no split, the baseline's BLOCK_N / BLOCK_K / warps /
        stages, BLOCK_M of the widest M of `features` (`baseline.baseline_tiles`); stages lowered while some case
        does not fit the chip."""
        widest = max(features, key=lambda s: s.m)
        block_m, block_n, block_k, warps, stages = baseline_tiles(widest.problem())
        config = {name: values[0] for name, values in KNOBS.items()}
        config.update(block_m=block_m, block_n=block_n, block_k=block_k, num_warps=warps, num_stages=stages,
                      split_k=1)
        while not all(self.fits(config, s, chip) for s in features) and config["num_stages"] > 1:
            config["num_stages"] -= 1
        return config

    def tuned_config(self, features: Sequence[GemmShape], chip: Any) -> dict[str, Any]:
        """The tuned entry point's rule (`tuned.choose_config`) for the case of widest M of `features` (its BLOCK_M
        covers every case), with split_k 0: the split count the rule sizes per call (`schedule.auto_split_k`), so
        one configuration reproduces the rule on every size of the class. A GEMV-mode rule (M <=
        `config.GEMV_OFFER_ROWS`) gets the least `KNOBS` BLOCK_M (16): `family.plan_launch` lowers it to the same
        `config.gemv_rows` of each call's M as the rule's own BLOCK_M.

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip`, naming the field.
        """
        widest = max(features, key=lambda s: s.m)
        prob = widest.problem()
        config = choose_config(ChipLimits.from_profile(chip), prob.m, prob.n, prob.k, prob.dtype).to_dict()
        if config["gemv"]:
            config["block_m"] = min(v for v in KNOBS["block_m"] if v >= config["block_m"])
        return {**config, "split_k": 0 if not config["stream_k"] else config["split_k"]}

    def defaults(self) -> dict[str, Any]:
        return FamilyConfig().to_dict()

    def candidate_limits(self, chip: Any) -> dict[str, Any]:
        """The chip's `kernels.chip.ChipLimits` from its profile, ``{field: value}``: a candidate passes them to every
        `run_family` call, so its tiles are fitted and split_k = 0 / stream-K sized for the chip it was written for.

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip`, naming the field.
        """
        return {k: v for k, v in ChipLimits.from_profile(chip).to_dict().items() if k != "chip"}


FAMILY = SplitKGemmFamily()
