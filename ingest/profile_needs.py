"""Which profile fields the optimizer needs, which of them a profile still lacks, and how to get them.

Needed are the fields that the pattern catalog's parameter rules and preconditions read (`knowledge.catalog`:
the split-KV factor reads ``num_compute_units``, the tile budget ``smem_per_block_kb`` ...; the derived variables
``peak_flops``, ``peak_bw`` and ``ridge`` of `knowledge.variables` stand for a dense peak and
``mem_bw_gbps``), and what the roofline floor reads (`agent.roofline`: the memory bandwidth and a dense peak of the
kernel's data type). A missing field is reported after onboarding with three ways to fill it: more documents,
``chiplore profile probe`` on the chip, or ``chiplore profile set CHIP FIELD VALUE --source "..."``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from hardware_profiles import HardwareProfile
from hardware_profiles.schema import PROFILE_FIELDS

#: Data types whose dense peak the roofline of the shipped tasks reads (bf16/fp16 inputs; fp32 references).
ROOFLINE_PEAKS = ("bf16", "fp16")
_DERIVED = {"peak_bw": ("mem_bw_gbps",), "peak_flops": ("peak_tflops",), "ridge": ("peak_tflops", "mem_bw_gbps")}


@dataclass(frozen=True)
class Missing:
    """A needed field the profile does not hold, and what needs it."""

    field: str
    needed_by: tuple[str, ...]


@lru_cache(maxsize=1)
def needed_fields() -> dict[str, tuple[str, ...]]:
    """Profile field (``peak_tflops`` for any dense peak) -> what reads it: ``rule.output`` names of the pattern
    catalog, pattern preconditions (of every task's use of a pattern), and ``roofline``.

    Raises:
        CatalogError: the packaged pattern catalog does not load.
    """
    from knowledge.catalog import load_catalog
    from knowledge.formula import parse

    users: dict[str, set[str]] = {"mem_bw_gbps": {"roofline"}, "peak_tflops": {"roofline"}}
    catalog = load_catalog()

    def note(names: frozenset[str], user: str) -> None:
        for name in names:
            for field in _DERIVED.get(name, (name,) if name in PROFILE_FIELDS else ()):
                users.setdefault(field, set()).add(user)

    for rule in catalog.parameter_rules:
        for out in rule.outputs:
            note(parse(out.formula).names, f"{rule.id}.{out.name}")
    for use in catalog.uses:  # a pattern's preconditions belong to its use by a task
        for pre in use.preconditions:
            if pre.formula:
                note(parse(pre.formula).names, f"{use.pattern} (precondition)")
    return {field: tuple(sorted(u)) for field, u in sorted(users.items())}


def missing_fields(profile: HardwareProfile) -> list[Missing]:
    """The needed fields (`needed_fields`) that `profile` holds no value for; a peak counts as held when any of
    `ROOFLINE_PEAKS` is known. A conflict without a chosen value is missing too."""
    out = []
    for field, users in needed_fields().items():
        if field == "peak_tflops":
            held = any(profile.peak_flops(d) is not None for d in ROOFLINE_PEAKS)
            name = f"peak_tflops.{'|'.join(ROOFLINE_PEAKS)}"
        else:
            held = profile.get(field) is not None
            name = field
        if not held:
            out.append(Missing(name, users))
    return out


def how_to_fill(chip: str, missing: list[Missing]) -> list[str]:
    """Lines telling the user which needed fields are unknown and the three ways to get them."""
    if not missing:
        return []
    lines = ["still unknown, needed by the patterns or the roofline: "
             + "; ".join(f"{m.field} ({', '.join(m.needed_by[:3])}{', ...' if len(m.needed_by) > 3 else ''})"
                         for m in missing)]
    example = missing[0].field.split("|")[0]
    lines += [
        f"  - onboard more documents that state them: chiplore onboard {chip} MORE_DOCUMENTS...",
        f"  - measure them on the chip: chiplore profile probe {chip}",
        f"  - set one with its citation: chiplore profile set {chip} {example} VALUE --source \"DOCUMENT, page or "
        "section\" --quote \"the phrase that states it\"",
    ]
    return lines
