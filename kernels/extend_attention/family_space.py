"""The extend-attention family as the agent searches it: the task's `kernels.task.KernelFamily` (a case is a
`kernels.task.Case`, a chip a `kernels.task.ChipFacts`; this module imports neither, as trusted kernel code may not
import the contract's data modules).

Features of a case (`CaseShape`) are what a kernel reads from tensor metadata; the dispatch class is
`dispatch.dispatch_class` (the candidate computes the same from tensors with `dispatch.call_class`); shared memory,
fit and programs are the family's own formulas (`family.smem_footprint_kb`, `family.fit_to_chip`,
`family.auto_splits`), so the agent budgets exactly what the kernel launches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernels.chip import ChipLimits
from kernels.extend_attention.baseline import baseline_tiles
from kernels.extend_attention.common import DTYPES, Problem
from kernels.extend_attention.dispatch import dispatch_class
from kernels.extend_attention.family import (
    AHEAD_DERIVED,
    FamilyConfig,
    auto_splits,
    fit_to_chip,
    pack_factor,
    resolve_call,
    resolve_tiles,
    smem_footprint_kb,
)
from kernels.extend_attention.mla import mla_applies
from kernels.extend_attention.mla_gluon import MLA_ROUTE

#: Knobs of the family that the agent searches (`family.FamilyConfig` fields) and their allowed values: every knob
#: the tuned entry point sets (`tuned.class_config`). The first value of a switch is the baseline kernel's structure
#: (`ExtendAttentionFamily.structure_config`). Two values are functions of the call, resolved per call by
#: `family.resolve_call`, so that one configuration of a dispatch class can be right for all of its calls:
#: ``num_splits=0`` and ``gather_ahead=AHEAD_DERIVED``; ``ragged_tiles`` applies only to ragged calls.
KNOBS: dict[str, tuple[Any, ...]] = {
    "block_m": (16, 32, 64, 128),
    "block_n": (32, 64, 128),
    "num_warps": (4, 8),
    "num_stages": (1, 2, 3, 4),
    "num_splits": (0, 1, 2, 4, 8, 16),  # 0 = derived from the chip and the call (`splits.split_factor`)
    "pack_gqa": (False, True),
    "pregather": (False, True),  # copy the prefix K/V rows into contiguous order first (prefix_gather.py)
    "tma": (False, True),  # K/V tiles through tensor descriptors where family.tma_plan allows, else pointers
    # absorbed-MLA calls (576/512, V a view of K) on the dedicated kernel (mla.py: the two-warpgroup Gluon kernel
    # on Hopper, the Triton one elsewhere); other calls ignore it (`ExtendAttentionFamily.fits` keeps it "off" there)
    "mla": ("off", MLA_ROUTE),
    "heavy_first": (False, True),  # causal row blocks in decreasing work order
    "fold_scale": (False, True),  # softmax scale folded into the exp2 FMA
    "gather_stages": (0, 2, 3),  # loop-level pipelining of the prefix gather (the MLA kernel's too); 0 = off
    # with pregather: the programs of KV head h copy head h + ahead_heads's prefix (family_ahead.py), rows per key
    # tile; AHEAD_DERIVED = the rule family_ahead.gather_ahead_rows per call (0 where it says off)
    "gather_ahead": (0, AHEAD_DERIVED, 8, 16),
    "ahead_heads": (1, 2),
    "ahead_sync": (False, True),  # one launch ordered by work tickets, instead of one launch per ahead_heads heads
    "ragged_tiles": (0, 64),  # a ragged call (max E > 2 x mean E) runs these square tiles with 4 warps
}
#: `family.FamilyConfig` fields kept out of the agent's search until a GPU sweep (benchmarks/sweep_extend_attention.py
#: --prefill) has timed them: at their defaults in every candidate. The tuned entry point sets none of them.
UNSEARCHED: frozenset[str] = frozenset({"scores_ahead", "heads_inner"})


@dataclass(frozen=True)
class CaseShape:
    """Features of a case that a kernel can read from tensor metadata (shapes of q, k and the indptr).

    Attributes:
        batch: B. total_extend / max_extend: ΣE and max E_b. num_q_heads / num_kv_heads: H_q, H_kv.
        head_dim / head_dim_v: D_qk, D_v. dtype: input dtype name. total_prefix: ΣP. v_is_k: MLA (V a view of K).
        extend_lens: E_b per sequence (the grid's row blocks per sequence).
    """

    batch: int
    total_extend: int
    max_extend: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    dtype: str
    total_prefix: int = 0
    v_is_k: bool = False
    extend_lens: tuple[int, ...] = ()

    @property
    def rows_per_sequence(self) -> float:
        """ΣE / B."""
        return self.total_extend / max(self.batch, 1)

    @property
    def group(self) -> int:
        """GQA group G = H_q / H_kv."""
        return self.num_q_heads // self.num_kv_heads

    def problem(self) -> Problem:
        """The kernel's `common.Problem` of these sizes."""
        return Problem(self.batch, self.total_extend, self.total_prefix, self.num_q_heads, self.num_kv_heads,
                       self.head_dim, self.head_dim_v, DTYPES[self.dtype])


def case_shape(case: Any) -> CaseShape:
    """`CaseShape` of an extend-attention case (params as in `kernels.extend_attention.cases`)."""
    p = case.params
    ext = tuple(int(e) for e in p["extend_lens"])
    head_dim = int(p["head_dim"])
    return CaseShape(len(ext), sum(ext), max(ext), int(p["num_q_heads"]), int(p["num_kv_heads"]), head_dim,
                     int(p.get("head_dim_v") or head_dim), str(p.get("dtype") or "bfloat16"),
                     sum(p["prefix_lens"]), bool(p.get("mla")), ext)


class ExtendAttentionFamily:
    """`kernels.task.KernelFamily` of extend attention (see the protocol for each method's contract)."""

    module = "kernels.extend_attention.family"
    value_labels: Mapping[str, Mapping[Any, str]] = {"num_splits": {0: "auto"}, "gather_ahead": {AHEAD_DERIVED: "auto"}}

    def features(self, case: Any) -> CaseShape:
        return case_shape(case)

    def dispatch_class(self, features: CaseShape, ridge_flop_per_byte: float | None) -> str:
        return dispatch_class(features.rows_per_sequence, features.group, features.head_dim, ridge_flop_per_byte)

    def smem_kb(self, config: Mapping[str, Any], features: CaseShape) -> float:
        """`family.smem_footprint_kb` of `config` (missing knobs at their defaults) on the tiles the case runs
        (`family.resolve_tiles`, the case's longest extend as the caller's hint)."""
        prob = features.problem()
        tiles = resolve_tiles(FamilyConfig(**dict(config)), prob, features.max_extend)
        return smem_footprint_kb(tiles, prob, features.v_is_k)

    def fits(self, config: Mapping[str, Any], features: CaseShape, chip: Any) -> bool:
        """Within the chip's ``smem_per_block_kb`` and ``num_warps * warp_size <= max_threads_per_block``, and not a
        duplicate (a knob value that changes nothing): the dedicated MLA path (``mla`` other than "off") only for
        an MLA-shaped case (`mla.mla_applies`), gather-ahead only with ``pregather`` (it copies into the
        pre-gathered buffers), and its sub-knobs (ahead_heads, ahead_sync) away from their first values only with
        gather-ahead on.

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip` (the family needs every one).
        """
        if config.get("mla", "off") != "off" and not mla_applies(features.problem(), features.v_is_k, None, None):
            return False
        ahead = config.get("gather_ahead", 0)
        if ahead and not config.get("pregather", False):
            return False
        if not ahead and (config.get("ahead_heads", 1) != KNOBS["ahead_heads"][0]
                          or config.get("ahead_sync", False) != KNOBS["ahead_sync"][0]):
            return False
        limits = ChipLimits.from_profile(chip)
        if self.smem_kb(config, features) > limits.smem_per_block_kb:
            return False
        return int(config.get("num_warps", 1)) * limits.warp_size <= limits.max_threads_per_block

    def programs(self, config: Mapping[str, Any] | None, features: CaseShape, chip: Any) -> int:
        """Heads x row blocks x splits, by the kernels' grid rules. None is the baseline (one q head per program,
        `baseline_tiles` rows); a family configuration is first resolved for the case (`family.resolve_call`, the
        case's longest extend as the hint) and fitted to the chip as `run_family` does, and ``num_splits=0``
        resolved with `family.auto_splits`."""
        s, limits = features, ChipLimits.from_profile(chip)
        if config is None:
            block_m, _, _ = baseline_tiles(s.head_dim, DTYPES[s.dtype].itemsize, limits.smem_per_block_kb)
            return s.num_q_heads * sum(math.ceil(e / block_m) for e in s.extend_lens)
        prob = s.problem()
        resolved = resolve_call(FamilyConfig(**dict(config)), prob, limits, s.max_extend)
        fitted = fit_to_chip(resolved, prob, limits, s.v_is_k)
        splits = fitted.num_splits or auto_splits(fitted, prob, limits)
        pack = pack_factor(fitted, prob)
        heads = s.num_kv_heads if pack > 1 else s.num_q_heads
        return heads * splits * sum(math.ceil(e * pack / fitted.block_m) for e in s.extend_lens)

    def structure_config(self, features: Sequence[CaseShape], chip: Any) -> dict[str, Any]:
        """The baseline's tiles and warps for the widest head dim of `features` (`baseline_tiles`, fitted to the
        chip's shared memory), one q head per program, no split, one stage, the switches off; BLOCK_M halved
        while the family's footprint of some case exceeds the chip's shared memory per block."""
        widest = max(features, key=lambda s: s.head_dim)
        block_m, block_n, warps = baseline_tiles(widest.head_dim, DTYPES[widest.dtype].itemsize,
                                                 ChipLimits.from_profile(chip).smem_per_block_kb)
        config = {k: v[0] for k, v in KNOBS.items()}
        config.update(block_m=block_m, block_n=block_n, num_warps=warps, num_stages=1, num_splits=1,
                      pack_gqa=False)
        smallest = min(KNOBS["block_m"])
        while not all(self.fits(config, s, chip) for s in features) and config["block_m"] > smallest:
            config["block_m"] = max(b for b in KNOBS["block_m"] if b < config["block_m"])
        return config

    def refit(self, config: Mapping[str, Any], features: Sequence[CaseShape], chip: Any) -> dict[str, Any] | None:
        """`config` (e.g. a finding measured on a larger chip) fitted to `chip` for every case of `features`, its
        other knobs (split factor, switches, pack GQA) kept; None if it cannot fit. Unchanged when it already fits.

        Shared memory (`smem_kb`): lower num_stages down to 2 (kept >= 2 when the configuration pipelines: the
        software-pipelining pattern's point is overlapping the next K/V tile's load with this tile's dots), then
        halve the larger tile of BLOCK_M / BLOCK_N (BLOCK_N on a tie; a square-ish tile keeps the two dots'
        arithmetic intensity), then lower num_stages to 1. Warps: scaled with the tile (the same tile elements per
        warp, as Triton's own matmul configurations pair 128x128 tiles with 8 warps and 64x64 with 4), snapped to
        the allowed values, then capped at max_threads_per_block / warp_size.

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip`, naming the field.
        """
        limits = ChipLimits.from_profile(chip)
        out = {**self.defaults(), **dict(config)}
        if all(self.fits(out, f, chip) for f in features):
            return dict(config)
        floor_stages = min(int(out["num_stages"]), 2)
        while max(self.smem_kb(out, f) for f in features) > limits.smem_per_block_kb:
            smaller = _shrink_for_smem(out, floor_stages)
            if smaller is None:
                return None
            out = smaller
        area = (out["block_m"] * out["block_n"]) / (config.get("block_m", out["block_m"])
                                                    * config.get("block_n", out["block_n"]))
        warps = max(1, round(int(out["num_warps"]) * area))
        allowed = [w for w in KNOBS["num_warps"] if w * limits.warp_size <= limits.max_threads_per_block]
        if not allowed:
            return None
        out["num_warps"] = min(allowed, key=lambda w: (abs(math.log(w / warps)), -w))
        out = {**dict(config), **{k: out[k] for k in ("block_m", "block_n", "num_stages", "num_warps")}}
        return out if all(self.fits(out, f, chip) for f in features) else None

    def defaults(self) -> dict[str, Any]:
        return FamilyConfig().to_dict()

    def candidate_limits(self, chip: Any) -> dict[str, Any] | None:
        """The chip's `kernels.chip.ChipLimits` from its profile: a candidate passes them to every `run_family`
        call (the kernel never queries the device for them).

        Raises:
            kernels.chip.UnknownChipLimit: a limit is unknown in `chip`, naming the field.
        """
        return {k: v for k, v in ChipLimits.from_profile(chip).to_dict().items() if k != "chip"}


def _shrink_for_smem(config: dict[str, Any], floor_stages: int) -> dict[str, Any] | None:
    """One step of `ExtendAttentionFamily.refit`'s shared-memory order (None: nothing left to shrink)."""
    if config["num_stages"] > floor_stages:
        return {**config, "num_stages": config["num_stages"] - 1}
    tiles = {k: [v for v in KNOBS[k] if v < config[k]] for k in ("block_m", "block_n")}
    order = ("block_n", "block_m") if config["block_n"] >= config["block_m"] else ("block_m", "block_n")
    for knob in order:
        if tiles[knob]:
            return {**config, knob: max(tiles[knob])}
    if config["num_stages"] > 1:
        return {**config, "num_stages": config["num_stages"] - 1}
    return None


FAMILY = ExtendAttentionFamily()
