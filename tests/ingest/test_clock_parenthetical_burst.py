"""A clock inside a parenthetical that says it is a short burst is an alternative, the plain clock of the clause
the chip's (fictional Tessel Q5 overview; expected values by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_TESSEL = """# Tessel Q5 overview

The Tessel Q5 has 96 loom cores (the compute units of the Q5).

The loom cores run at 1.4 GHz (the clock may climb to 1.7 GHz in short bursts while the power budget lasts,
but no figure here assumes it).
"""

_TESSEL_SOLE_BURST = """# Tessel Q5 overview

The Tessel Q5 has 96 loom cores (the compute units of the Q5).

The loom cores reach 1.7 GHz in bursts.
"""


def _clock(tmp_path, text):
    path = tmp_path / "tessel-q5.md"
    path.write_text(text)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("tessel_q5", chunk_sections(doc.sections, "tessel_q5", title=doc.title))
    return profile.clock_mhz


def test_the_plain_clock_beside_a_parenthetical_burst_is_the_chips(tmp_path):
    clock = _clock(tmp_path, _TESSEL)
    assert clock.value == 1400 and clock.kind == "stated"


def test_a_burst_clock_alone_is_left_as_it_is(tmp_path):
    """Nothing to prefer: the burst clock is not left out when no plain clock stands beside it."""
    clock = _clock(tmp_path, _TESSEL_SOLE_BURST)
    assert clock.value in (None, 1700)
