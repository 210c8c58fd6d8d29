"""The kernel family's search space as the agent sees it: case classes, knob configurations, candidate files.

A family candidate is a dispatch table ``{case class: knob configuration}`` rendered into a standalone file
(template ``agent/templates/extend_attention_candidate.py.j2``) that imports the family's `FamilyConfig` and
`run_family`. The class of a call is computed inside the candidate from tensor metadata only (shapes, never
benchmark sizes):

- bound: ``memory`` when (extend rows per sequence) x (q heads per KV head) is below the chip's ridge point
  (peak FLOP/s / peak bytes/s of the profile), else ``compute``. For P >> E the arithmetic intensity of extend
  attention is about G*E FLOP/byte in 16-bit types (shared/reference/extend_attention.md, "Roofline floor").
- width: head_dim <= 64 -> ``d64``, <= 128 -> ``d128``, <= 256 -> ``d256``, else ``wide`` (`width_class`).

Every class of the run's cases has an entry (a run starts from `structure_config`, the baseline kernel's structure
inside the family), so a candidate changes one class without touching the others; a class no bench case has
(e.g. a shape drawn at verification time) uses the family's default configuration. The candidate imports nothing
but the family module and keeps no mutable module state (the verifier's static rules). `FamilySpace.class_of`
mirrors the candidate's ``_case_class`` (tested). The candidate carries the chip's limits (`ChipLimits` from the
profile) as data and passes them to every call; a profile with an unknown limit cannot render one.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.roofline import peak_flops
from agent.templates import render
from hardware_profiles.limits import chip_limits_of
from hardware_profiles.schema import HardwareProfile
from kernels.extend_attention.baseline import baseline_tiles
from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import (
    FamilyConfig,
    auto_splits,
    fit_to_chip,
    pack_factor,
    smem_footprint_kb,
)
from kernels.extend_attention.mla import mla_applies
from kernels.extend_attention.spec import DTYPES
from kernels.task import Case, TaskSpec

Config = dict[str, Any]
Table = dict[str, Config]


@dataclass(frozen=True)
class CaseShape:
    """Features of a case that a kernel can read from tensor metadata (shapes of q, k and the indptr)."""

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

    @property
    def rows_per_sequence(self) -> float:
        return self.total_extend / max(self.batch, 1)

    @property
    def group(self) -> int:
        return self.num_q_heads // self.num_kv_heads


def case_shape(case: Case) -> CaseShape:
    """`CaseShape` of an extend-attention case (params as in `kernels.extend_attention.cases`)."""
    p = case.params
    ext = list(p["extend_lens"])
    head_dim = int(p["head_dim"])
    return CaseShape(len(ext), sum(ext), max(ext), int(p["num_q_heads"]), int(p["num_kv_heads"]), head_dim,
                     int(p.get("head_dim_v") or head_dim), case_dtype(case), sum(p["prefix_lens"]),
                     bool(p.get("mla")))


def _problem(shape: CaseShape) -> Problem:
    return Problem(shape.batch, shape.total_extend, shape.total_prefix, shape.num_q_heads, shape.num_kv_heads,
                   shape.head_dim, shape.head_dim_v, DTYPES[shape.dtype])


def case_dtype(case: Case) -> str:
    """Input dtype name of a case (``params['dtype']``, default bfloat16)."""
    return str(case.params.get("dtype", "bfloat16"))


def ridge_flop_per_byte(profile: HardwareProfile, dtype: str) -> float | None:
    """Roofline ridge point, FLOP per byte: peak FLOP/s of `dtype` over peak bytes/s (None if either unknown)."""
    flops, bandwidth = peak_flops(profile, dtype), profile.peak_bytes_per_s()
    return flops / bandwidth if flops and bandwidth else None


def width_class(head_dim: int) -> str:
    """Head-width part of a case class: "d64" (D <= 64), "d128", "d256" or "wide". D <= 64 is its own class
    because its best tiles differ from D = 128's (H200 sweep 4: 128x64 / 4 warps vs 128x128 / 8 warps; SGLang's
    table also switches warps at 64): sharing one class, a D = 128 improvement regressed small-heads by 14 % and
    was rejected (optimize run, H200 session 5)."""
    return "d64" if head_dim <= 64 else "d128" if head_dim <= 128 else "d256" if head_dim <= 256 else "wide"


def config_key(config: Mapping[str, Any]) -> str:
    """Canonical JSON of a configuration (sorted keys): its identity for dedupe and statistics."""
    return json.dumps(dict(config), sort_keys=True)


def table_hash(table: Mapping[str, Mapping[str, Any]]) -> str:
    """sha256 (first 16 hex) of the canonical JSON of a dispatch table."""
    canonical = json.dumps({k: dict(v) for k, v in table.items()}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def source_hash(source: str) -> str:
    """sha256 (first 16 hex) of a candidate source with trailing whitespace of each line removed."""
    normalized = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(normalized.encode()).hexdigest()[:16]


class FamilySpace:
    """Knob configurations of the task's kernel family that fit the chip, grouped by case class.

    Args:
        task: the task (its `knobs` define the space).
        profile: chip profile (ridge point and the chip limits: compute units, shared memory per block, warp
            width, threads per block).
        cases: the bench cases being optimized (they decide which classes matter and their head dims).

    Raises:
        ValueError: the task defines no knobs (not a family task).
        BadInputError: a chip limit is unknown in the profile (the message names the field and how to get it).
    """

    def __init__(self, task: TaskSpec, profile: HardwareProfile, cases: list[Case]) -> None:
        if not task.knobs:
            raise ValueError(f"task {task.name!r} has no family knobs")
        self.task = task
        self.profile = profile
        self.limits = chip_limits_of(profile)
        self.knobs: dict[str, tuple[Any, ...]] = {k: tuple(v) for k, v in task.knobs.items()}
        self.ridge = ridge_flop_per_byte(profile, case_dtype(cases[0])) if cases else None
        self.shapes = {c.id: case_shape(c) for c in cases}
        self.classes: dict[str, list[str]] = {}
        for case in cases:
            self.classes.setdefault(self.class_of(case), []).append(case.id)

    # ----- classes
    def class_of(self, case: Case) -> str:
        """Dispatch class of a case, computed exactly as the candidate's ``_case_class`` does."""
        shape = self.shapes.get(case.id) or case_shape(case)
        width = width_class(shape.head_dim)
        if self.ridge is None:
            return f"any-{width}"
        bound = "memory" if shape.rows_per_sequence * shape.group < self.ridge else "compute"
        return f"{bound}-{width}"

    def class_cases(self, key: str) -> list[str]:
        return list(self.classes.get(key, []))

    # ----- feasibility
    def smem_kb(self, config: Mapping[str, Any], key: str) -> float:
        """Shared memory of one program in KiB for the class's largest case, by the family's own formula
        (`kernels.extend_attention.family.smem_footprint_kb`)."""
        ids = self.classes.get(key) or list(self.shapes)
        return max(smem_footprint_kb(FamilyConfig(**dict(config)), _problem(self.shapes[c]), self.shapes[c].v_is_k)
                   for c in ids)

    def feasible(self, config: Mapping[str, Any], key: str) -> bool:
        """Fits the chip's shared memory per block and thread limit as given, without the family shrinking it, and
        is not a duplicate: the dedicated MLA path (``mla`` other than "off") only where some case of the class is
        MLA-shaped (`mla.mla_applies`; elsewhere the knob changes nothing)."""
        if config.get("mla", "off") != "off" and not any(self._mla_shaped(c) for c in self.classes.get(key, [])):
            return False
        if self.smem_kb(config, key) > self.limits.smem_per_block_kb:
            return False
        return int(config.get("num_warps", 1)) * self.limits.warp_size <= self.limits.max_threads_per_block

    def _mla_shaped(self, case_id: str) -> bool:
        shape = self.shapes[case_id]
        return mla_applies(_problem(shape), shape.v_is_k, None, None)

    def all_configs(self, key: str) -> list[Config]:
        """Every feasible configuration of class `key`, in knob-product order."""
        names = list(self.knobs)
        combos = (dict(zip(names, values)) for values in itertools.product(*self.knobs.values()))
        return [c for c in combos if self.feasible(c, key)]

    # ----- moves
    def snap(self, knob: str, value: Any) -> Any:
        """The allowed value of `knob` nearest to `value`, or None. A switch (allowed values all bools) takes a
        bool or 0/1 and gives the bool; a numeric knob takes a number (not a bool) and gives the allowed value of
        smallest |log ratio|; any other knob only its exact allowed values."""
        allowed = self.knobs[knob]
        if all(isinstance(a, bool) for a in allowed):
            ok = isinstance(value, (bool, int, float)) and value in (0, 1) and bool(value) in allowed
            return bool(value) if ok else None
        if isinstance(value, bool):
            return None
        if value in allowed:
            return allowed[allowed.index(value)]
        if not isinstance(value, (int, float)):
            return None
        numeric = [a for a in allowed if isinstance(a, (int, float)) and not isinstance(a, bool) and a > 0]
        if not numeric or value <= 0:
            return None
        return min(numeric, key=lambda a: abs(math.log(a / value)))

    def neighbors(self, config: Mapping[str, Any], key: str) -> list[tuple[str, int, Config]]:
        """Feasible configurations one knob step away: ``(knob, direction +1/-1, config)``; a switch's one
        neighbour is its flip (+1: False -> True, -1: True -> False)."""
        out = []
        for knob, allowed in self.knobs.items():
            i = allowed.index(config[knob]) if config[knob] in allowed else None
            if i is None:
                continue
            for step in (-1, 1):
                if 0 <= i + step < len(allowed):
                    moved = {**config, knob: allowed[i + step]}
                    if self.feasible(moved, key):
                        out.append((knob, step, moved))
        return out

    def structure_config(self, key: str) -> Config:
        """The baseline kernel's structure as a family configuration: its tiles and warps for the class's largest
        head dim (`baseline_tiles`, fitted to the chip), one q head per program, no split, one stage."""
        shape = max((self.shapes[c] for c in self.classes.get(key) or self.shapes), key=lambda s: s.head_dim)
        block_m, block_n, warps = baseline_tiles(shape.head_dim, DTYPES[shape.dtype].itemsize,
                                                 self.limits.smem_per_block_kb)
        config = {k: v[0] for k, v in self.knobs.items()}
        config.update(block_m=self.snap("block_m", block_m), block_n=self.snap("block_n", block_n),
                      num_warps=self.snap("num_warps", warps), num_stages=self.snap("num_stages", 1),
                      num_splits=self.snap("num_splits", 1), pack_gqa=False)
        while not self.feasible(config, key) and config["block_m"] > min(self.knobs["block_m"]):
            config["block_m"] = max(b for b in self.knobs["block_m"] if b < config["block_m"])
        return config

    def programs(self, config: Mapping[str, Any] | None, case: Case) -> int:
        """Programs with work that a kernel launches for `case` (the occupancy diagnosis): heads x row blocks
        x splits, by the kernels' own grid rules. `config` None is the baseline (one q head per program,
        `baseline_tiles` rows); a family configuration is first fitted to the chip as `run_family` does, and
        ``num_splits=0`` resolved with the family's `auto_splits`."""
        s = self.shapes.get(case.id) or case_shape(case)
        ext = list(case.params["extend_lens"])
        if config is None:
            block_m, _, _ = baseline_tiles(s.head_dim, DTYPES[s.dtype].itemsize, self.limits.smem_per_block_kb)
            return s.num_q_heads * sum(math.ceil(e / block_m) for e in ext)
        limits = self.limits
        prob = _problem(s)
        fitted = fit_to_chip(FamilyConfig(**dict(config)), prob, limits, s.v_is_k)
        splits = fitted.num_splits or auto_splits(fitted, prob, limits)
        pack = pack_factor(fitted, prob)
        heads = s.num_kv_heads if pack > 1 else s.num_q_heads
        return heads * splits * sum(math.ceil(e * pack / fitted.block_m) for e in ext)

    def complete(self, config: Mapping[str, Any]) -> Config:
        """`config` with a value for every knob of the space: a knob it lacks gets the family's default
        (`FamilyConfig()`), which is what a candidate rendered without that knob ran with (e.g. a configuration
        recorded in a finding before the knob existed)."""
        defaults = FamilyConfig().to_dict()
        return {**{k: defaults[k] for k in self.knobs if k in defaults}, **dict(config)}

    def full_table(self, table: Mapping[str, Mapping[str, Any]]) -> Table:
        """`table` with every class of the run's cases present: classes it lacks get `structure_config`, so a
        run starts from the baseline kernel's structure inside the family; every configuration `complete`."""
        return {k: self.complete(table.get(k) or self.structure_config(k)) for k in sorted(self.classes)} | {
            k: self.complete(v) for k, v in table.items() if k not in self.classes}

    # ----- rendering
    def render(self, table: Mapping[str, Mapping[str, Any]], signature: inspect.Signature, header: Mapping[str, Any]
               ) -> str:
        """Source of a candidate file for `table`; `header` holds id, parent_id, generation, patterns,
        rationale, run_id, chip (shown in the docstring). `signature` is the baseline entry point's."""
        bare = signature.replace(
            parameters=[p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()],
            return_annotation=inspect.Signature.empty)
        names = list(bare.parameters)
        full = self.full_table(table)
        configs = [(k, ", ".join(f"{n}={full[k][n]!r}" for n in self.knobs)) for k in sorted(full)]
        limits = _wrap([f"{k}={v!r}" for k, v in self.limits.to_dict().items()], indent=4)
        return render("extend_attention_candidate.py.j2", header=dict(header), configs=configs,
                      family_module=f"{self.task.optimized_module}.family", limits=limits,
                      ridge=None if self.ridge is None else round(self.ridge, 3),
                      signature=_wrap(str(bare)[1:-1].split(", "), indent=4),
                      call_args=_wrap([f"{n}={n}" for n in names], indent=8),
                      entry_point=self.task.entry_point)


def _wrap(items: list[str], indent: int, width: int = 110) -> str:
    """Comma-separated `items` broken into lines of at most `width` characters, continued at `indent`."""
    lines, line = [], ""
    for item in items:
        piece = f"{line}, {item}" if line else item
        if line and len(piece) + indent > width:
            lines.append(line + ",")
            line = item
        else:
            line = piece
    lines.append(line)
    return ("\n" + " " * indent).join(lines)
