"""Superseding statements (`ingest.profile_supersede`): old figures, errata documents and revision histories
decide between values instead of making a conflict (fictional Meridel V7 documents; every value by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_supersede import Precedence, is_old_figure, precedence_of
from ingest.profile_resolve import document_family
from knowledge.types import Chunk

GB = 1e9 / 2**30  # "GB" is decimal; the profile stores GiB
_REPO = Path(__file__).resolve().parents[2]


def _chunks(tmp_path: Path, docs: dict[str, str]) -> list[Chunk]:
    out: list[Chunk] = []
    for name, text in docs.items():
        path = tmp_path / name
        path.write_text(text)
        doc = load_document(path)
        out += chunk_sections(doc.sections, "meridel_v7", title=doc.title, metadata={})
    return out


@pytest.mark.parametrize("text, figure, old", [
    ("the tile clock is 1.1 GHz (previously 1.2 GHz)", "1.2 GHz", True),
    ("the tile clock is 1.1 GHz (previously 1.2 GHz)", "1.1 GHz", False),
    ("The data sheet lists 24 GB; shipping boards carry 20 GB", "24 GB", True),
    ("The data sheet lists 24 GB; shipping boards carry 20 GB", "20 GB", False),
    ("Scratch RAM per tile grew from 96 KiB to 128 KiB", "96 KiB", True),
    ("Scratch RAM per tile grew from 96 KiB to 128 KiB", "128 KiB", False),
    ("the 900 GB/s of version 1 assumed faster parts", "900 GB/s", True),
    ("a kernel may use 64 KiB, not 80 KiB, of scratch", "80 KiB", True),
    ("a kernel may use 64 KiB, not 80 KiB, of scratch", "64 KiB", False),
    ("tiles are grouped from 2 to 8 per cluster", "2", False),  # "from" without a change: a range, not old
    ("a work group may use up to 64 KiB of scratch", "64 KiB", False),
])
def test_old_and_reported_figures_are_told_from_current_ones(text, figure, old):
    start = text.index(figure)
    assert is_old_figure(text, start, start + len(figure)) is old


def test_a_later_revision_outranks_an_earlier_one_of_the_same_document_only():
    a, b, c = (Chunk(id=str(i) * 32, text="", chip="x", source=src, kind="prose", section=sec) for i, (src, sec)
               in enumerate([("notes.md", "Notes > Rev. A"), ("notes.md", "Notes > Rev. B"),
                             ("other.md", "Other > Rev. C")]))
    rank = precedence_of([a, b, c], document_family)
    assert rank(b).outranks(rank(a)) and not rank(a).outranks(rank(b))
    assert rank(c) == Precedence(0, "other", None)  # one revision heading is no history
    assert not rank(c).outranks(rank(a)) and not rank(b).outranks(rank(c))


_DATA_SHEET = """# Meridel V7 vision coprocessor

The Meridel V7 is a fictional vision coprocessor built from tiles.

- Device memory: 24 GB
- Memory bandwidth: 900 GB/s
- Core clock: 1.2 GHz
"""

_CORRIGENDUM = """# Meridel V7 data sheet: corrigendum

Where the data sheet and this note differ, this note applies.

Device memory. The data sheet lists 24 GB, the capacity of the pre-series boards. The correct value for the
Meridel V7 as shipped is 20 GB.
"""


def test_an_errata_document_corrects_the_data_sheet_with_both_quotes_kept(tmp_path):
    """24 GB (data sheet) -> 20 GB (corrigendum): ``stated`` 20e9 B, not a conflict; the report names both."""
    chunks = _chunks(tmp_path, {"meridel-v7-data-sheet.md": _DATA_SHEET, "meridel-v7-corrigendum.md": _CORRIGENDUM})
    profile, report = extract_profile_with_report("meridel_v7", chunks)
    assert profile.mem_capacity_gb.kind == "stated"
    assert abs(profile.mem_capacity_gb.value - 20 * GB) < 1e-6
    assert profile.mem_capacity_gb.source.quote == "The correct value for the Meridel V7 as shipped is 20 GB."
    note = next(n for n in report.superseded if n.startswith("mem_capacity_gb"))
    assert "Device memory: 24 GB" in note and "shipped is 20 GB" in note
    assert profile.mem_bw_gbps.value == 900 and profile.clock_mhz.value == 1200  # not corrected: kept


_CHANGE_LOG = """# Meridel V7 specification change log

Oldest entry last.

## Version 3 (2027-05)

The tile clock is now 1.1 GHz (previously 1.2 GHz).

## Version 2 (2027-02)

Memory bandwidth raised to 960 GB/s.

## Version 1 (2026-11)

| Item | Meridel V7 |
|---|---|
| Memory bandwidth | 900 GB/s |
| Tile clock | 1,200 MHz |
| Device memory | 24 GB |
"""


def test_a_change_log_keeps_the_latest_revision_of_each_item(tmp_path):
    """Version 3's 1.1 GHz over version 1's 1,200 MHz (and its own "previously 1.2 GHz"); version 2's 960 GB/s
    over version 1's 900 GB/s; the 24 GB that no later version mentions is kept."""
    profile, report = extract_profile_with_report("meridel_v7", _chunks(tmp_path, {"v7-changes.md": _CHANGE_LOG}))
    assert (profile.clock_mhz.kind, profile.clock_mhz.value) == ("stated", 1100)
    assert (profile.mem_bw_gbps.kind, profile.mem_bw_gbps.value) == ("stated", 960)
    assert abs(profile.mem_capacity_gb.value - 24 * GB) < 1e-6
    assert not report.conflicts
    assert any(n.startswith("mem_bw_gbps: 900") and "960" in n for n in report.superseded)


def test_without_a_revision_history_two_sections_still_conflict(tmp_path):
    """The same figures under plain headings are two independent statements: a conflict, nothing superseded."""
    text = _CHANGE_LOG.replace("## Version 2 (2027-02)", "## Memory").replace("## Version 1 (2026-11)", "## Table")
    text = text.replace("## Version 3 (2027-05)\n\nThe tile clock is now 1.1 GHz (previously 1.2 GHz).\n", "")
    profile, report = extract_profile_with_report("meridel_v7", _chunks(tmp_path, {"v7-notes.md": text}))
    assert profile.mem_bw_gbps.kind == "conflict"
    assert {a.value for a in profile.mem_bw_gbps.alternatives} == {900, 960}
    assert not report.superseded


def test_a_change_log_in_a_pdf_is_read_in_reading_order_of_its_headings(tmp_path):
    """A PDF has no heading markup: its revision headings are lines of their own ("Version 3 (2027-05)"), which the
    loader makes section headings. The PDF form of the change log (rendered by ``scripts/datasheet_pdf.py``) gives
    the Markdown form's values."""
    import importlib.util

    pytest.importorskip("fpdf")
    spec = importlib.util.spec_from_file_location("datasheet_pdf", _REPO / "scripts" / "datasheet_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    markdown = tmp_path / "v7-changes.md"
    markdown.write_text(_CHANGE_LOG)
    pdf = module.render_markdown_pdf(markdown, tmp_path / "v7-changes.pdf")
    doc = load_document(pdf)
    chunks = chunk_sections(doc.sections, "meridel_v7", title=doc.title, metadata={})
    profile, report = extract_profile_with_report("meridel_v7", chunks)
    assert (profile.clock_mhz.kind, profile.clock_mhz.value) == ("stated", 1100)
    assert (profile.mem_bw_gbps.kind, profile.mem_bw_gbps.value) == ("stated", 960)
    assert not report.conflicts
