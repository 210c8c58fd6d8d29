"""Scripted components for the loop tests: a chip profile, a scripted verifier (a timing model over family
configurations) and an in-memory knowledge base. The loop, proposers, run state and candidate files are real.

The scripted verifier reads a candidate's dispatch table from its source (``CONFIGS``) and returns a verdict whose
times follow a fixed model: per class an optimum configuration and a best speedup; every knob step away from the
optimum costs 20%; cases of a class the table leaves out run at the baseline time. Times never go under the
roofline floor of the profile (checked in the tests).
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.diagnosis import floor_or_none
from agent.seams import Citation
from hardware_profiles.schema import HardwareProfile, ProfileField, Source
from kernels.extend_attention.spec import TASK
from knowledge.types import Finding

_SPEC = Source(document="NVIDIA H200 datasheet (test copy)", locator="specifications table")


def h200_profile() -> HardwareProfile:
    """H200 SXM spec numbers (NVIDIA datasheet; the reference document's 989 TFLOP/s and 4.8 TB/s)."""
    def f(value: float, unit: str) -> ProfileField:
        return ProfileField(value=value, unit=unit, source=_SPEC, kind="stated")
    return HardwareProfile(
        chip="h200", backend="cuda", num_compute_units=f(132, "count"), warp_size=f(32, "threads"),
        max_threads_per_block=f(1024, "threads"), smem_per_block_kb=f(227, "KiB"), mem_bw_gbps=f(4800, "GB/s"),
        peak_tflops={"bf16": f(989, "TFLOP/s"), "fp16": f(989, "TFLOP/s"), "tf32": f(494, "TFLOP/s")})


#: SGLang Triton times on one H200 (shared/reference/extend_attention.md), used as scripted baseline times.
BASELINE_US = {"prefill": 2858.0, "chunked-prefill": 8702.0, "mixed-batch": 1991.0, "spec-verify": 4187.0,
               "decode": 8285.0, "ragged": 3369.0, "small-heads": 1668.0, "large-heads": 6905.0, "mla": 10084.0}

OPTIMA = {
    "memory-d128": ({"block_m": 16, "block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 8,
                     "pack_gqa": True}, 8.0),
    "compute-d128": ({"block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 3, "num_splits": 1,
                      "pack_gqa": False}, 2.6),
    "compute-d64": ({"block_m": 128, "block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 1,
                     "pack_gqa": False}, 2.8),
    "compute-d256": ({"block_m": 64, "block_n": 64, "num_warps": 8, "num_stages": 2, "num_splits": 1,
                      "pack_gqa": False}, 3.0),
    "compute-wide": ({"block_m": 64, "block_n": 32, "num_warps": 8, "num_stages": 2, "num_splits": 1,
                      "pack_gqa": True}, 4.0),
}
FAMILY_DEFAULT = {"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 2, "num_splits": 0,
                  "pack_gqa": True}
#: The knobs added with the tuned entry point's (heavy_first ... ragged_tiles) at their first values (the baseline's
#: structure); tests that enumerate the space fix them (the whole space is millions of configurations).
LATER_KNOBS = {k: TASK.knobs[k][0] for k in ("heavy_first", "fold_scale", "gather_stages", "gather_ahead",
                                             "ahead_heads", "ahead_sync", "ragged_tiles")}
DISPATCH = {"prefill": "compute-d128", "chunked-prefill": "compute-d128", "mixed-batch": "compute-d128",
            "ragged": "compute-d128", "small-heads": "compute-d64", "spec-verify": "memory-d128",
            "decode": "memory-d128", "large-heads": "compute-d256", "mla": "compute-wide"}


def model_time_us(case_id: str, config: dict[str, Any] | None, jitter_key: str, scale: float = 1.0,
                  jitter: float = 0.005) -> float:
    """Scripted time of `case_id` with family `config` (None: baseline), with +-`jitter` deterministic noise;
    `scale` multiplies family times (a class where the family starts slower than the baseline)."""
    base = BASELINE_US[case_id]
    jitter = 1 + jitter * (int(hashlib.sha256(f"{jitter_key}:{case_id}".encode()).hexdigest()[:8], 16) / 2**31 - 1)
    if config is None:
        return base * jitter
    optimum, best = OPTIMA[DISPATCH[case_id]]
    steps = 0
    for knob, want in optimum.items():
        values = TASK.knobs[knob]
        steps += abs(values.index(config[knob]) - values.index(want))
    return scale * base / best * 1.2 ** steps * jitter


def dispatch_table(source: str) -> dict[str, dict[str, Any]] | None:
    """``CONFIGS = (("class", FamilyConfig(knob=value, ...)), ...)`` of a family candidate, read with `ast`;
    None for a file without one (the baseline)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CONFIGS":
            return {ast.literal_eval(pair.elts[0]): {kw.arg: ast.literal_eval(kw.value) for kw in pair.elts[1].keywords}
                    for pair in node.value.elts}
    return None


@dataclass
class ScriptedVerifier:
    """Verifier seam driven by `model_time_us`. ``fail_when`` knob values make a candidate fail to compile;
    ``timed=False`` returns untimed passes (as on a machine without a GPU). Every call is logged. The noise of a
    candidate's times is a function of its run folder, file name and dispatch table only, so a run is
    reproducible whatever the wall clock says."""

    timed: bool = True
    jitter: float = 0.005
    scale: dict[str, float] = field(default_factory=dict)
    fail_when: dict[str, Any] = field(default_factory=lambda: {"num_stages": 4, "block_n": 128})
    calls: list[str] = field(default_factory=list)
    on_call: Any = None

    def __call__(self, task, candidate_path: Path, profile, options) -> dict[str, Any]:
        path = Path(candidate_path)
        self.calls.append(path.name)
        if self.on_call is not None:
            self.on_call(path)
        table = dispatch_table(path.read_text())
        for config in (table or {}).values():
            if all(config.get(k) == v for k, v in self.fail_when.items()):
                return {"stage": "compile_error", "reasons": ["out of resources: shared memory 240 KB > 227 KB"],
                        "time_us": {}, "flags": [], "errors": {}}
        times = {}
        if self.timed:
            if table is None:  # the baseline: every timing repeat draws its own noise
                key = hashlib.sha256(path.read_bytes()).hexdigest() + str(len(self.calls))
            else:  # a candidate: noise per (run, candidate, configuration), never from its comment text (whose
                # citations carry wall-clock dates, which made the noise, and so the decisions, vary between runs)
                key = f"{path.parent.name}/{path.name}:{json.dumps(table, sort_keys=True)}"
            times = {c: model_time_us(c, None if table is None else table.get(DISPATCH[c], FAMILY_DEFAULT), key,
                                      self.scale.get(DISPATCH[c], 1.0), self.jitter) for c in options["cases"]}
        return {"stage": "pass", "reasons": [], "time_us": times, "flags": [], "errors": {}}


@dataclass(frozen=True)
class RankedPattern:
    pattern_id: str
    parameters: dict[str, Any]
    knobs: dict[str, Any]
    expected_gain: float
    evidence: list[str]
    score: float


#: Patterns a knowledge base would rank on this chip, keyed by bottleneck of the case (memory-bound cases
#: get split-KV with a split factor that fills 132 units and GQA packing; compute-bound cases pipelining).
PATTERNS = {
    "memory-bound": [
        RankedPattern("split-kv", {"num_splits": 9}, {"num_splits": 9}, 3.0, ["h200-note.md > Compute units"], 0.9),
        RankedPattern("multi-query-block", {"block_m": 16}, {"pack_gqa": True, "block_m": 16}, 2.0,
                      ["shared/reference/extend_attention.md > Why it is slow"], 0.8),
    ],
    "compute-bound": [
        RankedPattern("software-pipelining", {"num_stages": 3}, {"num_stages": 3}, 1.3,
                      ["triton docs > num_stages"], 0.6),
    ],
}


@dataclass
class ScriptedKnowledge:
    """Knowledge seam in memory: two documents, `PATTERNS` by bottleneck, findings upserted by id.
    With `path`, findings persist as JSON (a resumed process sees them)."""

    path: Path | None = None
    findings: dict[str, Finding] = field(default_factory=dict)
    record_calls: int = 0
    queries: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.path is not None and self.path.is_file():
            for item in json.loads(self.path.read_text()):
                self.findings[item["id"]] = Finding(**item)

    def search_documents(self, query: str, chip: str | None, k: int) -> list[Citation]:
        self.queries.append(query)
        docs = [Citation("h200-note.md > Memory", "HBM3e 4.8 TB/s", 0.8, "chunks", "doc-1"),
                Citation("h200-note.md > Compute units", "132 SMs, 227 KB shared memory per block", 0.7, "chunks",
                         "doc-2")]
        return docs[:k]

    def rank_patterns(self, profile, task, case, diagnosis) -> list[RankedPattern]:
        return list(PATTERNS.get(getattr(diagnosis, "bound", "memory-bound"), []))

    def query_findings(self, chip: str, task: str, k: int) -> list[Citation]:
        out = []
        for f in self.findings.values():
            if f.chip == chip and f.task == task:
                out.append(Citation(f"finding {f.id}", f"{f.case_id}: {f.status} x{f.speedup}", 1.0, "findings", f.id,
                                    {"status": f.status, "speedup": f.speedup, "parameters": dict(f.parameters),
                                     "patterns": list(f.patterns), "chip": f.chip, "case_id": f.case_id}))
        return sorted(out, key=lambda c: -(c.metadata["speedup"] or 0))[:k]

    def record_finding(self, finding: Finding) -> str:
        self.record_calls += 1
        self.findings[finding.id] = finding
        if self.path is not None:
            from core.atomic_io import atomic_write_json
            atomic_write_json(self.path, [f.model_dump(mode="json") for f in self.findings.values()])
        return finding.id


def floors(profile: HardwareProfile) -> dict[str, float]:
    return {c.id: floor_or_none(TASK, c, profile) for c in TASK.bench_cases}
